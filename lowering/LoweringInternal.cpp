#include "lowering/LoweringInternal.h"

#include <fmt/format.h>

#include <set>

#include "ilir/Error.h"
#include "ilir/IRVisitor.h"

namespace grove::lowering {

std::string names::param(const std::string &tensor) { return "p_" + tensor; }
std::string names::state(const std::string &tensor) { return "s_" + tensor; }
std::string names::temp(const std::string &tensor) { return "t_" + tensor; }

namespace internal {

HExpr var(const std::string &name) { return HI::Variable::make(Halide::Int(32), name); }

bool mentions(const ilir::Expr &e, const std::string &name) {
  return ilir::contains(e, [&](const ilir::Expr &x) {
    const auto *v = x.as<ilir::Var>();
    return v && v->name == name;
  });
}

std::optional<int64_t> constant(const HExpr &e) {
  HExpr s = HI::simplify(e);
  if (const auto *i = s.as<HI::IntImm>()) return i->value;
  return std::nullopt;
}

// A buffer argument is known to Halide through a Parameter; a local allocation is not.
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument) {
  HI::Parameter param = is_argument ? HI::Parameter(t.element_of(), true, 1, buffer) : HI::Parameter();
  return HI::Load::make(t, buffer, std::move(index), Halide::Buffer<>(), param, HI::const_true(t.lanes()),
                        HI::ModulusRemainder());
}

Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument) {
  HI::Parameter param =
      is_argument ? HI::Parameter(value.type().element_of(), true, 1, buffer) : HI::Parameter();
  int lanes = value.type().lanes();
  return HI::Store::make(buffer, std::move(value), std::move(index), param, HI::const_true(lanes),
                         HI::ModulusRemainder());
}

HExpr int_load(const char *array, HExpr index) {
  return load(Halide::Int(32), array, std::move(index), true);
}

namespace {

HExpr team_call(const char *fn, std::vector<HExpr> args) {
  args.insert(args.begin(), HI::Variable::make(Halide::Handle(), Team::kBarrierState));
  return HI::Call::make(Halide::Int(32), fn, args, HI::Call::Extern);
}

}  // namespace

Stmt Team::share(const std::string &v, const HExpr &min, const HExpr &extent, Stmt body,
                 int chunks_per_thread) const {
  const int id = stages_++;
  const std::string seq = fmt::format("seq{}", id), chunk = fmt::format("chunk{}", id),
                    chunks = fmt::format("chunks{}", id);
  HExpr c = var(chunk), total = var(chunks);
  // Chunk c: one iteration, or iterations [extent · c / total, extent · (c + 1) / total).
  Stmt run = chunks_per_thread > 0
                 ? HI::For::make(v, min + extent * c / total, extent * (c + 1) / total - extent * c / total,
                                 HI::ForType::Serial, Halide::DeviceAPI::None, std::move(body))
                 : HI::LetStmt::make(v, min + c, std::move(body));
  run = HI::Block::make(run, HI::Evaluate::make(team_call(names::kStageFinish, {var(seq)})));
  Stmt attempt = HI::LetStmt::make(chunk, team_call(names::kStageClaim, {var(seq), total, tid, size}),
                                   HI::IfThenElse::make(c >= 0, run));
  // Each attempt claims at most one chunk; `total` attempts cover the case of one thread alone.
  Stmt s = HI::For::make(fmt::format("attempt{}", id), 0, total, HI::ForType::Serial, Halide::DeviceAPI::None,
                         attempt);
  s = HI::Block::make(s, HI::Evaluate::make(team_call(names::kStageWait, {var(seq), total})));
  s = HI::LetStmt::make(chunks,
                        chunks_per_thread > 0 ? Halide::min(extent, chunks_per_thread * size) : extent, s);
  s = HI::LetStmt::make(seq, load(Halide::Int(32), kStageSeq, 0, false), s);
  return HI::Block::make(store(kStageSeq, load(Halide::Int(32), kStageSeq, 0, false) + 1, 0, false), s);
}

Stmt Team::with_stage_counter(Stmt body) const {
  body = HI::Block::make(store(kStageSeq, 0, 0, false), std::move(body));
  return HI::Allocate::make(kStageSeq, Halide::Int(32), Halide::MemoryType::Stack, {1}, HI::const_true(),
                            body);
}

Stmt Team::barrier() const { return HI::Evaluate::make(team_call(names::kBarrierWait, {size})); }

namespace {

// Split points of the loop over `var`: every condition `var + c < 0` (after moving terms left)
// divides the range at -c.
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

}  // namespace

std::vector<int64_t> split_points(const std::string &var, const HExpr &min, const HExpr &extent,
                                  const Stmt &body) {
  const HI::IntImm *lo = min.as<HI::IntImm>(), *ext = extent.as<HI::IntImm>();
  if (!lo || !ext) return {};
  SplitFinder finder(var);
  body.accept(&finder);
  std::vector<int64_t> cuts{lo->value};
  for (int64_t s : finder.splits)
    if (s > lo->value && s < lo->value + ext->value) cuts.push_back(s);
  cuts.push_back(lo->value + ext->value);
  return cuts;
}

namespace {

// `body` simplified knowing var is in [lo, hi): the selects of concatenations on var are resolved
// here, before any load in a branch not taken could be read as out of bounds.
Stmt within(const std::string &var, int64_t lo, int64_t hi, const Stmt &body) {
  HI::Scope<HI::Interval> bounds;
  bounds.push(var, HI::Interval(HExpr(int(lo)), HExpr(int(hi - 1))));
  return HI::simplify(body, true, bounds);
}

}  // namespace

Stmt partitioned_for(const std::string &name, HExpr min, HExpr extent, Stmt body, HI::ForType type) {
  min = HI::simplify(min);
  extent = HI::simplify(extent);
  std::vector<int64_t> cuts = split_points(name, min, extent, body);
  if (cuts.size() <= 2) return HI::For::make(name, min, extent, type, Halide::DeviceAPI::None, body);
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    std::string piece = fmt::format("{}_{}", name, i);
    Stmt b = within(piece, cuts[i], cuts[i + 1], HI::substitute(name, var(piece), body));
    loops.push_back(
        HI::For::make(piece, int(cuts[i]), int(cuts[i + 1] - cuts[i]), type, Halide::DeviceAPI::None, b));
  }
  return HI::Block::make(loops);
}

Stmt vectorized_for(const std::string &name, HExpr extent, Stmt body, int lanes) {
  extent = HI::simplify(extent);
  std::vector<int64_t> cuts = split_points(name, 0, extent, body);
  if (cuts.empty() || lanes <= 1) return partitioned_for(name, 0, extent, body, HI::ForType::Serial);
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    std::string piece = cuts.size() > 2 ? fmt::format("{}_{}", name, i) : name;
    int64_t lo = cuts[i], n = cuts[i + 1] - cuts[i];
    if (lo % lanes != 0 || n % lanes != 0) {
      Stmt b = within(piece, lo, lo + n, HI::substitute(name, var(piece), body));
      loops.push_back(HI::For::make(piece, int(lo), int(n), HI::ForType::Serial, Halide::DeviceAPI::None, b));
      continue;
    }
    // piece = lo + outer * lanes + lane, the lane loop vectorized.
    std::string outer = piece + "_vo", lane = piece + "_vi";
    HExpr index = int(lo) + var(outer) * lanes + var(lane);
    Stmt b =
        HI::LetStmt::make(piece, index, within(piece, lo, lo + n, HI::substitute(name, var(piece), body)));
    b = HI::For::make(lane, 0, lanes, HI::ForType::Vectorized, Halide::DeviceAPI::None, b);
    loops.push_back(HI::For::make(outer, 0, int(n / lanes), HI::ForType::Serial, Halide::DeviceAPI::None, b));
  }
  return HI::Block::make(loops);
}

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
      return offset(t, indices);
    case ilir::TensorKind::State:
      return node * numel(t) + offset(t, indices);
    case ilir::TensorKind::Temp:
      if (temps_ == TempStorage::PerNode) return offset(t, indices);
      return (node - var("level_base")) * numel(t) + offset(t, indices);
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

// Halide's exp maps NaN to 0, so tanh and sigmoid built on it would turn a NaN into a number;
// a NaN input stays NaN. The test is on the bits: generated code is compiled with fast-math flags,
// under which LLVM may assume a float comparison never sees a NaN.
HExpr keep_nan(const HExpr &x, const HExpr &value) {
  HExpr bits = Halide::reinterpret(Halide::UInt(32), x) & HExpr(uint32_t(0x7fffffff));
  return HI::Select::make(bits > HExpr(uint32_t(0x7f800000)), x, value);
}

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

HExpr TensorAccess::size(const ilir::Expr &e) const { return ExprLowering(*this, nullptr, nullptr).lower(e); }

namespace {

std::optional<WeightTerm> match_weight_term(const TensorAccess &access, const ilir::Sum *sum,
                                            const std::string &row) {
  const auto *mul = sum->body.as<ilir::Binary>();
  if (!mul || mul->op != ilir::BinOp::Mul) return std::nullopt;
  for (auto [w, x] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
    const auto *load = w.as<ilir::Load>();
    if (!load || load->node.defined() || load->indices.size() != 2) continue;
    const auto *k = load->indices[1].as<ilir::Var>();
    if (!k || k->name != sum->var || mentions(load->indices[0], sum->var)) continue;
    // The row index must be row + c for a constant c.
    std::optional<int64_t> c = constant(access.size(load->indices[0]) - var(row));
    std::optional<int64_t> cols = constant(access.size(access.program().get(load->tensor).shape[1]));
    std::optional<int64_t> extent = constant(access.size(sum->extent));
    if (!c || !cols || !extent || *cols != *extent || mentions(x, row)) continue;
    if (ilir::contains(x, [](const ilir::Expr &e) { return e.as<ilir::Sum>() != nullptr; })) continue;
    return WeightTerm{sum, load->tensor, *c, *cols, x};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<WeightTerm>> match_weight_terms(const TensorAccess &access, const ilir::Expr &value,
                                                          const std::string &row, bool selects_allowed) {
  std::vector<WeightTerm> terms;
  std::vector<ilir::Expr> stack{value};
  while (!stack.empty()) {
    ilir::Expr e = stack.back();
    stack.pop_back();
    if (const auto *s = e.as<ilir::Sum>()) {
      std::optional<WeightTerm> term = match_weight_term(access, s, row);
      if (!term) return std::nullopt;
      terms.push_back(*term);
    } else if (const auto *b = e.as<ilir::Binary>()) {
      stack.insert(stack.end(), {b->a, b->b});
    } else if (const auto *u = e.as<ilir::Unary>()) {
      stack.push_back(u->a);
    } else if (const auto *sel = e.as<ilir::Select>()) {
      if (!selects_allowed) return std::nullopt;
      stack.insert(stack.end(), {sel->cond, sel->t, sel->f});
    }
  }
  if (terms.empty()) return std::nullopt;
  return terms;
}

Stmt lower_compute(const TensorAccess &access, const ilir::Compute &op, int lanes) {
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
    s = innermost ? vectorized_for(op.indices[d], access.size(t.shape[d]), s, lanes)
                  : partitioned_for(op.indices[d], 0, access.size(t.shape[d]), s, HI::ForType::Serial);
  }
  return s;
}

}  // namespace internal
}  // namespace grove::lowering
