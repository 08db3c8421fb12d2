#!/usr/bin/python3
"""Checks the three peers against each other on the same weights: for each model and hidden:batch
configuration, pytorch_tree.py --mode eager writes seeded random weights to a safetensors file and
its root states; --mode batched and libtorch_tree read that file; prints one JSON line per case with
the largest absolute difference of the root h from the eager peer's, and exits 1 above --tolerance.

  crosscheck.py --libtorch build-peers/libtorch_tree [--models treelstm,...] [--configs 256:1,256:10]
      [--trees datasets/sst/test.txt] [--limit 100]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--libtorch", required=True, help="the built libtorch_tree executable")
    parser.add_argument("--models", default="treefc,treegru,treelstm,childsumtreelstm,mvrnn")
    parser.add_argument("--configs", default="256:1,256:10,512:10")
    parser.add_argument("--trees", default=os.path.join(ROOT, "datasets/sst/test.txt"))
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for config in args.configs.split(","):
                hidden, batch = config.split(":")
                common = ["--model", model, "--hidden", hidden, "--batch", batch, "--repeat", "1",
                          "--trees", args.trees, "--limit", str(args.limit)]
                weights = os.path.join(tmp, "w.safetensors")
                out = {peer: os.path.join(tmp, peer + ".npy") for peer in ("eager", "batched", "libtorch")}
                py = ["/usr/bin/python3", os.path.join(HERE, "pytorch_tree.py")]
                run(py + ["--mode", "eager", "--save-weights", weights, "--out", out["eager"]] + common)
                run(py + ["--mode", "batched", "--weights", weights, "--out", out["batched"]] + common)
                run([args.libtorch, "--weights", weights, "--out", out["libtorch"]] + common)
                ref = np.load(out["eager"])
                diffs = {peer: float(np.abs(np.load(out[peer]) - ref).max()) for peer in ("batched", "libtorch")}
                worst = max(worst, *diffs.values())
                print(json.dumps({"model": model, "hidden": int(hidden), "batch": int(batch), "trees": len(ref),
                                  "max_abs_root_h": float(np.abs(ref).max()),
                                  "max_diff_batched_vs_eager": diffs["batched"],
                                  "max_diff_libtorch_vs_eager": diffs["libtorch"]}), flush=True)
    if worst > args.tolerance:
        sys.exit(f"crosscheck.py: largest difference {worst:g} is above the tolerance {args.tolerance:g}")


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
