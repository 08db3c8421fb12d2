#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Evaluates op calls whose arguments are constants (or tuples of constants), projections of tuple
// literals, `if`s on a constant, and propagates let-bound constants into their uses. Assumes nothing
// about types (each op's relation types the call); never folds calls of functions or reassociates.
Module fold_constant(const Module &module);

}  // namespace grove::relay
