#!/usr/bin/python3
"""grove against its peers, in one run on this machine (`make bench`; `make bench BENCH_ARGS=--quick`).

1. Measures the OpenBLAS SGEMM ceiling (experiments/peers/sgemm_peak, 1 and 2 threads) and the bare
   AVX-512 FMA peak below it (experiments/peers/fma_peak).
2. For each tree model × H × batch × input set, runs `grove bench --json` and the peers
   (libtorch and PyTorch level-batched, PyTorch eager) on the same trees with the same weights, and
   prints each result as it comes. For each model, H and input set it also checks that grove's root
   states are libtorch's (batch 10; --no-check skips it).
3. Runs the ablation: TreeLSTM, H=256, batch 10, SST, with each of grove's scheduling primitives
   turned off in turn, and recursive unrolling and epilogue fusion (off by default) turned on.
4. Writes experiments/results/bench.md, bench.csv, bench-run.json (what bench.md says beyond the CSV:
   header, passes, measured rates, root checks), bench.png (one panel per model), ablation.md and
   ablation.csv. `--replot results/bench.csv` rewrites bench.md and bench.png from those, measuring
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
PERF-NOTES' environment and 2 threads. Each configuration's FLOPs per batch (grove's count from the
ILIR, which is flops.py's) give two FLOP times: at this run's 2-thread FMA peak (the hardware's limit:
every run's ratio to it is ≥ 1) and at its 2-thread SGEMM rate (a tuned GEMM's, not a hardware limit:
a ratio below 1 means faster than OpenBLAS's GEMM, not than the machine).
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
TOOLS = ["grove", "libtorch-level-batched", "pytorch-level-batched", "pytorch-eager"]
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
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(command), result.returncode,
                                                          result.stderr.strip()[-2000:]))
    return result.stdout


def last_json(stdout):
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


def run_grove(args, stem, inputs, weights, batch, schedule=""):
    command = [args.grove, "bench", os.path.join(ROOT, "models", stem + ".grove"), "--trees", inputs["trees"],
               "--weights", weights, "--batch", str(batch), "--repeat", str(args.repeat), "--threads", "2",
               "--json"]
    if schedule:
        command += ["--schedule", schedule]
    return last_json(run(command, timeout=args.timeout))


def run_peer(args, tool, model, hidden, inputs, weights, batch):
    common = ["--model", model, "--hidden", str(hidden), "--batch", str(batch), "--repeat", str(args.repeat),
              "--threads", "2", "--trees", inputs["trees"], "--vocab", inputs["vocab"], "--weights", weights]
    if tool == "libtorch-level-batched":
        command = [os.path.join(args.peers_build, "libtorch_tree")] + common
    else:
        mode = "batched" if tool == "pytorch-level-batched" else "eager"
        command = [PYTHON, os.path.join(PEERS, "pytorch_tree.py"), "--mode", mode] + common
    return last_json(run(command, timeout=args.timeout))


def agreement(args, model, stem, hidden, inputs, weights):
    """Largest |grove − libtorch| over every root h (and the largest |h|), batch 10, same weights."""
    import numpy as np
    ours, theirs = os.path.join(args.work, "roots-grove.npy"), os.path.join(args.work, "roots-libtorch.npy")
    run([args.grove, "run", os.path.join(ROOT, "models", stem + ".grove"), "--weights", weights, "--trees",
         inputs["trees"], "--batch", "10", "--out", ours], timeout=args.timeout)
    run([os.path.join(args.peers_build, "libtorch_tree"), "--model", model, "--hidden", str(hidden), "--batch", "10",
         "--repeat", "1", "--threads", "2", "--trees", inputs["trees"], "--vocab", inputs["vocab"], "--weights",
         weights, "--out", theirs], timeout=args.timeout)
    a, b = np.load(ours), np.load(theirs)
    if a.shape != b.shape:
        return "shapes differ: grove %s, libtorch %s | —" % (a.shape, b.shape)
    return "%.2g | %.2g" % (float(np.abs(a - b).max()), float(np.abs(b).max()))


def skip_reason(args, tool, model, hidden, batch):
    """Why a configuration is not run (None: it is). Said in the table, never dropped silently."""
    if model == "mvrnn" and hidden >= 512:
        return "skipped: MV-RNN at H=512 is ~4H³ = 0.5 GFLOP per node (~1 TFLOP per SST pass)"
    if tool == "pytorch-eager" and (hidden >= 512 or model == "mvrnn") and not args.all_eager:
        return "skipped: eager, one node per call, takes minutes here (--all-eager runs it)"
    return None


def measured_peak(args, program):
    """{threads: GFLOP/s} from a peer that prints one JSON line per thread count (sgemm_peak, fma_peak)."""
    peaks = {}
    for line in run([os.path.join(args.peers_build, program), "--runs", "5"]).splitlines():
        record = json.loads(line)
        peaks[record["threads"]] = record["gflops"]
    return peaks


# --- Reports -------------------------------------------------------------------------------------

# The rates a configuration's FLOPs are set against, both measured in the run on 2 threads: (what the
# tables and the plot call the FLOP time at that rate, what a ratio to it can and cannot mean). The
# FMA peak is the hardware's limit; OpenBLAS's SGEMM rate is only what a tuned GEMM reaches, so a time
# below the FLOP time at that rate is possible and must not read as beating the hardware.
RATES = {"fma": ("FLOP time at FMA peak", "the hardware limit: ≥ 1"),
         "sgemm": ("FLOP time at SGEMM rate", "not a hardware limit: < 1 possible")}
TOOL_LABELS = {"grove": "grove", "libtorch-level-batched": "libtorch level-batched",
               "pytorch-level-batched": "PyTorch level-batched", "pytorch-eager": "PyTorch eager"}
CSV_FIELDS = ["model", "hidden", "batch", "input", "trees", "tool", "median_ms_per_batch", "p10_ms", "p90_ms",
              "flops_per_batch", "fma_limit_ms", "x_over_fma", "sgemm_limit_ms", "x_over_sgemm", "gflops",
              "compile_ms", "inspector_ms", "note"]
TEXT_FIELDS, INT_FIELDS = {"model", "input", "tool", "note"}, {"hidden", "batch", "trees", "flops_per_batch"}


def fmt_ms(value):
    return "%.3g" % value if value < 100 else "%.0f" % value


def config_of(row):
    return row["model"], row["hidden"], row["batch"], row["input"]


def reference_rate(peaks):
    """The rate times are shown against in parentheses and in the plot: the FMA peak when measured."""
    return "fma" if peaks.get("fma_2t") else "sgemm"


def add_limits(rows, peaks):
    """Sets each measured row's FLOP time at every 2-thread rate the run has (<rate>_limit_ms, from
    grove's FLOP count for the configuration, which is flops.py's) and its time ÷ that (x_over_<rate>)."""
    flops = {config_of(r): r["flops_per_batch"] for r in rows if r["tool"] == "grove" and r.get("flops_per_batch")}
    for r in rows:
        if r.get("note") or config_of(r) not in flops:
            continue
        for rate in RATES:
            if peaks.get(rate + "_2t"):
                limit_ms = flops[config_of(r)] / (peaks[rate + "_2t"] * 1e9) * 1e3
                r[rate + "_limit_ms"] = round(limit_ms, 4)
                r["x_over_" + rate] = round(r["median_ms_per_batch"] / limit_ms, 2)


def write_bench_csv(out, rows):
    with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_bench_csv(path):
    """bench.csv's rows as the run built them: numbers as numbers, empty cells left out. Columns of
    older runs (flop_limit_ms, x_over_limit) are dropped: add_limits recomputes them."""
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: v if k in TEXT_FIELDS else int(v) if k in INT_FIELDS else float(v)
                 for k, v in record.items() if v != "" and k in CSV_FIELDS} for record in csv.DictReader(f)]


def write_run_facts(out, facts):
    """bench-run.json: what bench.md says beyond bench.csv, so that --replot can rewrite it."""
    with open(os.path.join(out, "bench-run.json"), "w", encoding="utf-8") as f:
        json.dump(dict(facts, checks=[[*key, value] for key, value in facts["checks"].items()]), f,
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
            "loaded": "shared with other work" in header, "peaks": peaks, "checks": checks}


def rate_lines(peaks):
    """The paragraph that says what each FLOP time is and how to read a ratio to it."""
    lines = []
    if peaks.get("fma_2t"):
        lines.append("- **%s** = FLOPs ÷ the bare AVX-512 FMA peak measured in this run (%.1f GFLOP/s on 2 threads; "
                     "1 thread: %s; experiments/peers/fma_peak.c). It is the hardware's limit: time ÷ it is ≥ 1 "
                     "for any code." % (RATES["fma"][0], peaks["fma_2t"], "%.1f" % peaks["fma_1t"]
                                        if peaks.get("fma_1t") else "not recorded"))
    lines.append("- **%s** = FLOPs ÷ OpenBLAS's SGEMM 2048³ rate measured in this run (%.1f GFLOP/s on 2 threads; "
                 "1 thread: %.1f). It is what a tuned library GEMM reaches, not a hardware limit: time ÷ it "
                 "below 1 means faster than that GEMM, not faster than the hardware." % (
                     RATES["sgemm"][0], peaks.get("sgemm_2t") or 0, peaks.get("sgemm_1t") or 0))
    if not peaks.get("fma_2t"):
        lines.append("- The FMA peak (the hardware's limit) was not measured in this run: the run predates "
                     "experiments/peers/fma_peak.c; the next `make bench` measures it and adds its columns.")
    return lines


def write_bench_md(out, rows, facts):
    peaks, reference = facts["peaks"], reference_rate(facts["peaks"])
    rates = [rate for rate in RATES if peaks.get(rate + "_2t")]
    configs, counts = [], {}
    for r in rows:
        counts[config_of(r)] = r["trees"]
        if config_of(r) not in configs:
            configs.append(config_of(r))
    by = {config_of(r) + (r["tool"],): r for r in rows}
    lines = [facts["header"], "",
             "ms per batch, median of %d passes; in parentheses: time ÷ %s. Each configuration's FLOPs per "
             "batch (grove's count from the ILIR) are set against rates measured in the same run:" % (
                 facts["repeat"], RATES[reference][0]), ""] + rate_lines(peaks) + ["",
             "| model | H | batch | trees | %s | %s | grove ÷ libtorch | %s |" % (
                 " | ".join(TOOL_LABELS[t] for t in TOOLS), " | ".join(RATES[r][0] + ", ms" for r in rates),
                 " | ".join("grove ÷ %s (%s)" % RATES[r] for r in rates)),
             "|---|---|---|---|" + "---|" * (len(TOOLS) + 2 * len(rates) + 1)]
    notes = []
    for config in configs:
        cells, limits = [], {}
        for tool in TOOLS:
            r = by.get(config + (tool,))
            if r is None:
                cells.append("—")
            elif r.get("note"):
                if r["note"] not in notes:
                    notes.append(r["note"])
                cells.append("n/a [%d]" % (notes.index(r["note"]) + 1))
            else:
                cells.append("%s (%.1f×)" % (fmt_ms(r["median_ms_per_batch"]), r["x_over_" + reference])
                             if r.get("x_over_" + reference) else fmt_ms(r["median_ms_per_batch"]))
            for rate in rates:
                if r is not None and r.get(rate + "_limit_ms"):
                    limits[rate] = r[rate + "_limit_ms"]
        g, lt = by.get(config + ("grove",)), by.get(config + ("libtorch-level-batched",))
        ratio = ("%.2f" % (g["median_ms_per_batch"] / lt["median_ms_per_batch"])
                 if g and lt and not g.get("note") and not lt.get("note") else "—")
        overs = ["%.2f" % g["x_over_" + rate] if g and g.get("x_over_" + rate) else "—" for rate in rates]
        model, hidden, batch, inputs = config
        lines.append("| %s | %d | %d | %d %s | %s | %s | %s | %s |" % (
            model, hidden, batch, counts[config], inputs, " | ".join(cells),
            " | ".join(fmt_ms(limits[rate]) if rate in limits else "—" for rate in rates), ratio, " | ".join(overs)))
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
    ÷ the FLOP time at the reference rate (log), with the line at 1 that rate's limit."""
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
    fig, axes = plt.subplots(grid_rows, columns, figsize=(4.4 * columns, 3.4 * grid_rows + 1.0), sharey=True,
                             squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    limit_label = ("1 = FMA peak (the hardware limit)" if reference == "fma"
                   else "1 = OpenBLAS SGEMM rate (not the hardware limit)")
    for ax, model in zip(axes.flat, models):
        configs = []
        for r in measured:
            if r["model"] == model and config_of(r)[1:] not in configs:
                configs.append(config_of(r)[1:])
        for tool, marker in zip(TOOLS, "os^D"):
            points = [(configs.index(config_of(r)[1:]), r[key]) for r in measured
                      if r["model"] == model and r["tool"] == tool]
            if points:
                ax.plot(*zip(*points), marker=marker, linewidth=0.8, label=TOOL_LABELS[tool])
        ax.axhline(1.0, color="black", linewidth=1.2, label=limit_label)
        if reference == "fma" and peaks.get("sgemm_2t"):
            ax.axhline(peaks["fma_2t"] / peaks["sgemm_2t"], color="gray", linestyle="--", linewidth=1,
                       label="OpenBLAS SGEMM rate")
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
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle("grove and its peers: ms per batch ÷ %s (lower is better)" % RATES[reference][0], fontsize=12)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(os.path.join(out, "bench.png"), dpi=120)


# --- Main ----------------------------------------------------------------------------------------

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

    started = time.time()
    load = os.getloadavg()
    args.loaded = load[0] > 1.5
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    log("bench: %s, load average %.1f %.1f %.1f" % (stamp, *load))
    subprocess.run([os.path.join(ROOT, "scripts", "install-peer-deps")], check=True)
    run(["cmake", "-S", PEERS, "-B", args.peers_build, "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", args.peers_build, "-j1"])
    sgemm, fma = measured_peak(args, "sgemm_peak"), measured_peak(args, "fma_peak")
    peaks = {"sgemm_1t": sgemm.get(1), "sgemm_2t": sgemm.get(2), "fma_1t": fma.get(1), "fma_2t": fma.get(2)}
    log("bench: OpenBLAS SGEMM 2048³: %.1f GFLOP/s on 1 thread, %.1f on 2" % (sgemm.get(1, 0), sgemm.get(2, 0)))
    log("bench: AVX-512 FMA peak (16 zmm chains, no memory): %.1f GFLOP/s on 1 thread, %.1f on 2" % (
        fma.get(1, 0), fma.get(2, 0)))

    input_sets = [write_sst(args.trees_limit, args.work), write_perfect(args.work), write_nary(args.work)]
    rows, checks = [], {}
    configs = [(model, stem, hidden, all_inputs) for model, stem in models for hidden in hiddens
               for all_inputs in input_sets if all_inputs["name"] != "nary" or model in ANY_ARITY_MODELS]
    ablation_settings = [None] + PRIMITIVES + ["unroll=2", "epilogue=on"]
    PROGRESS.start_counting(len(configs) * (len(batches) * len(TOOLS) + (0 if args.no_check else 1))
                            + (0 if args.no_ablation else len(ablation_settings)))
    for model, stem, hidden, all_inputs in configs:
        inputs = first_trees(all_inputs, MVRNN_TREES[all_inputs["name"]]) if model == "mvrnn" else all_inputs
        weights = None
        for batch in batches:
            for tool in TOOLS:
                row = {"model": model, "hidden": hidden, "batch": batch, "input": inputs["name"], "tool": tool,
                       "trees": inputs["count"]}
                reason = skip_reason(args, tool, model, hidden, batch)
                if reason is None:
                    weights = weights or weights_file(args, stem, hidden, inputs)
                    try:
                        if tool == "grove":
                            result = run_grove(args, stem, inputs, weights, batch)
                            row.update(flops_per_batch=int(result["flops_per_batch"]),
                                       gflops=result["gflops"], compile_ms=result["compile_ms"],
                                       inspector_ms=result["inspector_ms"])
                        else:
                            result = run_peer(args, tool, model, hidden, inputs, weights, batch)
                        row.update({k: result[k] for k in ("median_ms_per_batch", "p10_ms", "p90_ms")})
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        reason = "failed: %s" % str(e).splitlines()[0][:200]
                if reason is not None:
                    row["note"] = reason
                rows.append(row)
                PROGRESS.step()
                log("  %-16s H=%-3d B=%-2d %-7s %-24s %s" % (
                    model, hidden, batch, inputs["name"], tool,
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

    header = ("Measured %s by `experiments/bench.py%s` (%d SST test trees, %d perfect trees of height %d, "
              "%d random trees of any arity for child-sum; "
              "load average at the start %.1f%s)." % (
                  stamp, " --quick" if args.quick else "", input_sets[0]["count"], PERFECT_TREES, PERFECT_HEIGHT, NARY_TREES,
                  load[0], ": **the 2 vCPUs were shared with other work, so only ratios within this run "
                  "mean anything**" if args.loaded else ""))
    facts = {"header": header, "repeat": args.repeat, "loaded": args.loaded, "peaks": peaks, "checks": checks}
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
