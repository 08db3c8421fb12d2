#!/usr/bin/python3
"""grove's sequence and grid models against PyTorch, in one run on this machine.

  /usr/bin/python3 experiments/bench_sequences.py [--grove build/tools/grove] [--repeat 5]
      [--configs "256:1 256:10 512:1 512:10"] [--models "lstm gru dagrnn"]

1. Inputs. Sequences: the words of the first 100 SST test trees (datasets/sst/test.txt), left to
   right, as ids of datasets/sst/vocab.txt (lengths 2–56, as a sentence classifier sees them).
   Grids: 20 grids of 16×16 tokens drawn from 1,000 ids with a fixed seed.
2. Weights: `grove init-weights --seed 1 --sizes H=h,D=h,V=...`, one safetensors file per model and
   H, read by grove and by the peer (the same names and shapes: docs/MODELS.md).
3. For each model × H × batch: grove, then the peer (experiments/peers/pytorch_seq.py: nn.LSTM /
   nn.GRU over packed calls; the DAG-RNN by anti-diagonal wavefronts).
   - grove: `grove bench --sequences|--grids --json`, the trees' protocol: compile once, one warm-up
     pass, --repeat timed passes over all inputs in calls of `batch`; median of (pass time ÷ calls),
     inspector included (as the peers' packing and wavefront indices are); and one `grove run` for
     the outputs the cross-check compares.
   - the peer: one warm-up pass and --repeat timed passes in one process (experiments/README.md,
     "Protocol"); median of (pass time ÷ calls).
   - cross-check: the largest |grove − PyTorch| over every output state (last h per sequence, the
     sink h per grid), same weights, same inputs.
4. Writes experiments/results/sequences.md and sequences.csv.

Every command runs with PERF-NOTES' environment (OPENBLAS_CORETYPE=SkylakeX, OMP_WAIT_POLICY=PASSIVE,
the MALLOC_* thresholds), niced by 5 (this script lowers its own priority), and 2 threads.
"""

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "experiments", "peers")
PYTHON = "/usr/bin/python3"
sys.path.insert(0, PEERS)
import peer_common as pc  # noqa: E402

ENV = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_WAIT_POLICY="PASSIVE",
           MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="1073741824",
           MALLOC_TOP_PAD_="268435456")
GRID_VOCAB = 1000
NAMES = {"lstm": "LSTM", "gru": "GRU", "dagrnn": "DAG-RNN (16×16 grids)"}


def run(command, timeout=600):
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"bench_sequences.py: `{' '.join(command)}` failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


def write_inputs(work, n_sequences, n_grids):
    """The sequence and grid files; returns (sequences path, its vocabulary size, grids path)."""
    sst = os.path.join(ROOT, "datasets", "sst")
    trees = pc.read_trees(os.path.join(sst, "test.txt"), n_sequences)
    vocab = pc.read_vocab(os.path.join(sst, "vocab.txt"))
    pc.resolve_tokens(trees, vocab, os.path.join(sst, "test.txt"))
    sequences = os.path.join(work, "sst-test-words.txt")
    with open(sequences, "w") as f:
        for tree in trees:  # leaves in post-order are the words from left to right
            f.write(" ".join(str(t) for t in tree.token if t >= 0) + "\n")
    rng = np.random.default_rng(20261129)
    grids = os.path.join(work, "grids-16x16.txt")
    with open(grids, "w") as f:
        for _ in range(n_grids):
            f.write("16 16 " + " ".join(str(t) for t in rng.integers(0, GRID_VOCAB, 256)) + "\n")
    return sequences, len(vocab), grids


def time_grove(args, model, weights, inputs, batch, out):
    """grove bench's figures (median, p10, p90 ms per batch, GFLOP/s) and the outputs in `out`."""
    flag = "--grids" if model == "dagrnn" else "--sequences"
    stem = os.path.join(ROOT, "models", model + ".grove")
    result = json.loads(run([args.grove, "bench", stem, "--weights", weights, flag, inputs, "--batch", str(batch),
                             "--repeat", str(args.repeat), "--threads", "2", "--json"]).strip().splitlines()[-1])
    run([args.grove, "run", stem, "--weights", weights, flag, inputs, "--batch", str(batch), "--out", out])
    return result


def time_peer(args, model, weights, inputs, batch, out, grove_out):
    flag = "--grids" if model == "dagrnn" else "--sequences"
    line = run([PYTHON, os.path.join(PEERS, "pytorch_seq.py"), "--model", model, "--weights", weights, flag,
                inputs, "--batch", str(batch), "--repeat", str(args.repeat), "--threads", "2", "--out", out,
                "--compare", grove_out])
    return json.loads(line.strip().splitlines()[-1])


def git_head():
    result = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True)
    return result.stdout.strip() or "?"


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_results(args, rows, started, loads):
    os.makedirs(args.results, exist_ok=True)
    fields = ["model", "hidden", "batch", "inputs", "grove_ms", "grove_p10_ms", "grove_p90_ms", "grove_gflops",
              "pytorch_ms",
              "pytorch_p10_ms", "pytorch_p90_ms", "ratio_grove_over_pytorch", "max_abs_diff",
              "max_abs_output"]
    with open(os.path.join(args.results, "sequences.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in fields})
    lines = ["# Sequences and DAG-RNN: grove vs PyTorch (CPU, fp32, 2 threads)", "",
             f"Run {started} UTC, repeat {args.repeat}; load average (1/5/15 min) before: {loads[0]}, "
             f"after: {loads[1]}. Inputs: the first {args.sequences} SST test sentences "
             f"(word ids) for LSTM/GRU; {args.grids} random 16×16 grids for the DAG-RNN (south-east sweep). "
             "ms per batch = median of (pass time ÷ calls) after 1 warm-up pass, inspector included; "
             "grove: `grove bench --json`; PyTorch: `experiments/peers/pytorch_seq.py`. "
             f"grove program: {args.grove} (repository at {git_head()}).", "",
             "| model | H | batch | grove ms (p10–p90) | grove GFLOP/s | PyTorch ms (p10–p90) | grove ÷ PyTorch "
             "| max abs diff | max abs h |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {NAMES[r['model']]} | {r['hidden']} | {r['batch']} | {r['grove_ms']:.3f} "
                     f"({r['grove_p10_ms']:.3f}–{r['grove_p90_ms']:.3f}) | {r['grove_gflops']:.0f} | "
                     f"{r['pytorch_ms']:.3f} ({r['pytorch_p10_ms']:.3f}–{r['pytorch_p90_ms']:.3f}) | "
                     f"{r['ratio_grove_over_pytorch']:.2f} | {r['max_abs_diff']:.2g} | "
                     f"{r['max_abs_output']:.2f} |")
    with open(os.path.join(args.results, "sequences.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grove", default=os.path.join(ROOT, "build", "tools", "grove"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--configs", default="256:1 256:10 512:1 512:10", help="H:batch pairs")
    parser.add_argument("--models", default="lstm gru dagrnn")
    parser.add_argument("--sequences", type=int, default=100, help="first N SST test sentences")
    parser.add_argument("--grids", type=int, default=20)
    parser.add_argument("--work", default=os.path.join(ROOT, "build-bench-sequences"))
    parser.add_argument("--results", default=os.path.join(ROOT, "experiments", "results"))
    args = parser.parse_args()
    if not os.access(args.grove, os.X_OK):
        sys.exit(f"bench_sequences.py: no grove program at {args.grove}; build it or pass --grove PATH")
    os.nice(5)
    os.makedirs(args.work, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    loads = [load_average()]
    sequences, vocab_size, grids = write_inputs(args.work, args.sequences, args.grids)
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs.split()]

    rows = []
    for model in args.models.split():
        inputs = grids if model == "dagrnn" else sequences
        vocab = GRID_VOCAB if model == "dagrnn" else vocab_size
        for hidden in sorted({h for h, _ in configs}):
            weights = os.path.join(args.work, f"{model}-H{hidden}.safetensors")
            run([args.grove, "init-weights", os.path.join(ROOT, "models", model + ".grove"), "--sizes",
                 f"H={hidden},D={hidden},V={vocab}", "--seed", "1", "--out", weights])
            for batch in [b for h, b in configs if h == hidden]:
                grove_out = os.path.join(args.work, "out-grove.npy")
                peer_out = os.path.join(args.work, "out-pytorch.npy")
                grove = time_grove(args, model, weights, inputs, batch, grove_out)
                grove_ms = grove["median_ms_per_batch"]
                peer = time_peer(args, model, weights, inputs, batch, peer_out, grove_out)
                row = {"model": model, "hidden": hidden, "batch": batch, "inputs": peer["inputs"],
                       "grove_ms": grove_ms, "grove_p10_ms": grove["p10_ms"], "grove_p90_ms": grove["p90_ms"],
                       "grove_gflops": grove["gflops"],
                       "pytorch_ms": peer["median_ms_per_batch"], "pytorch_p10_ms": peer["p10_ms"],
                       "pytorch_p90_ms": peer["p90_ms"],
                       "ratio_grove_over_pytorch": round(grove_ms / peer["median_ms_per_batch"], 3),
                       "max_abs_diff": peer["max_abs_diff"],
                       "max_abs_output": float(np.abs(np.load(peer_out)).max())}
                print(json.dumps(row), flush=True)
                rows.append(row)
    loads.append(load_average())
    write_results(args, rows, started, loads)


if __name__ == "__main__":
    main()
