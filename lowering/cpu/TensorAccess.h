#pragma once
// Where the tensors of one node live while a case runs, as Halide addresses: params, states, saved
// tensors and gradients in the entry function's argument buffers (states and saved tensors
// node-indexed), temps in local buffers either per node or per level.

#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "lowering/cpu/HalideIR.h"

namespace grove::lowering::internal {

// Per node: a temp holds the current node's values. Per level: a row per node of the level (or of
// a block of levels), row r for node level_base + r.
enum class TempStorage { PerNode, PerLevel };

class TensorAccess {
 public:
  // `level_base` (PerLevel only) is the node that row 0 of the temps holds; it may be left
  // undefined where no temp is addressed (sizing the buffers).
  TensorAccess(const ilir::Program &p, const std::map<std::string, int64_t> &sizes, TempStorage temps,
               HExpr level_base = HExpr())
      : p_(p), sizes_(sizes), temps_(temps), level_base_(std::move(level_base)) {}

  const ilir::Program &program() const { return p_; }
  const std::map<std::string, int64_t> &sizes() const { return sizes_; }
  HExpr size(const ilir::Expr &e) const;  // a size expression; unbound size variables stay symbolic
  HExpr size_var(const std::string &name) const;
  HExpr numel(const ilir::TensorDecl &t) const;
  HExpr offset(const ilir::TensorDecl &t, const std::vector<HExpr> &indices) const;  // row-major
  HExpr address(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices) const;
  HExpr load(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices) const;
  Stmt store(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices,
             HExpr value) const;
  std::string buffer(const ilir::TensorDecl &t) const;
  bool is_argument(const ilir::TensorDecl &t) const { return t.kind != ilir::TensorKind::Temp; }

 private:
  const ilir::Program &p_;
  const std::map<std::string, int64_t> &sizes_;
  TempStorage temps_;
  HExpr level_base_;
};

}  // namespace grove::lowering::internal
