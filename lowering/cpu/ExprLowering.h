#pragma once
// ILIR expressions and Computes as Halide IR: size expressions, values (tanh and sigmoid through
// exp, which Halide vectorizes), structure functions as loads of the inspector's arrays, and a
// Compute's plain loop nest for one node.

#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "lowering/cpu/HalideIR.h"
#include "lowering/cpu/TensorAccess.h"

namespace grove::lowering::internal {

// The Halide value of an ILIR expression. Each Sum becomes an accumulator loop appended to
// `prelude` (its accumulator's name to `accumulators`), and its value a load of the accumulator;
// a Sum found in `replace` becomes the given expression instead.
class ExprLowering {
 public:
  ExprLowering(const TensorAccess &access, std::vector<Stmt> *prelude, std::vector<std::string> *accumulators,
               std::map<const ilir::ExprNode *, HExpr> replace = {})
      : access_(access), prelude_(prelude), accumulators_(accumulators), replace_(std::move(replace)) {}
  HExpr lower(const ilir::Expr &e);

 private:
  friend class ExprLowerer;
  const TensorAccess &access_;
  std::vector<Stmt> *prelude_;
  std::vector<std::string> *accumulators_;
  std::map<const ilir::ExprNode *, HExpr> replace_;
};

// One Compute for the current node `n`: its loop nest over the tensor's indices, the innermost
// vectorized by `lanes` where the extents allow (lanes = 1: scalar). With `first_column`, only the
// innermost index's `columns` values from it on (a block of plan::ColumnSteps).
Stmt lower_compute(const TensorAccess &access, const ilir::Compute &op, int lanes,
                   const HExpr &first_column = HExpr(), int64_t columns = 0);

}  // namespace grove::lowering::internal
