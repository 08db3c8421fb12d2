#!/usr/bin/python3
"""DyNet peer of grove: TreeLSTM (docs/MODELS.md), fp32 inference, with DyNet's autobatching.

DyNet (Neubig et al.) builds a computation graph per call, node by node as the tree is written, and
with `--dynet-autobatch 1` (the default here) batches the graph's like operations itself when it is
run: the per-node code of the eager peer, level batching done by the library. Per call of N trees:
`renew_cg()`, the graph of all N trees (per leaf: lookup, one affine_transform [W_iou], gates; per
internal node: concatenate [h_l; h_r], one affine_transform [U_iou; U_f] as the other peers do, gates),
then one forward pass over the N roots. Building the graph is inside the timing (as the other peers'
level grouping is); parsing is not.

DyNet comes from PyPI as `dynet38` (wheels of DyNet 2.1 for Python 3.8+; CPU only, Eigen without
threads, so one thread whatever --threads says; its Eigen is built for AVX2, not AVX-512). Run it with
a venv's python that has it: bench.py makes one (`python3 -m venv --system-site-packages`, then `pip
install dynet38`), so that numpy comes from Debian, as for the other peers.

Protocol, inputs, weights and output as pytorch_tree.py (peer_common.py): one warm-up pass, --repeat
timed passes, one JSON line with the median over passes of (pass time / calls) in ms per batch.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


class TreeLSTM:
    """The model over DyNet parameters; `call` builds one graph for trees[first:first + count]."""

    def __init__(self, dy, w):
        self.dy = dy
        self.H = w["b_f"].shape[0]
        m = self.model = dy.ParameterCollection()
        self.emb = m.lookup_parameters_from_numpy(w["emb"])
        self.W_iou = m.parameters_from_numpy(w["W_iou"])
        self.b_iou = m.parameters_from_numpy(w["b_iou"])
        # one product per internal node: [U_iou; U_f] (5H × 2H), bias [b_iou; b_f; b_f]
        self.U_all = m.parameters_from_numpy(np.concatenate([w["U_iou"], w["U_f"]]))
        self.b_all = m.parameters_from_numpy(np.concatenate([w["b_iou"], w["b_f"], w["b_f"]]))

    def gates(self, iou, c_extra):
        dy, H = self.dy, self.H
        c = dy.cmult(dy.logistic(dy.pick_range(iou, 0, H)), dy.tanh(dy.pick_range(iou, 2 * H, 3 * H)))
        if c_extra is not None:
            c = c + c_extra
        return dy.cmult(dy.logistic(dy.pick_range(iou, H, 2 * H)), dy.tanh(c)), c

    def tree(self, tree):
        dy, H = self.dy, self.H
        W_iou, b_iou, U_all, b_all = self.W_iou, self.b_iou, self.U_all, self.b_all
        h, c = [None] * tree.size(), [None] * tree.size()
        for n, kids in enumerate(tree.children):  # post-order: children first
            if not kids:
                x = dy.lookup(self.emb, tree.token[n], update=False)
                h[n], c[n] = self.gates(dy.affine_transform([b_iou, W_iou, x]), None)
            else:
                left, right = kids
                g = dy.affine_transform([b_all, U_all, dy.concatenate([h[left], h[right]])])  # [i o u f_l f_r]
                fc = (dy.cmult(dy.logistic(dy.pick_range(g, 3 * H, 4 * H)), c[left])
                      + dy.cmult(dy.logistic(dy.pick_range(g, 4 * H, 5 * H)), c[right]))
                h[n], c[n] = self.gates(dy.pick_range(g, 0, 3 * H), fc)
        return h[-1]

    def call(self, trees, first, count):
        dy = self.dy
        dy.renew_cg()
        roots = [self.tree(trees[t]) for t in range(first, first + count)]
        return dy.concatenate_cols(roots).npvalue().reshape(self.H, count).T  # one forward, autobatched


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pc.add_common_arguments(parser)
    parser.add_argument("--dynet-autobatch", type=int, default=1, choices=(0, 1),
                        help="DyNet's autobatching (default 1: on)")
    parser.add_argument("--dynet-mem", default="1024", help="DyNet's memory pool in MB (default 1024)")
    args = parser.parse_args()
    if (args.trees is None) == (args.perfect_height is None):
        parser.error("give exactly one of --trees FILE and --perfect-height K")
    if args.model != "treelstm":
        parser.error("the DyNet peer runs treelstm only")
    try:
        import dynet_config
        dynet_config.set(mem=args.dynet_mem, autobatch=args.dynet_autobatch, random_seed=args.seed)
        import dynet as dy
    except ImportError as e:
        sys.exit("dynet_tree.py: %s (pip install dynet38 in a venv: see the top of this file)" % e)
    try:
        trees = pc.load_inputs(args)
        weights = pc.weights_for(args, args.model, trees)
    except pc.InputError as e:
        sys.exit(f"dynet_tree.py: {e}")
    model = TreeLSTM(dy, weights)

    outputs = []
    for first in range(0, len(trees), args.batch):  # warm-up, and the outputs
        outputs.append(model.call(trees, first, min(args.batch, len(trees) - first)))
    if args.out:
        np.save(args.out, np.concatenate(outputs).astype(np.float32))
    calls = (len(trees) + args.batch - 1) // args.batch
    per_batch = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for first in range(0, len(trees), args.batch):
            model.call(trees, first, min(args.batch, len(trees) - first))
        per_batch.append((time.perf_counter() - start) * 1e3 / calls)
    print(json.dumps({"peer": "dynet-autobatch" if args.dynet_autobatch else "dynet", "model": args.model,
                      "precision": "fp32", "hidden": args.hidden, "batch": args.batch, "trees": len(trees),
                      "threads": 1, "median_ms_per_batch": round(float(np.median(per_batch)), 4),
                      "p10_ms": round(float(np.percentile(per_batch, 10)), 4),
                      "p90_ms": round(float(np.percentile(per_batch, 90)), 4)}))


if __name__ == "__main__":
    main()
