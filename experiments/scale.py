#!/usr/bin/env python3
"""Corpus-scale `grove run` (issue 13's figures): trees per second and peak resident memory as the
input grows, and the same run over 1, 2 and 4 MPI ranks on this machine.

Inputs are the SST test trees (datasets/sst/test.txt, 2,210 trees) repeated up to N trees; the model
is models/treelstm.grove with seeded random weights (H = D = --hidden, the SST vocabulary), run in
calls of --batch trees with `grove run --stats --quiet`. Each row of the tables is one run; the
machine is shared and noisy, so rates are indicative (see ../shared notes in experiments/README.md).
Writes experiments/results/scale.json and scale.md.

  /usr/bin/python3 experiments/scale.py --grove build/tools/grove --work build/scale \
      [--sizes 10000,100000,1000000,5000000] [--ranks-trees 200000] [--hidden 256] [--batch 10]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST = os.path.join(ROOT, "datasets", "sst")


def make_trees(path, n):
    """The SST test trees repeated (the last copy cut) to exactly n lines."""
    if os.path.exists(path):
        return
    with open(os.path.join(SST, "test.txt"), "rb") as f:
        lines = f.read().rstrip(b"\n").split(b"\n")
    block = b"\n".join(lines) + b"\n"
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        full, rest = divmod(n, len(lines))
        for _ in range(full):
            out.write(block)
        out.write(b"".join(line + b"\n" for line in lines[:rest]))
    os.rename(tmp, path)


def field(pattern, text):
    m = re.search(pattern, text)
    if not m:
        sys.exit("grove's --stats output has no '%s':\n%s" % (pattern, text))
    return float(m.group(1))


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout, wall


def stats(text, trees, wall):
    return {
        "trees": trees,
        "wall_s": round(wall, 2),
        "trees_per_s": round(trees / wall),
        "compute_ms": field(r"compute\s+([0-9.]+) ms", text),
        "read_wait_ms": field(r"reading\s+([0-9.]+) ms", text),
        "peak_rss_mib": field(r"peak resident ([0-9.]+) MiB", text),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grove", default=os.path.join(ROOT, "build", "tools", "grove"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "scale"))
    ap.add_argument("--sizes", default="10000,100000,1000000,5000000")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--ranks-trees", type=int, default=200000)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(ROOT, "experiments", "results"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    vocab = os.path.join(SST, "vocab.txt")
    with open(vocab, "rb") as f:
        v = sum(1 for _ in f)
    weights = os.path.join(args.work, "treelstm-h%d.safetensors" % args.hidden)
    model = os.path.join(ROOT, "models", "treelstm.grove")
    run([args.grove, "init-weights", model, "--sizes", "H=%d,D=%d,V=%d" % (args.hidden, args.hidden, v),
         "--seed", "1", "--out", weights])
    out = os.path.join(args.work, "out.npy")
    base = [args.grove, "run", model, "--weights", weights, "--vocab", vocab, "--out", out,
            "--batch", str(args.batch), "--stats", "--quiet"]
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    result = {"machine": cpu, "cores": os.cpu_count(), "hidden": args.hidden, "batch": args.batch,
              "sizes": [], "ranks": []}

    for n in [int(s) for s in args.sizes.split(",")]:
        trees = os.path.join(args.work, "sst-%d.txt" % n)
        make_trees(trees, n)
        text, wall = run(base + ["--trees", trees])
        row = stats(text, n, wall)
        row["input_mib"] = round(os.path.getsize(trees) / 2**20, 1)
        row["output_mib"] = round(os.path.getsize(out) / 2**20, 1)
        result["sizes"].append(row)
        print(json.dumps(row), flush=True)
        os.remove(out)

    mpirun = shutil.which("mpirun")
    if mpirun:
        n = args.ranks_trees
        trees = os.path.join(args.work, "sst-%d.txt" % n)
        make_trees(trees, n)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        single = None
        for k in [int(r) for r in args.ranks.split(",")]:
            cmd = ([mpirun, "-n", str(k), "--oversubscribe"] if k > 1 else []) + base + ["--trees", trees]
            text, wall = run(cmd, env)
            row = stats(text, n, wall)
            row["ranks"] = k
            with open(out, "rb") as f:
                data = f.read()
            if single is None:
                single = data
            row["same_bytes_as_1_rank"] = data == single
            result["ranks"].append(row)
            print(json.dumps(row), flush=True)
        os.remove(out)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = ["# grove run at corpus scale", "",
             "TreeLSTM H = %d, batch %d, SST test trees repeated; %s, %d cores. One run per row." %
             (args.hidden, args.batch, cpu, os.cpu_count()), "",
             "| trees | input MiB | output MiB | wall s | trees/s | compute ms | reader wait ms | peak RSS MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["sizes"]:
        lines.append("| {trees:,} | {input_mib} | {output_mib} | {wall_s} | {trees_per_s:,} | {compute_ms:.0f} | "
                     "{read_wait_ms:.0f} | {peak_rss_mib} |".format(**r))
    if result["ranks"]:
        lines += ["", "| MPI ranks | trees | wall s | trees/s | peak RSS MiB (rank 0) | same bytes as 1 rank |",
                  "|---:|---:|---:|---:|---:|:---:|"]
        for r in result["ranks"]:
            lines.append("| {ranks} | {trees:,} | {wall_s} | {trees_per_s:,} | {peak_rss_mib} | "
                         "{same_bytes_as_1_rank} |".format(**r))
    with open(os.path.join(args.out, "scale.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
