#pragma once
// What layout_transform's attributes mean, read in one place for its relation and kernel
// (ops/Transform.cpp) and the Halide kernels (backends/relay/halide/HalideOps.cpp).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// TVM's LayoutTransformRel for permutations: result dimension d is the data's dimension that
// src_layout names with dst_layout's letter d. Returns those source dimensions (transpose's axes);
// OpError for a packed layout, a layout of another rank than the data's, or letters that differ.
std::vector<int64_t> layout_axes(size_t rank, const Attrs &attrs);

}  // namespace grove::relay
