#include "lowering/GemmKernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "ilir/Error.h"
#include "ilir/IRVisitor.h"

namespace grove::lowering::internal {

namespace {

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

// `body` as `param[j + c, k] * x` (either operand order), or nothing.
std::optional<GemmTerm> match_term(const TensorAccess &access, const ilir::Sum *sum, const std::string &j) {
  const auto *mul = sum->body.as<ilir::Binary>();
  if (!mul || mul->op != ilir::BinOp::Mul) return std::nullopt;
  for (auto [w, x] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
    const auto *load = w.as<ilir::Load>();
    if (!load || load->node.defined() || load->indices.size() != 2) continue;
    const ilir::TensorDecl &param = access.program().get(load->tensor);
    const auto *k = load->indices[1].as<ilir::Var>();
    if (!k || k->name != sum->var || mentions(load->indices[0], sum->var)) continue;
    // The row index must be j + c for a constant c.
    HExpr row = access.size(load->indices[0]);  // j stays a free variable
    std::optional<int64_t> c = constant(row - var(j));
    std::optional<int64_t> cols = constant(access.size(param.shape[1]));
    std::optional<int64_t> extent = constant(access.size(sum->extent));
    if (!c || !cols || !extent || *cols != *extent) continue;
    if (mentions(x, j) || ilir::contains(x, [](const ilir::Expr &e) { return e.as<ilir::Sum>() != nullptr; }))
      continue;
    return GemmTerm{sum, load->tensor, *c, *cols, x};
  }
  return std::nullopt;
}

// The epilogue once per range of panels between the split points of its conditions on row j
// (concatenated biases, slices of gates), each copy simplified knowing its panels, so that no
// select with a branch outside its tensor survives. match_gemm checks the split points are
// multiples of the panel.
Stmt specialize_panels(const Stmt &epilogue, const std::string &j, int panel, int panels) {
  std::vector<int64_t> cuts = split_points(j, 0, panel * panels, epilogue);
  Stmt s;
  for (size_t i = cuts.size() - 1; i-- > 0;) {
    HI::Scope<HI::Interval> bounds;
    bounds.push("panel", HI::Interval(int(cuts[i] / panel), int(cuts[i + 1] / panel - 1)));
    Stmt piece = HI::simplify(epilogue, true, bounds);
    s = s.defined() ? HI::IfThenElse::make(var("panel") < int(cuts[i + 1] / panel), piece, s) : piece;
  }
  return s;
}

}  // namespace

std::optional<GemmMatch> match_gemm(const TensorAccess &access, const ilir::Compute &op,
                                    const scheduling::Schedule &schedule) {
  if (!schedule.gemm || op.indices.size() != 1) return std::nullopt;
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  std::optional<int64_t> rows = constant(access.numel(t));
  if (!rows) return std::nullopt;
  GemmMatch match;
  match.rows = *rows;
  match.panel = *rows % schedule.panel == 0    ? schedule.panel
                : *rows % schedule.vector == 0 ? schedule.vector
                                               : 0;
  if (match.panel == 0) return std::nullopt;
  // Every outermost Sum must be a GEMM term (whose operand has no Sum inside).
  std::vector<ilir::Expr> stack{op.value};
  while (!stack.empty()) {
    ilir::Expr e = stack.back();
    stack.pop_back();
    if (const auto *s = e.as<ilir::Sum>()) {
      std::optional<GemmTerm> term = match_term(access, s, op.indices[0]);
      if (!term) return std::nullopt;
      match.terms.push_back(*term);
    } else if (const auto *b = e.as<ilir::Binary>()) {
      stack.insert(stack.end(), {b->a, b->b});
    } else if (const auto *u = e.as<ilir::Unary>()) {
      stack.push_back(u->a);
    } else if (const auto *sel = e.as<ilir::Select>()) {
      stack.insert(stack.end(), {sel->cond, sel->t, sel->f});
    } else if (const auto *l = e.as<ilir::Load>()) {
      stack.insert(stack.end(), l->indices.begin(), l->indices.end());
    }
  }
  if (match.terms.empty()) return std::nullopt;
  // The epilogue's split points on j (see specialize_panels) must fall on panel boundaries.
  std::map<const ilir::ExprNode *, HExpr> zero;
  for (const GemmTerm &t : match.terms) zero[t.sum] = HExpr(0.0f);
  Stmt epilogue = HI::Evaluate::make(ExprLowering(access, nullptr, nullptr, zero).lower(op.value));
  std::vector<int64_t> cuts = split_points(op.indices[0], 0, int(match.rows), epilogue);
  for (int64_t panel : {int64_t(match.panel), int64_t(schedule.vector)}) {
    if (match.rows % panel != 0) continue;
    if (std::all_of(cuts.begin(), cuts.end(), [&](int64_t c) { return c % panel == 0; })) {
      match.panel = panel;
      return match;
    }
  }
  return std::nullopt;
}

Stmt lower_gemm(const TensorAccess &access, const ilir::Compute &op, const GemmMatch &match,
                const scheduling::Schedule &schedule, std::vector<PackedWeight> &packed) {
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  const int nb = schedule.node_block, pr = int(match.panel);
  const std::string &j = op.indices[0];
  HExpr base = var("level_base"), size = var("level_size");
  HExpr p = var("panel"), b = var("block");
  auto node = [&](int i) { return var(fmt::format("node{}", i)); };
  auto lane = var("lane");

  // 1. Zero the accumulators: one register block of nb × pr per term.
  std::vector<Stmt> body;
  std::vector<std::string> accs;
  for (size_t m = 0; m < match.terms.size(); m++) {
    accs.push_back(fmt::format("gacc{}", m));
    for (int i = 0; i < nb; i++)
      body.push_back(HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                                   store(accs[m], 0.0f, i * pr + lane, false)));
  }
  // 2. For each term: accumulate over k, the packed weight vector shared by the block's nodes.
  std::map<const ilir::ExprNode *, HExpr> results;
  for (size_t m = 0; m < match.terms.size(); m++) {
    const GemmTerm &term = match.terms[m];
    PackedWeight pack{
        fmt::format("pk{}", packed.size()), term.param, term.row_offset, match.rows, term.cols, pr};
    packed.push_back(pack);
    const std::string &k = term.sum->var;
    HExpr x = ExprLowering(access, nullptr, nullptr).lower(term.x);
    HExpr w = var("w");
    std::vector<Stmt> fmas;
    for (int i = 0; i < nb; i++) {
      HExpr xi = HI::substitute("n", node(i), x);
      HExpr acc = load(Halide::Float(32), accs[m], i * pr + lane, false);
      fmas.push_back(store(accs[m], acc + w * xi, i * pr + lane, false));
    }
    HExpr wload = load(Halide::Float(32), pack.buffer, (p * int(term.cols) + var(k)) * pr + lane, true);
    Stmt lanes = HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                               HI::LetStmt::make("w", wload, HI::Block::make(fmas)));
    body.push_back(partitioned_for(k, 0, int(term.cols), lanes, HI::ForType::Serial));
    results[term.sum] = load(Halide::Float(32), accs[m], var("row") * pr + lane, false);
  }
  // 3. Epilogue: the rest of the expression (bias, activations) on the accumulators, then store.
  std::vector<Stmt> epilogue;
  for (int i = 0; i < nb; i++) {
    std::map<const ilir::ExprNode *, HExpr> replace;
    for (auto &[sum, value] : results) replace[sum] = HI::substitute("row", i, value);
    HExpr value = ExprLowering(access, nullptr, nullptr, replace).lower(op.value);
    value = HI::substitute("n", node(i), value);
    Stmt s = access.store(t, node(i), {var(j)}, value);
    s = HI::LetStmt::make(j, p * pr + lane, s);
    s = HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None, s);
    epilogue.push_back(HI::IfThenElse::make(b * nb + i < size, s));
  }
  body.push_back(specialize_panels(HI::Block::make(epilogue), j, pr, int(match.rows / pr)));
  Stmt s = HI::Block::make(body);
  for (const std::string &acc : accs)
    s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {nb * pr}, HI::const_true(), s);
  // The block's nodes; the last block repeats the level's last node where it runs out (its results
  // are computed but not stored), so the micro-kernel has no per-node branch.
  for (int i = nb; i-- > 0;)
    s = HI::LetStmt::make(fmt::format("node{}", i), Halide::min(base + b * nb + i, base + size - 1), s);

  // 4. Loop order: with persistence each thread sweeps all node blocks for a fixed set of panels.
  HI::ForType par = schedule.parallel ? HI::ForType::Parallel : HI::ForType::Serial;
  HExpr blocks = (size + (nb - 1)) / nb;
  int panels = int(match.rows / pr);
  if (schedule.persist) {
    s = HI::For::make("block", 0, blocks, HI::ForType::Serial, Halide::DeviceAPI::None, s);
    return HI::For::make("panel", 0, panels, par, Halide::DeviceAPI::None, s);
  }
  s = HI::For::make("panel", 0, panels, HI::ForType::Serial, Halide::DeviceAPI::None, s);
  return HI::For::make("block", 0, blocks, par, Halide::DeviceAPI::None, s);
}

}  // namespace grove::lowering::internal
