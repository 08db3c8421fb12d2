#!/usr/bin/python3
"""PyTorch peers for grove's sequence and grid models: nn.LSTM, nn.GRU and a DAG-RNN over image grids.

  --model lstm | gru   PyTorch's own nn.LSTM / nn.GRU (one layer, zero initial state), which run each
                       time step as BLAS GEMMs over the batch. A call of N sequences of different
                       lengths embeds them, pads them to the longest ([T, N, D], or [N, T, D] with
                       --batch-first) and packs them with pack_padded_sequence (enforce_sorted=False),
                       so every sequence stops at its own length; the output is h_n, the last state of
                       each sequence, in input order.
  --model dagrnn       a DAG-RNN by hand over R×C grids, the south-east sweep of docs/MODELS.md:
                         h(r, c) = tanh(U x(r, c) + W_0 h(r-1, c) + W_1 h(r, c-1) + b)
                       (zero states outside the grid). Per call: U x + b for every cell of the N grids
                       in one GEMM; then the anti-diagonals d = r + c in order, each one `index_select`
                       of the cells' upper and left neighbours, one addmm with [W_0 W_1] (H × 2H) over
                       all the diagonal's cells of all N grids, tanh, `index_copy_`. The output is the
                       state of each grid's sink, its bottom-right cell (what `grove run --grids` writes).

Inputs are grove's: --sequences FILE (token ids, one sequence per line, separated by spaces) or
--grids FILE (one per line: R C and then R·C token ids, row-major); --weights W.safetensors with
grove's names and shapes (docs/MODELS.md; `grove init-weights` writes them): LSTM/GRU emb, W_ih, W_hh,
b_ih, b_hh; DAG-RNN emb, U, W_0, W_1, b.

Protocol (experiments/README.md, as pytorch_tree.py): one pass runs all inputs in calls of --batch;
after one warm-up pass, --repeat passes are timed; one JSON line with the median over passes of
(pass time ÷ calls) in ms per batch, and p10/p90. Per-call work that depends on the batch (padding,
packing, the wavefront index tensors) is inside the timing; reading the files is not. --out writes the
outputs ([inputs, H], float32); --compare GROVE.npy prints the largest |difference| from them.
"""

import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

import peer_common as pc

SHAPES = {
    "lstm": lambda H, D, V: {"emb": [V, D], "W_ih": [4 * H, D], "W_hh": [4 * H, H], "b_ih": [4 * H],
                             "b_hh": [4 * H]},
    "gru": lambda H, D, V: {"emb": [V, D], "W_ih": [3 * H, D], "W_hh": [3 * H, H], "b_ih": [3 * H],
                            "b_hh": [3 * H]},
    "dagrnn": lambda H, D, V: {"emb": [V, D], "U": [H, D], "W_0": [H, H], "W_1": [H, H], "b": [H]},
}


def read_token_lines(path, kind):
    """Lines of integer token ids (empty lines skipped); errors name the file, line and token."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                lines.append([int(t) for t in line.split(" ") if t.strip()])
            except ValueError as e:
                raise pc.InputError(f"{path}:{lineno}: expected integer token ids: {e}") from None
    if not lines:
        raise pc.InputError(f"{path}: no {kind}")
    return lines


def read_sequences(path):
    return [torch.tensor(s, dtype=torch.long) for s in read_token_lines(path, "sequences")]


def read_grids(path):
    """Grids as (R, C, tokens [R·C]) in row-major order."""
    grids = []
    for g, values in enumerate(read_token_lines(path, "grids")):
        if len(values) < 2 or values[0] <= 0 or values[1] <= 0 or len(values) != 2 + values[0] * values[1]:
            raise pc.InputError(f"{path}: grid {g}: expected 'R C' (both > 0) and then R*C tokens, got "
                                f"{len(values)} numbers")
        grids.append((values[0], values[1], torch.tensor(values[2:], dtype=torch.long)))
    return grids


def load_weights(path, model, tokens_max):
    """Reads grove's safetensors file and checks names and shapes against docs/MODELS.md."""
    weights = pc.read_safetensors(path)
    for name in ("emb", "W_hh" if model != "dagrnn" else "W_0"):
        if name not in weights:
            raise pc.InputError(f"{path}: missing tensor '{name}' for model {model}")
    V, D = weights["emb"].shape
    H = weights["W_hh"].shape[1] if model != "dagrnn" else weights["W_0"].shape[0]
    expected = SHAPES[model](H, D, V)
    for name, shape in expected.items():
        if name not in weights:
            raise pc.InputError(f"{path}: missing tensor '{name}', expected shape {shape}")
        if list(weights[name].shape) != shape:
            raise pc.InputError(f"{path}: tensor '{name}' has shape {list(weights[name].shape)}, "
                                f"expected {shape}")
    if tokens_max >= V:
        raise pc.InputError(f"{path}: 'emb' has {V} rows but the inputs use token id {tokens_max}")
    return {k: torch.from_numpy(np.array(weights[k])) for k in expected}, H


class SequenceRunner:
    """nn.LSTM / nn.GRU over packed, padded calls of sequences of different lengths."""

    def __init__(self, model, w, hidden, sequences, batch_first):
        D = w["emb"].shape[1]
        module_type = nn.LSTM if model == "lstm" else nn.GRU
        self.module = module_type(input_size=D, hidden_size=hidden, num_layers=1, batch_first=batch_first)
        with torch.no_grad():
            self.module.weight_ih_l0.copy_(w["W_ih"])
            self.module.weight_hh_l0.copy_(w["W_hh"])
            self.module.bias_ih_l0.copy_(w["b_ih"])
            self.module.bias_hh_l0.copy_(w["b_hh"])
        self.module.eval()
        self.emb = nn.Embedding.from_pretrained(w["emb"])
        self.is_lstm = model == "lstm"
        self.batch_first = batch_first
        self.sequences = sequences
        self.lengths = torch.tensor([len(s) for s in sequences])

    def count(self):
        return len(self.sequences)

    def call(self, first, count):
        tokens = pad_sequence(self.sequences[first:first + count], batch_first=self.batch_first)
        packed = pack_padded_sequence(self.emb(tokens), self.lengths[first:first + count],
                                      batch_first=self.batch_first, enforce_sorted=False)
        _, state = self.module(packed)
        h_n = state[0] if self.is_lstm else state  # [layers = 1, N, H], in input order
        return h_n[0]


class GridRunner:
    """The south-east DAG-RNN sweep by anti-diagonal wavefronts, batched over a call's grids."""

    def __init__(self, w, hidden, grids):
        self.w = w
        self.W01t = torch.cat([w["W_0"], w["W_1"]], 1).t().contiguous()  # [2H, H]
        self.hidden = hidden
        self.grids = grids

    def count(self):
        return len(self.grids)

    def call(self, first, count):
        """Steps: 1. number the cells of the call's grids globally (grid after grid, row-major), with
        one extra zero row (index `total`) standing for the states outside a grid; 2. per anti-diagonal,
        the cells on it and their upper/left neighbours' indices; 3. U x + b for all cells at once;
        4. the wavefronts in order; 5. each grid's bottom-right cell."""
        grids = self.grids[first:first + count]
        cells_r, cells_c, sinks = [], [], []
        offset = 0
        for R, C, _ in grids:
            r, c = np.divmod(np.arange(R * C), C)
            cells_r.append(r)
            cells_c.append(c)
            offset += R * C
            sinks.append(offset - 1)
        total = offset
        r, c = np.concatenate(cells_r), np.concatenate(cells_c)
        cols = np.concatenate([np.full(R * C, C) for R, C, _ in grids])
        index = np.arange(total)
        up = np.where(r > 0, index - cols, total)
        left = np.where(c > 0, index - 1, total)
        diagonal = r + c
        order = np.argsort(diagonal, kind="stable")
        bounds = np.searchsorted(diagonal[order], np.arange(diagonal.max() + 2))
        sinks = torch.tensor(sinks)

        tokens = torch.cat([tokens for _, _, tokens in grids])
        ux = torch.addmm(self.w["b"], self.w["emb"].index_select(0, tokens), self.w["U"].t())
        h = torch.zeros(total + 1, self.hidden)
        for d in range(len(bounds) - 1):
            cells = order[bounds[d]:bounds[d + 1]]
            idx = torch.from_numpy(cells)
            preds = torch.cat([h.index_select(0, torch.from_numpy(up[cells])),
                               h.index_select(0, torch.from_numpy(left[cells]))], 1)
            h.index_copy_(0, idx, torch.tanh(torch.addmm(ux.index_select(0, idx), preds, self.W01t)))
        return h.index_select(0, sinks)


def run_pass(runner, batch, outputs=None):
    for first in range(0, runner.count(), batch):
        out = runner.call(first, min(batch, runner.count() - first))
        if outputs is not None:
            outputs.append(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=("lstm", "gru", "dagrnn"))
    parser.add_argument("--weights", required=True, help="grove's safetensors weights (grove init-weights)")
    parser.add_argument("--sequences", help="token ids, one sequence per line (lstm, gru)")
    parser.add_argument("--grids", help="grids, one per line: R C and R*C token ids, row-major (dagrnn)")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-first", action="store_true", help="nn.LSTM/nn.GRU with batch_first=True")
    parser.add_argument("--out", help="write the outputs, [inputs, H] float32, to this .npy file")
    parser.add_argument("--compare", help="print the largest |difference| from this .npy (grove's --out)")
    args = parser.parse_args()
    want = "--grids" if args.model == "dagrnn" else "--sequences"
    given = args.grids if args.model == "dagrnn" else args.sequences
    if given is None or (args.grids is not None and args.sequences is not None):
        parser.error(f"model {args.model} reads {want} FILE (and only that)")
    if args.batch <= 0 or args.repeat <= 0:
        parser.error("--batch and --repeat must be > 0")

    torch.set_num_threads(args.threads)
    try:
        if args.model == "dagrnn":
            inputs = read_grids(args.grids)
            tokens_max = max(int(t.max()) for _, _, t in inputs)
        else:
            inputs = read_sequences(args.sequences)
            tokens_max = max(int(s.max()) if len(s) else -1 for s in inputs)
            if any(len(s) == 0 for s in inputs):
                raise pc.InputError(f"{args.sequences}: an empty sequence")
        w, hidden = load_weights(args.weights, args.model, tokens_max)
    except pc.InputError as e:
        sys.exit(f"pytorch_seq.py: {e}")
    runner = (GridRunner(w, hidden, inputs) if args.model == "dagrnn"
              else SequenceRunner(args.model, w, hidden, inputs, args.batch_first))

    with torch.no_grad():
        outputs = []
        run_pass(runner, args.batch, outputs)  # warm-up, and the outputs
        result = torch.cat(outputs).numpy().astype(np.float32)
        if args.out:
            np.save(args.out, result)
        calls = (runner.count() + args.batch - 1) // args.batch
        per_batch = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_pass(runner, args.batch)
            per_batch.append((time.perf_counter() - start) * 1e3 / calls)
    line = {"peer": "pytorch-nn" if args.model != "dagrnn" else "pytorch-wavefront", "model": args.model,
            "hidden": hidden, "batch": args.batch, "inputs": runner.count(),
            "median_ms_per_batch": round(float(np.median(per_batch)), 4),
            "p10_ms": round(float(np.percentile(per_batch, 10)), 4),
            "p90_ms": round(float(np.percentile(per_batch, 90)), 4)}
    if args.compare:
        other = np.load(args.compare)
        if other.shape != result.shape:
            sys.exit(f"pytorch_seq.py: {args.compare} has shape {list(other.shape)}, "
                     f"expected {list(result.shape)}")
        line["max_abs_diff"] = float(np.abs(other - result).max())
        print(f"max |difference| from {args.compare}: {line['max_abs_diff']:.3g}", file=sys.stderr)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
