#pragma once
// What the transforms' attributes mean for a shape, read in one place for their relations and
// kernels (ops/Transform.cpp) and the Halide kernels (backends/relay/halide/HalideOps.cpp): the
// typed attributes (ops/OpAttrs.h) against the data's rank or shape.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/OpAttrs.h"

namespace grove::relay {

// TVM's LayoutTransformRel for permutations: result dimension d is the data's dimension that
// src_layout names with dst_layout's letter d. Returns those source dimensions (transpose's axes);
// OpError for a packed layout, a layout of another rank than the data's, or letters that differ.
std::vector<int64_t> layout_axes(size_t rank, const Attrs &attrs);

// One sliced axis of strided_slice after TVM's canonicalization (topi/detail/strided_slice.h).
struct SliceAxis {
  int64_t axis, begin, stride, size;  // size is kAnyDim when the input dimension is `?`
};
// The sliced axes of data of shape `shape`; OpError for axes out of range, lists of mismatched
// lengths, a zero stride, or a slice that selects nothing.
std::vector<SliceAxis> strided_slice_axes(const Shape &shape, const StridedSliceAttrs &attrs);

// transpose's permutation for data of rank `rank` (the reversed axes without `axes`); OpError for
// a permutation of another length, an axis out of range or named twice.
std::vector<int64_t> transpose_permutation(int64_t rank, const TransposeAttrs &attrs);

}  // namespace grove::relay
