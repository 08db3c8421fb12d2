#pragma once
// Per-node matrix products (plan::Matmul): a rank-2 Compute `t[n, i, j] = E(Σ_k A[i + c, k] · X(n, k, j))`
// with A a param and X independent of i (MV-RNN's `P = W_M @ [A; B]`) becomes a register-blocked
// kernel: `row_block` values of i unrolled and `col_block` values of j in vector registers, so that
// each vector of X loaded feeds `row_block` FMAs, and E (the rest of the expression) is applied
// before the block is stored.

#include "ilir/IR.h"
#include "lowering/cpu/HalideIR.h"
#include "lowering/cpu/TensorAccess.h"
#include "plan/LevelPlan.h"

namespace grove::lowering::internal {

// The kernel of Compute `op` for the current node `n`: every row block, or with `row_block`
// defined only that one (a level's matrix products split across threads by row blocks).
Stmt lower_matmul(const TensorAccess &access, const ilir::Compute &op, const plan::Matmul &matmul,
                  const HExpr &row_block = HExpr());
// How many row blocks lower_matmul's loop has.
int matmul_row_blocks(const plan::Matmul &matmul);

}  // namespace grove::lowering::internal
