#pragma once
// Annotate target (TVM's AnnotateTarget, include_non_call_ops=true): each call goes to the first
// target in the list that supports it (ExternalTarget::supports), else to "default"; each argument
// gets `annotation.compiler_begin(arg, compiler="<target>")` and each consumer edge of the call its
// own `annotation.compiler_end(call, compiler="<target>")` — a value read twice is ended twice.
// Tuples, projections and ref nodes are annotated the same way, in the target all their operands'
// producers share (a variable or constant counts as "default"), else "default". An `if` is not
// annotated itself: its condition and branches are ended, as are function and let bodies (and, beyond
// TVM, a match's scrutinee and clause bodies); a let-bound value becomes begin(end(value)) in its own
// target; let-bound function literals, and calls and tuples without operands, are not wrapped.
// Composite function calls are claimed by their target and never annotated inside; functions a
// target claims whole (claims_function) get `Compiler="<target>"` and no annotations. Works on every
// global except Primitive/Compiler ones; rerun on annotated code, it keeps other targets' regions and
// recomputes the "default" annotations. Assumes a typed module.

#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

Module annotate_target(const Module &m, const std::vector<const ExternalTarget *> &targets);

}  // namespace grove::relay
