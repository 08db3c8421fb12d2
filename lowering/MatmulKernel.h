#pragma once
// Per-node matrix products: a rank-2 Compute `t[n, i, j] = E(Σ_k A[i + c, k] · X(n, k, j))` with A a
// param and X independent of i (MV-RNN's `P = W_M @ [A; B]`) becomes a register-blocked kernel:
// `rows` values of i unrolled and a block of j in vector registers, so that each vector of X loaded
// feeds `rows` FMAs, and E (the rest of the expression) is applied before the block is stored.

#include <optional>
#include <vector>

#include "lowering/LoweringInternal.h"

namespace grove::lowering::internal {

struct MatmulMatch {
  int rows = 0, width = 0;        // the register block: `rows` values of i × `width` values of j
  std::vector<WeightTerm> terms;  // Σ_k param[i + row_offset, k] · x
};

std::optional<MatmulMatch> match_matmul(const TensorAccess &access, const ilir::Compute &op,
                                        const scheduling::Schedule &schedule);

// The kernel for the current node `n`: every block of `match.rows` rows, or with `row_block`
// defined only that one (a level's matrix products split across threads by row blocks).
Stmt lower_matmul(const TensorAccess &access, const ilir::Compute &op, const MatmulMatch &match,
                  const HExpr &row_block = HExpr());
// How many row blocks lower_matmul's loop has.
HExpr matmul_row_blocks(const TensorAccess &access, const ilir::Compute &op, const MatmulMatch &match);

}  // namespace grove::lowering::internal
