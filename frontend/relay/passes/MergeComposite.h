#pragma once
// Merge composite (TVM's MergeComposite): every match of a code generator's patterns is outlined as
// a local function `fn (%FunctionVar_0_0, ...) { <the match> }` with attributes
// `Composite="<target>.<name>"` and `PartitionedFromPattern="<op>_<op>_..._"` (the matched ops in
// post-order, as TVM spells it), called in place of the match with the match's inputs (what its
// wildcards, vars and constants matched; constants stay inside the function when the pattern says
// is_constant()). Patterns are tried in the list's order (earlier = higher priority); a match is not
// taken when an expression inside it, other than its root, is used outside it (a match never
// swallows a value another consumer reads) or when its check fails. Expressions already inside a
// composite are not matched again. Works on every function of the module; assumes a typed module.

#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

Module merge_composite(const Module &m, const std::vector<CompositePattern> &patterns);

}  // namespace grove::relay
