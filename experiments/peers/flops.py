#!/usr/bin/python3
"""FLOP counts of the tree models of docs/MODELS.md, for the FLOP limit = FLOPs / peak.

Counts 2·M·K per product of an [M, K] matrix with a vector, per node, and ignores elementwise work
(gates, sums, the embedding lookup).  Products with a vector that is zero by definition are not
counted: ChildSumTreeLSTM's x is 0 at internal nodes (no W_iou x, W_f x there) and t is 0 at leaves
(no U_iou t); the forget gates exist per child, so a leaf needs no W_f x either.  D = H.

  TreeFC            leaf 0                  internal 2·H·2H = 4H²
  TreeGRU           leaf 2H²                internal (U_z, U_r, U_h) 4H² + 8H² + 4H² = 16H²
  TreeLSTM          leaf 2·3H·H = 6H²       internal (U_iou, U_f) 12H² + 8H² = 20H²
  ChildSumTreeLSTM  leaf 6H²                internal with K children 6H² + K·2H²
  MVRNN             leaf 0                  internal B a, A b: 4H²; W: 4H²; W_M [A; B]: 2·H·2H·H = 4H³

Usage as a script: flops.py --model treelstm --hidden 256 --trees FILE [--limit 100]
[--gflops PEAK] prints the FLOPs per tree set and per batch, and with a peak the limit in ms per batch.
"""

import argparse
import json

import peer_common as pc


def node_flops(model, hidden, num_children):
    H = hidden
    if num_children == 0:
        return {"treefc": 0, "treegru": 2 * H * H, "treelstm": 6 * H * H, "childsumtreelstm": 6 * H * H,
                "mvrnn": 0}[model]
    return {"treefc": 4 * H * H, "treegru": 16 * H * H, "treelstm": 20 * H * H,
            "childsumtreelstm": 6 * H * H + num_children * 2 * H * H,
            "mvrnn": 8 * H * H + 4 * H * H * H}[model]


def tree_flops(model, hidden, tree):
    return sum(node_flops(model, hidden, len(kids)) for kids in tree.children)


def trees_flops(model, hidden, trees):
    return sum(tree_flops(model, hidden, tree) for tree in trees)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=pc.MODELS)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--trees", help="SST PTB tree file")
    parser.add_argument("--perfect-height", type=int)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--gflops", type=float, help="peak GFLOP/s: also print the FLOP limit per batch")
    args = parser.parse_args()
    if args.perfect_height is not None:
        trees = pc.perfect_trees(args.perfect_height, args.limit or 100)
    else:
        trees = pc.read_trees(args.trees, args.limit)
    total = trees_flops(args.model, args.hidden, trees)
    calls = (len(trees) + args.batch - 1) // args.batch
    result = {"model": args.model, "hidden": args.hidden, "batch": args.batch, "trees": len(trees),
              "flops": total, "flops_per_batch": total / calls}
    if args.gflops:
        result["limit_ms_per_batch"] = round(total / calls / (args.gflops * 1e9) * 1e3, 4)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
