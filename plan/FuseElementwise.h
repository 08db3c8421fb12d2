#pragma once
// Kernel fusion at the ILIR level: an elementwise temporary (a gate such as `i = sigmoid(iou[0:H])`)
// is substituted into the computes that read it, so it never round-trips through memory.
// Assumes a verified Program. A temp is fused where doing so adds no work: it has no Sum, and either
// it is a pure index expression (loads, concatenation, slicing) or none of its uses lies inside a
// Sum (where it would be recomputed per term). Guarantees a verified Program computing the same values.

#include "ilir/IR.h"

namespace grove::plan {

ilir::Program fuse_elementwise(const ilir::Program &program);

}  // namespace grove::plan
