#pragma once
// Loops cut where the conditions of their bodies change: the concatenations and slices of a
// model's expressions become selects on a loop variable, and a loop split at those points lets
// Halide's simplifier, knowing each piece's bounds, remove every one of them.

#include <string>
#include <vector>

#include "lowering/cpu/HalideIR.h"

namespace grove::lowering::internal {

// The pieces [cuts[i], cuts[i+1]) into which the conditions on `var` in `body` divide the constant
// range [min, min + extent); empty if the range is not constant.
std::vector<int64_t> split_points(const std::string &var, const HExpr &min, const HExpr &extent,
                                  const Stmt &body);

// for var in [min, min + extent): body — as one loop per piece between the split points that the
// body's conditions on `var` imply, each piece's body simplified knowing its bounds.
Stmt partitioned_for(const std::string &var, HExpr min, HExpr extent, Stmt body, HI::ForType type);

// As partitioned_for over [0, extent), with each piece split into an outer serial loop over whole
// vectors (an inner vectorized loop of `lanes` iterations) and the piece's rest, if any, as one
// vectorized loop of fewer lanes.
Stmt vectorized_for(const std::string &var, HExpr extent, Stmt body, int lanes);

}  // namespace grove::lowering::internal
