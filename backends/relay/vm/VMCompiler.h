#pragma once
// Compiles a Relay module to the VM's bytecode (backends/relay/vm/Bytecode.h). The pipeline is
// infer_types → fuse_ops → to_a_normal_form → infer_types; then every global, every closure (lifted,
// its free variables captured) and every constructor used as a value becomes a VMFunction, and the
// memory plan (MemoryPlan.h) assigns kernel outputs their storage.
//
// Compiled forms: let, variables, constants, globals (called or as values), tuples and projections,
// calls of Primitive functions (InvokeKernel), of operators left outside one (a one-operator
// kernel), of globals, closures and constructors; closures (let-bound ones may recurse); if; match
// with constructor, tuple, variable and wildcard patterns, nested (an incomplete match falls through
// to Fatal); ref, ref_read, ref_write. Not compiled — a UserError naming the construct and location:
// an operator or a Primitive function used as a value, and functions with a Compiler attribute.
//
// Recursive functions over trees (RecursiveFunctions.h) that qualify, analysed on the typed module
// before fusion, run as one batched call of grove's compiled function (InvokeRecursive):
//   - `@map(fn (%t) { @f(%t, ws...) ... }, xs)`, where @map is the standard map over a List (checked
//     structurally: a match on Cons/Nil giving `Cons(%f(%x), @map(%f, %rest))` and Nil), the call of
//     @f is the closure's first binding (or its body, under projections), its tree argument is %t and
//     the weights `ws` are variables bound outside the closure (loop-invariant): InvokeRecursive over
//     the list, then the rest of the closure body (a closure of @f's result) mapped by @map itself;
//   - a direct call `@f(t, ws...)` outside @f itself: InvokeRecursive on that one tree.
// Anything else compiles node by node. `recursive_functions = false` turns this off.

#include "backends/relay/vm/Bytecode.h"
#include "frontend/relay/IR.h"

namespace grove::relay::vm {

struct CompileOptions {
  bool recursive_functions = true;
};

Executable compile(const Module &module, const CompileOptions &options = {});

}  // namespace grove::relay::vm
