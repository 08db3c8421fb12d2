#!/usr/bin/python3
"""PyTorch peers of grove: tree models of docs/MODELS.md, fp32 inference, two modes.

  --mode eager    per-node evaluation with nn modules, node after node in post-order (what a
                  straightforward PyTorch tree model does; no batching across nodes or trees)
  --mode batched  level-batched by hand: per call of N trees, the nodes of all N trees are grouped by
                  height; per level the children's states are gathered with index_select, the level
                  runs one matmul (two where the model needs them), and the new states are scattered
                  back with index_copy_.
  --precision bf16  (batched only) the products in bf16, the way torch multiplies bf16 on a CPU: weight
                  matrices converted to bf16 once, each product's input rounded to bf16, torch.mm of the
                  two (oneDNN's bf16 matmul, fp32 accumulation, the result rounded to bf16), then back to
                  fp32; biases, gates and states stay fp32 (libtorch_tree --precision bf16 does the same).

Protocol: one pass runs all trees in calls of --batch trees; after one warm-up pass, --repeat passes
are timed; the result is one JSON line with the median over passes of (pass time / calls) in ms per
batch, and the p10/p90 of the same figure.  Per-call work that depends on the batch (grouping nodes
by level, index tensors) is inside the timing; parsing and per-tree heights are not.
"""

import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn

import peer_common as pc

# ---------------------------------------------------------------------------------------------------
# Eager: nn modules, one node at a time.


class EagerTreeFC(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        self.cell = nn.Linear(*w["W"].shape[::-1])
        self.cell.weight.data, self.cell.bias.data = w["W"], w["b"]

    def forward(self, tree, tokens):
        h = [None] * tree.size()
        for n, kids in enumerate(tree.children):
            if not kids:
                h[n] = self.emb(tokens[n:n + 1])
            else:
                h[n] = torch.tanh(self.cell(torch.cat([h[kids[0]], h[kids[1]]], 1)))
        return h[-1]


class EagerTreeGRU(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        self.leaf = linear(w["W_x"], w["b_x"])
        self.z = linear(w["U_z"], w["b_z"])
        self.r = linear(w["U_r"], w["b_r"])
        self.g = linear(w["U_h"], w["b_h"])

    def forward(self, tree, tokens):
        h = [None] * tree.size()
        for n, kids in enumerate(tree.children):
            if not kids:
                h[n] = torch.tanh(self.leaf(self.emb(tokens[n:n + 1])))
                continue
            hl, hr = h[kids[0]], h[kids[1]]
            s = torch.cat([hl, hr], 1)
            z = torch.sigmoid(self.z(s))
            r = torch.sigmoid(self.r(s))
            g = torch.tanh(self.g(r * s))
            h[n] = z * (hl + hr) / 2 + (1 - z) * g
        return h[-1]


class EagerTreeLSTM(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        self.leaf_iou = linear(w["W_iou"], w["b_iou"])
        self.iou = linear(w["U_iou"], w["b_iou"])
        self.f = linear(w["U_f"], torch.cat([w["b_f"], w["b_f"]]))

    def forward(self, tree, tokens):
        size = tree.size()
        h, c = [None] * size, [None] * size
        for n, kids in enumerate(tree.children):
            if not kids:
                i, o, u = self.leaf_iou(self.emb(tokens[n:n + 1])).chunk(3, 1)
                c[n] = torch.sigmoid(i) * torch.tanh(u)
            else:
                s = torch.cat([h[kids[0]], h[kids[1]]], 1)
                i, o, u = self.iou(s).chunk(3, 1)
                fl, fr = torch.sigmoid(self.f(s)).chunk(2, 1)
                c[n] = torch.sigmoid(i) * torch.tanh(u) + fl * c[kids[0]] + fr * c[kids[1]]
            h[n] = torch.sigmoid(o) * torch.tanh(c[n])
        return h[-1]


class EagerChildSumTreeLSTM(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        # x = 0 at internal nodes and t = 0 at leaves, so each node needs only one of W x / U t.
        self.leaf_iou = linear(w["W_iou"], w["b_iou"])
        self.iou = linear(w["U_iou"], w["b_iou"])
        self.f = linear(w["U_f"], w["b_f"])

    def forward(self, tree, tokens):
        size = tree.size()
        h, c = [None] * size, [None] * size
        for n, kids in enumerate(tree.children):
            if not kids:
                i, o, u = self.leaf_iou(self.emb(tokens[n:n + 1])).chunk(3, 1)
                c[n] = torch.sigmoid(i) * torch.tanh(u)
            else:
                hk = torch.cat([h[k] for k in kids], 0)
                ck = torch.cat([c[k] for k in kids], 0)
                i, o, u = self.iou(hk.sum(0, keepdim=True)).chunk(3, 1)
                f = torch.sigmoid(self.f(hk))
                c[n] = torch.sigmoid(i) * torch.tanh(u) + (f * ck).sum(0, keepdim=True)
            h[n] = torch.sigmoid(o) * torch.tanh(c[n])
        return h[-1]


class EagerMVRNN(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        self.emb_mat = w["emb_mat"]
        self.cell = linear(w["W"], w["bias"])
        self.W_M = w["W_M"]

    def forward(self, tree, tokens):
        size = tree.size()
        a, A = [None] * size, [None] * size
        for n, kids in enumerate(tree.children):
            if not kids:
                a[n] = self.emb(tokens[n:n + 1])[0]
                A[n] = self.emb_mat[tokens[n]]
            else:
                l, r = kids
                s = torch.cat([A[r] @ a[l], A[l] @ a[r]])
                a[n] = torch.tanh(self.cell(s))
                A[n] = self.W_M @ torch.cat([A[l], A[r]], 0)
        return a[-1].unsqueeze(0)


def linear(weight, bias):
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    layer.weight.data, layer.bias.data = weight, bias
    return layer


EAGER = {"treefc": EagerTreeFC, "treegru": EagerTreeGRU, "treelstm": EagerTreeLSTM,
         "childsumtreelstm": EagerChildSumTreeLSTM, "mvrnn": EagerMVRNN}


class EagerRunner:
    def __init__(self, model, w, trees):
        self.module = EAGER[model](w).eval()
        self.trees = trees
        self.tokens = [torch.tensor([max(t, 0) for t in tree.token]) for tree in trees]

    def call(self, first, count):
        return torch.cat([self.module(self.trees[t], self.tokens[t]) for t in range(first, first + count)])


# ---------------------------------------------------------------------------------------------------
# Level-batched by hand.


class Schedule:
    """One call's nodes of N trees, numbered globally (tree after tree), grouped by height.

    leaves/leaf_tokens: global leaf indices and their tokens (height 0); levels[k] for height k + 1:
    (nodes, child lists per position: for binary models `left`, `right`; for child-sum `edges` (the
    children, flattened) and `parent` (each edge's position within the level)).
    """

    def __init__(self, trees, heights, binary):
        offset, by_height = 0, {}
        leaves, leaf_tokens, roots = [], [], []
        for tree, height in zip(trees, heights):
            for n, kids in enumerate(tree.children):
                if not kids:
                    leaves.append(offset + n)
                    leaf_tokens.append(tree.token[n])
                else:
                    by_height.setdefault(height[n], []).append((offset + n, [offset + k for k in kids]))
            offset += tree.size()
            roots.append(offset - 1)
        self.total = offset
        self.leaves = torch.tensor(leaves)
        self.leaf_tokens = torch.tensor(leaf_tokens)
        self.roots = torch.tensor(roots)
        self.levels = []
        for k in sorted(by_height):
            nodes = by_height[k]
            idx = torch.tensor([n for n, _ in nodes])
            if binary:
                self.levels.append((idx, torch.tensor([kids[0] for _, kids in nodes]),
                                    torch.tensor([kids[1] for _, kids in nodes])))
            else:
                edges = [c for _, kids in nodes for c in kids]
                parent = [p for p, (_, kids) in enumerate(nodes) for _ in kids]
                self.levels.append((idx, torch.tensor(edges), torch.tensor(parent)))


def gates_lstm(iou, c_extra):
    H = iou.shape[1] // 3
    i, o, u = iou[:, :H], iou[:, H:2 * H], iou[:, 2 * H:]
    c = torch.sigmoid(i) * torch.tanh(u)
    if c_extra is not None:
        c = c + c_extra
    return torch.sigmoid(o) * torch.tanh(c), c


def affine(bias, x, wt):
    """x · wt + bias; for bf16 weights (--precision bf16), as torch multiplies bf16 (see the top)."""
    if wt.dtype != torch.bfloat16:
        return torch.addmm(bias, x, wt)
    return torch.mm(x.bfloat16(), wt).float() + bias


def product(x, wt):
    if wt.dtype != torch.bfloat16:
        return torch.mm(x, wt)
    return torch.mm(x.bfloat16(), wt).float()


def batched_treefc(w, s):
    h = torch.empty(s.total, w["W"].shape[0])
    h.index_copy_(0, s.leaves, w["emb"].index_select(0, s.leaf_tokens))
    for idx, left, right in s.levels:
        x = torch.cat([h.index_select(0, left), h.index_select(0, right)], 1)
        h.index_copy_(0, idx, torch.tanh(affine(w["b"], x, w["W"].t())))
    return h.index_select(0, s.roots)


def batched_treegru(w, s):
    H = w["W_x"].shape[0]
    h = torch.empty(s.total, H)
    x = w["emb"].index_select(0, s.leaf_tokens)
    h.index_copy_(0, s.leaves, torch.tanh(affine(w["b_x"], x, w["W_x"].t())))
    for idx, left, right in s.levels:
        hl, hr = h.index_select(0, left), h.index_select(0, right)
        sx = torch.cat([hl, hr], 1)
        zr = torch.sigmoid(affine(w["b_zr"], sx, w["U_zr"].t()))
        z, r = zr[:, :H], zr[:, H:]
        g = torch.tanh(affine(w["b_h"], r * sx, w["U_h"].t()))
        h.index_copy_(0, idx, z * (hl + hr) * 0.5 + (1 - z) * g)
    return h.index_select(0, s.roots)


def batched_treelstm(w, s):
    H = w["U_f"].shape[0] // 2
    h, c = torch.empty(s.total, H), torch.empty(s.total, H)
    x = w["emb"].index_select(0, s.leaf_tokens)
    hn, cn = gates_lstm(affine(w["b_iou"], x, w["W_iou"].t()), None)
    h.index_copy_(0, s.leaves, hn)
    c.index_copy_(0, s.leaves, cn)
    for idx, left, right in s.levels:
        x = torch.cat([h.index_select(0, left), h.index_select(0, right)], 1)
        g = affine(w["b_all"], x, w["U_all"].t())  # [i o u f_l f_r]
        f = torch.sigmoid(g[:, 3 * H:])
        fc = f[:, :H] * c.index_select(0, left) + f[:, H:] * c.index_select(0, right)
        hn, cn = gates_lstm(g[:, :3 * H], fc)
        h.index_copy_(0, idx, hn)
        c.index_copy_(0, idx, cn)
    return h.index_select(0, s.roots)


def batched_childsumtreelstm(w, s):
    H = w["U_f"].shape[0]
    h, c = torch.empty(s.total, H), torch.empty(s.total, H)
    x = w["emb"].index_select(0, s.leaf_tokens)
    hn, cn = gates_lstm(affine(w["b_iou"], x, w["W_iou"].t()), None)
    h.index_copy_(0, s.leaves, hn)
    c.index_copy_(0, s.leaves, cn)
    for idx, edges, parent in s.levels:
        hk = h.index_select(0, edges)
        t = torch.zeros(len(idx), H).index_add_(0, parent, hk)
        f = torch.sigmoid(affine(w["b_f"], hk, w["U_f"].t()))
        fc = torch.zeros(len(idx), H).index_add_(0, parent, f * c.index_select(0, edges))
        hn, cn = gates_lstm(affine(w["b_iou"], t, w["U_iou"].t()), fc)
        h.index_copy_(0, idx, hn)
        c.index_copy_(0, idx, cn)
    return h.index_select(0, s.roots)


def batched_mvrnn(w, s):
    """Node matrices are kept transposed (At = Aᵀ) so that a level's P = W_M [A; B] is one GEMM:
    Pᵀ = [Aᵀ Bᵀ] W_Mᵀ over all the level's rows, (n·H × 2H) · (2H × H)."""
    H = w["W"].shape[0]
    a, At = torch.empty(s.total, H), torch.empty(s.total, H, H)
    a.index_copy_(0, s.leaves, w["emb"].index_select(0, s.leaf_tokens))
    At.index_copy_(0, s.leaves, w["emb_mat"].index_select(0, s.leaf_tokens).transpose(1, 2))
    for idx, left, right in s.levels:
        n = len(idx)
        al, ar = a.index_select(0, left), a.index_select(0, right)
        Alt, Art = At.index_select(0, left), At.index_select(0, right)
        Ba = torch.bmm(al.unsqueeze(1), Art).squeeze(1)  # (B a)ᵀ = aᵀ Bᵀ
        Ab = torch.bmm(ar.unsqueeze(1), Alt).squeeze(1)
        a.index_copy_(0, idx, torch.tanh(affine(w["bias"], torch.cat([Ba, Ab], 1), w["W"].t())))
        Pt = product(torch.cat([Alt, Art], 2).view(n * H, 2 * H), w["W_M"].t())
        At.index_copy_(0, idx, Pt.view(n, H, H))
    return a.index_select(0, s.roots)


BATCHED = {"treefc": batched_treefc, "treegru": batched_treegru, "treelstm": batched_treelstm,
           "childsumtreelstm": batched_childsumtreelstm, "mvrnn": batched_mvrnn}


class BatchedRunner:
    def __init__(self, model, w, trees, precision="fp32"):
        self.fn = BATCHED[model]
        self.w = dict(w)
        if model == "treelstm":  # one matmul per level: [U_iou; U_f] and [b_iou; b_f; b_f]
            self.w["U_all"] = torch.cat([w["U_iou"], w["U_f"]])
            self.w["b_all"] = torch.cat([w["b_iou"], w["b_f"], w["b_f"]])
        if model == "treegru":
            self.w["U_zr"] = torch.cat([w["U_z"], w["U_r"]])
            self.w["b_zr"] = torch.cat([w["b_z"], w["b_r"]])
        if precision == "bf16":  # every weight matrix; the embedding table (an input) and biases stay fp32
            self.w = {k: v.bfloat16().contiguous() if v.dim() == 2 and k != "emb" else v for k, v in self.w.items()}
        self.binary = model != "childsumtreelstm"
        self.trees = trees
        self.heights = [tree.heights() for tree in trees]

    def call(self, first, count):
        end = first + count
        return self.fn(self.w, Schedule(self.trees[first:end], self.heights[first:end], self.binary))


# ---------------------------------------------------------------------------------------------------


def run_pass(runner, n_trees, batch, outputs=None):
    for first in range(0, n_trees, batch):
        roots = runner.call(first, min(batch, n_trees - first))
        if outputs is not None:
            outputs.append(roots)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pc.add_common_arguments(parser)
    parser.add_argument("--mode", required=True, choices=("eager", "batched"))
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                        help="bf16: the products in bf16 as torch multiplies bf16 (--mode batched only)")
    parser.add_argument("--save-weights", help="write the weights used to this safetensors file")
    args = parser.parse_args()
    if (args.trees is None) == (args.perfect_height is None):
        parser.error("give exactly one of --trees FILE and --perfect-height K")
    if args.precision == "bf16" and args.mode != "batched":
        parser.error("--precision bf16 needs --mode batched")

    torch.set_num_threads(args.threads)
    try:
        trees = pc.load_inputs(args)
        weights_np = pc.weights_for(args, args.model, trees)
    except pc.InputError as e:
        sys.exit(f"pytorch_tree.py: {e}")
    if args.save_weights:
        pc.write_safetensors(args.save_weights, weights_np)
    weights = {k: torch.from_numpy(np.array(v)) for k, v in weights_np.items()}
    runner = (EagerRunner(args.model, weights, trees) if args.mode == "eager"
              else BatchedRunner(args.model, weights, trees, args.precision))

    with torch.no_grad():
        outputs = []
        run_pass(runner, len(trees), args.batch, outputs)  # warm-up, and the outputs
        if args.out:
            np.save(args.out, torch.cat(outputs).numpy().astype(np.float32))
        calls = (len(trees) + args.batch - 1) // args.batch
        per_batch = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_pass(runner, len(trees), args.batch)
            per_batch.append((time.perf_counter() - start) * 1e3 / calls)
    print(json.dumps({"peer": f"pytorch-{args.mode}" if args.mode == "eager" else "pytorch-level-batched",
                      "model": args.model, "precision": args.precision, "hidden": args.hidden, "batch": args.batch,
                      "trees": len(trees),
                      "median_ms_per_batch": round(float(np.median(per_batch)), 4),
                      "p10_ms": round(float(np.percentile(per_batch, 10)), 4),
                      "p90_ms": round(float(np.percentile(per_batch, 90)), 4)}))


if __name__ == "__main__":
    main()
