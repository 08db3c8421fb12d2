#include "lowering/cpu/TensorAccess.h"

#include "lowering/cpu/ExprLowering.h"
#include "lowering/cpu/Names.h"
#include "support/Error.h"

namespace grove::lowering::internal {

HExpr TensorAccess::size(const ilir::Expr &e) const { return ExprLowering(*this, nullptr, nullptr).lower(e); }

HExpr TensorAccess::size_var(const std::string &name) const {
  auto it = sizes_.find(name);
  if (it != sizes_.end()) return HExpr(int(it->second));
  return var(name);
}

HExpr TensorAccess::numel(const ilir::TensorDecl &t) const {
  HExpr e = 1;
  for (const ilir::Expr &d : t.shape) e = e * size(d);
  return HI::simplify(e);
}

HExpr TensorAccess::offset(const ilir::TensorDecl &t, const std::vector<HExpr> &indices) const {
  GROVE_CHECK(indices.size() == t.shape.size(), "rank mismatch for {}", t.name);
  HExpr e = 0;
  for (size_t d = 0; d < indices.size(); d++) e = e * size(t.shape[d]) + indices[d];
  return e;
}

HExpr TensorAccess::address(const ilir::TensorDecl &t, const HExpr &node,
                            const std::vector<HExpr> &indices) const {
  switch (t.kind) {
    case ilir::TensorKind::Param:
    case ilir::TensorKind::Gradient:
      return offset(t, indices);
    case ilir::TensorKind::State:
    case ilir::TensorKind::Saved:
      return node * numel(t) + offset(t, indices);
    case ilir::TensorKind::Temp:
      if (temps_ == TempStorage::PerNode) return offset(t, indices);
      GROVE_CHECK(level_base_.defined(), "a per-level temp {} addressed without the level's base", t.name);
      return (node - level_base_) * numel(t) + offset(t, indices);
  }
  GROVE_CHECK(false, "unknown tensor kind");
}

std::string TensorAccess::buffer(const ilir::TensorDecl &t) const {
  switch (t.kind) {
    case ilir::TensorKind::Param:
      return names::param(t.name);
    case ilir::TensorKind::State:
      return names::state(t.name);
    case ilir::TensorKind::Temp:
      return names::temp(t.name);
    case ilir::TensorKind::Saved:
      return names::saved(t.name);
    case ilir::TensorKind::Gradient:
      return names::gradient(t.name);
  }
  GROVE_CHECK(false, "unknown tensor kind");
}

HExpr TensorAccess::load(const ilir::TensorDecl &t, const HExpr &node,
                         const std::vector<HExpr> &indices) const {
  return internal::load(Halide::Float(32), buffer(t), address(t, node, indices), is_argument(t));
}

Stmt TensorAccess::store(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices,
                         HExpr value) const {
  return internal::store(buffer(t), std::move(value), address(t, node, indices), is_argument(t));
}

}  // namespace grove::lowering::internal
