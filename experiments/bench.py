#!/usr/bin/python3
"""grove against its peers, in one run on this machine (`make bench`; `make bench BENCH_ARGS=--quick`).

1. Measures the OpenBLAS SGEMM ceiling (experiments/peers/sgemm_peak, 1 and 2 threads), the bare
   AVX-512 FMA peak below it (experiments/peers/fma_peak) and the bf16 peaks (experiments/peers/
   bf16_peak: AVX512-BF16 vdpbf16ps, and AMX tdpbf16ps where the CPU has amx_bf16; each skipped,
   saying so, where cpuid says the CPU lacks it).
2. For each tree model × H × batch × input set, runs `grove bench --json` and the peers
   (libtorch and PyTorch level-batched, PyTorch eager; for TreeLSTM also DyNet with autobatching,
   experiments/peers/dynet_tree.py, 1 thread, from PyPI's dynet38 in a venv this script makes) on the
   same trees with the same weights, and prints each result as it comes. Every row has a precision:
   fp32, and for TreeLSTM on SST at H256 B1, H256 B10 and H512 B10 also bf16 — grove with
   `--schedule precision=bf16` (skipped, with grove's reason, where the grove binary rejects it or
   notes that bf16 does not apply on this CPU) and libtorch with `--precision bf16` (bf16 weights
   and product inputs through oneDNN). For each model, H and input set it also checks that grove's
   root states are libtorch's (batch 10; --no-check skips it), and the bf16 roots against fp32's.
3. Runs the ablation: TreeLSTM, H=256, batch 10, SST, with each of grove's scheduling primitives
   turned off in turn, and recursive unrolling and epilogue fusion (off by default) turned on.
4. Writes experiments/results/bench.md (the fp32 table; then the precision table: each bf16 row
   beside the fp32 rows of its configuration), bench.csv (one row per configuration, tool and
   precision), bench-run.json (what bench.md says beyond the CSV: header, passes, measured rates,
   root checks), bench.png (one panel per model), ablation.md and ablation.csv.
   `--replot results/bench.csv` rewrites bench.md and bench.png from those, measuring
   nothing.
On a terminal, a line on standard error says how many of the runs (a tool on a configuration, a
check, an ablation setting) are done, the time elapsed and the time left; --quiet leaves it out.

Inputs. SST: the first --trees-limit trees of the SST test split, their words renumbered 0..U-1 in
order of first appearance (so that MV-RNN's per-word H×H matrices stay small and every tool reads
the same integer ids); perfect: 64 perfect binary trees of height 7 (255 nodes each), leaf tokens
cycling through 100 ids; nary (child-sum TreeLSTM only): 100 random trees of 10–50 nodes whose
internal nodes have 1–5 children, like dependency trees (fixed seed), tokens among 1,000 ids. Weights: `grove init-weights --seed 1`, one safetensors file per model, H
and input set, read by grove and by the peers (same names and shapes: docs/MODELS.md).

Protocol (experiments/README.md): one warm-up pass, --repeat timed passes of all trees in calls of
`batch` trees; the figure is the median of (pass time ÷ calls) in ms per batch. Every tool runs with
PERF-NOTES' environment and 2 threads (DyNet: 1). Each configuration's FLOPs per batch (grove's count from the
ILIR, which is flops.py's) give two FLOP times: at this run's 2-thread FMA peak (the hardware's limit:
every fp32 run's ratio to it is ≥ 1) and at its 2-thread SGEMM rate (a tuned GEMM's, not a hardware
limit: a ratio below 1 means faster than OpenBLAS's GEMM, not than the machine). bf16 rows have a
third, at the 2-thread bf16 peak (AMX where measured, else vdpbf16ps): their limit; their ratio to
the fp32 FMA peak's FLOP time can be below 1, which is what bf16 is for.
"""

import argparse
import csv
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "experiments", "peers")
PYTHON = "/usr/bin/python3"

# (name in the peers and in the tables, model file stem in models/)
MODELS = [("treefc", "treefc"), ("treegru", "treegru"), ("treelstm", "treelstm"),
          ("childsumtreelstm", "childsum_treelstm"), ("mvrnn", "mvrnn")]
TOOLS = ["grove", "libtorch-level-batched", "pytorch-level-batched", "pytorch-eager", "dynet-autobatch"]
# (tool, precision) in the order each configuration runs them; bf16 runs only at BF16_CONFIGS, DyNet
# only for DYNET_MODELS (dynet_tree.py has TreeLSTM).
RUNS = [("grove", "fp32"), ("grove", "bf16"), ("libtorch-level-batched", "fp32"), ("libtorch-level-batched", "bf16"),
        ("pytorch-level-batched", "fp32"), ("pytorch-eager", "fp32"), ("dynet-autobatch", "fp32")]
# The sizes PERF-NOTES and issue 23 give bf16 figures for: (model, H, batch, input set).
BF16_CONFIGS = {("treelstm", 256, 1, "sst"), ("treelstm", 256, 10, "sst"), ("treelstm", 512, 10, "sst")}
DYNET_MODELS = {"treelstm"}
DYNET_PACKAGE = "dynet38"  # PyPI's wheels of DyNet 2.1 for Python 3.8+
PRIMITIVES = ["batch", "specialize", "fuse", "gemm", "hoist", "persist", "parallel", "region"]
PERFECT_HEIGHT, PERFECT_TREES, PERFECT_VOCAB = 7, 64, 100
# Trees of any arity, shaped like dependency trees, for the models that take them.
NARY_TREES, NARY_NODES, NARY_MAX_CHILDREN, NARY_VOCAB = 100, (10, 50), 5, 1000
ANY_ARITY_MODELS = {"childsumtreelstm"}
# MV-RNN's 4H³ per node (67 MFLOP at H=256) makes a pass over all trees take minutes: it runs on the
# first trees of each set only (the table's trees column says how many).
MVRNN_TREES = {"sst": 20, "perfect": 8}

# PERF-NOTES, "Measuring the peers fairly": for every tool, grove included.
ENV = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_WAIT_POLICY="PASSIVE",
           MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="1073741824",
           MALLOC_TOP_PAD_="268435456")


class Progress:
    """The progress line of `grove bench` (tools/Progress.h) for this script: "bench: 12 of 80 runs
    (15%)  elapsed 3 min 05 s  14 min 20 s left", redrawn in place at most every 0.2 s, on standard
    error only when it is a terminal. log() lifts it above each line it prints."""

    def __init__(self, enabled):
        self.enabled, self.total, self.done = enabled, 0, 0
        self.start, self.last_draw, self.shown = time.time(), 0.0, False

    def start_counting(self, total):
        self.total, self.done, self.start = total, 0, time.time()
        self.draw(force=True)

    def step(self):
        self.done += 1
        self.draw()

    def line(self, elapsed):
        fraction = min(self.done / self.total, 1.0) if self.total else 1.0
        text = "bench: %s of %s runs (%d%%)  elapsed %s" % (
            format(self.done, ","), format(self.total, ","), int(fraction * 100), duration_text(elapsed))
        if self.done > 0 and elapsed >= 1:
            text += "  %s left" % duration_text(elapsed * (1 - fraction) / fraction)
        return text

    def draw(self, force=False):
        now = time.time()
        if not self.enabled or not self.total or (not force and self.shown and now - self.last_draw < 0.2):
            return
        # Wider than the terminal, the line would wrap and erasing it would clear its last row only.
        width = shutil.get_terminal_size((0, 0)).columns
        text = self.line(now - self.start)
        sys.stderr.write("\r\x1b[K" + (text[:width - 1] if width > 1 else text))
        sys.stderr.flush()
        self.shown, self.last_draw = True, now

    def clear(self):
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False

    def finish(self):
        self.clear()
        self.enabled = False


def duration_text(seconds):
    """47 s, 3 min 05 s, 2 h 05 min."""
    s = int(round(max(seconds, 0)))
    if s < 60:
        return "%d s" % s
    if s < 3600:
        return "%d min %02d s" % (s // 60, s % 60)
    return "%d h %02d min" % (s // 3600, s % 3600 // 60)


PROGRESS = Progress(False)


def log(text):
    PROGRESS.clear()
    print(text, flush=True)
    PROGRESS.draw(force=True)


# --- Inputs --------------------------------------------------------------------------------------

LEAF = re.compile(r"\(([^ ()]+) ([^ ()]+)\)")  # atoms split on ASCII space and parentheses only


def write_sst(limit, work):
    """The first `limit` SST test trees with words renumbered 0..U-1; returns (trees, vocab, U)."""
    with open(os.path.join(ROOT, "datasets", "sst", "test.txt"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()][:limit]
    ids = {}

    def renumber(m):
        return "(%s %d)" % (m.group(1), ids.setdefault(m.group(2), len(ids)))

    lines = [LEAF.sub(renumber, line) for line in lines]
    return write_inputs(work, "sst", lines, len(ids))


def perfect_tree_line(height, first_token):
    """One perfect binary tree in PTB format, built bottom-up (no recursion)."""
    level = ["(0 %d)" % ((first_token + i) % PERFECT_VOCAB) for i in range(2 ** height)]
    while len(level) > 1:
        level = ["(0 %s %s)" % (a, b) for a, b in zip(level[0::2], level[1::2])]
    return level[0]


def write_perfect(work):
    leaves = 2 ** PERFECT_HEIGHT
    lines = [perfect_tree_line(PERFECT_HEIGHT, t * leaves) for t in range(PERFECT_TREES)]
    return write_inputs(work, "perfect", lines, PERFECT_VOCAB)


def nary_tree_line(rng):
    """A random tree of NARY_NODES nodes whose internal nodes have 1..NARY_MAX_CHILDREN children:
    nodes are attached one at a time to a random earlier node with room left, then written in PTB
    form iteratively (children before parents), leaves as (0 token)."""
    count = rng.randint(*NARY_NODES)
    children = [[] for _ in range(count)]
    for node in range(1, count):
        parent = rng.choice([p for p in range(node) if len(children[p]) < NARY_MAX_CHILDREN])
        children[parent].append(node)
    text = [None] * count
    for node in reversed(range(count)):  # children have larger ids than their parent
        text[node] = ("(0 %s)" % " ".join(text[c] for c in children[node]) if children[node]
                      else "(0 %d)" % rng.randrange(NARY_VOCAB))
    return text[0]


def write_nary(work):
    rng = random.Random(7)
    return write_inputs(work, "nary", [nary_tree_line(rng) for _ in range(NARY_TREES)], NARY_VOCAB)


def write_inputs(work, name, lines, vocab_size):
    trees, vocab = os.path.join(work, name + ".txt"), os.path.join(work, name + "-vocab.txt")
    with open(trees, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(vocab, "w") as f:  # id i is the word "i", so the peers keep grove's ids
        f.write("".join("%d\n" % i for i in range(vocab_size)))
    return {"name": name, "trees": trees, "vocab": vocab, "vocab_size": vocab_size, "count": len(lines)}


def first_trees(inputs, count):
    """The first `count` trees of an input set, with the same ids (and so the same weights)."""
    if count >= inputs["count"]:
        return inputs
    with open(inputs["trees"], encoding="utf-8") as f:
        lines = f.read().splitlines()[:count]
    path = inputs["trees"][:-len(".txt")] + "-first%d.txt" % count
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return dict(inputs, trees=path, count=count)


def size_vars(stem):
    """The size variables in the param shapes of models/<stem>.grove."""
    with open(os.path.join(ROOT, "models", stem + ".grove")) as f:
        shapes = re.findall(r"^\s*param\s+\w+\s*\[([^\]]*)\]", f.read(), re.M)
    return sorted({v for shape in shapes for v in re.findall(r"[A-Za-z_]\w*", shape)})


def weights_file(args, stem, hidden, inputs):
    path = os.path.join(args.work, "w-%s-h%d-%s.safetensors" % (stem, hidden, inputs["name"]))
    if not os.path.exists(path):
        values = {"H": hidden, "D": hidden, "V": inputs["vocab_size"]}
        sizes = ",".join("%s=%d" % (v, values[v]) for v in size_vars(stem))
        run([args.grove, "init-weights", os.path.join(ROOT, "models", stem + ".grove"), "--sizes", sizes,
             "--seed", "1", "--out", path])
    return path


# --- Running the tools ---------------------------------------------------------------------------

def run(command, timeout=None):
    return run_both(command, timeout)[0]


def run_both(command, timeout=None):
    """(stdout, stderr) of a command that must succeed."""
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(command), result.returncode,
                                                          result.stderr.strip()[-2000:]))
    return result.stdout, result.stderr


class Skipped(Exception):
    """A run that cannot mean what its row says (grove without bf16 here): the message is the row's note."""


def last_json(stdout):
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


def run_grove(args, stem, inputs, weights, batch, schedule="", precision="fp32"):
    """`grove bench --json`'s result. With precision bf16 (`--schedule precision=bf16`), raises Skipped
    where this grove cannot run bf16: it rejects the key (a binary from before precision=bf16), it says
    in a `grove: note:` that bf16 does not apply on this CPU, or its result reports another precision.
    The reason is kept in args, so the other bf16 runs are skipped without starting grove again."""
    if precision != "fp32" and args.grove_bf16_skip:
        raise Skipped(args.grove_bf16_skip)
    if precision != "fp32":
        schedule = ",".join(part for part in (schedule, "precision=" + precision) if part)
    command = [args.grove, "bench", os.path.join(ROOT, "models", stem + ".grove"), "--trees", inputs["trees"],
               "--weights", weights, "--batch", str(batch), "--repeat", str(args.repeat), "--threads", "2",
               "--json"]
    if schedule:
        command += ["--schedule", schedule]
    try:
        stdout, stderr = run_both(command, timeout=args.timeout)
    except RuntimeError as e:
        said = [line.strip() for line in str(e).splitlines()[1:] if "precision" in line]
        if precision == "fp32" or not said:
            raise
        args.grove_bf16_skip = "skipped: this grove binary rejects precision=%s (%s)" % (precision, said[0][:200])
        raise Skipped(args.grove_bf16_skip)
    result = last_json(stdout)
    if precision != "fp32":
        notes = [line.strip() for line in stderr.splitlines()
                 if line.startswith("grove: note:") and ("bf16" in line or "precision" in line)]
        ran = result_precision(result)
        if notes or ran != precision:
            args.grove_bf16_skip = "skipped: grove ran %s here%s" % (
                ran, " (%s)" % notes[0][:200] if notes else "")
            raise Skipped(args.grove_bf16_skip)
    return result


def result_precision(result):
    """The precision a `grove bench --json` result ran at: its own field, else its schedule's
    precision=..., else fp32 (a grove from before the key)."""
    if result.get("precision"):
        return result["precision"]
    match = re.search(r"(?:^|,)precision=(\w+)", result.get("schedule", ""))
    return match.group(1) if match else "fp32"


def run_peer(args, tool, model, hidden, inputs, weights, batch, precision="fp32"):
    common = ["--model", model, "--hidden", str(hidden), "--batch", str(batch), "--repeat", str(args.repeat),
              "--trees", inputs["trees"], "--vocab", inputs["vocab"], "--weights", weights]
    if tool == "dynet-autobatch":
        if args.dynet_skip:
            raise Skipped(args.dynet_skip)
        # DyNet's CPU build runs one thread (Eigen without threads), as PERF-NOTES measured it.
        command = [args.dynet_python, os.path.join(PEERS, "dynet_tree.py"), "--dynet-autobatch", "1",
                   "--threads", "1"] + common
    elif tool == "libtorch-level-batched":
        command = [os.path.join(args.peers_build, "libtorch_tree"), "--threads", "2", "--precision",
                   precision] + common
    else:
        mode = "batched" if tool == "pytorch-level-batched" else "eager"
        command = [PYTHON, os.path.join(PEERS, "pytorch_tree.py"), "--mode", mode, "--threads", "2"] + common
    return last_json(run(command, timeout=args.timeout))


def roots_of(args, tool, model, stem, hidden, inputs, weights, precision="fp32"):
    """Every tree's root h (batch 10, the same weights file) from grove run or libtorch_tree --out."""
    import numpy as np
    out = os.path.join(args.work, "roots-%s-%s.npy" % (tool, precision))
    if tool == "grove":
        command = [args.grove, "run", os.path.join(ROOT, "models", stem + ".grove"), "--weights", weights,
                   "--trees", inputs["trees"], "--batch", "10", "--out", out]
        if precision != "fp32":
            command += ["--schedule", "precision=" + precision]
    else:
        command = [os.path.join(args.peers_build, "libtorch_tree"), "--model", model, "--hidden", str(hidden),
                   "--batch", "10", "--repeat", "1", "--threads", "2", "--trees", inputs["trees"], "--vocab",
                   inputs["vocab"], "--weights", weights, "--precision", precision, "--out", out]
    run(command, timeout=args.timeout)
    return np.load(out)


def agreement(args, model, stem, hidden, inputs, weights):
    """Largest |grove − libtorch| over every root h (and the largest |h|), batch 10, same weights."""
    import numpy as np
    a = roots_of(args, "grove", model, stem, hidden, inputs, weights)
    b = roots_of(args, "libtorch", model, stem, hidden, inputs, weights)
    if a.shape != b.shape:
        return "shapes differ: grove %s, libtorch %s | —" % (a.shape, b.shape)
    return "%.2g | %.2g" % (float(np.abs(a - b).max()), float(np.abs(b).max()))


def bf16_agreement(args, model, stem, hidden, inputs, weights, grove_ran_bf16):
    """The bf16 roots against libtorch's fp32 ones, relative: largest |difference| ÷ largest |root h|
    (issue 23: within 1e-2), for libtorch --precision bf16 and, where it ran bf16, grove's."""
    import numpy as np
    reference = roots_of(args, "libtorch", model, stem, hidden, inputs, weights)
    scale = float(np.abs(reference).max())
    cells = []
    for tool in ("grove", "libtorch"):
        if tool == "grove" and not grove_ran_bf16:
            cells.append("grove: n/a (%s)" % (args.grove_bf16_skip or "not run"))
            continue
        roots = roots_of(args, tool, model, stem, hidden, inputs, weights, "bf16")
        cells.append("%s: %.2g" % (tool, float(np.abs(roots - reference).max()) / scale))
    return "%s | %.2g" % ("; ".join(cells), scale)


def skip_reason(args, tool, model, hidden, batch):
    """Why a configuration is not run (None: it is). Said in the table, never dropped silently."""
    if model == "mvrnn" and hidden >= 512:
        return "skipped: MV-RNN at H=512 is ~4H³ = 0.5 GFLOP per node (~1 TFLOP per SST pass)"
    if tool == "pytorch-eager" and (hidden >= 512 or model == "mvrnn") and not args.all_eager:
        return "skipped: eager, one node per call, takes minutes here (--all-eager runs it)"
    return None


def measured_peak(args, program):
    """{threads: GFLOP/s} from a peer that prints one JSON line per thread count (sgemm_peak, fma_peak)."""
    return measured_peaks(args, program)[0].popitem()[1]


def steady_peak(args, program, attempts=3):
    """measured_peak's {threads: GFLOP/s} (sgemm_peak, fma_peak), measured again (at most `attempts` times
    in all) while the 2-thread rate is under 1.5x the 1-thread one: on these shared 2-vCPU machines that
    means the host held the second core during the measurement, and every ratio to the peak would be up
    to twice too small. The last measurement stands (rate_lines flags an FMA peak still that low)."""
    for attempt in range(attempts):
        rates = measured_peak(args, program)
        one, two = rates.get(1), rates.get(2)
        if (os.cpu_count() or 1) < 2 or not one or not two or two >= 1.5 * one:
            return rates
        log("bench: %s's 2-thread rate (%.1f GFLOP/s) is only %.2fx its 1-thread one (%.1f): the second core "
            "was busy%s" % (program, two, two / one, one, "; measuring again" if attempt + 1 < attempts else ""))
    return rates


def measured_peaks(args, program):
    """({peer: {threads: GFLOP/s}}, {peer: why skipped}) from a program printing one JSON line per
    peer and thread count, or one {"peer", "skipped"} line for a peak the CPU lacks (bf16_peak)."""
    peaks, skipped = {}, {}
    for line in run([os.path.join(args.peers_build, program), "--runs", "5"]).splitlines():
        record = json.loads(line)
        if "skipped" in record:
            skipped[record["peer"]] = record["skipped"]
        else:
            peaks.setdefault(record["peer"], {})[record["threads"]] = record["gflops"]
    return peaks, skipped


def dynet_python(args):
    """The python that runs dynet_tree.py: --dynet-python, else a venv at --dynet-venv made here on first
    use (`python3 -m venv --system-site-packages`, so numpy is Debian's, then `pip install dynet38`).
    Sets args.dynet_skip (the rows' note) where DyNet cannot be had."""
    args.dynet_skip = None
    if args.no_dynet:
        args.dynet_skip = "skipped: --no-dynet"
        return None
    python = args.dynet_python or os.path.join(args.dynet_venv, "bin", "python")
    check = [python, "-c", "import dynet_config; dynet_config.set(autobatch=1); import dynet"]

    def importable():
        try:
            return subprocess.run(check, capture_output=True).returncode == 0
        except OSError:  # no such python yet
            return False

    try:
        if not args.dynet_python and not importable():
            log("bench: installing DyNet (pip install %s) into a venv at %s" % (DYNET_PACKAGE, args.dynet_venv))
            run([PYTHON, "-m", "venv", "--system-site-packages", args.dynet_venv])
            run([python, "-m", "pip", "install", "--quiet", DYNET_PACKAGE], timeout=args.timeout)
        run(check)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        args.dynet_skip = "skipped: no DyNet (%s)" % str(e).splitlines()[0][:200]
        return None
    return python


# --- Reports -------------------------------------------------------------------------------------

# The rates a configuration's FLOPs are set against, both measured in the run on 2 threads: (what the
# tables and the plot call the FLOP time at that rate, what a ratio to it can and cannot mean). The
# FMA peak is the hardware's limit; OpenBLAS's SGEMM rate is only what a tuned GEMM reaches, so a time
# below the FLOP time at that rate is possible and must not read as beating the hardware.
RATES = {"fma": ("FLOP time at FMA peak", "the hardware limit: ≥ 1"),
         "sgemm": ("FLOP time at SGEMM rate", "not a hardware limit: < 1 possible"),
         "bf16": ("FLOP time at bf16 peak", "bf16's hardware limit: ≥ 1")}
# The fp32 table's rates (every row); "bf16" is set for bf16 rows only, against the bf16 instruction
# grove uses on this CPU: AMX tdpbf16ps where the run measured it, else AVX512-BF16 vdpbf16ps.
FP32_RATES = ["fma", "sgemm"]
TOOL_LABELS = {"grove": "grove", "libtorch-level-batched": "libtorch level-batched",
               "pytorch-level-batched": "PyTorch level-batched", "pytorch-eager": "PyTorch eager",
               "dynet-autobatch": "DyNet autobatch (1 thread)"}
CSV_FIELDS = ["model", "hidden", "batch", "input", "trees", "tool", "precision", "threads", "median_ms_per_batch",
              "p10_ms", "p90_ms", "flops_per_batch", "fma_limit_ms", "x_over_fma", "sgemm_limit_ms", "x_over_sgemm",
              "bf16_limit_ms", "x_over_bf16", "gflops", "compile_ms", "inspector_ms", "note"]
TEXT_FIELDS = {"model", "input", "tool", "precision", "note"}
INT_FIELDS = {"hidden", "batch", "trees", "flops_per_batch", "threads"}


def fmt_ms(value):
    return "%.3g" % value if value < 100 else "%.0f" % value


def config_of(row):
    return row["model"], row["hidden"], row["batch"], row["input"]


def key_of(row):
    return config_of(row) + (row["tool"], row.get("precision", "fp32"))


def reference_rate(peaks):
    """The rate times are shown against in parentheses and in the plot: the FMA peak when measured."""
    return "fma" if peaks.get("fma_2t") else "sgemm"


def bf16_peak(peaks):
    """(2-thread GFLOP/s, what it is) of the bf16 limit: AMX where measured, else vdpbf16ps; None if neither."""
    if peaks.get("amx_2t"):
        return peaks["amx_2t"], "AMX tdpbf16ps"
    if peaks.get("bf16_2t"):
        return peaks["bf16_2t"], "AVX512-BF16 vdpbf16ps"
    return None


def add_limits(rows, peaks):
    """Sets each measured row's FLOP time at every 2-thread rate the run has (<rate>_limit_ms, from
    grove's FLOP count for the configuration, which is flops.py's) and its time ÷ that (x_over_<rate>):
    the FMA peak's and SGEMM's for every row, the bf16 peak's for bf16 rows."""
    flops = {config_of(r): r["flops_per_batch"] for r in rows if r["tool"] == "grove" and r.get("flops_per_batch")}
    bf16 = bf16_peak(peaks)
    for r in rows:
        if r.get("note") or config_of(r) not in flops:
            continue
        rates = {rate: peaks.get(rate + "_2t") for rate in FP32_RATES}
        if r.get("precision") == "bf16" and bf16:
            rates["bf16"] = bf16[0]
        for rate, gflops in rates.items():
            if gflops:
                limit_ms = flops[config_of(r)] / (gflops * 1e9) * 1e3
                r[rate + "_limit_ms"] = round(limit_ms, 4)
                r["x_over_" + rate] = round(r["median_ms_per_batch"] / limit_ms, 2)


def write_bench_csv(out, rows):
    with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_bench_csv(path):
    """bench.csv's rows as the run built them: numbers as numbers, empty cells left out. Columns of
    older runs (flop_limit_ms, x_over_limit) are dropped: add_limits recomputes them; rows from before
    the precision column are fp32."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [{k: v if k in TEXT_FIELDS else int(v) if k in INT_FIELDS else float(v)
                 for k, v in record.items() if v != "" and k in CSV_FIELDS} for record in csv.DictReader(f)]
    for r in rows:
        r.setdefault("precision", "fp32")
    return rows


def write_run_facts(out, facts):
    """bench-run.json: what bench.md says beyond bench.csv, so that --replot can rewrite it."""
    with open(os.path.join(out, "bench-run.json"), "w", encoding="utf-8") as f:
        json.dump(dict(facts, checks=[[*key, value] for key, value in facts["checks"].items()],
                       bf16_checks=[[*key, value] for key, value in facts.get("bf16_checks", {}).items()]), f,
                  ensure_ascii=False, indent=1)
        f.write("\n")


def read_run_facts(directory):
    """The facts write_run_facts stores, from `directory`'s bench-run.json; for a run from before that
    file, read back from its bench.md (header line, passes, SGEMM and FMA rates, root checks)."""
    path = os.path.join(directory, "bench-run.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            facts = json.load(f)
        facts["checks"] = {(m, h, i): v for m, h, i, v in facts["checks"]}
        facts["bf16_checks"] = {(m, h, i): v for m, h, i, v in facts.get("bf16_checks", [])}
        return facts
    with open(os.path.join(directory, "bench.md"), encoding="utf-8") as f:
        text = f.read()
    peaks = {}
    sgemm = re.search(r"2-thread SGEMM peak \(([\d.]+) GFLOP/s; 1 thread: ([\d.]+)\)", text)
    if sgemm:
        peaks.update(sgemm_2t=float(sgemm.group(1)), sgemm_1t=float(sgemm.group(2)))
    fma = re.search(r"bare FMA peak in the same run[^:]*: ([\d.]+) GFLOP/s", text)
    if fma and float(fma.group(1)) > 0:
        peaks["fma_2t"] = float(fma.group(1))
    checks = {(m, int(h), i): "%s | %s" % (d, v) for m, h, i, d, v in
              re.findall(r"^\| (\w+) \| (\d+) \| (\w+) \| ([^|]+) \| ([^|]+) \|$", text, re.M)}
    header = text.split("\n", 1)[0]
    return {"header": header, "repeat": int(re.search(r"median of (\d+) passes", text).group(1)),
            "loaded": "shared with other work" in header, "peaks": peaks, "checks": checks, "bf16_checks": {}}


def rate_lines(peaks, peak_notes=None):
    """The paragraph that says what each FLOP time is and how to read a ratio to it."""
    lines, peak_notes = [], peak_notes or {}
    if peaks.get("fma_2t"):
        lines.append("- **%s** = FLOPs ÷ the bare AVX-512 FMA peak measured in this run (%.1f GFLOP/s on 2 threads; "
                     "1 thread: %s; experiments/peers/fma_peak.c). It is the hardware's fp32 limit: time ÷ it is ≥ "
                     "1 for any fp32 code." % (RATES["fma"][0], peaks["fma_2t"], "%.1f" % peaks["fma_1t"]
                                               if peaks.get("fma_1t") else "not recorded"))
    lines.append("- **%s** = FLOPs ÷ OpenBLAS's SGEMM 2048³ rate measured in this run (%.1f GFLOP/s on 2 threads; "
                 "1 thread: %.1f). It is what a tuned library GEMM reaches, not a hardware limit: time ÷ it "
                 "below 1 means faster than that GEMM, not faster than the hardware." % (
                     RATES["sgemm"][0], peaks.get("sgemm_2t") or 0, peaks.get("sgemm_1t") or 0))
    if not peaks.get("fma_2t"):
        lines.append("- The FMA peak (the hardware's limit) was not measured in this run: the run predates "
                     "experiments/peers/fma_peak.c; the next `make bench` measures it and adds its columns.")
    measured = []
    for key, peer, what in (("bf16", "bf16-peak", "AVX512-BF16 `vdpbf16ps` (16 zmm chains, 64 FLOP each)"),
                            ("amx", "amx-peak", "AMX `tdpbf16ps` (4 accumulator tiles, 16,384 FLOP each)")):
        if peaks.get(key + "_2t"):
            measured.append("%s: %.1f GFLOP/s on 2 threads, %s on 1 (%.2f× the FMA peak)" % (
                what, peaks[key + "_2t"], "%.1f" % peaks[key + "_1t"] if peaks.get(key + "_1t") else "—",
                peaks[key + "_2t"] / peaks["fma_2t"] if peaks.get("fma_2t") else 0))
        elif peak_notes.get(peer):
            measured.append("%s: %s" % (what, peak_notes[peer]))
    if measured:
        lines.append("- bf16 peaks measured in this run (experiments/peers/bf16_peak.c, no memory in the loop): "
                     + "; ".join(measured) + ".")
    if peaks.get("fma_2t") and peaks.get("fma_1t") and peaks["fma_2t"] < 1.5 * peaks["fma_1t"]:
        lines.append("- **The 2-thread FMA peak is only %.2f× the 1-thread one**: the second vCPU was busy while the "
                     "peaks were measured, so every FLOP time here is up to twice too long and every ratio to one "
                     "up to twice too small." % (peaks["fma_2t"] / peaks["fma_1t"]))
    return lines


def cell(r, notes, reference):
    """A table cell for one row: ms per batch (time ÷ the reference FLOP time), or n/a [note]."""
    if r is None:
        return "—"
    if r.get("note"):
        if r["note"] not in notes:
            notes.append(r["note"])
        return "n/a [%d]" % (notes.index(r["note"]) + 1)
    if reference and r.get("x_over_" + reference):
        return "%s (%.1f×)" % (fmt_ms(r["median_ms_per_batch"]), r["x_over_" + reference])
    return fmt_ms(r["median_ms_per_batch"])


def measured(r):
    return r is not None and not r.get("note") and r.get("median_ms_per_batch")


def precision_lines(rows, facts, notes):
    """The precision table: every row of the configurations that have bf16 rows, each tool in fp32 and
    bf16, against the fp32 FMA peak and the bf16 peak."""
    peaks, by = facts["peaks"], {key_of(r): r for r in rows}
    configs = []
    for r in rows:
        if r.get("precision") == "bf16" and config_of(r) not in configs:
            configs.append(config_of(r))
    if not configs:
        return []
    bf16 = bf16_peak(peaks)
    lines = ["", "Precision: the configurations with bf16 rows, each tool in fp32 and in bf16 (grove: `--schedule "
             "precision=bf16`, bf16 weights and GEMM inputs, fp32 accumulation and states; libtorch: `--precision "
             "bf16`, bf16 weights and product inputs through oneDNN's bf16 matmul, which reorders the weights on "
             "every call). × FMA = time ÷ the %s (the fp32 limit; bf16 can go below 1); × bf16 = time ÷ the "
             "%s%s." % (
                 RATES["fma"][0], RATES["bf16"][0],
                 " (%s, %.1f GFLOP/s on 2 threads)" % (bf16[1], bf16[0]) if bf16 else " (not measured: see above)"),
             "", "| model | H | batch | trees | tool | precision | threads | ms per batch (p10 – p90) | × FMA "
             "| × bf16 | bf16 ÷ fp32, same tool | ÷ libtorch, same precision |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for config in configs:
        model, hidden, batch, inputs = config
        for tool, precision in RUNS:
            r = by.get(config + (tool, precision))
            if r is None:
                continue
            if measured(r):
                timing = "%s (%s – %s)" % (fmt_ms(r["median_ms_per_batch"]), fmt_ms(r["p10_ms"]), fmt_ms(r["p90_ms"]))
            else:
                timing = cell(r, notes, None)
            fp32, lt = by.get(config + (tool, "fp32")), by.get(config + ("libtorch-level-batched", precision))
            versus_fp32 = ("%.2f" % (r["median_ms_per_batch"] / fp32["median_ms_per_batch"])
                           if precision != "fp32" and measured(r) and measured(fp32) else "—")
            versus_lt = ("%.2f" % (r["median_ms_per_batch"] / lt["median_ms_per_batch"])
                         if tool != "libtorch-level-batched" and measured(r) and measured(lt) else "—")
            lines.append("| %s | %d | %d | %d %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                model, hidden, batch, r["trees"], inputs, TOOL_LABELS[tool], precision, r.get("threads", 2), timing,
                "%.2f" % r["x_over_fma"] if r.get("x_over_fma") else "—",
                "%.2f" % r["x_over_bf16"] if r.get("x_over_bf16") else "—", versus_fp32, versus_lt))
    return lines


def write_bench_md(out, rows, facts):
    peaks, reference = facts["peaks"], reference_rate(facts["peaks"])
    rates = [rate for rate in FP32_RATES if peaks.get(rate + "_2t")]
    fp32_rows = [r for r in rows if r.get("precision", "fp32") == "fp32"]
    tools = [t for t in TOOLS if t != "dynet-autobatch" or any(r["tool"] == t for r in fp32_rows)]
    configs, counts = [], {}
    for r in fp32_rows:
        counts[config_of(r)] = r["trees"]
        if config_of(r) not in configs:
            configs.append(config_of(r))
    by = {key_of(r): r for r in fp32_rows}
    lines = [facts["header"], "",
             "fp32: ms per batch, median of %d passes; in parentheses: time ÷ %s. Each configuration's FLOPs per "
             "batch (grove's count from the ILIR) are set against rates measured in the same run:" % (
                 facts["repeat"], RATES[reference][0]), ""] + rate_lines(peaks, facts.get("peak_notes")) + ["",
             "| model | H | batch | trees | %s | %s | grove ÷ libtorch | %s |" % (
                 " | ".join(TOOL_LABELS[t] for t in tools), " | ".join(RATES[r][0] + ", ms" for r in rates),
                 " | ".join("grove ÷ %s (%s)" % RATES[r] for r in rates)),
             "|---|---|---|---|" + "---|" * (len(tools) + 2 * len(rates) + 1)]
    notes = []
    for config in configs:
        cells, limits = [], {}
        for tool in tools:
            r = by.get(config + (tool, "fp32"))
            cells.append(cell(r, notes, reference))
            for rate in rates:
                if r is not None and r.get(rate + "_limit_ms"):
                    limits[rate] = r[rate + "_limit_ms"]
        g, lt = by.get(config + ("grove", "fp32")), by.get(config + ("libtorch-level-batched", "fp32"))
        ratio = ("%.2f" % (g["median_ms_per_batch"] / lt["median_ms_per_batch"])
                 if measured(g) and measured(lt) else "—")
        overs = ["%.2f" % g["x_over_" + rate] if g and g.get("x_over_" + rate) else "—" for rate in rates]
        model, hidden, batch, inputs = config
        lines.append("| %s | %d | %d | %d %s | %s | %s | %s | %s |" % (
            model, hidden, batch, counts[config], inputs, " | ".join(cells),
            " | ".join(fmt_ms(limits[rate]) if rate in limits else "—" for rate in rates), ratio, " | ".join(overs)))
    lines += precision_lines(rows, facts, notes)
    if notes:
        lines += [""] + ["[%d] %s" % (i + 1, n) for i, n in enumerate(notes)]
    if facts["loaded"]:
        lines += ["", "Under load the rates measured in the run are themselves depressed (PERF-NOTES, idle: 375 "
                  "GFLOP/s SGEMM on 2 threads), so the FLOP times are too long, and a ratio below 1, even to the "
                  "FMA peak's, says that the rate measurement was slowed more than the model run, not that the "
                  "model beat the hardware."]
    if facts["checks"]:
        lines += ["", "Same numbers: the largest absolute difference between grove's and libtorch's root h over "
                  "every tree (batch 10, the same weights file), and the largest absolute root h.", "",
                  "| model | H | trees | largest difference | largest value |", "|---|---|---|---|---|"]
        lines += ["| %s | %d | %s | %s |" % (m, h, i, v) for (m, h, i), v in facts["checks"].items()]
    if facts.get("bf16_checks"):
        lines += ["", "bf16 roots against fp32's: the largest |bf16 root h − libtorch fp32 root h| ÷ the largest "
                  "|root h| over every tree (batch 10, the same weights file; issue 23 asks ≤ 1e-2), for grove "
                  "and for libtorch in bf16.", "",
                  "| model | H | trees | largest difference ÷ largest value | largest value |",
                  "|---|---|---|---|---|"]
        lines += ["| %s | %d | %s | %s |" % (m, h, i, v) for (m, h, i), v in facts["bf16_checks"].items()]
    with open(os.path.join(out, "bench.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def write_ablation_tables(args, rows, header):
    fields = ["turned_off", "schedule", "median_ms_per_batch", "p10_ms", "p90_ms", "x_default", "gflops",
              "compile_ms"]
    with open(os.path.join(args.out, "ablation.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    lines = [header, "",
             "TreeLSTM, H=256, batch 10, SST: grove with one scheduling primitive turned off at a time "
             "(`grove bench --schedule PRIMITIVE=off`); × = time ÷ the default schedule's time.", "",
             "| turned off | ms per batch (median) | p10 – p90 | × default | GFLOP/s |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s – %s | %.2f | %.1f |" % (
            r["turned_off"], fmt_ms(r["median_ms_per_batch"]), fmt_ms(r["p10_ms"]), fmt_ms(r["p90_ms"]),
            r["x_default"], r["gflops"]))
    with open(os.path.join(args.out, "ablation.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def write_plot(out, rows, peaks):
    """bench.png: one panel per model; x: the configurations (H, batch, input set), y: each tool's time
    ÷ the FLOP time at the reference rate (log), with the line at 1 that rate's limit; bf16 rows as
    series of their own, with the bf16 peak as a dotted line where they are."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    reference = reference_rate(peaks)
    key = "x_over_" + reference
    measured = [r for r in rows if r.get(key)]
    models = [m for m, _ in MODELS if any(r["model"] == m for r in measured)]
    columns = min(3, len(models))
    grid_rows = -(-len(models) // columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(max(4.4 * columns, 8.8), 3.4 * grid_rows + 1.0),
                             sharey=True, squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    limit_label = ("1 = FMA peak (the fp32 hardware limit)" if reference == "fma"
                   else "1 = OpenBLAS SGEMM rate (not the hardware limit)")
    for ax, model in zip(axes.flat, models):
        configs = []
        for r in measured:
            if r["model"] == model and config_of(r)[1:] not in configs:
                configs.append(config_of(r)[1:])
        for (tool, precision), marker in zip(RUNS, "oPs*^Dv"):
            points = [(configs.index(config_of(r)[1:]), r[key]) for r in measured
                      if r["model"] == model and r["tool"] == tool and r.get("precision", "fp32") == precision]
            if points:
                ax.plot(*zip(*points), marker=marker, linewidth=0.8, linestyle="-" if precision == "fp32" else ":",
                        label=TOOL_LABELS[tool] + ("" if precision == "fp32" else " " + precision))
        ax.axhline(1.0, color="black", linewidth=1.2, label=limit_label)
        if reference == "fma" and peaks.get("sgemm_2t"):
            ax.axhline(peaks["fma_2t"] / peaks["sgemm_2t"], color="gray", linestyle="--", linewidth=1,
                       label="OpenBLAS SGEMM rate")
        bf16 = bf16_peak(peaks)
        if reference == "fma" and bf16 and any(r["model"] == model and r.get("precision") == "bf16" for r in measured):
            ax.axhline(peaks["fma_2t"] / bf16[0], color="gray", linestyle=":", linewidth=1,
                       label="bf16 peak (%s)" % bf16[1])
        ax.set_title(model, fontsize=11)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: "%g" % value))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(["H%d B%d %s" % c for c in configs], rotation=55, ha="right", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("time ÷ " + RATES[reference][0], fontsize=9)
    legend = {}
    for ax in axes.flat[:len(models)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    ncol = min(len(legend), max(3, 2 * columns))
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=ncol, fontsize=9, frameon=False)
    fig.suptitle("grove and its peers: ms per batch ÷ %s (lower is better)" % RATES[reference][0], fontsize=12)
    legend_rows = -(-len(legend) // ncol)
    fig.set_figheight(fig.get_figheight() + 0.25 * legend_rows)
    fig.tight_layout(rect=(0, min(0.5, 0.3 * legend_rows / fig.get_figheight()), 1, 1))
    fig.savefig(os.path.join(out, "bench.png"), dpi=120)


# --- Main ----------------------------------------------------------------------------------------

def run_flags(args):
    """The options that change what a run measured, as the header names them (" --quick --models treelstm")."""
    flags = [name for name, on in (("--quick", args.quick), ("--all-eager", args.all_eager),
                                   ("--no-ablation", args.no_ablation), ("--no-check", args.no_check),
                                   ("--no-bf16", args.no_bf16), ("--no-dynet", args.no_dynet)) if on]
    for name, value in (("--models", args.models), ("--repeat", args.repeat if args.repeat != (3 if args.quick else 5) else None),
                        ("--trees-limit", args.trees_limit if args.trees_limit != 100 and not args.quick else None)):
        if value is not None:
            flags.append("%s %s" % (name, value))
    return "".join(" " + flag for flag in flags)


def replot(csv_path, out):
    """--replot: bench.md and bench.png again from a finished run, measuring nothing; bench-run.json
    is written too, so that a run from before it replots the same way next time."""
    directory = os.path.dirname(os.path.abspath(csv_path))
    if not os.path.isfile(csv_path) or not any(os.path.isfile(os.path.join(directory, name))
                                               for name in ("bench-run.json", "bench.md")):
        sys.exit("bench.py: --replot needs a bench.csv and, beside it, bench-run.json or bench.md (%s)" % csv_path)
    rows = read_bench_csv(csv_path)
    facts = read_run_facts(directory)
    add_limits(rows, facts["peaks"])
    os.makedirs(out, exist_ok=True)
    write_run_facts(out, facts)
    write_bench_md(out, rows, facts)
    write_plot(out, rows, facts["peaks"])
    print("bench: wrote %s/bench.md, bench.png and bench-run.json from %s" % (out, csv_path))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="TreeFC and TreeLSTM, H=256, batch 1 and 10, 20 SST trees and the perfect trees, "
                             "repeat 3, ablation included")
    parser.add_argument("--trees-limit", type=int, default=100, help="first N SST test trees (default 100)")
    parser.add_argument("--repeat", type=int, help="timed passes per measurement (default 5; --quick 3)")
    parser.add_argument("--models", help="comma-separated subset of " + ",".join(m for m, _ in MODELS))
    parser.add_argument("--grove", default=os.path.join(ROOT, "build", "tools", "grove"))
    parser.add_argument("--peers-build", default=os.path.join(ROOT, "build-peers"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench-data"),
                        help="where trees and weights are written")
    parser.add_argument("--out", default=os.path.join(ROOT, "experiments", "results"))
    parser.add_argument("--all-eager", action="store_true", help="also run the eager peer at H=512 and on MV-RNN")
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument("--no-check", action="store_true",
                        help="skip comparing grove's root states with libtorch's (batch 10, same weights)")
    parser.add_argument("--no-bf16", action="store_true", help="no bf16 rows (grove's and libtorch's)")
    parser.add_argument("--no-dynet", action="store_true", help="no DyNet rows")
    parser.add_argument("--dynet-python", help="a python that imports dynet (default: the venv of --dynet-venv)")
    parser.add_argument("--dynet-venv", default=os.path.join(ROOT, "build-dynet"),
                        help="where the DyNet venv is made on first use (pip install dynet38; default build-dynet)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per tool invocation")
    parser.add_argument("--quiet", action="store_true", help="no progress line on a terminal")
    parser.add_argument("--replot", metavar="CSV",
                        help="measure nothing: rewrite bench.md and bench.png in --out from a run's bench.csv "
                             "and the bench-run.json (or, for an older run, bench.md) beside it")
    args = parser.parse_args()
    if args.replot:
        replot(args.replot, args.out)
        return
    global PROGRESS
    PROGRESS = Progress(sys.stderr.isatty() and not args.quiet)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 5
    if args.quick:
        args.trees_limit = min(args.trees_limit, 20)
    models = MODELS if not args.models else [m for m in MODELS if m[0] in args.models.split(",")]
    if args.quick and not args.models:
        models = [m for m in MODELS if m[0] in ("treefc", "treelstm")]
    hiddens = [256] if args.quick else [256, 512]
    batches = [1, 10]
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    if not os.access(args.grove, os.X_OK):
        sys.exit("bench.py: no grove program at %s (build it: make build)" % args.grove)
    if not args.no_check:
        # The agreement checks at the end need numpy: say so before the minutes of measuring, not after.
        try:
            import numpy  # noqa: F401
        except ImportError:
            sys.exit("bench.py: %s has no numpy (the agreement checks need it): run it as `make bench` "
                     "does, with /usr/bin/python3 and Debian's python3-numpy, or pass --no-check" % sys.executable)

    started = time.time()
    load = os.getloadavg()
    args.loaded = load[0] > 1.5
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    log("bench: %s, load average %.1f %.1f %.1f" % (stamp, *load))
    subprocess.run([os.path.join(ROOT, "scripts", "install-peer-deps")], check=True)
    run(["cmake", "-S", PEERS, "-B", args.peers_build, "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", args.peers_build, "-j1"])
    sgemm, fma = steady_peak(args, "sgemm_peak"), steady_peak(args, "fma_peak")
    bf16_peaks, peak_notes = measured_peaks(args, "bf16_peak")
    vdp, amx = bf16_peaks.get("bf16-peak", {}), bf16_peaks.get("amx-peak", {})
    peaks = {"sgemm_1t": sgemm.get(1), "sgemm_2t": sgemm.get(2), "fma_1t": fma.get(1), "fma_2t": fma.get(2),
             "bf16_1t": vdp.get(1), "bf16_2t": vdp.get(2), "amx_1t": amx.get(1), "amx_2t": amx.get(2)}
    peaks = {k: v for k, v in peaks.items() if v}
    log("bench: OpenBLAS SGEMM 2048³: %.1f GFLOP/s on 1 thread, %.1f on 2" % (sgemm.get(1, 0), sgemm.get(2, 0)))
    log("bench: AVX-512 FMA peak (16 zmm chains, no memory): %.1f GFLOP/s on 1 thread, %.1f on 2" % (
        fma.get(1, 0), fma.get(2, 0)))
    for peer, what, measured_rates in (("bf16-peak", "AVX512-BF16 vdpbf16ps peak (16 zmm chains)", vdp),
                                       ("amx-peak", "AMX tdpbf16ps peak (4 accumulator tiles)", amx)):
        log("bench: %s: %s" % (what, "%.1f GFLOP/s on 1 thread, %.1f on 2" % (
            measured_rates.get(1, 0), measured_rates.get(2, 0)) if measured_rates else peak_notes.get(peer, "—")))
    args.grove_bf16_skip = None
    args.dynet_python = dynet_python(args)
    if args.dynet_skip:
        log("bench: DyNet rows %s" % args.dynet_skip)

    input_sets = [write_sst(args.trees_limit, args.work), write_perfect(args.work), write_nary(args.work)]
    rows, checks, bf16_checks = [], {}, {}
    configs = [(model, stem, hidden, all_inputs) for model, stem in models for hidden in hiddens
               for all_inputs in input_sets if all_inputs["name"] != "nary" or model in ANY_ARITY_MODELS]

    def runs_of(model, hidden, batch, inputs_name):
        """The (tool, precision) pairs a configuration runs: bf16 at BF16_CONFIGS, DyNet for its models."""
        return [(tool, precision) for tool, precision in RUNS
                if (precision == "fp32" or (not args.no_bf16 and (model, hidden, batch, inputs_name) in BF16_CONFIGS))
                and (tool != "dynet-autobatch" or model in DYNET_MODELS)]

    def bf16_checked(model, hidden, inputs_name):
        return not args.no_check and any(precision == "bf16" for batch in batches
                                         for _, precision in runs_of(model, hidden, batch, inputs_name))

    ablation_settings = [None] + PRIMITIVES + ["unroll=2", "epilogue=on"]
    PROGRESS.start_counting(sum(len(runs_of(model, hidden, batch, inputs["name"]))
                                for model, _, hidden, inputs in configs for batch in batches)
                            + (0 if args.no_check else len(configs))
                            + sum(bf16_checked(model, hidden, inputs["name"]) for model, _, hidden, inputs in configs)
                            + (0 if args.no_ablation else len(ablation_settings)))
    for model, stem, hidden, all_inputs in configs:
        inputs = first_trees(all_inputs, MVRNN_TREES[all_inputs["name"]]) if model == "mvrnn" else all_inputs
        weights, grove_ran_bf16 = None, False
        for batch in batches:
            for tool, precision in runs_of(model, hidden, batch, inputs["name"]):
                row = {"model": model, "hidden": hidden, "batch": batch, "input": inputs["name"], "tool": tool,
                       "precision": precision, "threads": 1 if tool == "dynet-autobatch" else 2,
                       "trees": inputs["count"]}
                reason = skip_reason(args, tool, model, hidden, batch)
                if reason is None:
                    weights = weights or weights_file(args, stem, hidden, inputs)
                    try:
                        if tool == "grove":
                            result = run_grove(args, stem, inputs, weights, batch, precision=precision)
                            row.update(flops_per_batch=int(result["flops_per_batch"]),
                                       gflops=result["gflops"], compile_ms=result["compile_ms"],
                                       inspector_ms=result["inspector_ms"])
                            grove_ran_bf16 = grove_ran_bf16 or precision == "bf16"
                        else:
                            result = run_peer(args, tool, model, hidden, inputs, weights, batch, precision)
                        row.update({k: result[k] for k in ("median_ms_per_batch", "p10_ms", "p90_ms")})
                    except Skipped as e:
                        reason = str(e)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        reason = "failed: %s" % str(e).splitlines()[0][:200]
                if reason is not None:
                    row["note"] = reason
                rows.append(row)
                PROGRESS.step()
                log("  %-16s H=%-3d B=%-2d %-7s %-24s %-4s %s" % (
                    model, hidden, batch, inputs["name"], tool, precision,
                    row.get("note") or "%.4f ms per batch (p10 %.4f, p90 %.4f)" % (
                        row["median_ms_per_batch"], row["p10_ms"], row["p90_ms"])))
        if weights and not args.no_check:
            try:
                checks[(model, hidden, inputs["name"])] = agreement(args, model, stem, hidden, inputs, weights)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                checks[(model, hidden, inputs["name"])] = "failed: %s | —" % str(e).splitlines()[0][:200]
            log("  %-16s H=%-3d %-7s grove vs libtorch roots: largest difference | largest value: %s" % (
                model, hidden, inputs["name"], checks[(model, hidden, inputs["name"])]))
        if not args.no_check:
            PROGRESS.step()
        if weights and bf16_checked(model, hidden, inputs["name"]):
            try:
                bf16_checks[(model, hidden, inputs["name"])] = bf16_agreement(args, model, stem, hidden, inputs,
                                                                              weights, grove_ran_bf16)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                bf16_checks[(model, hidden, inputs["name"])] = "failed: %s | —" % str(e).splitlines()[0][:200]
            log("  %-16s H=%-3d %-7s bf16 vs libtorch fp32 roots: largest difference ÷ largest value | largest "
                "value: %s" % (model, hidden, inputs["name"], bf16_checks[(model, hidden, inputs["name"])]))
            PROGRESS.step()

    header = ("Measured %s by `experiments/bench.py%s` (%d SST test trees, %d perfect trees of height %d, "
              "%d random trees of any arity for child-sum; "
              "load average at the start %.1f%s)." % (
                  stamp, run_flags(args), input_sets[0]["count"], PERFECT_TREES, PERFECT_HEIGHT, NARY_TREES,
                  load[0], ": **the 2 vCPUs were shared with other work, so only ratios within this run "
                  "mean anything**" if args.loaded else ""))
    facts = {"header": header, "repeat": args.repeat, "loaded": args.loaded, "peaks": peaks, "peak_notes": peak_notes,
             "checks": checks, "bf16_checks": bf16_checks}
    add_limits(rows, peaks)
    write_bench_csv(args.out, rows)
    write_run_facts(args.out, facts)
    log("\n" + write_bench_md(args.out, rows, facts))
    write_plot(args.out, rows, peaks)

    if not args.no_ablation:
        log("bench: ablation (TreeLSTM, H=256, batch 10, SST)")
        weights = weights_file(args, "treelstm", 256, input_sets[0])
        ablation = []
        # Each primitive off in turn; then the ones that are off by default (recursive unrolling,
        # epilogue fusion), on.
        for off in ablation_settings:
            override = "" if off is None else off if "=" in off else off + "=off"
            result = run_grove(args, "treelstm", input_sets[0], weights, 10, override)
            ablation.append({"turned_off": off or "(none: default)", "schedule": result["schedule"],
                             **{k: result[k] for k in ("median_ms_per_batch", "p10_ms", "p90_ms", "gflops",
                                                       "compile_ms")}})
            ablation[-1]["x_default"] = result["median_ms_per_batch"] / ablation[0]["median_ms_per_batch"]
            log("  %-16s %.4f ms per batch" % (ablation[-1]["turned_off"], result["median_ms_per_batch"]))
            PROGRESS.step()
        log("\n" + write_ablation_tables(args, ablation, header))
    PROGRESS.finish()
    log("bench: done in %.0f s; wrote %s/bench.md, bench.csv, bench-run.json, bench.png%s" % (
        time.time() - started, args.out, "" if args.no_ablation else ", ablation.md, ablation.csv"))


if __name__ == "__main__":
    main()
