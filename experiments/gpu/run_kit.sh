#!/bin/sh
# Runs the GPU check kit on a machine with a GPU and the CUDA toolkit (no grove build needed), from
# the kit's own folder:  sh run_kit.sh [CASE_SUBSTRING]
#   1. builds run_kit (RunKit.cpp) with the host compiler against the toolkit's NVRTC and driver;
#   2. compute-sanitizer's racecheck on one small persistent TreeLSTM case (shared-memory hazards);
#   3. every case (or those whose name contains CASE_SUBSTRING): checks against the reference, then
#      timings, as a markdown table on standard output (progress on standard error).
set -e
cd "$(dirname "$0")"
cuda=${CUDA_HOME:-/usr/local/cuda}
g++ -std=c++17 -O2 -I"$cuda/include" RunKit.cpp -o run_kit -L"$cuda/lib64" -lnvrtc -lcuda
if [ -z "$1" ] && command -v "$cuda/bin/compute-sanitizer" >/dev/null 2>&1; then
  "$cuda/bin/compute-sanitizer" --tool racecheck ./run_kit . check_TreeLSTM_H64_counter >&2 || echo "racecheck: failed" >&2
fi
./run_kit . "$1"
