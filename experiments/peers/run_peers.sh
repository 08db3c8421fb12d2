#!/usr/bin/env bash
# Runs every peer (PyTorch eager, PyTorch level-batched, libtorch level-batched) on one model for a
# list of hidden-size:batch configurations, plus the OpenBLAS SGEMM ceiling in the same run, and
# collects the JSON lines into a CSV (with each row's FLOP limit at the measured 2-thread peak).
#
#   experiments/peers/run_peers.sh [--model treelstm] [--configs "256:1 256:10 512:10"]
#       [--trees datasets/sst/test.txt] [--limit 100] [--repeat 5] [--threads 2]
#       [--peers "eager batched libtorch"] [--build build-peers] [--out peers.csv]
#
# The environment it sets, and why, is in experiments/README.md, "Peers" → "Running".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
model=treelstm
configs="256:1 256:10 512:10"
trees="$root/datasets/sst/test.txt"
limit=100
repeat=5
threads=2
peers="eager batched libtorch"
build="$root/build-peers"
out="peers.csv"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2" ;;
    --configs) configs="$2" ;;
    --trees) trees="$2" ;;
    --limit) limit="$2" ;;
    --repeat) repeat="$2" ;;
    --threads) threads="$2" ;;
    --peers) peers="$2" ;;
    --build) build="$2" ;;
    --out) out="$2" ;;
    *) echo "run_peers.sh: unknown option '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
  shift 2
done

# AVX-512 kernels in OpenBLAS (the environment may say Haswell, which halves the peak); no spinning
# OpenMP threads starving OpenBLAS on 2 cores; no page faults on fresh buffers every call.
export OPENBLAS_CORETYPE=SkylakeX
export OMP_WAIT_POLICY=PASSIVE
export MALLOC_MMAP_THRESHOLD_=33554432
export MALLOC_TRIM_THRESHOLD_=1073741824
export MALLOC_TOP_PAD_=268435456
python=/usr/bin/python3

"$root/scripts/install-peer-deps"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j1 >/dev/null

vocab_args=()
[ -f "$root/datasets/sst/vocab.txt" ] && vocab_args=(--vocab "$root/datasets/sst/vocab.txt")
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT

echo "run_peers: $(date -u +%Y-%m-%dT%H:%M:%SZ), $model, configs $configs, $limit trees, repeat $repeat" >&2
"$build/sgemm_peak" --runs 5 | tee -a "$lines" >&2
for config in $configs; do
  hidden="${config%%:*}"
  batch="${config##*:}"
  common=(--model "$model" --hidden "$hidden" --batch "$batch" --repeat "$repeat" --threads "$threads"
          --trees "$trees" "${vocab_args[@]}" --limit "$limit")
  for peer in $peers; do
    case "$peer" in
      eager | batched) "$python" "$here/pytorch_tree.py" --mode "$peer" "${common[@]}" ;;
      libtorch) "$build/libtorch_tree" "${common[@]}" ;;
      *) echo "run_peers.sh: unknown peer '$peer'; expected eager, batched or libtorch" >&2; exit 2 ;;
    esac | tee -a "$lines" >&2
  done
done

"$python" "$here/collect_csv.py" --lines "$lines" --out "$out" --trees "$trees" --limit "$limit"
echo "run_peers: wrote $out" >&2
