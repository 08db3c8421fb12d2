#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Replaces each let-bound variable by its value, so that sharing becomes graph sharing (the inverse
// of to_a_normal_form). Keeps the lets whose value has an effect (Effects in PassUtil.h) and those
// binding a recursive closure (`let %f = fn ... { %f(...) }`). Iterative.
Module to_graph_normal_form(const Module &module);

}  // namespace grove::relay
