#!/usr/bin/env python3
"""Hidden sizes without cliffs (issue 23): grove's TreeLSTM (or any tree model) on the first SST test
trees at every H from --min to --max in steps of --step, in calls of --batch trees, timed with
`grove bench` (median of --repeat passes), in GFLOP/s, beside the bare FMA peak measured in the same
run (experiments/peers/fma_peak.c, built here with the system compiler).

Each H is also compared with the next multiple of 16 at or above it (H=150 against H=160): the
issue's target is at least 0.9x that size's GFLOP/s. Writes a CSV and a Markdown table to --out and
prints the table.

    python3 experiments/sweep_hidden.py --grove build/tools/grove [--batch 10] [--threads 2]
"""

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST = os.path.join(ROOT, "datasets", "sst")


def processor():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fma_peak(work):
    """{threads: GFLOP/s} from fma_peak.c, or {} where it cannot be built (no AVX-512 compiler flags)."""
    exe = os.path.join(work, "fma_peak")
    source = os.path.join(ROOT, "experiments", "peers", "fma_peak.c")
    build = subprocess.run(["cc", "-O3", "-mavx512f", "-fopenmp", source, "-o", exe], capture_output=True, text=True)
    if build.returncode != 0:
        print("fma_peak did not build: " + build.stderr.strip(), file=sys.stderr)
        return {}
    out = subprocess.run([exe], capture_output=True, text=True)
    if out.returncode != 0:
        print("fma_peak did not run (no AVX-512 here?): " + out.stderr.strip(), file=sys.stderr)
        return {}
    records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {rec["threads"]: rec["gflops"] for rec in records}


def bench(args, hidden):
    vocab = sum(1 for _ in open(os.path.join(SST, "vocab.txt"), encoding="utf-8"))
    sizes = f"H={hidden},D={hidden},V={vocab}"
    command = [args.grove, "bench", os.path.join(ROOT, "models", args.model + ".grove"),
               "--trees", os.path.join(SST, "test.txt"), "--vocab", os.path.join(SST, "vocab.txt"),
               "--random-weights", "--sizes", sizes, "--batch", str(args.batch), "--limit", str(args.trees),
               "--repeat", str(args.repeat), "--quiet", "--json"]
    if args.threads:
        command += ["--threads", str(args.threads)]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grove", default=os.path.join(ROOT, "build", "tools", "grove"))
    parser.add_argument("--model", default="treelstm", help="a tree model of models/ (default treelstm)")
    parser.add_argument("--min", type=int, default=128)
    parser.add_argument("--max", type=int, default=320)
    parser.add_argument("--step", type=int, default=8)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--trees", type=int, default=100, help="first N SST test trees (default 100)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="default: grove's (all cores)")
    parser.add_argument("--out", default=os.path.join(ROOT, "experiments", "results"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        peaks = fma_peak(work)
    sizes = list(range(args.min, args.max + 1, args.step))
    # Every size once, then each size's next multiple of 16 again right after it, so that a pair is
    # measured close together on a noisy machine.
    rows = []
    for hidden in sizes:
        ref = -(-hidden // 16) * 16
        got = bench(args, hidden)
        ref_gflops = got["gflops"] if ref == hidden else bench(args, ref)["gflops"]
        rows.append({"H": hidden, "ms_per_batch": got["median_ms_per_batch"], "gflops": got["gflops"],
                     "next16": ref, "next16_gflops": ref_gflops,
                     "ratio": round(got["gflops"] / ref_gflops, 3) if ref_gflops else None})
        print(f"H={hidden}: {got['gflops']:.1f} GFLOP/s ({rows[-1]['ratio']} of H={ref})", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"sweep_hidden_{args.model}_b{args.batch}")
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    threads = args.threads or os.cpu_count()
    peak = peaks.get(threads) or peaks.get(max(peaks)) if peaks else None
    lines = [f"# Hidden-size sweep: {args.model}, first {args.trees} SST test trees, batch {args.batch}, "
             f"{threads} thread(s)", "",
             f"Processor: {processor()}. FMA peak measured in this run: "
             + (", ".join(f"{v:.1f} GFLOP/s on {t} thread(s)" for t, v in sorted(peaks.items())) if peaks
                else "not measured (no AVX-512 build of fma_peak)") + ".", "",
             "| H | ms/batch | GFLOP/s | % of FMA peak | next multiple of 16 | its GFLOP/s | ratio |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        share = f"{100 * r['gflops'] / peak:.0f}%" if peak else "-"
        lines.append(f"| {r['H']} | {r['ms_per_batch']:.3f} | {r['gflops']:.1f} | {share} | {r['next16']} | "
                     f"{r['next16_gflops']:.1f} | {r['ratio']} |")
    worst = min((r for r in rows if r["H"] != r["next16"]), key=lambda r: r["ratio"], default=None)
    if worst:
        lines += ["", f"Lowest ratio to the next multiple of 16: {worst['ratio']} at H={worst['H']} (target: ≥ 0.9)."]
    text = "\n".join(lines) + "\n"
    with open(stem + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
