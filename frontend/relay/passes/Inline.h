#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Inlines calls of the global functions marked Inline=1, except (mutually) recursive or polymorphic
// ones: the body, freshly renamed, with each parameter let-bound to its argument (substituted when
// atomic), so arguments are evaluated once. Removes the inlined globals that had callers (not @main).
Module inline_globals(const Module &module);

}  // namespace grove::relay
