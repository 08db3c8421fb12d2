#pragma once
// The ILIR rewriting passes a schedule asks for, in the order they run, as one list: the CPU pass
// runner (lowering/cpu/Lower.cpp) times and prints each, tests run the same list before planning.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "scheduling/Schedule.h"

namespace grove::plan {

struct IlirPass {
  const char *name;
  std::function<ilir::Program(const ilir::Program &)> run;
};

// fuse_elementwise (fuse), hoist_inputs and hoist_child_terms (hoist), fuse_products (epilogue, with
// level batching and specialized cases). The functions keep references to `schedule` and `sizes`.
std::vector<IlirPass> ilir_passes(const scheduling::Schedule &schedule,
                                  const std::map<std::string, int64_t> &sizes);

}  // namespace grove::plan
