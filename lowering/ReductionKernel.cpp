#include "lowering/ReductionKernel.h"

#include "lowering/ExprLowering.h"
#include "lowering/LoopSplitting.h"
#include "lowering/Names.h"
#include "support/Error.h"

namespace grove::lowering::internal {

Stmt lower_reduction(const TensorAccess &access, const ilir::Reduction &r, const HExpr &first,
                     const HExpr &count, int lanes, int threads) {
  const ilir::Program &p = access.program();
  const ilir::TensorDecl &g = p.get(r.tensor);
  GROVE_CHECK(g.kind == ilir::TensorKind::Gradient, "reduction into {}, not a gradient", r.tensor);
  GROVE_CHECK(r.indices.size() == 1 || r.indices.size() == 2, "reduction into {} of rank {}", r.tensor,
              r.indices.size());
  // The accumulator: one row of the gradient, a per-node temp of a program that also declares it.
  ilir::Program local = p;
  const std::string acc = "acc_" + r.tensor;
  const std::string &inner = r.indices.back();
  local.tensors.push_back({acc, ilir::TensorKind::Temp, {g.shape.back()}});
  TensorAccess a(local, access.sizes(), TempStorage::PerNode);
  const ilir::TensorDecl &acc_t = local.get(acc);
  ilir::Expr acc_here =
      ilir::Load::make(acc, ilir::Var::node(), {ilir::Var::make(inner, ilir::VarKind::Index)});
  Stmt zero = lower_compute(a, ilir::Compute{acc, {inner}, ilir::Expr(0.0f)}, lanes);
  Stmt add = lower_compute(a, ilir::Compute{acc, {inner}, acc_here + r.value}, lanes);
  Stmt nodes = HI::For::make("n", first, count, HI::ForType::Serial, Halide::DeviceAPI::None, add);
  // g[row, inner] += acc[inner]
  std::vector<HExpr> at;
  for (const std::string &i : r.indices) at.push_back(var(i));
  HExpr total = a.load(g, HExpr(), at) + a.load(acc_t, var("n"), {var(inner)});
  Stmt store = vectorized_for(inner, a.size(g.shape.back()), a.store(g, HExpr(), at, total), lanes);
  Stmt row = HI::Block::make({zero, nodes, store});
  const std::optional<int64_t> width = constant(a.numel(acc_t));
  Halide::MemoryType where = width && *width <= 16384 ? Halide::MemoryType::Stack : Halide::MemoryType::Heap;
  row =
      HI::Allocate::make(names::temp(acc), Halide::Float(32), where, {a.numel(acc_t)}, HI::const_true(), row);
  if (r.indices.size() == 1) return row;
  return dispatch_for(r.indices[0], 0, a.size(g.shape[0]), HI::ForType::Parallel, threads, row);
}

}  // namespace grove::lowering::internal
