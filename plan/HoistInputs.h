#pragma once
// Computation hoisting at the ILIR level: a product Σ_k W[…, k] · X(n, k) in the internal case whose
// operand X depends only on the node's own input (params at token(n)), not on the recursion — an
// LSTM's W_ih x_t, a DAG-RNN's U x — is moved into the hoisted case, computed for every node of the
// batch before the recursion (one GEMM over all nodes), and read back at n. Assumes a verified
// Program; guarantees a verified Program computing the same values.

#include "ilir/IR.h"

namespace grove::plan {

ilir::Program hoist_inputs(const ilir::Program &program);

}  // namespace grove::plan
