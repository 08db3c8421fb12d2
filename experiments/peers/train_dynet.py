#!/usr/bin/env python3
"""DyNet training peer of `grove train`: the binary TreeLSTM of docs/MODELS.md on SST with DyNet's
autobatching (issue 24, item 6).

Per step, a batch of trees (grove's order: train_pytorch.py's port of training/Random.h's shuffle):
`renew_cg()`, one graph for the whole batch built node by node in post-order as dynet_tree.py does
(leaf: lookup, one affine_transform with W_iou, gates i/o/u; internal node: concatenate [h_l; h_r],
one affine_transform with [U_iou; U_f] and [b_iou; b_f; b_f], gates), then per labelled node
(SST labels every node) optional dropout, the head's affine_transform and pickneglogsoftmax; the
batch's loss is their sum divided by its labelled nodes (`--average nodes`, grove's default) or its
trees (`--average trees`). One forward and one backward over the graph, run with
`--dynet-autobatch 1` (DyNet batches like operations across the batch's trees itself), then the
updates: AdaGrad (DyNet's AdagradTrainer, eps 1e-10, no clipping) at --lr on the model and head, and
plain SGD (SimpleSGDTrainer) at --emb-lr on the embedding, sparse (only the rows the batch looked
up). Weight decay: DyNet's own (`set_weight_decay` on the model's collection: the weights scaled by
(1 − λ) per update, not λθ added to the gradient as grove and PyTorch do) — the same cost, not the
same arithmetic; this peer is for speed, train_pytorch.py is the one that matches grove's losses.

DyNet 2.1 from PyPI (`dynet38`), CPU only, Eigen without threads: one thread. Run it with a venv's
python that has it (experiments/README.md: `python3 -m venv --system-site-packages build-dynet &&
build-dynet/bin/pip install dynet38`).

Output: one JSON line per epoch {"peer", "epoch", "steps", "trees", "seconds", "sentences_per_s",
"train_loss"}. Timed: every step (graph construction included); parsing is not.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402
import train_pytorch as tp  # noqa: E402  (labelled trees, vocabulary, grove's shuffle; no torch needed)


class TreeLSTM:
    def __init__(self, dy, w, weight_decay):
        self.dy = dy
        self.H = H = w["b_f"].shape[0]
        self.all = dy.ParameterCollection()
        self.model = self.all.add_subcollection()
        self.embs = self.all.add_subcollection()
        m = self.model
        self.emb = self.embs.lookup_parameters_from_numpy(np.array(w["emb"]))
        self.W_iou = m.parameters_from_numpy(np.array(w["W_iou"]))
        self.b_iou = m.parameters_from_numpy(np.array(w["b_iou"]))
        self.U_all = m.parameters_from_numpy(np.concatenate([w["U_iou"], w["U_f"]]))
        # b_f is shared by f_l and f_r: one parameter, concatenated in the graph.
        self.b_f = m.parameters_from_numpy(np.array(w["b_f"]))
        self.head_w = m.parameters_from_numpy(np.array(w["head.weight"]))
        self.head_b = m.parameters_from_numpy(np.array(w["head.bias"]))
        if weight_decay > 0:
            m.set_weight_decay(weight_decay)
        assert self.U_all.shape() == (5 * H, 2 * H)

    def gates(self, iou, fc):
        dy, H = self.dy, self.H
        c = dy.cmult(dy.logistic(dy.pick_range(iou, 0, H)), dy.tanh(dy.pick_range(iou, 2 * H, 3 * H)))
        if fc is not None:
            c = c + fc
        return dy.cmult(dy.logistic(dy.pick_range(iou, H, 2 * H)), dy.tanh(c)), c

    def batch_loss(self, trees, labels, dropout, average):
        dy, H = self.dy, self.H
        dy.renew_cg()
        W_iou, b_iou, U_all = self.W_iou, self.b_iou, self.U_all
        b_all = dy.concatenate([b_iou, self.b_f, self.b_f])
        hw, hb = self.head_w, self.head_b
        losses = []
        for tree, lab in zip(trees, labels):
            h, c = [None] * tree.size(), [None] * tree.size()
            for n, kids in enumerate(tree.children):  # post-order: children first
                if not kids:
                    x = dy.lookup(self.emb, tree.token[n])
                    h[n], c[n] = self.gates(dy.affine_transform([b_iou, W_iou, x]), None)
                else:
                    left, right = kids
                    g = dy.affine_transform([b_all, U_all, dy.concatenate([h[left], h[right]])])
                    fc = (dy.cmult(dy.logistic(dy.pick_range(g, 3 * H, 4 * H)), c[left])
                          + dy.cmult(dy.logistic(dy.pick_range(g, 4 * H, 5 * H)), c[right]))
                    h[n], c[n] = self.gates(dy.pick_range(g, 0, 3 * H), fc)
                if lab[n] >= 0:
                    x = dy.dropout(h[n], dropout) if dropout > 0 else h[n]
                    losses.append(dy.pickneglogsoftmax(dy.affine_transform([hb, hw, x]), lab[n]))
        n = len(losses) if average == "nodes" else len(trees)
        return dy.esum(losses) * (1.0 / n), len(losses)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--weights", required=True, help="safetensors: the model's parameters and head.weight/bias")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, help="stop after this many steps")
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--emb-lr", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--average", choices=("nodes", "trees"), default="nodes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dynet-autobatch", type=int, default=1, choices=(0, 1))
    ap.add_argument("--dynet-mem", default="2048")
    args = ap.parse_args()
    try:
        import dynet_config
        dynet_config.set(mem=args.dynet_mem, autobatch=args.dynet_autobatch, random_seed=args.seed)
        import dynet as dy
    except ImportError as e:
        sys.exit("train_dynet.py: %s (pip install dynet38 in a venv: see the top of this file)" % e)

    vocab = tp.read_vocab(args.vocab)
    trees, labels = tp.read_labelled(args.trees, vocab)
    w = pc.read_safetensors(args.weights)
    model = TreeLSTM(dy, w, args.weight_decay)
    adagrad = dy.AdagradTrainer(model.model, learning_rate=args.lr, eps=1e-10)
    sgd = dy.SimpleSGDTrainer(model.embs, learning_rate=args.emb_lr)
    for t in (adagrad, sgd):
        t.set_clip_threshold(0)  # grove and PyTorch do not clip (DyNet clips at 5 by default)
    step = 0
    for epoch in range(1, args.epochs + 1):
        loss_sum, labelled, done = 0.0, 0, 0
        start = time.perf_counter()
        for batch in tp.batches_of_epoch(len(trees), args.seed, epoch, args.batch):
            if args.steps is not None and step >= args.steps:
                break
            step += 1
            loss, count = model.batch_loss([trees[t] for t in batch], [labels[t] for t in batch], args.dropout,
                                           args.average)
            value = loss.value()  # the forward, autobatched
            loss.backward()
            adagrad.update()
            sgd.update()
            loss_sum += value * (count if args.average == "nodes" else len(batch))
            labelled += count
            done += len(batch)
        seconds = time.perf_counter() - start
        print(json.dumps({"peer": "dynet-autobatch" if args.dynet_autobatch else "dynet", "epoch": epoch,
                          "steps": step, "trees": done, "hidden": model.H, "batch": args.batch, "threads": 1,
                          "seconds": round(seconds, 3), "sentences_per_s": round(done / seconds, 1),
                          "train_loss": round(loss_sum / max(labelled, 1), 5)}), flush=True)
        if args.steps is not None and step >= args.steps:
            break


if __name__ == "__main__":
    main()
