#!/usr/bin/python3
"""PyTorch training peer of `grove train`: the binary TreeLSTM of docs/MODELS.md on SST, level-batched
by hand, with grove's loss, optimizer, batches and batch order (issue 24, items 4 and 6).

Per step, a batch of trees (grove's order: training/Random.h's shuffle of (seed, epoch), ported
exactly below, or the order of a `grove train --step-log` file with --order-from):
  1. The forward, level-batched: the batch's nodes numbered tree after tree, grouped by height. Leaves:
     `x = E[token]` (the batch's distinct embedding rows gathered once into a leaf tensor that takes
     the gradient), one addmm with W_iou, gates i/o/u (leaves are gated as models/treelstm.grove's).
     Per level: index_select the children's h and c, one addmm with [U_iou; U_f] (5H x 2H) and
     [b_iou; b_f; b_f], gates, index_copy_ into the batch's h and c.
  2. The head: optional dropout, one linear layer over every labelled node (SST labels every node),
     cross-entropy summed and divided by the batch's labelled nodes (`--average nodes`, PyTorch's
     CrossEntropyLoss mean, grove's default) or by its trees (`--average trees`).
  3. Backward (autograd), then grove's optimizer (training/Optimizer.h): weight decay added to the
     gradient of every parameter but the embedding (head included), then AdaGrad (torch.optim.Adagrad,
     eps 1e-10, accumulator 0) at --lr on the model and head; the embedding's touched rows by plain
     SGD at --emb-lr.
The model's parameters (emb, W_iou, U_iou, b_iou, U_f, b_f) and the head's (head.weight [5, H],
head.bias [5]) come from one safetensors file (`grove init-weights` plus the head; `grove train
--init` reads the same file).

Output: one JSON line per epoch {"peer", "epoch", "steps", "trees", "seconds", "sentences_per_s",
"train_loss"}; with --step-log FILE, one JSON line per step as grove's ({"step", "epoch", "trees",
"loss"}). Timed: steps 1-3 of every batch, building its level schedule included (as grove's
sentences/s times its steps); parsing is not.

  /usr/bin/python3 experiments/peers/train_pytorch.py --trees train.txt --vocab vocab.txt \
      --weights init.safetensors [--epochs 1] [--steps 100] [--dropout 0] [--step-log steps.jsonl]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:  # train_dynet.py reads the trees and the shuffle from here in DyNet's venv
    torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# Labelled trees and grove's shuffle.


def parse_labelled(line, where):
    """A PTB tree with its node labels, in post-order (grove's and peer_common's numbering)."""
    tokens = pc.tokenize(line.rstrip("\n"))
    tree, labels, stack = pc.Tree(), [], []  # stack entries: [label, kids, word]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            stack.append([int(tokens[i + 1]), [], None])
            i += 2
        elif tok == ")":
            label, kids, word = stack.pop()
            n = len(tree.token)
            tree.token.append(word)
            tree.children.append(kids)
            labels.append(label)
            if stack:
                stack[-1][1].append(n)
            i += 1
        else:
            stack[-1][2] = tok
            i += 1
    if stack or not tree.token:
        raise pc.InputError(f"{where}: unbalanced tree")
    return tree, labels


def read_labelled(path, vocab):
    trees, labels = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                t, l = parse_labelled(line, f"{path}:{lineno}")
                trees.append(t)
                labels.append(l)
    pc.resolve_tokens(trees, vocab, path)
    return trees, labels


def read_vocab(path):
    """grove's vocabulary (tools/TrainCommand.cpp): the file's lines, `<unk>` appended if missing."""
    vocab = pc.read_vocab(path)
    if "<unk>" not in vocab:
        vocab["<unk>"] = len(vocab)
    return vocab


_M = (1 << 64) - 1


def _mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def _hash_key(words):
    h = 0x6A09E667F3BCC909
    for w in words:
        h = _mix64(h ^ (w & _M))
    return h


def shuffled_order(n, seed, epoch):
    """training/Random.h's shuffled_order: Fisher-Yates with the words of hash(seed, epoch, "SHUFF")."""
    order = list(range(n))
    key = _hash_key([seed, epoch, 0x5348554646])
    for counter, i in enumerate(range(n - 1, 0, -1)):
        j = (_hash_key([key, counter]) * (i + 1)) >> 64
        order[i], order[j] = order[j], order[i]
    return order


def batches_of_epoch(n, seed, epoch, batch):
    order = shuffled_order(n, seed, epoch)
    return [order[b:b + batch] for b in range(0, n, batch)]


# ---------------------------------------------------------------------------------------------------
# The model.


class Schedule:
    """One batch's nodes, numbered tree after tree, grouped by height; labels of every node."""

    def __init__(self, trees, heights, labels):
        offset, by_height, leaves, tokens, all_labels = 0, {}, [], [], []
        for tree, height, lab in zip(trees, heights, labels):
            for n, kids in enumerate(tree.children):
                if not kids:
                    leaves.append(offset + n)
                    tokens.append(tree.token[n])
                else:
                    by_height.setdefault(height[n], []).append((offset + n, offset + kids[0], offset + kids[1]))
            all_labels.extend(lab)
            offset += tree.size()
        self.total = offset
        self.leaves = torch.tensor(leaves)
        rows, inverse = np.unique(np.asarray(tokens, dtype=np.int64), return_inverse=True)
        self.rows = torch.from_numpy(rows)  # the batch's distinct embedding rows
        self.leaf_rows = torch.from_numpy(inverse.reshape(-1))  # each leaf's position among them
        self.levels = [tuple(torch.tensor(col) for col in zip(*by_height[k])) for k in sorted(by_height)]
        lab = torch.tensor(all_labels)
        self.labelled = torch.nonzero(lab >= 0).reshape(-1)
        self.labels = lab.index_select(0, self.labelled)


class TreeLSTM:
    def __init__(self, w, H):
        self.H = H
        p = lambda name: torch.nn.Parameter(torch.from_numpy(np.array(w[name])))  # noqa: E731
        self.emb = torch.from_numpy(np.array(w["emb"]))  # updated by hand (sparse SGD)
        self.W_iou, self.b_iou, self.b_f = p("W_iou"), p("b_iou"), p("b_f")
        # [U_iou; U_f] as one parameter: AdaGrad and weight decay are elementwise, so this is the
        # same as two; one addmm per level.
        self.U_all = torch.nn.Parameter(torch.cat([torch.from_numpy(np.array(w["U_iou"])),
                                                   torch.from_numpy(np.array(w["U_f"]))]).contiguous())
        self.head_w, self.head_b = p("head.weight"), p("head.bias")

    def params(self):
        return [self.W_iou, self.b_iou, self.U_all, self.b_f, self.head_w, self.head_b]

    def gates(self, iou, fc):
        H = self.H
        c = torch.sigmoid(iou[:, :H]) * torch.tanh(iou[:, 2 * H:3 * H])
        if fc is not None:
            c = c + fc
        return torch.sigmoid(iou[:, H:2 * H]) * torch.tanh(c), c

    def forward(self, s, e_rows):
        H = self.H
        x = e_rows.index_select(0, s.leaf_rows)
        hn, cn = self.gates(torch.addmm(self.b_iou, x, self.W_iou.t()), None)
        h = torch.zeros(s.total, H).index_copy(0, s.leaves, hn)
        c = torch.zeros(s.total, H).index_copy(0, s.leaves, cn)
        b_all = torch.cat([self.b_iou, self.b_f, self.b_f])
        Ut = self.U_all.t()
        for idx, left, right in s.levels:
            x = torch.cat([h.index_select(0, left), h.index_select(0, right)], 1)
            g = torch.addmm(b_all, x, Ut)  # [i o u f_l f_r]
            f = torch.sigmoid(g[:, 3 * H:])
            fc = f[:, :H] * c.index_select(0, left) + f[:, H:] * c.index_select(0, right)
            hn, cn = self.gates(g, fc)
            h = h.index_copy(0, idx, hn)
            c = c.index_copy(0, idx, cn)
        return h


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
    ap.add_argument("--seed", type=int, default=1, help="grove's shuffle seed (and torch's, for dropout)")
    ap.add_argument("--order-from", help="take the batches from a grove --step-log file instead")
    ap.add_argument("--step-log", help="write one JSON line per step")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if torch is None:
        sys.exit("train_pytorch.py: PyTorch does not import here (Debian's python3-torch, or pip's torch)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    vocab = read_vocab(args.vocab)
    trees, labels = read_labelled(args.trees, vocab)
    heights = [t.heights() for t in trees]
    w = pc.read_safetensors(args.weights)
    H = w["b_f"].shape[0]
    if w["emb"].shape[0] != len(vocab):
        sys.exit(f"train_pytorch.py: {args.weights}: emb has {w['emb'].shape[0]} rows, the vocabulary {len(vocab)}")
    model = TreeLSTM(w, H)
    params = model.params()
    # grove's AdaGrad: g += wd*θ, s += g², θ -= lr·g/(√s + 1e-10) — torch.optim.Adagrad exactly.
    opt = torch.optim.Adagrad(params, lr=args.lr, weight_decay=args.weight_decay, eps=1e-10,
                              initial_accumulator_value=0.0)
    dropout = torch.nn.Dropout(args.dropout) if args.dropout > 0 else None

    given = None
    if args.order_from:
        given = {}
        with open(args.order_from) as f:
            for line in f:
                r = json.loads(line)
                given.setdefault(r["epoch"], []).append(r["trees"])
    log = open(args.step_log, "w") if args.step_log else None
    step = 0
    for epoch in range(1, args.epochs + 1):
        batches = given[epoch] if given else batches_of_epoch(len(trees), args.seed, epoch, args.batch)
        loss_sum, labelled, done = 0.0, 0, 0
        start = time.perf_counter()
        for batch in batches:
            if args.steps is not None and step >= args.steps:
                break
            step += 1
            s = Schedule([trees[t] for t in batch], [heights[t] for t in batch], [labels[t] for t in batch])
            e_rows = model.emb.index_select(0, s.rows).requires_grad_()
            h = model.forward(s, e_rows)
            x = h.index_select(0, s.labelled)
            if dropout is not None:
                x = dropout(x)
            z = torch.addmm(model.head_b, x, model.head_w.t())
            total = torch.nn.functional.cross_entropy(z, s.labels, reduction="sum")
            loss = total / (len(s.labels) if args.average == "nodes" else len(batch))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.emb.index_add_(0, s.rows, e_rows.grad, alpha=-args.emb_lr)
            loss_sum += float(total)
            labelled += len(s.labels)
            done += len(batch)
            if log:
                log.write(json.dumps({"step": step, "epoch": epoch, "trees": batch, "loss": float(loss)}) + "\n")
        seconds = time.perf_counter() - start
        print(json.dumps({"peer": "pytorch-level-batched", "epoch": epoch, "steps": step, "trees": done,
                          "hidden": H, "batch": args.batch, "threads": args.threads,
                          "seconds": round(seconds, 3), "sentences_per_s": round(done / seconds, 1),
                          "train_loss": round(loss_sum / max(labelled, 1), 5)}), flush=True)
        if args.steps is not None and step >= args.steps:
            break
    if log:
        log.close()


if __name__ == "__main__":
    main()
