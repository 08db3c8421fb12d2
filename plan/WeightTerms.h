#pragma once
// Recognising the products a level GEMM or a per-node matrix product is made of (LevelPlan.h's
// WeightTerm) in a Compute's value, on the ILIR alone.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "plan/LevelPlan.h"

namespace grove::plan {

// Every outermost Sum of `value` as a WeightTerm in `row` — Σ_k W[row + c, k] · x with W a param
// of `cols` columns the Sum runs over (c and cols constant under `sizes`), x free of `row` and of
// Sums — or nothing if one is not, or if the value has a select outside its Sums and
// `selects_allowed` is false, or if it has no Sum.
std::optional<std::vector<WeightTerm>> match_weight_terms(const ilir::Program &program,
                                                          const ilir::Expr &value, const std::string &row,
                                                          const std::map<std::string, int64_t> &sizes,
                                                          bool selects_allowed);

}  // namespace grove::plan
