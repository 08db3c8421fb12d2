#include "lowering/LowerToLoops.h"

#include <fmt/format.h>

#include <set>

#include "ilir/Error.h"
#include "ilir/IRVisitor.h"

namespace grove::lowering {

namespace HI = Halide::Internal;
using HI::Stmt;
using HExpr = Halide::Expr;

std::string names::param(const std::string &tensor) { return "p_" + tensor; }
std::string names::state(const std::string &tensor) { return "s_" + tensor; }
std::string names::temp(const std::string &tensor) { return "t_" + tensor; }

namespace {

// A buffer argument is known to Halide through a Parameter; a local allocation is not.
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument) {
  HI::Parameter param = is_argument ? HI::Parameter(t, true, 1, buffer) : HI::Parameter();
  return HI::Load::make(t, buffer, std::move(index), Halide::Buffer<>(), param, HI::const_true(),
                        HI::ModulusRemainder());
}

Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument) {
  HI::Parameter param = is_argument ? HI::Parameter(value.type(), true, 1, buffer) : HI::Parameter();
  return HI::Store::make(buffer, std::move(value), std::move(index), param, HI::const_true(),
                         HI::ModulusRemainder());
}

HExpr int_load(const char *array, HExpr index) { return load(Halide::Int(32), array, std::move(index), true); }

// Split points of the loop over `var`: every condition `var + c < 0` (after moving terms left) in
// `body` divides the range at -c. Concatenations and slices produce exactly such conditions, so a
// loop split at them has no select left on its variable once Halide's simplifier knows the bounds.
class SplitFinder : public HI::IRVisitor {
 public:
  explicit SplitFinder(const std::string &var) : var_(var) {}
  std::set<int64_t> splits;

 private:
  using HI::IRVisitor::visit;
  void add(const HExpr &a, const HExpr &b, int64_t shift) {
    HExpr d = HI::simplify(a - b);
    if (const HI::Variable *v = d.as<HI::Variable>()) {
      if (v->name == var_) splits.insert(shift);
    } else if (const HI::Add *add = d.as<HI::Add>()) {
      const HI::Variable *v = add->a.as<HI::Variable>();
      const HI::IntImm *c = add->b.as<HI::IntImm>();
      if (v && c && v->name == var_) splits.insert(shift - c->value);
    }
  }
  void visit(const HI::LT *op) override {
    add(op->a, op->b, 0);
    HI::IRVisitor::visit(op);
  }
  void visit(const HI::LE *op) override {
    add(op->a, op->b, 1);
    HI::IRVisitor::visit(op);
  }
  const std::string &var_;
};

// for var in [min, min + extent): body — as several loops, one per piece between split points.
Stmt partitioned_for(const std::string &var, HExpr min, HExpr extent, Stmt body, HI::ForType type) {
  min = HI::simplify(min);
  extent = HI::simplify(extent);
  const HI::IntImm *lo = min.as<HI::IntImm>(), *ext = extent.as<HI::IntImm>();
  if (!lo || !ext) return HI::For::make(var, min, extent, type, Halide::DeviceAPI::None, body);
  SplitFinder finder(var);
  body.accept(&finder);
  std::vector<int64_t> cuts{lo->value};
  for (int64_t s : finder.splits)
    if (s > lo->value && s < lo->value + ext->value) cuts.push_back(s);
  cuts.push_back(lo->value + ext->value);
  if (cuts.size() == 2) return HI::For::make(var, min, extent, type, Halide::DeviceAPI::None, body);
  std::vector<Stmt> pieces;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    std::string piece = fmt::format("{}_{}", var, i);
    Stmt b = HI::substitute(var, HI::Variable::make(Halide::Int(32), piece), body);
    pieces.push_back(HI::For::make(piece, (int)cuts[i], (int)(cuts[i + 1] - cuts[i]), type, Halide::DeviceAPI::None, b));
  }
  return HI::Block::make(pieces);
}

class Lowerer;

// One ILIR expression → a Halide expression. Each Sum becomes an accumulator loop appended to
// `prelude`, and its value a load of the accumulator.
class ExprLowerer : public ilir::ExprFunctor<HExpr> {
 public:
  ExprLowerer(const Lowerer &lowerer, std::vector<Stmt> *prelude, std::vector<std::string> *accumulators)
      : l_(lowerer), prelude_(prelude), accumulators_(accumulators) {}

 protected:
  HExpr visit_FloatImm(const ilir::FloatImm *op, const ilir::Expr &) override { return HExpr(op->value); }
  HExpr visit_IntImm(const ilir::IntImm *op, const ilir::Expr &) override { return HExpr((int)op->value); }
  HExpr visit_Var(const ilir::Var *op, const ilir::Expr &) override;
  HExpr visit_Binary(const ilir::Binary *op, const ilir::Expr &) override;
  HExpr visit_Unary(const ilir::Unary *op, const ilir::Expr &) override;
  HExpr visit_Select(const ilir::Select *op, const ilir::Expr &) override {
    return HI::Select::make(visit(op->cond), visit(op->t), visit(op->f));
  }
  HExpr visit_Load(const ilir::Load *op, const ilir::Expr &) override;
  HExpr visit_StructCall(const ilir::StructCall *op, const ilir::Expr &) override;
  HExpr visit_Sum(const ilir::Sum *op, const ilir::Expr &) override;

 private:
  const Lowerer &l_;
  std::vector<Stmt> *prelude_;
  std::vector<std::string> *accumulators_;
};

class Lowerer {
 public:
  Lowerer(const ilir::Program &p, const std::map<std::string, int64_t> &sizes) : p_(p), sizes_(sizes) {}

  LoopNest run() {
    HExpr n = HI::Variable::make(Halide::Int(32), "n");
    HExpr level = HI::Variable::make(Halide::Int(32), "level");
    HExpr num_levels = HI::Variable::make(Halide::Int(32), names::kNumLevels);
    auto level_begin = [](HExpr l) { return int_load(names::kLevelBegin, std::move(l)); };
    // Leaves are level 0; internal levels follow in order, each after the one below completes.
    Stmt leaves = HI::For::make("n", level_begin(0), level_begin(1) - level_begin(0), HI::ForType::Parallel,
                                Halide::DeviceAPI::None, lower_case(p_.leaf));
    Stmt nodes = HI::For::make("n", level_begin(level), level_begin(level + 1) - level_begin(level),
                               HI::ForType::Parallel, Halide::DeviceAPI::None, lower_case(p_.internal));
    Stmt internal = HI::For::make("level", 1, num_levels - 1, HI::ForType::Serial, Halide::DeviceAPI::None, nodes);
    LoopNest nest;
    nest.body = HI::Block::make(leaves, internal);
    nest.args = arguments();
    return nest;
  }

  HExpr size(const ilir::Expr &e) const { return ExprLowerer(*this, nullptr, nullptr).visit(e); }

  HExpr size_var(const std::string &name) const {
    auto it = sizes_.find(name);
    if (it != sizes_.end()) return HExpr((int)it->second);
    return HI::Variable::make(Halide::Int(32), name);
  }

  HExpr numel(const ilir::TensorDecl &t) const {
    HExpr e = 1;
    for (const ilir::Expr &d : t.shape) e = e * size(d);
    return HI::simplify(e);
  }

  // Row-major offset of `indices` within one node's (or a param's) tensor.
  HExpr offset(const ilir::TensorDecl &t, const std::vector<HExpr> &indices) const {
    GROVE_CHECK(indices.size() == t.shape.size(), "rank mismatch for {}", t.name);
    HExpr e = 0;
    for (size_t d = 0; d < indices.size(); d++) e = e * size(t.shape[d]) + indices[d];
    return e;
  }

  HExpr load_tensor(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices) const {
    switch (t.kind) {
      case ilir::TensorKind::Param:
        return load(Halide::Float(32), names::param(t.name), offset(t, indices), true);
      case ilir::TensorKind::State:
        return load(Halide::Float(32), names::state(t.name), node * numel(t) + offset(t, indices), true);
      case ilir::TensorKind::Temp:
        return load(Halide::Float(32), names::temp(t.name), offset(t, indices), false);
    }
    GROVE_CHECK(false, "unknown tensor kind");
  }

  const ilir::Program &program() const { return p_; }

 private:
  Stmt lower_compute(const ilir::Compute &op) const {
    const ilir::TensorDecl &t = p_.get(op.tensor);
    std::vector<Stmt> prelude;
    std::vector<std::string> accumulators;
    HExpr value = ExprLowerer(*this, &prelude, &accumulators).visit(op.value);
    std::vector<HExpr> indices;
    for (const std::string &i : op.indices) indices.push_back(HI::Variable::make(Halide::Int(32), i));
    HExpr n = HI::Variable::make(Halide::Int(32), "n");
    Stmt s = t.kind == ilir::TensorKind::State
                 ? store(names::state(t.name), value, n * numel(t) + offset(t, indices), true)
                 : store(names::temp(t.name), value, offset(t, indices), false);
    prelude.push_back(s);
    s = HI::Block::make(prelude);
    for (const std::string &acc : accumulators)
      s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {1}, HI::const_true(), s);
    for (size_t d = op.indices.size(); d-- > 0;)
      s = partitioned_for(op.indices[d], 0, size(t.shape[d]), s, HI::ForType::Serial);
    return s;
  }

  // One node's computation. Temps live in per-node buffers: on the stack when small.
  Stmt lower_case(const ilir::Case &c) const {
    std::vector<Stmt> computes;
    std::vector<const ilir::TensorDecl *> temps;
    for (const ilir::Compute &op : c.body) {
      computes.push_back(lower_compute(op));
      const ilir::TensorDecl &t = p_.get(op.tensor);
      if (t.kind == ilir::TensorKind::Temp) temps.push_back(&t);
    }
    Stmt s = HI::Block::make(computes);
    for (const ilir::TensorDecl *t : temps) {
      HExpr extent = numel(*t);
      const HI::IntImm *e = extent.as<HI::IntImm>();
      Halide::MemoryType where = e && e->value <= 16384 ? Halide::MemoryType::Stack : Halide::MemoryType::Heap;
      s = HI::Allocate::make(names::temp(t->name), Halide::Float(32), where, {extent}, HI::const_true(), s);
    }
    return s;
  }

  std::vector<HI::LoweredArgument> arguments() const {
    std::vector<HI::LoweredArgument> args;
    auto buffer = [&](const std::string &name, Halide::Type t) {
      args.emplace_back(name, Halide::Argument::InputBuffer, t, 1, Halide::ArgumentEstimates{});
    };
    for (const ilir::TensorDecl &t : p_.tensors)
      if (t.kind == ilir::TensorKind::Param) buffer(names::param(t.name), Halide::Float(32));
    for (const ilir::TensorDecl &t : p_.tensors)
      if (t.kind == ilir::TensorKind::State) buffer(names::state(t.name), Halide::Float(32));
    for (const char *a : {names::kLevelBegin, names::kChildBegin, names::kChildren, names::kToken})
      buffer(a, Halide::Int(32));
    args.emplace_back(names::kNumLevels, Halide::Argument::InputScalar, Halide::Int(32), 0,
                      Halide::ArgumentEstimates{});
    for (const std::string &v : p_.size_vars)
      if (!sizes_.count(v))
        args.emplace_back(v, Halide::Argument::InputScalar, Halide::Int(32), 0, Halide::ArgumentEstimates{});
    return args;
  }

  const ilir::Program &p_;
  const std::map<std::string, int64_t> &sizes_;
};

HExpr ExprLowerer::visit_Var(const ilir::Var *op, const ilir::Expr &) {
  if (op->var_kind == ilir::VarKind::Size) return l_.size_var(op->name);
  return HI::Variable::make(Halide::Int(32), op->name);
}

HExpr ExprLowerer::visit_Binary(const ilir::Binary *op, const ilir::Expr &) {
  HExpr a = visit(op->a), b = visit(op->b);
  switch (op->op) {
    case ilir::BinOp::Add: return a + b;
    case ilir::BinOp::Sub: return a - b;
    case ilir::BinOp::Mul: return a * b;
    case ilir::BinOp::Div: return a / b;
    case ilir::BinOp::Min: return Halide::min(a, b);
    case ilir::BinOp::Max: return Halide::max(a, b);
    case ilir::BinOp::Mod: return a % b;
    case ilir::BinOp::LT: return a < b;
    case ilir::BinOp::LE: return a <= b;
    case ilir::BinOp::EQ: return a == b;
    case ilir::BinOp::And: return a && b;
  }
  GROVE_CHECK(false, "unknown binary operator");
}

HExpr ExprLowerer::visit_Unary(const ilir::Unary *op, const ilir::Expr &) {
  HExpr a = visit(op->a);
  switch (op->op) {
    case ilir::UnaryOp::Neg: return -a;
    case ilir::UnaryOp::Tanh: return Halide::tanh(a);
    case ilir::UnaryOp::Sigmoid: return 1.0f / (1.0f + Halide::exp(-a));
    case ilir::UnaryOp::Exp: return Halide::exp(a);
    case ilir::UnaryOp::Relu: return Halide::max(a, 0.0f);
  }
  GROVE_CHECK(false, "unknown unary operator");
}

HExpr ExprLowerer::visit_Load(const ilir::Load *op, const ilir::Expr &) {
  std::vector<HExpr> indices;
  for (const ilir::Expr &i : op->indices) indices.push_back(visit(i));
  HExpr node = op->node.defined() ? visit(op->node) : HExpr();
  return l_.load_tensor(l_.program().get(op->tensor), node, indices);
}

HExpr ExprLowerer::visit_StructCall(const ilir::StructCall *op, const ilir::Expr &) {
  HExpr node = visit(op->node);
  switch (op->fn) {
    case ilir::StructFn::Child: return int_load(names::kChildren, int_load(names::kChildBegin, node) + visit(op->arg));
    case ilir::StructFn::NumChildren:
      return int_load(names::kChildBegin, node + 1) - int_load(names::kChildBegin, node);
    case ilir::StructFn::IsLeaf:
      return int_load(names::kChildBegin, node + 1) == int_load(names::kChildBegin, node);
    case ilir::StructFn::Token: return int_load(names::kToken, node);
  }
  GROVE_CHECK(false, "unknown structure function");
}

HExpr ExprLowerer::visit_Sum(const ilir::Sum *op, const ilir::Expr &) {
  GROVE_CHECK(prelude_ != nullptr, "a Sum where only size expressions are allowed");
  std::string acc = fmt::format("acc{}", accumulators_->size());
  accumulators_->push_back(acc);
  std::vector<Stmt> inner;
  std::swap(inner, *prelude_);
  HExpr body = visit(op->body);
  std::swap(inner, *prelude_);
  inner.push_back(store(acc, load(Halide::Float(32), acc, 0, false) + body, 0, false));
  Stmt loop = partitioned_for(op->var, 0, visit(op->extent), HI::Block::make(inner), HI::ForType::Serial);
  prelude_->push_back(HI::Block::make(store(acc, 0.0f, 0, false), loop));
  return load(Halide::Float(32), acc, 0, false);
}

}  // namespace

LoopNest lower_to_loops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes) {
  return Lowerer(program, sizes).run();
}

}  // namespace grove::lowering
