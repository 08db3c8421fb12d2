#!/usr/bin/env python3
"""A binary TreeLSTM written as a torch.nn.Module, run node by node in PyTorch on SST trees, and the
same weights (its state_dict) compiled by grove: the roots agree and grove is faster.

    PYTHONPATH=build/python python3 python/examples/pytorch_treelstm.py --trees 1000

The module's parameters have exactly the names and shapes of models/treelstm.grove (docs/MODELS.md,
"TreeLSTM — binary"), so `grove.compile(..., weights=module.state_dict())` needs no renaming.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import grove

SOURCE_DIR = Path(os.environ.get("GROVE_SOURCE_DIR", Path(__file__).resolve().parents[2]))


class TreeLSTM(nn.Module):
    """The N-ary TreeLSTM of Tai et al. (2015) with N = 2, as docs/MODELS.md states it."""

    def __init__(self, vocab_size, input_size, hidden_size, seed=1):
        super().__init__()
        v, d, h = vocab_size, input_size, hidden_size
        generator = torch.Generator().manual_seed(seed)

        def uniform(*shape, fan_in):
            bound = 1.0 / fan_in**0.5
            return nn.Parameter((torch.rand(*shape, generator=generator) * 2 - 1) * bound)

        self.hidden_size = h
        self.emb = uniform(v, d, fan_in=d)
        self.W_iou = uniform(3 * h, d, fan_in=d)
        self.U_iou = uniform(3 * h, 2 * h, fan_in=2 * h)
        self.b_iou = uniform(3 * h, fan_in=h)
        self.U_f = uniform(2 * h, 2 * h, fan_in=2 * h)
        self.b_f = uniform(h, fan_in=h)

    def gates(self, iou):
        h = self.hidden_size
        return torch.sigmoid(iou[:h]), torch.sigmoid(iou[h:2 * h]), torch.tanh(iou[2 * h:])

    def leaf(self, token):
        i, o, u = self.gates(self.W_iou @ self.emb[token] + self.b_iou)
        c = i * u
        return o * torch.tanh(c), c

    def internal(self, left, right):
        h = self.hidden_size
        s = torch.cat([left[0], right[0]])
        i, o, u = self.gates(self.U_iou @ s + self.b_iou)
        f = torch.sigmoid(self.U_f @ s + torch.cat([self.b_f, self.b_f]))
        c = i * u + f[:h] * left[1] + f[h:] * right[1]
        return o * torch.tanh(c), c

    def forward(self, tree):
        """The root's h for a tree given as a nested tuple (a leaf is a token id), node by node in
        post-order with an explicit stack (SST trees are deep enough to matter)."""
        stack, states = [(tree, False)], []
        while stack:
            node, children_done = stack.pop()
            if isinstance(node, int):
                states.append(self.leaf(node))
            elif children_done:
                right = states.pop()
                left = states.pop()
                states.append(self.internal(left, right))
            else:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(node))
        return states[0][0]


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    return {token: i for i, token in enumerate(tokens)}


def parse_ptb(line, vocab):
    """'(3 (2 It) (4 good))' -> a nested tuple of token ids, ignoring labels."""
    atoms = line.replace("(", " ( ").replace(")", " ) ").split(" ")
    atoms = [a for a in atoms if a]
    unknown = vocab.get("<unk>")
    stack = [[]]
    position = 0
    while position < len(atoms):
        atom = atoms[position]
        if atom == "(":
            stack.append([])
            position += 2  # skip the label
            continue
        if atom == ")":
            children = stack.pop()
            stack[-1].append(children[0] if len(children) == 1 and isinstance(children[0], int) else tuple(children))
        else:
            stack[-1].append(vocab.get(atom, unknown))
        position += 1
    return stack[0][0]


def median_ms(function, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=int, default=1000, help="SST test trees to run (default 1000, at most 2210)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden size H = input size D (default 128)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each; the median is shown (default 3)")
    parser.add_argument("--batch", type=int, default=0, help="grove: trees per call, 0 = all (default 0)")
    parser.add_argument("--threads", type=int, default=None, help="grove: threads (default: all cores)")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest root difference accepted")
    args = parser.parse_args()

    sst = SOURCE_DIR / "datasets" / "sst"
    vocab_path = sst / "vocab.txt"
    vocab = read_vocab(vocab_path)
    with open(sst / "test.txt", encoding="utf-8") as f:
        lines = f.read().split("\n")[:args.trees]
    lines = [line for line in lines if line]
    trees = [parse_ptb(line, vocab) for line in lines]

    module = TreeLSTM(len(vocab), args.hidden, args.hidden)
    start = time.perf_counter()
    model = grove.compile(SOURCE_DIR / "models" / "treelstm.grove", weights=module.state_dict(),
                          vocab=vocab_path, threads=args.threads)
    compile_ms = (time.perf_counter() - start) * 1000

    def run_torch():
        with torch.no_grad():
            return torch.stack([module(tree) for tree in trees])

    torch_ms, torch_roots = median_ms(run_torch, args.runs)
    grove_ms, grove_roots = median_ms(lambda: model(lines, batch=args.batch), args.runs)

    difference = float((torch_roots - torch.from_numpy(grove_roots)).abs().max())
    print(f"{len(trees)} SST trees, H = D = {args.hidden}, vocabulary of {len(vocab)}")
    print(f"grove compile:         {compile_ms:9.1f} ms (schedule {model.schedule})")
    print(f"PyTorch, node by node: {torch_ms:9.1f} ms (median of {args.runs}, {torch.get_num_threads()} threads)")
    print(f"grove:                 {grove_ms:9.1f} ms (median of {args.runs})")
    print(f"speed-up:              {torch_ms / grove_ms:9.1f}x")
    print(f"max abs difference of the roots: {difference:.3g}")
    if not difference <= args.tolerance:
        print(f"error: the roots differ by more than {args.tolerance}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
