#pragma once
// Kernel fusion at the ILIR level: an elementwise temporary (a gate such as `i = sigmoid(iou[0:H])`)
// is substituted into the computes that read it, so it never round-trips through memory.
// Assumes a verified Program. A temp is fused where doing so adds no work: it has no Sum, and either
// it is a pure index expression (loads, concatenation, slicing) or none of its uses lies inside a
// Sum (where it would be recomputed per term) — and, where `sizes` make its readers' rows known, it
// is not fused when it is costly (a tanh, sigmoid, exp or division) and its readers would compute
// some of its elements more than once between them: `h = o * tanh(c); all = [h; c]` reads each
// element of c twice, in two different rows of `all`, which no common-subexpression pass can share.
// Reads of one element at the same index in one compute count once (the back end shares them).
// Guarantees a verified Program computing the same values.

#include <cstdint>
#include <map>
#include <string>

#include "ilir/IR.h"

namespace grove::plan {

ilir::Program fuse_elementwise(const ilir::Program &program,
                               const std::map<std::string, int64_t> &sizes = {});

}  // namespace grove::plan
