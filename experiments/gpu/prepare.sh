#!/bin/sh
# Prepares the GPU check kit on a machine with grove built (here: no GPU needed):
#   experiments/gpu/prepare.sh [BUILD_DIR] [KIT_DIR]
# builds grove_gpu_prepare in BUILD_DIR (default build), writes the kit to KIT_DIR (default
# BUILD_DIR/gpu-kit: kernels, inputs, weights and reference outputs, a few MB) and copies the
# runner's sources and run_kit.sh next to them, so KIT_DIR alone goes to the GPU machine.
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
kit=${2:-$build/gpu-kit}
cmake --build "$build" --target grove_gpu_prepare -j2
rm -rf "$kit"
"$build/tests/backends/cuda/grove_gpu_prepare" "$kit"
cp "$here/Kit.h" "$here/RunKit.cpp" "$here/run_kit.sh" "$kit/"
echo "kit: $kit ($(du -sh "$kit" | cut -f1), $(grep -c '^case' "$kit/kit.txt") cases); on the GPU machine: sh run_kit.sh"
