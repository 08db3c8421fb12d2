// ILIR expressions printed as CUDA C (CudaEmitter_Internal.h). Integer arithmetic is int, as the
// CPU emitter's (the runtime refuses batches whose buffers pass 2^31 elements); float arithmetic
// is float without fast-math, so a NaN stays a NaN through sigmoid and tanh as on the CPU.

#include <fmt/format.h>

#include <cmath>

#include "backends/cuda/CudaEmitter_Internal.h"
#include "ilir/IRVisitor.h"
#include "plan/Names.h"
#include "support/Error.h"

namespace grove::cuda::internal {

std::string float_literal(float value) {
  GROVE_CHECK(std::isfinite(value), "a non-finite constant {} in a model", value);
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

class Printer : public ilir::ExprFunctor<std::string> {
 public:
  Printer(const ExprPrinter &p, std::vector<std::string> *prelude,
          const std::map<const ilir::ExprNode *, std::string> &replace)
      : p_(p), prelude_(prelude), replace_(replace) {}

  std::string print(const ilir::Expr &e) {
    auto it = replace_.find(e.get());
    return it != replace_.end() ? it->second : visit(e);
  }

 protected:
  std::string visit_FloatImm(const ilir::FloatImm *op, const ilir::Expr &) override {
    return float_literal(op->value);
  }
  std::string visit_IntImm(const ilir::IntImm *op, const ilir::Expr &) override {
    return std::to_string(op->value);
  }
  std::string visit_Var(const ilir::Var *op, const ilir::Expr &) override {
    if (op->var_kind != ilir::VarKind::Size) return op->name;
    auto it = p_.sizes_.find(op->name);
    GROVE_CHECK(it != p_.sizes_.end(), "the size {} unbound in CUDA code", op->name);
    return std::to_string(it->second);
  }

  std::string visit_Binary(const ilir::Binary *op, const ilir::Expr &) override {
    std::string a = print(op->a), b = print(op->b);
    const bool is_float = op->a.type() == ilir::ScalarType::Float;
    switch (op->op) {
      case ilir::BinOp::Add:
        return fmt::format("({} + {})", a, b);
      case ilir::BinOp::Sub:
        return fmt::format("({} - {})", a, b);
      case ilir::BinOp::Mul:
        return fmt::format("({} * {})", a, b);
      case ilir::BinOp::Div:
        return fmt::format("({} / {})", a, b);
      case ilir::BinOp::Min:
        return is_float ? fmt::format("fminf({}, {})", a, b) : fmt::format("grove_imin({}, {})", a, b);
      case ilir::BinOp::Max:
        return is_float ? fmt::format("fmaxf({}, {})", a, b) : fmt::format("grove_imax({}, {})", a, b);
      case ilir::BinOp::Mod:
        return fmt::format("({} % {})", a, b);
      case ilir::BinOp::LT:
        return fmt::format("({} < {})", a, b);
      case ilir::BinOp::LE:
        return fmt::format("({} <= {})", a, b);
      case ilir::BinOp::EQ:
        return fmt::format("({} == {})", a, b);
      case ilir::BinOp::And:
        return fmt::format("({} && {})", a, b);
    }
    GROVE_CHECK(false, "unknown binary operator");
  }

  std::string visit_Unary(const ilir::Unary *op, const ilir::Expr &) override {
    std::string a = print(op->a);
    switch (op->op) {
      case ilir::UnaryOp::Neg:
        return fmt::format("(-{})", a);
      case ilir::UnaryOp::Tanh:
        return fmt::format("tanhf({})", a);
      case ilir::UnaryOp::Sigmoid:
        return fmt::format("grove_sigmoid({})", a);
      case ilir::UnaryOp::Exp:
        return fmt::format("expf({})", a);
      case ilir::UnaryOp::Relu:
        return fmt::format("grove_relu({})", a);
    }
    GROVE_CHECK(false, "unknown unary operator");
  }

  std::string visit_Select(const ilir::Select *op, const ilir::Expr &) override {
    return fmt::format("({} ? {} : {})", print(op->cond), print(op->t), print(op->f));
  }

  std::string visit_Load(const ilir::Load *op, const ilir::Expr &) override {
    std::vector<std::string> indices;
    for (const ilir::Expr &i : op->indices) indices.push_back(print(i));
    std::string node = op->node.defined() ? print(op->node) : "";
    return p_.address(p_.program_.get(op->tensor), node, indices);
  }

  std::string visit_StructCall(const ilir::StructCall *op, const ilir::Expr &) override {
    std::string n = print(op->node);
    switch (op->fn) {
      case ilir::StructFn::Child:
        return fmt::format("{}[{}[{}] + {}]", plan::names::kChildren, plan::names::kChildBegin, n,
                           print(op->arg));
      case ilir::StructFn::NumChildren:
        return fmt::format("({0}[{1} + 1] - {0}[{1}])", plan::names::kChildBegin, n);
      case ilir::StructFn::IsLeaf:
        return fmt::format("({0}[{1} + 1] == {0}[{1}])", plan::names::kChildBegin, n);
      case ilir::StructFn::Token:
        return fmt::format("{}[{}]", plan::names::kToken, n);
      case ilir::StructFn::Parent:
      case ilir::StructFn::ChildSlot:
      case ilir::StructFn::NumParents:
        break;  // top-down (backward) programs are the CPU emitter's only
    }
    GROVE_CHECK(false, "unknown structure function");
  }

  // A loop before the value, its accumulator read in the value; Sums in its body print their loops
  // inside it.
  std::string visit_Sum(const ilir::Sum *op, const ilir::Expr &) override {
    GROVE_CHECK(prelude_ != nullptr, "a Sum where only an index expression is allowed");
    std::string acc = fmt::format("sum{}", sums_++);
    std::vector<std::string> inner;
    std::swap(inner, *prelude_);
    std::string body = print(op->body);
    std::swap(inner, *prelude_);
    prelude_->push_back(fmt::format("float {} = 0.0f;", acc));
    prelude_->push_back(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", op->var, print(op->extent)));
    for (const std::string &line : inner) prelude_->push_back("  " + line);
    prelude_->push_back(fmt::format("  {} += {};", acc, body));
    prelude_->push_back("}");
    return acc;
  }

 private:
  const ExprPrinter &p_;
  std::vector<std::string> *prelude_;
  const std::map<const ilir::ExprNode *, std::string> &replace_;
  int sums_ = 0;
};

std::string ExprPrinter::print(const ilir::Expr &e, std::vector<std::string> *prelude,
                               const std::map<const ilir::ExprNode *, std::string> &replace) {
  return Printer(*this, prelude, replace).print(e);
}

int64_t ExprPrinter::size(const ilir::Expr &e) const { return ilir::eval_size(e, sizes_); }

int64_t ExprPrinter::numel(const ilir::TensorDecl &t) const {
  int64_t n = 1;
  for (const ilir::Expr &d : t.shape) n *= size(d);
  return n;
}

std::string ExprPrinter::offset(const ilir::TensorDecl &t, const std::vector<std::string> &indices) const {
  GROVE_CHECK(indices.size() == t.shape.size(), "rank mismatch for {}", t.name);
  if (indices.empty()) return "0";
  std::string e = indices[0];
  for (size_t d = 1; d < indices.size(); d++)
    e = fmt::format("({} * {} + {})", e, size(t.shape[d]), indices[d]);
  return e;
}

std::string ExprPrinter::address(const ilir::TensorDecl &t, const std::string &node,
                                 const std::vector<std::string> &indices) const {
  switch (t.kind) {
    case ilir::TensorKind::Param:
      return fmt::format("{}[{}]", plan::names::param(t.name), offset(t, indices));
    case ilir::TensorKind::State:
      return fmt::format("{}[{} * {} + {}]", plan::names::state(t.name), node, numel(t), offset(t, indices));
    case ilir::TensorKind::Temp:
      return fmt::format("{}[{} * {} + {}]", plan::names::temp(t.name), node, numel(t), offset(t, indices));
    case ilir::TensorKind::Saved:
    case ilir::TensorKind::Gradient:
      break;  // top-down (backward) programs are the CPU emitter's only
  }
  GROVE_CHECK(false, "unknown tensor kind");
}

void collect_loads(const ilir::Expr &e, std::vector<const ilir::Load *> *out) {
  ilir::for_each_node(e, [&](const ilir::Expr &x) {
    if (const auto *l = x.as<ilir::Load>()) out->push_back(l);
  });
}

}  // namespace grove::cuda::internal
