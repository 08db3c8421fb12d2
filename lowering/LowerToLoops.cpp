#include "lowering/LowerToLoops.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ilir/Error.h"
#include "ilir/IRVisitor.h"
#include "lowering/GemmKernel.h"
#include "lowering/LoweringInternal.h"
#include "lowering/MatmulKernel.h"

namespace grove::lowering {

using namespace internal;

namespace {

HExpr level_begin(HExpr l) { return int_load(names::kLevelBegin, std::move(l)); }

// Whether `op` loads `tensor`.
bool reads(const ilir::Compute &op, const std::string &tensor) {
  return ilir::contains(op.value, [&](const ilir::Expr &e) {
    const auto *l = e.as<ilir::Load>();
    return l && l->tensor == tensor;
  });
}

// Wraps `s` in the allocations of the temps that case `c` computes, except those in `skip`. Per
// level, a temp holds `level_rows` nodes.
Stmt allocate_temps(const TensorAccess &access, const ilir::Case &c, Stmt s, TempStorage storage,
                    const HExpr &level_rows = var("level_size"), const std::set<std::string> &skip = {}) {
  for (const ilir::Compute &op : c.body) {
    const ilir::TensorDecl &t = access.program().get(op.tensor);
    if (t.kind != ilir::TensorKind::Temp || skip.count(t.name)) continue;
    HExpr extent = access.numel(t);
    Halide::MemoryType where = Halide::MemoryType::Heap;
    if (storage == TempStorage::PerLevel) {
      extent = extent * level_rows;
    } else if (const auto *e = extent.as<HI::IntImm>(); e && e->value <= 16384) {
      where = Halide::MemoryType::Stack;
    }
    s = HI::Allocate::make(names::temp(t.name), Halide::Float(32), where, {extent}, HI::const_true(), s);
  }
  return s;
}

// let max_level_size = the number of nodes of the widest level in s, or with unrolling of the
// widest block of `unroll` levels (temps are shared by a block's levels then).
Stmt with_max_level_size(Stmt s, int unroll) {
  const char *widest = "widest_level";
  HExpr l = var("l");
  Stmt scan = HI::For::make("l", 0, var(names::kNumLevels), HI::ForType::Serial, Halide::DeviceAPI::None,
                            store(widest,
                                  Halide::max(load(Halide::Int(32), widest, 0, false),
                                              level_begin(l + 1) - level_begin(l - l % unroll)),
                                  0, false));
  s = HI::LetStmt::make("max_level_size", load(Halide::Int(32), widest, 0, false), s);
  s = HI::Block::make({store(widest, 0, 0, false), scan, s});
  return HI::Allocate::make(widest, Halide::Int(32), Halide::MemoryType::Stack, {1}, HI::const_true(), s);
}

class Lowerer {
 public:
  Lowerer(const ilir::Program &p, const std::map<std::string, int64_t> &sizes,
          const scheduling::Schedule &schedule)
      : p_(p), sizes_(sizes), schedule_(schedule) {}

  LoopNest run() {
    LoopNest nest;
    if (schedule_.uses_region())
      nest.body = batched_region(schedule_.team_size());
    else if (schedule_.batch && schedule_.specialize)
      nest.body = batched();
    else if (schedule_.batch)
      nest.body = with_hoisted_nodes(batched_unspecialized(), parallel());
    else
      nest.body = with_hoisted_nodes(node_at_a_time(), HI::ForType::Serial);
    nest.packed = packed_;
    nest.args = arguments();
    return nest;
  }

 private:
  HI::ForType parallel() const { return schedule_.parallel ? HI::ForType::Parallel : HI::ForType::Serial; }

  // One Compute for the current node: a register-blocked matrix product where it is one.
  Stmt node_compute(const TensorAccess &access, const ilir::Compute &op) const {
    if (std::optional<MatmulMatch> matmul = match_matmul(access, op, schedule_))
      return lower_matmul(access, op, *matmul);
    return lower_compute(access, op, schedule_.vector);
  }

  // One node's computation of case `c`, temps in per-node buffers.
  Stmt node_body(const ilir::Case &c) const {
    TensorAccess access(p_, sizes_, TempStorage::PerNode);
    std::vector<Stmt> computes;
    for (const ilir::Compute &op : c.body) computes.push_back(node_compute(access, op));
    return allocate_temps(access, c, HI::Block::make(computes), TempStorage::PerNode);
  }

  Stmt branch_on_leaf() const {
    HExpr n = var("n");
    HExpr leaf = int_load(names::kChildBegin, n + 1) == int_load(names::kChildBegin, n);
    return HI::IfThenElse::make(leaf, node_body(p_.leaf), node_body(p_.internal));
  }

  // batch=off: one node at a time in id order, which is topological (children have smaller ids).
  Stmt node_at_a_time() const {
    HExpr leaves = level_begin(1), nodes = level_begin(var(names::kNumLevels));
    if (!schedule_.specialize)
      return HI::For::make("n", 0, nodes, HI::ForType::Serial, Halide::DeviceAPI::None, branch_on_leaf());
    return HI::Block::make(
        HI::For::make("n", 0, leaves, HI::ForType::Serial, Halide::DeviceAPI::None, node_body(p_.leaf)),
        HI::For::make("n", leaves, nodes - leaves, HI::ForType::Serial, Halide::DeviceAPI::None,
                      node_body(p_.internal)));
  }

  // batch=on, specialize=off: levels in order, each level's nodes in parallel, one code for all.
  Stmt batched_unspecialized() const {
    Stmt nodes = HI::For::make("n", level_begin(var("level")),
                               level_begin(var("level") + 1) - level_begin(var("level")), parallel(),
                               Halide::DeviceAPI::None, branch_on_leaf());
    return HI::For::make("level", 0, var(names::kNumLevels), HI::ForType::Serial, Halide::DeviceAPI::None,
                         nodes);
  }

  // A level's work: each Compute in order, as a level GEMM where it is one, else in a parallel loop
  // over the level's nodes that runs the consecutive non-GEMM Computes node by node. Consecutive
  // GEMMs that do not read each other's results share one loop over their panels.
  Stmt level_body(const ilir::Case &c, HExpr base, HExpr size) {
    TensorAccess access(p_, sizes_, TempStorage::PerLevel);
    std::vector<Stmt> stages, per_node;
    std::vector<const ilir::Compute *> gemms;
    std::vector<GemmMatch> matches;
    // Unrolled, the thread runs the nodes it owns, serially, with no barrier.
    HExpr first = unrolled_ ? var("team_base") : var("level_base");
    HExpr count = unrolled_ ? var("team_size") : var("level_size");
    scheduling::Schedule serial = schedule_;
    serial.parallel = false;
    auto flush_nodes = [&] {
      if (per_node.empty()) return;
      Stmt body = HI::Block::make(per_node);
      // In a region, about four chunks of nodes per thread: enough to even out, few claims.
      stages.push_back(team_ ? team_->share("n", first, count, body, 4)
                             : HI::For::make("n", first, count, unrolled_ ? HI::ForType::Serial : parallel(),
                                             Halide::DeviceAPI::None, body));
      per_node.clear();
    };
    auto flush_gemms = [&] {
      if (gemms.empty()) return;
      stages.push_back(
          lower_gemms(access, gemms, matches, unrolled_ ? serial : schedule_, packed_, team_, first, count));
      gemms.clear();
      matches.clear();
    };
    // A level's per-node matrix products (MV-RNN's W_M @ [P_l; P_r]) as a stage of their own, over
    // (node, row block) pairs: a level of one node still keeps every thread busy.
    auto matmul_stage = [&](const ilir::Compute &op, const MatmulMatch &mm) {
      HExpr blocks = matmul_row_blocks(access, op, mm), chunk = var("matmul_chunk");
      Stmt body =
          HI::LetStmt::make("n", first + chunk / blocks, lower_matmul(access, op, mm, chunk % blocks));
      stages.push_back(team_ ? team_->share("matmul_chunk", 0, count * blocks, body)
                             : HI::For::make("matmul_chunk", 0, count * blocks,
                                             unrolled_ ? HI::ForType::Serial : parallel(),
                                             Halide::DeviceAPI::None, body));
    };
    for (const ilir::Compute &op : c.body) {
      std::optional<GemmMatch> gemm = match_gemm(access, op, schedule_);
      std::optional<MatmulMatch> mm = gemm ? std::nullopt : match_matmul(access, op, schedule_);
      if (mm) {
        flush_gemms();
        flush_nodes();
        matmul_stage(op, *mm);
      } else if (gemm) {
        flush_nodes();
        if (std::any_of(gemms.begin(), gemms.end(),
                        [&](const ilir::Compute *g) { return reads(op, g->tensor); }))
          flush_gemms();
        gemms.push_back(&op);
        matches.push_back(*gemm);
      } else {
        flush_gemms();
        per_node.push_back(node_compute(access, op));
      }
    }
    flush_gemms();
    flush_nodes();
    // In a region the temps are allocated once, outside it (batched_region).
    Stmt s = HI::Block::make(stages);
    if (unrolled_) s = with_team_range(s);
    if (!team_ && !unrolled_) s = allocate_temps(access, c, s, TempStorage::PerLevel);
    s = HI::LetStmt::make("level_size", size, s);
    return HI::LetStmt::make("level_base", base, s);
  }

  // batch=on, specialize=on: the hoisted work over all nodes at once, then the leaf level (one batch
  // of all leaves), then each internal level.
  Stmt batched() {
    HExpr level = var("level");
    Stmt leaves = HI::LetStmt::make(
        "level", 0, level_body(p_.leaf, level_begin(level), level_begin(level + 1) - level_begin(level)));
    Stmt internal = HI::For::make(
        "level", 1, var(names::kNumLevels) - 1, HI::ForType::Serial, Halide::DeviceAPI::None,
        level_body(p_.internal, level_begin(level), level_begin(level + 1) - level_begin(level)));
    Stmt s = HI::Block::make(leaves, internal);
    if (p_.hoisted.body.empty()) return s;
    return HI::Block::make(level_body(p_.hoisted, 0, level_begin(var(names::kNumLevels))), s);
  }

  // batch=on, specialize=on, region=on: as batched(), but the leaf level and every internal level
  // run in one parallel region of `threads` threads (one dispatch per call instead of one per
  // stage): each stage is split among them and they meet at a barrier after it. With persistence
  // a thread owns the same GEMM panels at every level. The temps live outside the region, sized
  // for the widest level; the barrier's state is a zeroed stack array.
  //
  // Unrolled (schedule `unroll` = K > 1), a thread runs the nodes the inspector gave it
  // (team_begin, TeamPartition.h), every stage on them serially, and the team meets only after
  // every K-th level; `level_base` (which numbers the temps' rows) is then the block's first node.
  Stmt batched_region(int threads) {
    Team team{var("tid"), threads};
    const int unroll = schedule_.uses_unroll(p_.structure) ? schedule_.unroll : 1;
    unrolled_ = unroll > 1;
    team_ = unrolled_ ? nullptr : &team;
    HExpr level = var("level");
    auto block_end = [&](Stmt s) {
      if (!unrolled_) return s;
      return HI::Block::make(s, HI::IfThenElse::make((level + 1) % unroll == 0, team.barrier()));
    };
    // Unrolled, the threads of a block run different levels at once, so the temps' rows are
    // numbered from the block's first node: distinct for all the block's nodes.
    HExpr base = level_begin(unrolled_ ? level - level % unroll : level);
    HExpr size = level_begin(level + 1) - level_begin(level);
    Stmt leaves = HI::LetStmt::make("level", 0, block_end(level_body(p_.leaf, base, size)));
    Stmt internal = HI::For::make("level", 1, var(names::kNumLevels) - 1, HI::ForType::Serial,
                                  Halide::DeviceAPI::None, block_end(level_body(p_.internal, base, size)));
    team_ = nullptr;
    unrolled_ = false;
    Stmt s = HI::For::make("tid", 0, threads, HI::ForType::Parallel, Halide::DeviceAPI::None,
                           team.with_stage_counter(HI::Block::make(leaves, internal)));
    TensorAccess access(p_, sizes_, TempStorage::PerLevel);
    std::set<std::string> leaf_temps;
    for (const ilir::Compute &op : p_.leaf.body) leaf_temps.insert(op.tensor);
    s = allocate_temps(access, p_.leaf, s, TempStorage::PerLevel, var("max_level_size"));
    s = allocate_temps(access, p_.internal, s, TempStorage::PerLevel, var("max_level_size"), leaf_temps);
    s = with_max_level_size(s, unroll);
    const int state_ints = Team::state_ints(threads);
    Stmt zero = HI::For::make("i", 0, state_ints, HI::ForType::Serial, Halide::DeviceAPI::None,
                              store(Team::kBarrierState, 0, var("i"), false));
    s = HI::Block::make(zero, s);
    s = HI::Allocate::make(Team::kBarrierState, Halide::Int(32), Halide::MemoryType::Stack, {state_ints},
                           HI::const_true(), s);
    if (p_.hoisted.body.empty()) return s;
    return HI::Block::make(level_body(p_.hoisted, 0, level_begin(var(names::kNumLevels))), s);
  }

  // let team_base, team_size = the current thread's nodes of the current level (unrolled).
  Stmt with_team_range(Stmt s) const {
    HExpr at = var("level") * (schedule_.team_size() + 1) + var("tid");
    HExpr begin = int_load(names::kTeamBegin, at), end = int_load(names::kTeamBegin, at + 1);
    s = HI::LetStmt::make("team_size", end - var("team_base"), s);
    return HI::LetStmt::make("team_base", begin, s);
  }

  // The hoisted work one node at a time (no batching), before everything else.
  Stmt with_hoisted_nodes(Stmt s, HI::ForType type) const {
    if (p_.hoisted.body.empty()) return s;
    Stmt nodes = HI::For::make("n", 0, level_begin(var(names::kNumLevels)), type, Halide::DeviceAPI::None,
                               node_body(p_.hoisted));
    return HI::Block::make(nodes, s);
  }

  std::vector<HI::LoweredArgument> arguments() const {
    std::vector<HI::LoweredArgument> args;
    auto buffer = [&](const std::string &name, Halide::Type t) {
      args.emplace_back(name, Halide::Argument::InputBuffer, t, 1, Halide::ArgumentEstimates{});
    };
    for (const ilir::TensorDecl &t : p_.tensors)
      if (t.kind == ilir::TensorKind::Param) buffer(names::param(t.name), Halide::Float(32));
    for (const PackedWeight &w : packed_) buffer(w.buffer, Halide::Float(32));
    for (const ilir::TensorDecl &t : p_.tensors)
      if (t.kind == ilir::TensorKind::State) buffer(names::state(t.name), Halide::Float(32));
    for (const char *a : {names::kLevelBegin, names::kChildBegin, names::kChildren, names::kToken})
      buffer(a, Halide::Int(32));
    if (schedule_.uses_unroll(p_.structure)) buffer(names::kTeamBegin, Halide::Int(32));
    args.emplace_back(names::kNumLevels, Halide::Argument::InputScalar, Halide::Int(32), 0,
                      Halide::ArgumentEstimates{});
    for (const std::string &v : p_.size_vars)
      if (!sizes_.count(v))
        args.emplace_back(v, Halide::Argument::InputScalar, Halide::Int(32), 0, Halide::ArgumentEstimates{});
    return args;
  }

  const ilir::Program &p_;
  const std::map<std::string, int64_t> &sizes_;
  const scheduling::Schedule &schedule_;
  std::vector<PackedWeight> packed_;
  const Team *team_ = nullptr;  // set while lowering the levels of a parallel region
  bool unrolled_ = false;       // set while lowering the levels of an unrolled region
};

}  // namespace

LoopNest lower_to_loops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                        const scheduling::Schedule &schedule) {
  return Lowerer(program, sizes, schedule).run();
}

}  // namespace grove::lowering
