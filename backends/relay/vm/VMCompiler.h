#pragma once
// Compiles a Relay module to the VM's bytecode (backends/relay/vm/Bytecode.h). The pipeline is
// infer_types → fuse_ops → to_a_normal_form → infer_types; then every global, every closure (lifted,
// its free variables captured) and every constructor used as a value becomes a VMFunction, and the
// memory plan (MemoryPlan.h) assigns kernel outputs their storage.
//
// Compiled forms: let, variables, constants, globals (called or as values), tuples and projections,
// calls of Primitive functions (InvokeKernel), of operators left outside one (a one-operator
// kernel), of external functions (InvokeKernel or InvokeExternal), of globals, closures and constructors;
// closures (let-bound ones may recurse); if; match with constructor, tuple, variable and wildcard patterns,
// nested (an incomplete match falls through to Fatal); ref, ref_read, ref_write. Not compiled — a UserError
// naming the construct and location: an operator or a Primitive function used as a value, and functions with
// a Compiler attribute.
//
// grove's recursive compiler is an external code generator: before fusion, on the typed module, the
// claim pass (recursive/ClaimRecursive.h) outlines every call of a recursive function grove compiles
// from outside it — `@map(fn (%t) { @f(%t, ws...) ... }, xs)` over a List, and direct calls — as
// an external function with Compiler="grove", which fusion leaves alone. A call of an external
// function that its code generator runs over values (Codegen::prepare_function) is InvokeExternal;
// a call of one that compiles kernels (dnnl, ccompiler) is InvokeKernel, as a fused group is.
// `@map(fn (%r) { rest }, %rs)` over the result of an InvokeExternal, where the rest computes each
// element's rows apart (RowWise.h: an encoder feeding a classifier), runs the rest once over the
// stacked results (StackList, the rest's kernels on N rows, UnstackList).
// `recursive_functions = false` claims nothing: everything compiles node by node.

#include <optional>

#include "backends/relay/vm/Bytecode.h"
#include "frontend/relay/IR.h"

namespace grove::relay::vm {

struct CompileOptions {
  bool recursive_functions = true;
};

Executable compile(const Module &module, const CompileOptions &options = {});

// What compile() hands to fusion: the module with BYOC's leftover region markers removed and, with
// `recursive_functions`, typed and its recursive functions' calls claimed (ClaimRecursive.h); nullopt
// from the claim when nothing is claimed. `grove relay dump --stage claimed` prints it.
struct Claimed {
  Module base;                    // the markers removed
  std::optional<Module> claimed;  // typed and claimed (recursive_functions only)
  const Module &module() const { return claimed ? *claimed : base; }
};
Claimed claim(const Module &module, const CompileOptions &options = {});

}  // namespace grove::relay::vm
