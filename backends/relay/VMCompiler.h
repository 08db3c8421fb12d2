#pragma once
// Compiles a Relay module to the VM's bytecode (backends/relay/Bytecode.h). The pipeline is
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

#include "backends/relay/Bytecode.h"
#include "frontend/relay/IR.h"

namespace grove::relay::vm {

Executable compile(const Module &module);

}  // namespace grove::relay::vm
