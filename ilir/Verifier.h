#pragma once
// Checks the invariants ilir/IR.h promises passes (bound variables, load ranks, where states may be
// read, every state defined by both cases, well-formed sizes). A violation is a grove bug:
// InternalError naming the compute and the offending expression.

#include "ilir/IR.h"

namespace grove::ilir {

void verify(const Program &program);

}  // namespace grove::ilir
