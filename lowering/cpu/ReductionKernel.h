#pragma once
// A top-down program's reductions (ilir::Reduction, `g[i…] += Σ_n value`) as loop nests after the
// recursion: a weight's gradient Σ_n δ[n, i] · x[n, k] over every node of a case, a bias's Σ_n δ[n, i].
// A matrix's gradient that is an outer product per node is register-blocked (6 rows × two vectors),
// its bands of rows split among the threads, the nodes taken in chunks that stay in the caches;
// otherwise each row (a vector's row) sums its nodes into a stack accumulator, vectorized along the
// last index, and adds it to the gradient once.

#include "ilir/IR.h"
#include "lowering/cpu/HalideIR.h"
#include "lowering/cpu/TensorAccess.h"

namespace grove::lowering::internal {

// The reduction over the nodes [first, first + count). `lanes`: the vector width; `threads`: at
// most that many tasks.
Stmt lower_reduction(const TensorAccess &access, const ilir::Reduction &r, const HExpr &first,
                     const HExpr &count, int lanes, int threads);

}  // namespace grove::lowering::internal
