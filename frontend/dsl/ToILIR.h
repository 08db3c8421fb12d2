#pragma once
// Lowers a checked model to ILIR.
// Assumes a tree that check() accepted. Guarantees one Compute per statement (plus one per
// compiler temp `_tN` holding a non-index operand of '@', computed before the statement that uses
// it), tensors ordered params, states, temps with unique names, and the conventions of ilir/IR.h.

#include "frontend/dsl/AST.h"
#include "ilir/IR.h"

namespace grove::dsl {

ilir::Program to_ilir(const ModelAst &model);

}  // namespace grove::dsl
