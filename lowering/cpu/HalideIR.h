#pragma once
// Building Halide IR by hand, for the CPU emitter's loop builders: variables, constants, and loads
// and stores of argument buffers and local allocations.

#include <optional>
#include <string>

#include "Halide.h"

namespace grove::lowering::internal {

namespace HI = Halide::Internal;
using HExpr = Halide::Expr;
using HI::Stmt;

// An int32 variable.
HExpr var(const std::string &name);
// `e`'s value if it simplifies to a constant.
std::optional<int64_t> constant(const HExpr &e);
// `buffer`[index]: an argument of the entry function (`is_argument`) or a local allocation.
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument);
Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument);
// An element of one of the inspector's int32 arrays (names::kChildBegin, ...).
HExpr int_load(const char *array, HExpr index);

// The loop over `v` in [min, min + extent) as one dispatch of `type`. A parallel one is cut into at
// most `threads` tasks of consecutive iterations (`v`.task), so that the model runs on at most its
// own schedule's threads however large the process's thread pool is (plan::Recursion::threads);
// with `threads` 1 the loop is serial.
// Where a local buffer of `extent` 32-bit elements lives: on the stack when it is a constant of at
// most 16,384 (64 KB), else on the heap.
Halide::MemoryType local_memory(const HExpr &extent);

Stmt dispatch_for(const std::string &v, HExpr min, HExpr extent, HI::ForType type, int threads, Stmt body);

}  // namespace grove::lowering::internal
