#!/usr/bin/python3
"""The learning curve of `grove train` on SST with the recipe (issue 24, item 5).

The binary TreeLSTM (models/treelstm.grove), H=150, D=300, random embeddings (no GloVe ships here),
Tai et al.'s recipe as grove train's defaults: AdaGrad 0.05, embedding SGD 0.1, batch 25, weight
decay 1e-4, dropout 0.5, all-node loss, seed 1 — for each loss average (`--average nodes`: the mean
over the batch's labelled nodes, PyTorch's CrossEntropyLoss; `--average trees`: their sum divided by
the batch's trees, Tai et al.'s), --epochs epochs on the full dev set (1,101 trees).

Writes experiments/results/train_curve.txt (grove's per-epoch lines, with the command lines),
train_curve.csv (average, epoch, train loss, dev root / binary / all-node accuracy, sentences/s) and
train_curve.png (dev root accuracy and train loss per epoch, one line per average, the issue's 46%
line), and prints which average reaches ≥ 46% dev root by epoch 3.

  /usr/bin/python3 experiments/train_curve.py [--epochs 3] [--average nodes trees]
"""

import argparse
import csv
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE = re.compile(r"epoch (\d+)  train loss ([0-9.]+)  dev root ([0-9.]+)%  binary ([0-9.]+)%  all nodes "
                  r"([0-9.]+)%  ([0-9.]+) sentences/s")
TARGET = 46.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grove", default=os.path.join(ROOT, "build/tools/grove"))
    ap.add_argument("--sst", default=os.path.join(os.path.dirname(ROOT), "shared/datasets/sst"))
    ap.add_argument("--vocab", default=os.path.join(ROOT, "datasets/sst/vocab.txt"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--average", nargs="+", default=["nodes", "trees"], choices=("nodes", "trees"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args()

    rows, text = [], []
    for average in args.average:
        with tempfile.TemporaryDirectory() as out:
            cmd = [args.grove, "train", os.path.join(ROOT, "models/treelstm.grove"),
                   "--trees", os.path.join(args.sst, "train.txt"), "--dev", os.path.join(args.sst, "dev.txt"),
                   "--vocab", args.vocab, "--sizes", "H=150,D=300", "--epochs", str(args.epochs),
                   "--average", average, "--seed", str(args.seed), "--threads", "2", "--out", out, "--quiet"]
            shown = " ".join(os.path.relpath(c, ROOT) if c.startswith("/") and c != out else c for c in cmd)
            print("+", shown, flush=True)
            res = subprocess.run(cmd, check=True, capture_output=True, text=True)
        text += ["$ " + shown.replace(out, "DIR"), res.stdout.rstrip()]
        print(res.stdout.rstrip(), flush=True)
        for m in LINE.finditer(res.stdout):
            rows.append({"average": average, "epoch": int(m.group(1)), "train_loss": float(m.group(2)),
                         "dev_root": float(m.group(3)), "dev_binary": float(m.group(4)),
                         "dev_nodes": float(m.group(5)), "sentences_per_s": float(m.group(6))})

    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "train_curve.txt"), "w") as f:
        f.write("\n".join(text) + "\n")
    with open(os.path.join(args.results, "train_curve.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for average in args.average:
        r = [x for x in rows if x["average"] == average]
        label = {"nodes": "--average nodes (mean over labelled nodes)",
                 "trees": "--average trees (sum ÷ trees, Tai et al.)"}[average]
        a.plot([x["epoch"] for x in r], [x["dev_root"] for x in r], marker="o", label=label)
        b.plot([x["epoch"] for x in r], [x["train_loss"] for x in r], marker="o", label=label)
    a.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label="issue 24: 46% by epoch 3")
    a.set_xlabel("epoch")
    a.set_ylabel("dev root accuracy, 5 classes (%)")
    a.set_xticks(range(1, args.epochs + 1))
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    b.set_xlabel("epoch")
    b.set_ylabel("train loss (mean cross-entropy per labelled node)")
    b.set_xticks(range(1, args.epochs + 1))
    b.grid(alpha=0.3)
    fig.suptitle("grove train: TreeLSTM H=150 D=300 on SST, random embeddings, AdaGrad 0.05, dropout 0.5, "
                 f"seed {args.seed}", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(args.results, "train_curve.png"), dpi=120)
    for average in args.average:
        r = [x for x in rows if x["average"] == average and x["epoch"] <= 3]
        best = max(r, key=lambda x: x["dev_root"])
        print(f"--average {average}: dev root by epoch 3: {', '.join(str(x['dev_root']) for x in r)} %; "
              f"best {best['dev_root']}% (epoch {best['epoch']}): "
              f"{'reaches' if any(x['dev_root'] >= TARGET for x in r) else 'does not reach'} {TARGET}%")


if __name__ == "__main__":
    main()
