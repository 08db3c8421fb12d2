#include "lowering/GemmKernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "ilir/Error.h"
#include "ilir/IRVisitor.h"

namespace grove::lowering::internal {

namespace {

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
  std::optional<std::vector<WeightTerm>> terms = match_weight_terms(access, op.value, op.indices[0], true);
  if (!terms) return std::nullopt;
  match.terms = std::move(*terms);
  // The epilogue's split points on j (see specialize_panels) must fall on panel boundaries.
  std::map<const ilir::ExprNode *, HExpr> zero;
  for (const WeightTerm &t : match.terms) zero[t.sum] = HExpr(0.0f);
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

namespace {

// One register block: the `nb` consecutive nodes from `first` on, every term accumulated over its
// k loop with the packed weight vector shared by the block's nodes, then the epilogue (the rest of
// the expression: biases, activations) applied to the accumulators and stored.
Stmt block_kernel(const TensorAccess &access, const ilir::Compute &op, const GemmMatch &match,
                  const std::vector<PackedWeight> &packs, int nb, const HExpr &first) {
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  const int pr = int(match.panel);
  const std::string &j = op.indices[0];
  HExpr p = var("panel"), lane = var("lane");
  auto node = [&](int i) { return var(fmt::format("node{}", i)); };

  std::vector<Stmt> body;
  std::vector<std::string> accs;
  std::map<const ilir::ExprNode *, HExpr> results;
  for (size_t m = 0; m < match.terms.size(); m++) {
    const WeightTerm &term = match.terms[m];
    accs.push_back(fmt::format("gacc{}_{}", m, nb));
    for (int i = 0; i < nb; i++)
      body.push_back(HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                                   store(accs[m], 0.0f, i * pr + lane, false)));
    HExpr x = ExprLowering(access, nullptr, nullptr).lower(term.x);
    std::vector<Stmt> fmas;
    for (int i = 0; i < nb; i++) {
      HExpr acc = load(Halide::Float(32), accs[m], i * pr + lane, false);
      fmas.push_back(store(accs[m], acc + var("w") * HI::substitute("n", node(i), x), i * pr + lane, false));
    }
    const std::string &k = term.sum->var;
    HExpr w = load(Halide::Float(32), packs[m].buffer, (p * int(term.cols) + var(k)) * pr + lane, true);
    Stmt lanes = HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                               HI::LetStmt::make("w", w, HI::Block::make(fmas)));
    body.push_back(partitioned_for(k, 0, int(term.cols), lanes, HI::ForType::Serial));
    results[term.sum] = load(Halide::Float(32), accs[m], var("row") * pr + lane, false);
  }
  std::vector<Stmt> epilogue;
  for (int i = 0; i < nb; i++) {
    std::map<const ilir::ExprNode *, HExpr> replace;
    for (auto &[sum, value] : results) replace[sum] = HI::substitute("row", i, value);
    HExpr value =
        HI::substitute("n", node(i), ExprLowering(access, nullptr, nullptr, replace).lower(op.value));
    Stmt s = HI::LetStmt::make(j, p * pr + lane, access.store(t, node(i), {var(j)}, value));
    epilogue.push_back(HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None, s));
  }
  body.push_back(specialize_panels(HI::Block::make(epilogue), j, pr, int(match.rows / pr)));
  Stmt s = HI::Block::make(body);
  for (const std::string &acc : accs)
    s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {nb * pr}, HI::const_true(), s);
  for (int i = nb; i-- > 0;) s = HI::LetStmt::make(fmt::format("node{}", i), first + i, s);
  return s;
}

}  // namespace

Stmt lower_gemms(const TensorAccess &access, const std::vector<const ilir::Compute *> &ops,
                 const std::vector<GemmMatch> &matches, const scheduling::Schedule &schedule,
                 std::vector<PackedWeight> &packed, const Team *team, const HExpr &first,
                 const HExpr &count) {
  const int nb = schedule.node_block;
  HExpr base = first, size = count;
  HI::ForType par = schedule.parallel ? HI::ForType::Parallel : HI::ForType::Serial;
  HExpr full = size / nb * nb;

  // Per GEMM: its full blocks of nb nodes, then the level's remaining r < nb nodes as one block of
  // exactly r nodes (a kernel per r), so no block computes a node twice or branches per node.
  std::vector<Stmt> full_blocks, tail_blocks;
  std::vector<int> panels;
  for (size_t g = 0; g < ops.size(); g++) {
    std::vector<PackedWeight> packs;
    for (const WeightTerm &term : matches[g].terms) {
      packs.push_back({fmt::format("pk{}", packed.size()), term.param, term.row_offset, matches[g].rows,
                       term.cols, matches[g].panel});
      packed.push_back(packs.back());
    }
    panels.push_back(int(matches[g].rows / matches[g].panel));
    full_blocks.push_back(block_kernel(access, *ops[g], matches[g], packs, nb, base + var("block") * nb));
    Stmt tail = HI::Evaluate::make(0);
    for (int r = nb - 1; r >= 1; r--)
      tail = HI::IfThenElse::make(size - full == r,
                                  block_kernel(access, *ops[g], matches[g], packs, r, base + full),
                                  r == nb - 1 ? Stmt() : tail);
    tail_blocks.push_back(tail);
  }

  // The GEMMs of the group share one loop over their panels, one after another: panel p belongs
  // to the first GEMM whose panels reach past p.
  auto by_panel = [&](const std::vector<Stmt> &bodies) {
    Stmt s;
    int end = 0;
    std::vector<int> begins;
    for (int n : panels) begins.push_back(end), end += n;
    for (size_t g = bodies.size(); g-- > 0;) {
      Stmt b = HI::LetStmt::make("panel", var("group_panel") - begins[g], bodies[g]);
      s = s.defined() ? HI::IfThenElse::make(var("group_panel") < begins[g] + panels[g], b, s) : b;
    }
    return std::pair{s, end};
  };
  // The loop over `v` in [0, extent): parallel, or a stage of the team (one chunk per iteration).
  auto split = [&](const std::string &v, HExpr extent, Stmt body) {
    return team ? team->share(v, 0, std::move(extent), std::move(body))
                : HI::For::make(v, 0, std::move(extent), par, Halide::DeviceAPI::None, std::move(body));
  };
  // With persistence each thread sweeps every node block of a fixed set of panels (in a region,
  // the same panels at every level, so that their weights stay in that core's cache).
  if (schedule.persist) {
    std::vector<Stmt> bodies;
    for (size_t g = 0; g < ops.size(); g++)
      bodies.push_back(HI::Block::make(
          HI::For::make("block", 0, size / nb, HI::ForType::Serial, Halide::DeviceAPI::None, full_blocks[g]),
          tail_blocks[g]));
    auto [s, total] = by_panel(bodies);
    return split("group_panel", total, s);
  }
  auto [full_s, total] = by_panel(full_blocks);
  Stmt s = HI::For::make("group_panel", 0, total, HI::ForType::Serial, Halide::DeviceAPI::None, full_s);
  s = split("block", size / nb, s);
  auto [tail_s, unused] = by_panel(tail_blocks);
  return HI::Block::make(s, split("group_panel", total, tail_s));
}

}  // namespace grove::lowering::internal
