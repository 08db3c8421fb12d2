#pragma once
// Operator fusion (TVM's FuseOps): each group of dataflow ops becomes `fn (%p0: T0, ..., Primitive=1)`
// called with the group's inputs. Assumes a module that type-checks (types are inferred when missing).
// Guarantees groups of at most max_depth nodes, one output each, fused within dataflow regions only.

#include "frontend/relay/IR.h"

namespace grove::relay {

Module fuse_ops(const Module &m, int max_depth = 256);

}  // namespace grove::relay
