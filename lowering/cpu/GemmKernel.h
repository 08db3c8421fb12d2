#pragma once
// Level GEMMs (plan::Gemm): a Compute `t[n, j] = E(Σ_k P[j + c, k] · X(n, k), ...)` over a level's
// nodes, lowered to a register-blocked micro-kernel: P's rows packed into panels (PackedWeight),
// `node_block` nodes × `panel` rows of accumulators kept in vector registers, the k loop outside
// them, and E (biases, activations) applied in the epilogue before the tile is stored. Over bf16
// panels the products are vdpbf16ps into accumulators in memory, or AMX tiles stored into them;
// the epilogue is the same.

#include <functional>
#include <vector>

#include "abi/ModelAbi.h"
#include "ilir/IR.h"
#include "lowering/cpu/HalideIR.h"
#include "lowering/cpu/Team.h"
#include "lowering/cpu/TensorAccess.h"
#include "plan/LevelPlan.h"

namespace grove::lowering::internal {

// How a group's loops run over the nodes [first, first + count) of the current level.
struct GemmLoops {
  HExpr first, count;
  int node_block = 1;    // nodes per register block
  bool persist = false;  // each thread sweeps every node block of a fixed set of panels
  // Without a team, the loop is a dispatch of its own of this type (parallel or serial); with one,
  // the calling thread runs its share of it (no barrier: the caller adds it).
  HI::ForType type = HI::ForType::Serial;
  int threads = 1;  // a parallel dispatch's most tasks (plan::Recursion::threads)
  const Team *team = nullptr;
  // The kernels over bf16 panels (ModelAbi::gemm_kernel: Vdpbf16ps or AmxBf16; Fma for fp32).
  GemmKernel kernel = GemmKernel::Fma;
  // A node loop joined by columns (plan::ColumnSteps; with persistence, in a team): one chunk per
  // block of columns (per tile of a large level), each the block's panels of every GEMM and then
  // `column_steps(first column, first node, nodes)`, the steps at the block's columns.
  const plan::ColumnSteps *columns = nullptr;
  std::function<Stmt(HExpr, HExpr, HExpr)> column_steps;
  int lanes = 16;  // floats per vector register (the schedule's vector width)
};

// The micro-kernels of a GemmGroup's GEMMs (Computes of case `c`; none reads another's result) in
// one loop over all their panels. Their weights are read from the panels of `packed`
// (LevelPlan::abi.packed, indexed by each term's `packed`).
Stmt lower_gemms(const TensorAccess &access, const ilir::Case &c, const std::vector<plan::Gemm> &gemms,
                 const std::vector<PackedWeight> &packed, const GemmLoops &loops);

}  // namespace grove::lowering::internal
