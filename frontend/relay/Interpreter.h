#pragma once
// The reference interpreter: it defines what a Relay program computes (relay/IR.h's header comment).
// Evaluation is strict and left to right; a node shared within one function body (graph form) is
// evaluated once per call of that body. It runs on its own stack, so 100,000-deep recursion, list
// traversals and let chains need no C stack. Modules must have passed infer_types(): op results are
// shaped by, and checked against, each call's inferred type. Errors in the program are UserErrors.

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

// The value of the closed expression `e` (no free variables), whose globals are `module`'s.
Value evaluate(const Module &module, const Expr &e);

// Checks `args` against @main's parameter types — their count; for tensors the dtype, the rank and
// every known dimension (`?` accepts any size); the kind of anything else — and throws a UserError
// naming the parameter, the expected type and what was found. run_main and the VM both call it.
void check_main_arguments(const Module &module, const std::vector<Value> &args);

// How messages describe a value: "a tensor of shape (1, 8) and dtype float32", "a tuple of 2 fields".
std::string describe_value(const Value &v);

// Whether `a` has `t`'s dtype, rank and every known dimension of it.
bool value_fits(const NDArray &a, const TensorType &t);

// Calls @main with `args`, first checking each against @main's parameter type (count, tensor dtype
// and rank, every known dimension; `?` accepts any size): a mismatch is a UserError naming the
// parameter, the expected type and what was found.
Value run_main(const Module &module, const std::vector<Value> &args);

// Calls `function` (a closure, e.g. from global_function()) with `args`.
Value apply(const Module &module, const Value &function, const std::vector<Value> &args);

// The global function `@name` as a closure; a UserError when the module has none.
Value global_function(const Module &module, const std::string &name);

}  // namespace grove::relay
