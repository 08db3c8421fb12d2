#!/usr/bin/python3
"""Turns run_peers.sh's JSON lines into a CSV: one row per peer run, with the run's SGEMM peaks and
the FLOP limit (model FLOPs per batch / 2-thread SGEMM peak) and how far above it each peer sits."""

import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops  # noqa: E402
import peer_common as pc  # noqa: E402

FIELDS = ["peer", "model", "hidden", "batch", "trees", "median_ms_per_batch", "p10_ms", "p90_ms",
          "flops_per_batch", "sgemm_gflops_1t", "sgemm_gflops_2t", "flop_limit_ms", "x_over_limit"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--trees", required=True)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    with open(args.lines) as f:
        records = [json.loads(line) for line in f if line.strip()]
    peaks = {r["threads"]: r["gflops"] for r in records if r["peer"] == "openblas-sgemm"}
    trees = pc.read_trees(args.trees, args.limit)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for r in records:
            if r["peer"] == "openblas-sgemm":
                continue
            total = flops.trees_flops(r["model"], r["hidden"], trees[:r["trees"]])
            per_batch = total / ((r["trees"] + r["batch"] - 1) // r["batch"])
            row = dict(r, flops_per_batch=int(per_batch), sgemm_gflops_1t=peaks.get(1), sgemm_gflops_2t=peaks.get(2))
            if peaks.get(2):
                limit_ms = per_batch / (peaks[2] * 1e9) * 1e3
                row["flop_limit_ms"] = round(limit_ms, 4)
                row["x_over_limit"] = round(r["median_ms_per_batch"] / limit_ms, 1)
            writer.writerow(row)


if __name__ == "__main__":
    main()
