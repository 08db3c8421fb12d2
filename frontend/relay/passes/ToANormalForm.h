#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Binds every subexpression but Var, GlobalVar, Op and Constructor with a `let`, in evaluation
// order; a node shared in graph form is bound once, in the innermost scope (function body, if branch,
// match clause) enclosing all its uses. Idempotent; Primitive and Compiler functions stay as they are.
Module to_a_normal_form(const Module &module);

}  // namespace grove::relay
