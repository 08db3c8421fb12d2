#!/usr/bin/python3
"""grove's Relay programs (models/relay/*.relay) timed with `grove relay bench`, in one run, against
grove's own TreeLSTM (`grove bench`) and against the same computations as torch.nn modules.

  /usr/bin/python3 experiments/bench_relay.py [--grove build/tools/grove] [--repeat 5] [--small-repeat 200]
      [--interp-trees 50] [--out experiments/results/relay.md]

(a) TreeLSTM, H = D = 256, SST test trees (datasets/sst/test.txt, datasets/sst/vocab.txt), batch 10.
    Weights: `grove init-weights models/treelstm.grove --sizes H=256,D=256,V=<vocab lines>`; the same
    tensors, one .npy per name, are @main's --arg values for models/relay/treelstm.relay.
    - `grove bench models/treelstm.grove --threads 2` and `grove relay bench --executor vm` on all
      trees and on the first --interp-trees trees; `grove relay bench --executor interp` on the first
      --interp-trees trees only (the interpreter takes ~8 ms a tree).
    - agreement: `grove run` vs `grove relay run` (vm and interp) on the first --interp-trees trees:
      the largest |difference| of root h must be at most 1e-5.
(b) MLP, CNN and LSTM of models/relay on the VM (MLP and CNN also partitioned for oneDNN, `--target dnnl`)
    against torch.nn (inference, torch.no_grad,
    torch.set_num_threads(2)), batch 1 and 16, random inputs and weights (the timings do not
    depend on the values):
    - MLP: @main's batch is x's first dim (`?`): x is [B, 16]; one call per batch.
    - CNN: @main's image is typed [1, 3, 8, 8]; for B = 16 the script writes a copy of cnn.relay with
      the batch dim 16 (image [16, 3, 8, 8], reshape to [16, -1], result [16, 10]): one call per batch.
    - LSTM: @lstm recurs over a List of [1, D] steps; the script writes a copy whose steps are [B, D]
      and whose @main takes x [T, B, D] and builds the List with split/squeeze/Cons (T = 16,
      D = H = 128); PyTorch: nn.LSTM(D, H) on x [T, B, D]. One call per batch. Both get torch's
      weights and a zero initial state (grove compiles @lstm as a sequence model then), and grove's
      h_T must equal torch's within 1e-5; a third row gives grove random h0, c0, which the VM runs
      itself.
    Both sides: one warm-up pass, then the median over --small-repeat passes (`grove relay bench`'s
    protocol; a pass is one call here). torch runs in this process, grove relay bench in its own.

(c) GEMM: nn.dense and nn.batch_matmul alone on the VM's Halide kernels against torch at the same shapes,
    in GFLOP/s, beside grove's own TreeLSTM rate from (a).
(d) ONNX: the MLP, CNN and LSTM of (b) as torch.nn modules exported with torch.onnx.export (opset 14, one
    file per batch), run by `grove relay bench MODEL.onnx` as they are against the exported module, with
    grove's output checked against torch's (1e-5 relative), and on onnxruntime when it can be imported
    (`pip install onnxruntime` in a venv made with --system-site-packages, so that Debian's torch stays
    visible). `--onnx-only` runs just this part.

(e) Composition (`--composition-only` runs just this part, to experiments/results/relay_composition.md):
    the TreeLSTM encoder of (a) alone — `@map` of `@treelstm(...).0` — against the same encoder feeding a
    5-class classifier inside the mapped closure, `nn.softmax(nn.dense(@treelstm(%t, ...).0, %Wc))`,
    which the VM runs as one batched call of the encoder and one batched call of the head over the
    stacked roots, on the first --composition-trees SST test trees at batch 10; --rounds alternating
    runs, the ratio taken within each round (target: within 1.15x).

Writes the markdown table (with the machine's load average before and after) to --out.
"""

import argparse
import datetime
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# PERF-NOTES' environment, for grove's subprocesses and for torch in this process (set before torch
# starts its OpenMP pool: with active waiting, 2 spinning threads on a loaded 2-core machine made a
# 3x8x8 convolution take 30 ms instead of 0.1 ms).
os.environ.update(OPENBLAS_CORETYPE="SkylakeX", OMP_WAIT_POLICY="PASSIVE")
ENV = dict(os.environ)

import numpy as np  # noqa: E402

try:  # Debian's python3-torch; (e) alone runs without it
    import torch  # noqa: E402
except ImportError:
    torch = None

try:  # optional: (d) also times the ONNX files on onnxruntime where it is installed (pip)
    import onnxruntime as ort  # noqa: E402
except ImportError:
    ort = None

ROOT = Path(__file__).resolve().parent.parent


def run(command, timeout=1200):
    result = subprocess.run([str(c) for c in command], env=ENV, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, command))}\n{result.stdout}{result.stderr}")
    return result.stdout


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown processor"


def uptime():
    return Path("/proc/loadavg").read_text().split()[:3]


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + s:8 + n + e], dtype=np.float32).reshape(v["shape"])
    return out


def time_torch(fn, repeat):
    """grove relay bench's protocol for one call per pass: one warm-up call, median of `repeat`."""
    with torch.no_grad():
        fn()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms_per_call": float(np.median(times)), "min_ms": min(times), "max_ms": max(times),
            "calls": 1, "compile_ms": None}


def relay_bench(grove, file, executor, args, repeat, extra=()):
    command = [grove, "relay", "bench", file, "--executor", executor, "--repeat", repeat, "--json", *extra]
    for name, path in args.items():
        command += ["--arg", f"{name}={path}"]
    return json.loads(run(command).strip().splitlines()[-1])


def treelstm_weights(grove, tmp):
    """(a)'s weights, H = D = 256: the safetensors file and, per name, an .npy for --arg."""
    V = sum(1 for _ in open(ROOT / "datasets/sst/vocab.txt"))
    weights = tmp / "treelstm.safetensors"
    run([grove, "init-weights", ROOT / "models/treelstm.grove", "--sizes", f"H=256,D=256,V={V}", "--out", weights])
    args = {}
    for name, a in read_safetensors(weights).items():
        args[name] = tmp / f"{name}.npy"
        np.save(args[name], a)
    return weights, args


def treelstm_rows(grove, tmp, repeat, interp_trees, rounds):
    vocab = ROOT / "datasets/sst/vocab.txt"
    trees = ROOT / "datasets/sst/test.txt"
    weights, args = treelstm_weights(grove, tmp)
    first = tmp / f"test{interp_trees}.txt"
    first.write_text("".join(open(trees).readlines()[:interp_trees]))
    n_all = sum(1 for _ in open(trees))

    # Agreement on the first trees: grove run vs grove relay run (vm and interp).
    run([grove, "run", ROOT / "models/treelstm.grove", "--weights", weights, "--trees", first, "--vocab", vocab,
         "--batch", 10, "--out", tmp / "grove_roots.npy"])
    expected = np.load(tmp / "grove_roots.npy")
    agreement = {}
    for executor in ["vm", "interp"]:
        out = tmp / f"relay_{executor}"
        command = [grove, "relay", "run", ROOT / "models/relay/treelstm.relay", "--executor", executor, "--trees",
                   first, "--vocab", vocab, "--out", out]
        for name, path in args.items():
            command += ["--arg", f"{name}={path}"]
        run(command)
        got = np.concatenate([np.load(out / f"{i}.npy") for i in range(interp_trees)])
        agreement[executor] = float(np.abs(got - expected).max())
        assert agreement[executor] <= 1e-5, f"treelstm {executor} disagrees with grove run: {agreement[executor]}"

    rows = []
    ratios = []  # relay vm ÷ grove bench on all trees, one per round
    gflops = []  # grove bench's achieved GFLOP/s on all trees, one per round
    for tree_file, count in [(trees, n_all), (first, interp_trees)]:
        # On all trees, `rounds` alternating runs of both, so that a burst of load hits both sides alike;
        # the ratio is taken within each round.
        for _ in range(rounds if count == n_all else 1):
            g = json.loads(run([grove, "bench", ROOT / "models/treelstm.grove", "--weights", weights, "--trees",
                                tree_file, "--vocab", vocab, "--batch", 10, "--repeat", repeat, "--threads", 2,
                                "--json"]))
            rows.append(("TreeLSTM", "grove bench (models/treelstm.grove)", f"{count} SST test trees", 10,
                         {"median_ms_per_call": g["median_ms_per_batch"], "min_ms": None, "max_ms": None,
                          "p10": g["p10_ms"], "p90": g["p90_ms"], "calls": g["calls"],
                          "compile_ms": g["compile_ms"]}))
            executors = ["vm"] if count == n_all else ["vm", "interp"]
            for executor in executors:
                r = relay_bench(grove, ROOT / "models/relay/treelstm.relay", executor, args, repeat,
                                ["--trees", tree_file, "--vocab", vocab, "--batch", 10])
                rows.append(("TreeLSTM", f"grove relay bench --executor {executor}", f"{count} SST test trees", 10,
                             r))
                if count == n_all:
                    ratios.append(r["median_ms_per_call"] / g["median_ms_per_batch"])
                    gflops.append(g["gflops"])
    return rows, agreement, ratios, gflops


CLASSIFIER_MAIN = """def @main(%trees: List[Tree[int32]], %emb: Tensor[(?, ?), float32], %W_iou: Tensor[(?, ?), float32],
          %U_iou: Tensor[(?, ?), float32], %b_iou: Tensor[(?), float32], %U_f: Tensor[(?, ?), float32],
          %b_f: Tensor[(?), float32], %Wc: Tensor[(5, ?), float32]) -> List[Tensor[(1, 5), float32]] {
  %0 = fn (%t: Tree[int32]) -> Tensor[(1, 5), float32] {
    %1 = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    nn.softmax(nn.dense(%1.0, %Wc))
  };
  @map(%0, %trees)
}
"""


def composition_rows(grove, tmp, repeat, rounds, count):
    """(e): the encoder alone and with a classifier head, alternating; returns rows and per-round ratios."""
    vocab = ROOT / "datasets/sst/vocab.txt"
    _, args = treelstm_weights(grove, tmp)
    head_args = dict(args)
    head_args["Wc"] = tmp / "Wc.npy"
    np.save(head_args["Wc"], np.random.default_rng(5).uniform(-0.1, 0.1, (5, 256)).astype(np.float32))
    text = (ROOT / "models/relay/treelstm.relay").read_text()
    classifier = tmp / "treelstm_classifier.relay"
    classifier.write_text(text[:text.index("def @main")] + CLASSIFIER_MAIN)
    trees = tmp / f"test{count}.txt"
    trees.write_text("".join(open(ROOT / "datasets/sst/test.txt").readlines()[:count]))
    extra = ["--trees", trees, "--vocab", vocab, "--batch", 10, "--threads", 2]
    rows, ratios = [], []
    for _ in range(rounds):
        alone = relay_bench(grove, ROOT / "models/relay/treelstm.relay", "vm", args, repeat, extra)
        head = relay_bench(grove, classifier, "vm", head_args, repeat, extra)
        rows.append(("TreeLSTM encoder alone", f"{count} SST test trees", alone))
        rows.append(("encoder + softmax(dense) head", f"{count} SST test trees", head))
        ratios.append(head["median_ms_per_call"] / alone["median_ms_per_call"])
    return rows, ratios


def composition_table(rows, ratios):
    lines = ["| program | inputs | batch | median ms per call | min | max | calls |", "|---|---|---|---|---|---|---|"]
    for program, inputs, r in rows:
        lines.append(f"| {program} | {inputs} | 10 | {fmt(r['median_ms_per_call'], 4)} | {fmt(r.get('min_ms'), 4)} | "
                     f"{fmt(r.get('max_ms'), 4)} | {r['calls']} |")
    lines += ["", f"encoder + head ÷ encoder alone, per round: {', '.join(f'{x:.3f}' for x in ratios)} "
              f"(median {float(np.median(ratios)):.3f}; target ≤ 1.15)."]
    return lines


def gemm_rows(grove, tmp, repeat, shapes=((1, 256, 1024), (22, 256, 1024), (64, 256, 1024), (256, 256, 1024),
                                          (512, 512, 512))):
    """nn.dense (x [M, K] · W [N, K]ᵀ) and nn.batch_matmul (4 batches of it) on the VM's Halide kernels
    against torch (F.linear / torch.bmm on the BLAS torch uses), in GFLOP/s. M = 22 is the mean number of
    nodes per level of TreeLSTM on SST at batch 10 (82,600 nodes in 3,734 levels)."""
    rows = []
    torch.manual_seed(0)
    for M, K, N in shapes:
        for op, B in [("nn.dense", 1), ("nn.batch_matmul", 4)]:
            if op == "nn.dense":
                sig = f"%x: Tensor[({M}, {K}), float32], %w: Tensor[({N}, {K}), float32]"
                body, ret = "nn.dense(%x, %w)", f"({M}, {N})"
                x, w = torch.rand(M, K), torch.rand(N, K)
                fn = lambda x=x, w=w: torch.nn.functional.linear(x, w)  # noqa: E731
            else:
                sig = f"%x: Tensor[({B}, {M}, {K}), float32], %w: Tensor[({B}, {N}, {K}), float32]"
                body, ret = "nn.batch_matmul(%x, %w)", f"({B}, {M}, {N})"
                x, w = torch.rand(B, M, K), torch.rand(B, N, K)
                fn = lambda x=x, w=w: torch.bmm(x, w.transpose(1, 2))  # noqa: E731
            file = tmp / f"gemm_{op}_{M}_{K}_{N}.relay"
            file.write_text(f'#[version = "0.0.5"]\ndef @main({sig}) -> Tensor[{ret}, float32] {{\n  {body}\n}}\n')
            flop = 2.0 * B * M * N * K
            r = relay_bench(grove, file, "vm", {}, repeat, ["--random-args", 1])
            t = time_torch(fn, repeat)
            rows.append((op, f"B={B}, M={M}, K={K}, N={N}", flop / r["median_ms_per_call"] * 1e-6,
                         flop / t["median_ms_per_call"] * 1e-6))
    return rows


def mlp_rows(grove, tmp, repeat):
    rows = []
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10),
                                torch.nn.Softmax(dim=-1)).eval()
    for B in [1, 16]:
        x = torch.rand(B, 16) * 2 - 1
        np.save(tmp / f"mlp_x{B}.npy", x.numpy())
        for target in [None, "dnnl"]:
            r = relay_bench(grove, ROOT / "models/relay/mlp.relay", "vm", {"x": tmp / f"mlp_x{B}.npy"}, repeat,
                            ["--random-args", 1] + (["--target", target] if target else []))
            rows.append(("MLP 16-32-10", "grove relay bench --executor vm" + (f" --target {target}" if target else ""),
                         f"x [{B}, 16]", B, r))
        rows.append(("MLP 16-32-10", "torch.nn", f"x [{B}, 16]", B, time_torch(lambda: model(x), repeat)))
    return rows


def cnn_rows(grove, tmp, repeat):
    rows = []
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    model = torch.nn.Sequential(conv, torch.nn.ReLU(), torch.nn.BatchNorm2d(4, eps=1e-5), torch.nn.MaxPool2d(2, 2),
                                torch.nn.Flatten(), torch.nn.Linear(64, 10), torch.nn.Softmax(dim=-1)).eval()
    text = (ROOT / "models/relay/cnn.relay").read_text()
    for B in [1, 16]:
        file = ROOT / "models/relay/cnn.relay"
        if B != 1:
            file = tmp / f"cnn{B}.relay"
            file.write_text(text.replace("(1, 3, 8, 8)", f"({B}, 3, 8, 8)").replace("(1, 10)", f"({B}, 10)")
                            .replace("newshape=[1, -1]", f"newshape=[{B}, -1]"))
        for target in [None, "dnnl"]:
            r = relay_bench(grove, file, "vm", {}, repeat, ["--random-args", 1] + (["--target", target] if target else []))
            rows.append(("CNN 3x8x8", "grove relay bench --executor vm" + (f" --target {target}" if target else ""),
                         f"image [{B}, 3, 8, 8]", B, r))
        x = torch.rand(B, 3, 8, 8)
        rows.append(("CNN 3x8x8", "torch.nn", f"image [{B}, 3, 8, 8]", B, time_torch(lambda: model(x), repeat)))
    return rows


def lstm_program(T, B, D, H):
    text = (ROOT / "models/relay/lstm.relay").read_text()
    head = text[:text.index("def @main")].replace("(1, ?)", f"({B}, ?)")
    steps = "Nil"
    for t in reversed(range(T)):
        steps = f"Cons(squeeze(%s.{t}, axis=[0]), {steps})"
    return head + f"""def @main(%x: Tensor[({T}, {B}, {D}), float32], %h0: Tensor[({B}, {H}), float32],
          %c0: Tensor[({B}, {H}), float32], %w_ih: Tensor[({4 * H}, {D}), float32],
          %w_hh: Tensor[({4 * H}, {H}), float32], %b_ih: Tensor[({4 * H}), float32],
          %b_hh: Tensor[({4 * H}), float32]) -> Tensor[({B}, {H}), float32] {{
  let %s = split(%x, indices_or_sections={T}, axis=0);
  let %xs = {steps};
  %0 = @lstm(%xs, (%h0, %c0), %w_ih, %w_hh, %b_ih, %b_hh);
  %0.0
}}
"""


def lstm_rows(grove, tmp, repeat, T=16, D=128, H=128):
    """Returns the rows and, per batch, the largest |difference| of h_T between grove (vm) and torch."""
    rows, agreement = [], {}
    torch.manual_seed(0)
    model = torch.nn.LSTM(D, H).eval()
    weights = {}
    for name in ["w_ih", "w_hh", "b_ih", "b_hh"]:
        weights[name] = tmp / f"lstm_{name}.npy"
        np.save(weights[name], getattr(model, name.replace("w_", "weight_").replace("b_", "bias_") + "_l0")
                .detach().numpy())
    for B in [1, 16]:
        file = tmp / f"lstm{B}.relay"
        file.write_text(lstm_program(T, B, D, H))
        x, h0, c0 = torch.rand(T, B, D), torch.zeros(1, B, H), torch.zeros(1, B, H)
        args = dict(weights, x=tmp / f"lstm_x{B}.npy", h0=tmp / f"lstm_zeros{B}.npy", c0=tmp / f"lstm_zeros{B}.npy")
        np.save(args["x"], x.numpy())
        np.save(args["h0"], np.zeros((B, H), dtype=np.float32))
        command = [grove, "relay", "run", file, "--out", tmp / f"lstm_h{B}.npy"]
        for name, path in args.items():
            command += ["--arg", f"{name}={path}"]
        run(command)
        with torch.no_grad():
            expected = model(x, (h0, c0))[1][0][0].numpy()
        agreement[B] = float(np.abs(np.load(tmp / f"lstm_h{B}.npy") - expected).max())
        assert agreement[B] <= 1e-5, f"lstm B={B}: grove's h_T differs from torch's by {agreement[B]}"
        what = f"x [T={T}, {B}, D={D}], H={H}"
        rows.append(("LSTM", "grove relay bench --executor vm", what, B, relay_bench(grove, file, "vm", args, repeat)))
        # A nonzero initial state: grove's sequence models start from zeros, so the VM runs the fold.
        nonzero = {k: v for k, v in args.items() if k not in ("h0", "c0")}
        rows.append(("LSTM", "grove relay bench --executor vm, random h0, c0 (the VM runs @lstm)", what, B,
                     relay_bench(grove, file, "vm", nonzero, repeat, ["--random-args", 1])))
        rows.append(("LSTM", "torch.nn", what, B, time_torch(lambda: model(x, (h0, c0)), repeat)))
    return rows, agreement


def onnx_rows(grove, tmp, repeat, T=16, D=128, H=128):
    """(d) The same MLP, CNN and LSTM exported with torch.onnx.export (opset 14, one model per batch)
    and handed to `grove relay bench MODEL.onnx` as they are, against the torch.nn module that was
    exported. Returns the rows and, per model and batch, the largest |grove - torch| of the output
    (grove relay run on the VM) relative to the output's scale, which must be at most 1e-5."""
    class OnnxLSTM(torch.nn.Module):
        """nn.LSTM whose last hidden state is the output: exported, its ONNX LSTM becomes grove's fold."""

        def __init__(self, D, H):
            super().__init__()
            self.lstm = torch.nn.LSTM(D, H)

        def forward(self, x):
            return self.lstm(x)[1][0]

    rows, agreement = [], {}
    torch.manual_seed(0)
    models = {
        "MLP 16-32-10": (torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10),
                                             torch.nn.Softmax(dim=-1)).eval(), lambda B: (B, 16)),
        "CNN 3x8x8": (torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                          torch.nn.BatchNorm2d(4), torch.nn.MaxPool2d(2, 2), torch.nn.Flatten(),
                                          torch.nn.Linear(64, 10), torch.nn.Softmax(dim=-1)).eval(),
                      lambda B: (B, 3, 8, 8)),
        f"LSTM T={T}, D=H={D}": (OnnxLSTM(D, H).eval(), lambda B: (T, B, D)),
    }
    for name, (model, shape) in models.items():
        for B in [1, 16]:
            x = torch.rand(*shape(B))
            file = tmp / f"onnx_{name.split()[0]}_{B}.onnx"
            with torch.no_grad():
                torch.onnx.export(model, (x,), file, input_names=["input"], output_names=["output"],
                                  opset_version=14)
                expected = model(x).numpy()
            np.save(tmp / "onnx_x.npy", x.numpy())
            run([grove, "relay", "run", file, "--arg", f"input={tmp / 'onnx_x.npy'}", "--out", tmp / "onnx_y.npy"])
            got = np.load(tmp / "onnx_y.npy").reshape(expected.shape)
            agreement[(name, B)] = float(np.abs(got - expected).max() / max(1.0, np.abs(expected).max()))
            assert agreement[(name, B)] <= 1e-5, f"{name} B={B}: grove differs from torch by {agreement[(name, B)]}"
            what = "x [" + ", ".join(map(str, shape(B))) + "]"
            args = {"input": tmp / f"onnx_x_{name.split()[0]}_{B}.npy"}
            np.save(args["input"], x.numpy())
            rows.append((name, "grove relay bench MODEL.onnx --executor vm", what, B,
                         relay_bench(grove, file, "vm", args, repeat)))
            rows.append((name, "torch.nn (the exported module)", what, B, time_torch(lambda: model(x), repeat)))
            if ort is not None:  # the same file on onnxruntime's CPU provider, 2 threads
                options = ort.SessionOptions()
                options.intra_op_num_threads = 2
                options.inter_op_num_threads = 1
                session = ort.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
                feed = {"input": x.numpy()}
                out = session.run(None, feed)[0].reshape(expected.shape)
                assert np.abs(out - expected).max() <= 1e-5 * max(1.0, np.abs(expected).max()), f"onnxruntime {name}"
                rows.append((name, f"onnxruntime {ort.__version__} (CPU, 2 threads)", what, B,
                             time_torch(lambda: session.run(None, feed), repeat)))
    return rows, agreement


def onnx_table(rows, agreement):
    lines = ["| model | implementation | inputs | batch | warm-up ms | median ms per call | min | max |",
             "|---|---|---|---|---|---|---|---|"]
    for model, impl, inputs, batch, r in rows:
        lines.append(f"| {model} | {impl} | {inputs} | {batch} | {fmt(r.get('warmup_ms'), 1)} | "
                     f"{fmt(r['median_ms_per_call'], 4)} | {fmt(r.get('min_ms'), 4)} | {fmt(r.get('max_ms'), 4)} |")
    lines += ["", "grove's output against torch's (largest |difference| ÷ max(1, max |torch|)): " +
              ", ".join(f"{m} B={b} {d:.1e}" for (m, b), d in agreement.items()) + "; required ≤ 1e-5."]
    return lines


def blas_info():
    """Which BLAS torch multiplies with (Debian's build: BLAS_INFO=generic, i.e. whatever libblas.so.3 is)."""
    config = torch.__config__.show()
    found = re.search(r"BLAS_INFO=([^,\s]+)", config)
    info = f"BLAS_INFO={found.group(1) if found else 'unknown'}"
    blas = Path("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    return f"{info} (libblas.so.3 -> {blas.resolve() if blas.exists() else 'not found'})"


def fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grove", default=str(ROOT / "build/tools/grove"))
    p.add_argument("--repeat", type=int, default=5, help="timed passes over the trees")
    p.add_argument("--small-repeat", type=int, default=200,
                   help="timed calls of the MLP, CNN, LSTM and single ops (each well under a millisecond)")
    p.add_argument("--interp-trees", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3, help="alternating grove bench / relay vm runs on all trees")
    p.add_argument("--out", default=str(ROOT / "experiments/results/relay.md"))
    p.add_argument("--onnx-only", action="store_true", help="only (d), the ONNX models")
    p.add_argument("--composition-only", action="store_true", help="only (e), the encoder with a head")
    p.add_argument("--composition-trees", type=int, default=500)
    a = p.parse_args()
    if torch is None and not a.composition_only:
        sys.exit("bench_relay.py needs PyTorch (Debian's python3-torch) but for --composition-only")
    if torch is not None:
        torch.set_num_threads(2)
    os.nice(5)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = uptime()
    if a.composition_only:
        with tempfile.TemporaryDirectory() as d:
            lines = composition_table(*composition_rows(a.grove, Path(d), a.repeat, a.rounds, a.composition_trees))
        load_after = uptime()
        out = a.out if a.out != p.get_default("out") else str(ROOT / "experiments/results/relay_composition.md")
        text = "\n".join([f"Measured {started:%Y-%m-%d %H:%M} UTC by experiments/bench_relay.py --composition-only "
                          f"(repeat {a.repeat}, {a.rounds} rounds; 2 threads; {cpu_name()}); load average "
                          f"{' / '.join(load_before)} before, {' / '.join(load_after)} after.", ""] + lines) + "\n"
        Path(out).write_text(text)
        print(text)
        return
    if a.onnx_only:
        with tempfile.TemporaryDirectory() as d:
            lines = onnx_table(*onnx_rows(a.grove, Path(d), a.small_repeat))
        load_after = uptime()
        text = "\n".join([f"Measured {started:%Y-%m-%d %H:%M} UTC by experiments/bench_relay.py --onnx-only "
                          f"({a.small_repeat} calls; 2 threads; torch {torch.__version__}); load average "
                          f"{' / '.join(load_before)} before, {' / '.join(load_after)} after.", ""] + lines) + "\n"
        Path(a.out).write_text(text)
        print(text)
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tree_rows, agreement, ratios, tree_gflops = treelstm_rows(a.grove, tmp, a.repeat, a.interp_trees, a.rounds)
        lstm, lstm_agreement = lstm_rows(a.grove, tmp, a.small_repeat)
        rows = tree_rows + mlp_rows(a.grove, tmp, a.small_repeat) + cnn_rows(a.grove, tmp, a.small_repeat) + lstm
        gemms = gemm_rows(a.grove, tmp, a.small_repeat)
        onnx_lines = onnx_table(*onnx_rows(a.grove, tmp, a.small_repeat))
    load_after = uptime()
    lines = [
        f"Measured {started:%Y-%m-%d %H:%M} UTC by experiments/bench_relay.py (repeat {a.repeat} over the trees, "
        f"{a.small_repeat} for the small models and single ops; 2 threads); "
        f"load average (1/5/15 min) {' / '.join(load_before)} before, {' / '.join(load_after)} after.",
        "",
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"{blas_info()}; grove relay bench on the VM's Halide kernels.",
        "",
        f"TreeLSTM roots agree with `grove run` on the first {a.interp_trees} trees: largest |difference| "
        f"{agreement['vm']:.1e} (vm), {agreement['interp']:.1e} (interp); required ≤ 1e-5. "
        f"The LSTM's h_T agrees with torch.nn.LSTM's (same weights, zero initial state): "
        f"{', '.join(f'{d:.1e} (B = {b})' for b, d in lstm_agreement.items())}; required ≤ 1e-5.",
        "",
        "compile ms: grove bench compiles the whole model; grove relay bench parses, infers types and (vm) "
        "writes the bytecode — the VM compiles its Halide kernels and grove's recursive function on first "
        "use, inside the warm-up pass (warm-up ms).",
        "",
        "| model | implementation | inputs | batch | compile ms | warm-up ms | median ms per call | min | max | calls |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model, impl, inputs, batch, r in rows:
        lo = fmt(r.get("min_ms"), 4) if r.get("min_ms") is not None else f"p10 {fmt(r.get('p10'), 4)}"
        hi = fmt(r.get("max_ms"), 4) if r.get("max_ms") is not None else f"p90 {fmt(r.get('p90'), 4)}"
        lines.append(f"| {model} | {impl} | {inputs} | {batch} | {fmt(r.get('compile_ms'), 1)} | {fmt(r.get('warmup_ms'), 1)} | "
                     f"{fmt(r['median_ms_per_call'], 4)} | {lo} | {hi} | {r['calls']} |")
    lines += ["", f"TreeLSTM on all trees, Relay VM ÷ grove bench per round: "
              f"{', '.join(f'{x:.2f}' for x in ratios)} (median {float(np.median(ratios)):.2f}).", "",
              "GEMM throughput, GFLOP/s (higher is better): the VM's Halide kernel for one op against torch on "
              f"the same shapes (torch's BLAS above), and grove's own TreeLSTM (level GEMMs of M ≈ 22 rows, "
              f"K = 256) on all trees at batch 10: {', '.join(f'{x:.1f}' for x in tree_gflops)} GFLOP/s "
              "(model FLOPs ÷ time, so its elementwise work counts against it).", "",
              "| op | shape | grove relay (Halide) GFLOP/s | torch GFLOP/s | grove ÷ torch |", "|---|---|---|---|---|"]
    for op, shape, ours, theirs in gemms:
        lines.append(f"| {op} | {shape} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |")
    lines += ["", "ONNX models exported by torch.onnx.export, run by `grove relay bench MODEL.onnx` as they are, "
              "against the exported torch.nn module:", ""] + onnx_lines
    text = "\n".join(lines) + "\n"
    Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
