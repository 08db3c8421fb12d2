#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Removes every `let` whose variable is never used (directly, or through other live bindings) and
// whose value has no effect (Effects in PassUtil.h). Assumes nothing about types; keeps effectful
// bindings even when unused. Iterative: 100,000-let chains are fine.
Module dead_code_elimination(const Module &module);

}  // namespace grove::relay
