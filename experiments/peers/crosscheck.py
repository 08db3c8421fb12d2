#!/usr/bin/python3
"""Checks the three peers against each other on the same weights: for each model and hidden:batch
configuration, pytorch_tree.py --mode eager writes seeded random weights to a safetensors file and
its root states; --mode batched and libtorch_tree read that file; prints one JSON line per case with
the largest absolute difference of the root h from the eager peer's, and exits 1 above --tolerance.

--bf16 also runs both level-batched peers with --precision bf16 (bf16 weights and product inputs) and
checks them against the eager fp32 roots relatively: largest |difference| ÷ largest |root h| at most
--bf16-tolerance (1e-2). --dynet PYTHON also runs dynet_tree.py (TreeLSTM only) with that python (a
venv with dynet38), held to --tolerance like the fp32 peers.

  crosscheck.py --libtorch build-peers/libtorch_tree [--models treelstm,...] [--configs 256:1,256:10]
      [--trees datasets/sst/test.txt] [--limit 100] [--bf16] [--dynet /path/to/venv/bin/python]
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
    parser.add_argument("--bf16", action="store_true", help="also check the level-batched peers in bf16")
    parser.add_argument("--bf16-tolerance", type=float, default=1e-2,
                        help="largest |bf16 − eager fp32| ÷ largest |root h| (default 1e-2)")
    parser.add_argument("--dynet", metavar="PYTHON", help="also check dynet_tree.py (treelstm), run by PYTHON")
    args = parser.parse_args()
    worst, worst_bf16 = 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for config in args.configs.split(","):
                hidden, batch = config.split(":")
                common = ["--model", model, "--hidden", hidden, "--batch", batch, "--repeat", "1",
                          "--trees", args.trees, "--limit", str(args.limit)]
                weights = os.path.join(tmp, "w.safetensors")
                peers = ["batched", "libtorch"] + (["dynet"] if args.dynet and model == "treelstm" else [])
                bf16_peers = ["batched_bf16", "libtorch_bf16"] if args.bf16 else []
                out = {peer: os.path.join(tmp, peer + ".npy") for peer in ["eager"] + peers + bf16_peers}
                py = ["/usr/bin/python3", os.path.join(HERE, "pytorch_tree.py")]
                run(py + ["--mode", "eager", "--save-weights", weights, "--out", out["eager"]] + common)
                run(py + ["--mode", "batched", "--weights", weights, "--out", out["batched"]] + common)
                run([args.libtorch, "--weights", weights, "--out", out["libtorch"]] + common)
                if "dynet" in peers:
                    run([args.dynet, os.path.join(HERE, "dynet_tree.py"), "--weights", weights, "--out", out["dynet"]]
                        + common)
                if args.bf16:
                    bf16 = ["--precision", "bf16", "--weights", weights] + common
                    run(py + ["--mode", "batched", "--out", out["batched_bf16"]] + bf16)
                    run([args.libtorch, "--out", out["libtorch_bf16"]] + bf16)
                ref = np.load(out["eager"])
                scale = float(np.abs(ref).max())
                diffs = {peer: float(np.abs(np.load(out[peer]) - ref).max()) for peer in peers + bf16_peers}
                worst = max([worst] + [diffs[peer] for peer in peers])
                worst_bf16 = max([worst_bf16] + [diffs[peer] / scale for peer in bf16_peers])
                print(json.dumps({"model": model, "hidden": int(hidden), "batch": int(batch), "trees": len(ref),
                                  "max_abs_root_h": scale,
                                  **{f"max_diff_{peer}_vs_eager": diffs[peer] for peer in peers},
                                  **{f"max_rel_diff_{peer}_vs_eager": diffs[peer] / scale for peer in bf16_peers}}),
                      flush=True)
    if worst > args.tolerance:
        sys.exit(f"crosscheck.py: largest difference {worst:g} is above the tolerance {args.tolerance:g}")
    if worst_bf16 > args.bf16_tolerance:
        sys.exit(f"crosscheck.py: largest bf16 difference {worst_bf16:g} of the largest root h is above "
                 f"{args.bf16_tolerance:g}")


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
