#!/usr/bin/env python3
"""The dev-accuracy curve of `grove train` on SST (issue 24, item 5).

Trains the binary TreeLSTM (models/treelstm.grove, H=150, D=300, random embeddings: no GloVe ships
here) with the recipe's options for each loss average (`--average nodes`, PyTorch's mean over the
batch's labelled nodes, and `--average trees`, Tai et al.'s sum divided by the batch's trees) and
each seed, and writes from the one-line-per-epoch reports:
  results/train_sst.csv  average, seed, epoch, train loss, dev root / binary / all-node accuracy, sentences/s
  results/train_sst.md   the same as a table, and the command lines
  results/train_sst.svg  dev root accuracy per epoch, one line per run (a plain SVG: no plotting library)

  experiments/train_sst.py --grove build/tools/grove --sst /work/shared/datasets/sst [--epochs 5]
"""

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(
    r"epoch (\d+)  train loss ([0-9.]+)  dev root ([0-9.]+)%  binary ([0-9.]+)%  all nodes ([0-9.]+)%  "
    r"([0-9.]+) sentences/s"
)
FIELDS = ["average", "seed", "epoch", "train_loss", "dev_root", "dev_binary", "dev_nodes", "sentences_per_s"]


def run(args, average, seed):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            args.grove, "train", os.path.join(root, "models/treelstm.grove"),
            "--trees", os.path.join(args.sst, "train.txt"), "--dev", os.path.join(args.sst, "dev.txt"),
            "--vocab", os.path.join(root, "datasets/sst/vocab.txt"), "--sizes", "H=150,D=300",
            "--epochs", str(args.epochs), "--average", average, "--seed", str(seed),
            "--threads", str(args.threads), "--out", out, "--quiet",
        ]
        print(" ".join(cmd[1:]), file=sys.stderr)
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for m in LINE.finditer(text):
        rows.append({"average": average, "seed": seed, "epoch": int(m.group(1)), "train_loss": float(m.group(2)),
                     "dev_root": float(m.group(3)), "dev_binary": float(m.group(4)),
                     "dev_nodes": float(m.group(5)), "sentences_per_s": float(m.group(6))})
    if len(rows) != args.epochs:
        sys.exit(f"expected {args.epochs} epoch lines from grove train, got:\n{text}")
    return rows


def svg(rows, path):
    w, h, left, right, top, bottom = 640, 400, 60, 150, 20, 50
    epochs = max(r["epoch"] for r in rows)
    lo = min(20.0, min(r["dev_root"] for r in rows))
    hi = max(50.0, max(r["dev_root"] for r in rows))
    x = lambda e: left + (e - 1) / max(1, epochs - 1) * (w - left - right)
    y = lambda v: top + (hi - v) / (hi - lo) * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for v in range(int(lo // 5 * 5), int(hi) + 1, 5):
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}%</text>')
    for e in range(1, epochs + 1):
        out.append(f'<text x="{x(e):.1f}" y="{h - bottom + 18}" text-anchor="middle">{e}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">epoch</text>')
    out.append(f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" '
               'text-anchor="middle">dev root accuracy (5 classes)</text>')
    out.append(f'<line x1="{left}" x2="{w - right}" y1="{y(46):.1f}" y2="{y(46):.1f}" stroke="#999" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{w - right + 4}" y="{y(46) + 4:.1f}" fill="#666">46% target</text>')
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    runs = sorted({(r["average"], r["seed"]) for r in rows})
    for i, (average, seed) in enumerate(runs):
        pts = sorted((r["epoch"], r["dev_root"]) for r in rows if (r["average"], r["seed"]) == (average, seed))
        color = colors[i % len(colors)]
        dash = "" if average == "trees" else ' stroke-dasharray="6 3"'
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="' +
                   " ".join(f"{x(e):.1f},{y(v):.1f}" for e, v in pts) + '"/>')
        ly = top + 14 + 18 * i
        out.append(f'<line x1="{w - right + 4}" x2="{w - right + 24}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{w - right + 28}" y="{ly}">{average}, seed {seed}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grove", required=True)
    p.add_argument("--sst", default="/work/shared/datasets/sst", help="directory with train.txt and dev.txt")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--averages", default="nodes,trees")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = p.parse_args()
    rows = []
    for average in args.averages.split(","):
        for seed in args.seeds.split(","):
            rows += run(args, average, int(seed))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "train_sst.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(args.out, "train_sst.md"), "w") as f:
        f.write("# grove train on SST: TreeLSTM H=150, D=300, random embeddings, the recipe's options\n\n")
        f.write(f"`experiments/train_sst.py --epochs {args.epochs} --seeds {args.seeds} --threads {args.threads}`\n\n")
        f.write("| average | seed | epoch | train loss | dev root | dev binary | dev all nodes | sentences/s |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['average']} | {r['seed']} | {r['epoch']} | {r['train_loss']:.4f} | {r['dev_root']:.2f}% | "
                    f"{r['dev_binary']:.2f}% | {r['dev_nodes']:.2f}% | {r['sentences_per_s']:.0f} |\n")
    svg(rows, os.path.join(args.out, "train_sst.svg"))


if __name__ == "__main__":
    main()
