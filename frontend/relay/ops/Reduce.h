#pragma once
// What a reduction's attributes (ReduceAttrs, ops/OpAttrs.h: `axis`, `keepdims`, `exclude`) mean for an
// input shape, read in one place for the relations and kernels (ops/Reduce.cpp), the Halide kernels
// (backends/relay/halide/HalideOps.cpp) and the VM's test of what computes rows apart (RowWise.cpp).

#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/OpAttrs.h"

namespace grove::relay {

// Which axes a reduction reduces, and the shapes it produces.
struct ReducePlan {
  std::vector<bool> reduced;  // per input axis
  Shape out_shape;            // the result's shape (honours keepdims)
  Shape kept_shape;           // the result's shape as if keepdims were set: reduced axes are 1
};

// The plan for an input of shape `in`; OpError for an axis out of range or listed twice.
ReducePlan plan_reduce(const Shape &in, const ReduceAttrs &attrs);

}  // namespace grove::relay
