#pragma once
// Level GEMMs: a Compute `t[n, j] = E(Σ_k P[j + c, k] · X(n, k), ...)` whose products take a
// weight row per output element and an operand X independent of j is, over a level's nodes, a
// matrix–matrix product. It is lowered to a register-blocked micro-kernel: P's rows packed into
// panels, `node_block` nodes × `panel` rows of accumulators kept in vector registers, the k loop
// outside them, and E (biases, activations) applied in the epilogue before the tile is stored.

#include <optional>
#include <vector>

#include "lowering/LoweringInternal.h"

namespace grove::lowering::internal {

struct GemmMatch {
  int64_t rows = 0, panel = 0;
  std::vector<WeightTerm> terms;  // Σ_k param[j + row_offset, k] · x
};

// Whether `op` can run as a level GEMM under `schedule` (constant shapes, a panel dividing rows).
std::optional<GemmMatch> match_gemm(const TensorAccess &access, const ilir::Compute &op,
                                    const scheduling::Schedule &schedule);

// The micro-kernels of independent GEMMs (none reads another's result) for the nodes
// [first, first + count) of the current level, in one loop over all their panels; appends the
// packed weights they read to `packed`. Without a team the loop is a parallel dispatch of its own
// (serial without `schedule.parallel`); with one, the calling thread runs its share of it (no
// barrier: the caller adds it).
Stmt lower_gemms(const TensorAccess &access, const std::vector<const ilir::Compute *> &ops,
                 const std::vector<GemmMatch> &matches, const scheduling::Schedule &schedule,
                 std::vector<PackedWeight> &packed, const Team *team, const HExpr &first, const HExpr &count);

}  // namespace grove::lowering::internal
