#include "lowering/GemmKernel.h"

#include <fmt/format.h>

#include "ilir/Error.h"
#include "lowering/ExprLowering.h"
#include "lowering/LoopSplitting.h"

namespace grove::lowering::internal {

namespace {

// The epilogue once per range of panels between the plan's cuts of row j (concatenated biases,
// slices of gates), each copy simplified knowing its panels, so that no select with a branch
// outside its tensor survives. The cuts are multiples of the panel (plan::Gemm).
Stmt specialize_panels(const Stmt &epilogue, const plan::Gemm &gemm) {
  const std::vector<int64_t> &cuts = gemm.epilogue_cuts;
  const int64_t panel = gemm.panel;
  GROVE_CHECK(cuts.size() >= 2, "a GEMM without its epilogue's cuts");
  Stmt s;
  for (size_t i = cuts.size() - 1; i-- > 0;) {
    HI::Scope<HI::Interval> bounds;
    bounds.push("panel", HI::Interval(int(cuts[i] / panel), int(cuts[i + 1] / panel - 1)));
    Stmt piece = HI::simplify(epilogue, true, bounds);
    s = s.defined() ? HI::IfThenElse::make(var("panel") < int(cuts[i + 1] / panel), piece, s) : piece;
  }
  return s;
}

// One register block: the `nb` consecutive nodes from `first` on, every term accumulated over its
// k loop with the packed weight vector shared by the block's nodes, then the epilogue (the rest of
// the expression: biases, activations) applied to the accumulators and stored.
Stmt block_kernel(const TensorAccess &access, const ilir::Compute &op, const plan::Gemm &gemm,
                  const std::vector<PackedWeight> &packed, int nb, const HExpr &first) {
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  const int pr = int(gemm.panel);
  const std::string &j = op.indices[0];
  HExpr p = var("panel"), lane = var("lane");
  auto node = [&](int i) { return var(fmt::format("node{}", i)); };

  std::vector<Stmt> body;
  std::vector<std::string> accs;
  std::map<const ilir::ExprNode *, HExpr> results;
  for (size_t m = 0; m < gemm.terms.size(); m++) {
    const plan::WeightTerm &term = gemm.terms[m];
    GROVE_CHECK(term.packed >= 0 && term.packed < int(packed.size()), "a GEMM term of {} without its panels",
                op.tensor);
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
    // The packed layout is PackedWeight's: row `lane` of panel p, column k.
    const PackedWeight &pw = packed[term.packed];
    HExpr w = load(Halide::Float(32), pw.buffer, pw.offset<HExpr>(p, var(k), lane), true);
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
  body.push_back(specialize_panels(HI::Block::make(epilogue), gemm));
  Stmt s = HI::Block::make(body);
  for (const std::string &acc : accs)
    s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {nb * pr}, HI::const_true(), s);
  for (int i = nb; i-- > 0;) s = HI::LetStmt::make(fmt::format("node{}", i), first + i, s);
  return s;
}

}  // namespace

Stmt lower_gemms(const TensorAccess &access, const ilir::Case &c, const std::vector<plan::Gemm> &gemms,
                 const std::vector<PackedWeight> &packed, const GemmLoops &loops) {
  const int nb = loops.node_block;
  const HExpr &base = loops.first, &size = loops.count;
  HExpr full = size / nb * nb;

  // Per GEMM: its full blocks of nb nodes, then the level's remaining r < nb nodes as one block of
  // exactly r nodes (a kernel per r), so no block computes a node twice or branches per node.
  std::vector<Stmt> full_blocks, tail_blocks;
  std::vector<int> panels;
  for (const plan::Gemm &gemm : gemms) {
    const ilir::Compute &op = c.body[gemm.compute];
    panels.push_back(int(gemm.rows / gemm.panel));
    full_blocks.push_back(block_kernel(access, op, gemm, packed, nb, base + var("block") * nb));
    Stmt tail = HI::Evaluate::make(0);
    for (int r = nb - 1; r >= 1; r--)
      tail = HI::IfThenElse::make(size - full == r, block_kernel(access, op, gemm, packed, r, base + full),
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
  // The loop over `v` in [0, extent): a dispatch of its own, or a stage of the team (one chunk per
  // iteration).
  auto split = [&](const std::string &v, HExpr extent, Stmt body) {
    return loops.team ? loops.team->share(v, 0, std::move(extent), std::move(body))
                      : dispatch_for(v, 0, std::move(extent), loops.type, loops.threads, std::move(body));
  };
  // With persistence each thread sweeps every node block of a fixed set of panels (in a region,
  // the same panels at every level, so that their weights stay in that core's cache).
  if (loops.persist) {
    std::vector<Stmt> bodies;
    for (size_t g = 0; g < gemms.size(); g++)
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
