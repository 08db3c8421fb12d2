#!/usr/bin/python3
"""The full four-sweep DAG-RNN of Shuai et al. (CVPR 2016), composed from four runs of grove.

The model language describes one recursion over one DAG, so the four sweeps of an image grid are
four runs of models/dagrnn.grove, one per sweep direction, each with that direction's weights
(U, W_0, W_1, b; the embedding may be shared), each writing every cell's hidden state
(`--all-nodes`, cells in row-major order in every sweep); this script sums them per cell:

    h_v = h_v^se + h_v^sw + h_v^ne + h_v^nw                 [cells of all grids, H]

which is the input of Shuai et al.'s output layer (o_v = V h_v + c, then softmax), a per-cell
linear map left to the caller.

Usage:
    models/dagrnn_four_sweeps.py --grove build/tools/grove --grids G.txt \\
        --weights se.safetensors sw.safetensors ne.safetensors nw.safetensors --out H.npy
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

SWEEPS = ("se", "sw", "ne", "nw")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grove", default="grove", help="the grove program")
    parser.add_argument("--model", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "dagrnn.grove"))
    parser.add_argument("--grids", required=True, help="grids, one per line: R C and R*C tokens")
    parser.add_argument("--weights", nargs=4, required=True, metavar="W", help="weights of the se, sw, ne, nw sweeps")
    parser.add_argument("--out", required=True, help="output .npy: float32 [cells of all grids, H]")
    args = parser.parse_args()

    total = None
    with tempfile.TemporaryDirectory() as tmp:
        for sweep, weights in zip(SWEEPS, args.weights):
            out = os.path.join(tmp, f"{sweep}.npy")
            subprocess.run([args.grove, "run", args.model, "--weights", weights, "--grids", args.grids,
                            "--sweep", sweep, "--all-nodes", "--out", out], check=True)
            states = np.load(out)
            total = states if total is None else total + states
    np.save(args.out, total.astype("<f4"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
