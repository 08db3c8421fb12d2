#include "lowering/cpu/ExprLowering.h"

#include <fmt/format.h>

#include "ilir/IRVisitor.h"
#include "lowering/cpu/LoopSplitting.h"
#include "lowering/cpu/Names.h"
#include "support/Error.h"

namespace grove::lowering::internal {

namespace {

// Halide's exp maps NaN to 0, so tanh and sigmoid built on it would turn a NaN into a number;
// a NaN input stays NaN. The test is on the bits: generated code is compiled with fast-math flags,
// under which LLVM may assume a float comparison never sees a NaN.
HExpr keep_nan(const HExpr &x, const HExpr &value) {
  HExpr bits = Halide::reinterpret(Halide::UInt(32), x) & HExpr(uint32_t(0x7fffffff));
  return HI::Select::make(bits > HExpr(uint32_t(0x7f800000)), x, value);
}

}  // namespace

class ExprLowerer : public ilir::ExprFunctor<HExpr> {
 public:
  explicit ExprLowerer(ExprLowering &l) : l_(l) {}
  HExpr lower(const ilir::Expr &e) {
    auto it = l_.replace_.find(e.get());
    return it != l_.replace_.end() ? it->second : visit(e);
  }

 protected:
  HExpr visit_FloatImm(const ilir::FloatImm *op, const ilir::Expr &) override { return HExpr(op->value); }
  HExpr visit_IntImm(const ilir::IntImm *op, const ilir::Expr &) override { return HExpr(int(op->value)); }
  HExpr visit_Var(const ilir::Var *op, const ilir::Expr &) override {
    return op->var_kind == ilir::VarKind::Size ? l_.access_.size_var(op->name) : var(op->name);
  }

  HExpr visit_Binary(const ilir::Binary *op, const ilir::Expr &) override {
    HExpr a = lower(op->a), b = lower(op->b);
    switch (op->op) {
      case ilir::BinOp::Add:
        return a + b;
      case ilir::BinOp::Sub:
        return a - b;
      case ilir::BinOp::Mul:
        return a * b;
      case ilir::BinOp::Div:
        return a / b;
      case ilir::BinOp::Min:
        return Halide::min(a, b);
      case ilir::BinOp::Max:
        return Halide::max(a, b);
      case ilir::BinOp::Mod:
        return a % b;
      case ilir::BinOp::LT:
        return a < b;
      case ilir::BinOp::LE:
        return a <= b;
      case ilir::BinOp::EQ:
        return a == b;
      case ilir::BinOp::And:
        return a && b;
    }
    GROVE_CHECK(false, "unknown binary operator");
  }

  HExpr visit_Unary(const ilir::Unary *op, const ilir::Expr &) override {
    HExpr a = lower(op->a);
    switch (op->op) {
      case ilir::UnaryOp::Neg:
        return -a;
      case ilir::UnaryOp::Tanh: {
        // Through exp, which Halide vectorizes inline (tanhf is a scalar libm call per lane):
        // tanh|x| = (1 - e) / (1 + e) with e = exp(-2|x|), which cannot overflow.
        HExpr e = Halide::exp(-2.0f * Halide::abs(a));
        HExpr t = (1.0f - e) / (1.0f + e);
        return keep_nan(a, HI::Select::make(a < 0.0f, -t, t));
      }
      case ilir::UnaryOp::Sigmoid:
        return keep_nan(a, 1.0f / (1.0f + Halide::exp(-a)));
      case ilir::UnaryOp::Exp:
        return Halide::exp(a);
      case ilir::UnaryOp::Relu:
        return Halide::max(a, 0.0f);
    }
    GROVE_CHECK(false, "unknown unary operator");
  }

  HExpr visit_Select(const ilir::Select *op, const ilir::Expr &) override {
    return HI::Select::make(lower(op->cond), lower(op->t), lower(op->f));
  }

  HExpr visit_Load(const ilir::Load *op, const ilir::Expr &) override {
    std::vector<HExpr> indices;
    for (const ilir::Expr &i : op->indices) indices.push_back(lower(i));
    HExpr node = op->node.defined() ? lower(op->node) : HExpr();
    return l_.access_.load(l_.access_.program().get(op->tensor), node, indices);
  }

  HExpr visit_StructCall(const ilir::StructCall *op, const ilir::Expr &) override {
    HExpr node = lower(op->node);
    switch (op->fn) {
      case ilir::StructFn::Child:
        return int_load(names::kChildren, int_load(names::kChildBegin, node) + lower(op->arg));
      case ilir::StructFn::NumChildren:
        return int_load(names::kChildBegin, node + 1) - int_load(names::kChildBegin, node);
      case ilir::StructFn::IsLeaf:
        return int_load(names::kChildBegin, node + 1) == int_load(names::kChildBegin, node);
      case ilir::StructFn::Token:
        return int_load(names::kToken, node);
      case ilir::StructFn::Parent:
        if (op->arg.defined())
          return int_load(names::kParent, int_load(names::kParentBegin, node) + lower(op->arg));
        return int_load(names::kParent, node);
      case ilir::StructFn::ChildSlot:
        if (op->arg.defined())
          return int_load(names::kChildSlot, int_load(names::kParentBegin, node) + lower(op->arg));
        return int_load(names::kChildSlot, node);
      case ilir::StructFn::NumParents:
        return int_load(names::kParentBegin, node + 1) - int_load(names::kParentBegin, node);
    }
    GROVE_CHECK(false, "unknown structure function");
  }

  HExpr visit_Sum(const ilir::Sum *op, const ilir::Expr &) override {
    GROVE_CHECK(l_.prelude_ != nullptr, "a Sum where only size expressions are allowed");
    std::string acc = fmt::format("acc{}", l_.accumulators_->size());
    l_.accumulators_->push_back(acc);
    std::vector<Stmt> inner;
    std::swap(inner, *l_.prelude_);
    HExpr body = lower(op->body);
    std::swap(inner, *l_.prelude_);
    inner.push_back(internal::store(acc, internal::load(Halide::Float(32), acc, 0, false) + body, 0, false));
    Stmt loop = partitioned_for(op->var, 0, lower(op->extent), HI::Block::make(inner), HI::ForType::Serial);
    l_.prelude_->push_back(HI::Block::make(internal::store(acc, 0.0f, 0, false), loop));
    return internal::load(Halide::Float(32), acc, 0, false);
  }

 private:
  ExprLowering &l_;
};

HExpr ExprLowering::lower(const ilir::Expr &e) { return ExprLowerer(*this).lower(e); }

Stmt lower_compute(const TensorAccess &access, const ilir::Compute &op, int lanes, const HExpr &first_column,
                   int64_t columns) {
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  std::vector<Stmt> prelude;
  std::vector<std::string> accumulators;
  HExpr value = ExprLowering(access, &prelude, &accumulators).lower(op.value);
  std::vector<HExpr> indices;
  for (const std::string &i : op.indices) indices.push_back(var(i));
  prelude.push_back(access.store(t, var("n"), indices, value));
  Stmt s = HI::Block::make(prelude);
  for (const std::string &acc : accumulators)
    s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {1}, HI::const_true(), s);
  for (size_t d = op.indices.size(); d-- > 0;) {
    bool innermost = d + 1 == op.indices.size();
    if (innermost && first_column.defined()) {
      // Only the columns [first_column, first_column + columns) of the innermost index.
      const std::string column = op.indices[d] + "_col";
      s = HI::substitute(op.indices[d], first_column + var(column), s);
      s = vectorized_for(column, HExpr(int(columns)), s, lanes);
      continue;
    }
    s = innermost ? vectorized_for(op.indices[d], access.size(t.shape[d]), s, lanes)
                  : partitioned_for(op.indices[d], 0, access.size(t.shape[d]), s, HI::ForType::Serial);
  }
  return s;
}

}  // namespace grove::lowering::internal
