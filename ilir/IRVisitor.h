#pragma once
// Visitors over ILIR expressions.
//
//   * ExprFunctor<R>: strict — every node type is a pure virtual method, so a printer or back end
//     that forgets a node does not compile.
//   * IRMutator: rebuilds an expression bottom-up; returns the same node when nothing changed.
//     Override the visit_* methods for the nodes a pass rewrites.
// Expressions are model-sized (not input-sized), so recursion here is bounded by the model text.

#include <functional>

#include "ilir/IR.h"
#include "support/Error.h"

namespace grove::ilir {

template <typename R>
class ExprFunctor {
 public:
  virtual ~ExprFunctor() = default;

  R visit(const Expr &e) {
    GROVE_CHECK(e.defined(), "visiting an undefined expression");
    switch (e->kind) {
#define GROVE_ILIR_DISPATCH(N) \
  case ExprKind::N:            \
    return visit_##N(static_cast<const N *>(e.get()), e);
      GROVE_ILIR_EXPR_NODES(GROVE_ILIR_DISPATCH)
#undef GROVE_ILIR_DISPATCH
    }
    GROVE_CHECK(false, "unknown expression kind");
  }

 protected:
#define GROVE_ILIR_VISIT(N) virtual R visit_##N(const N *op, const Expr &e) = 0;
  GROVE_ILIR_EXPR_NODES(GROVE_ILIR_VISIT)
#undef GROVE_ILIR_VISIT
};

class IRMutator : public ExprFunctor<Expr> {
 public:
  Expr mutate(const Expr &e) { return e.defined() ? visit(e) : e; }

 protected:
  Expr visit_FloatImm(const FloatImm *op, const Expr &e) override;
  Expr visit_IntImm(const IntImm *op, const Expr &e) override;
  Expr visit_Var(const Var *op, const Expr &e) override;
  Expr visit_Binary(const Binary *op, const Expr &e) override;
  Expr visit_Unary(const Unary *op, const Expr &e) override;
  Expr visit_Select(const Select *op, const Expr &e) override;
  Expr visit_Load(const Load *op, const Expr &e) override;
  Expr visit_StructCall(const StructCall *op, const Expr &e) override;
  Expr visit_Sum(const Sum *op, const Expr &e) override;
};

// Calls `f` on every node of `e`, parents before children.
void for_each_node(const Expr &e, const std::function<void(const Expr &)> &f);

// Replaces every Var named `name` (of any kind) by `value`.
Expr substitute(const Expr &e, const std::string &name, const Expr &value);

// Whether `e` contains a node for which `pred` holds.
bool contains(const Expr &e, const std::function<bool(const Expr &)> &pred);

// `e` with every load of `def.tensor` replaced by def's value at the load's indices (the
// substitution of def's index variables is simultaneous).
Expr inline_definition(const Expr &e, const Compute &def);

// Whether `tensor` is loaded inside the body of a Sum in `e` (where substituting its definition
// would recompute it once per term).
bool read_inside_sum(const Expr &e, const std::string &tensor);

}  // namespace grove::ilir
