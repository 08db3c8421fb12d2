#include "lowering/cpu/LowerToLoops.h"

#include <set>
#include <string>

#include "lowering/cpu/ExprLowering.h"
#include "lowering/cpu/GemmKernel.h"
#include "lowering/cpu/HalideIR.h"
#include "lowering/cpu/MatmulKernel.h"
#include "lowering/cpu/ReductionKernel.h"
#include "lowering/cpu/Team.h"
#include "lowering/cpu/TensorAccess.h"
#include "support/Error.h"

namespace grove::lowering {

using namespace internal;

namespace {

HExpr level_begin(HExpr l) { return int_load(names::kLevelBegin, std::move(l)); }

// Wraps `s` in the allocations of the temps that case `c` computes, except those in `skip`. Per
// level, a temp holds `level_rows` nodes.
Stmt allocate_temps(const TensorAccess &access, const ilir::Case &c, Stmt s, TempStorage storage,
                    const HExpr &level_rows = var("level_size"), const std::set<std::string> &skip = {}) {
  for (const ilir::Compute &op : c.body) {
    const ilir::TensorDecl &t = access.program().get(op.tensor);
    if (t.kind != ilir::TensorKind::Temp || skip.count(t.name)) continue;
    HExpr extent = access.numel(t);
    Halide::MemoryType where = Halide::MemoryType::Heap;
    if (storage == TempStorage::PerLevel)
      extent = extent * level_rows;
    else
      where = local_memory(extent);
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

// The entry function's arguments as Halide declares them: what each holds decides its type.
std::vector<HI::LoweredArgument> arguments(const plan::LevelPlan &plan) {
  using Kind = ModelAbi::ArgKind;
  std::vector<HI::LoweredArgument> args;
  auto scalar = [&](const std::string &name) {
    args.emplace_back(name, Halide::Argument::InputScalar, Halide::Int(32), 0, Halide::ArgumentEstimates{});
  };
  auto buffer = [&](const std::string &name, Halide::Type type) {
    args.emplace_back(name, Halide::Argument::InputBuffer, type, 1, Halide::ArgumentEstimates{});
  };
  for (const ModelAbi::Arg &a : plan.abi.args) {
    switch (a.kind) {
      case Kind::Packed:
        buffer(a.name, plan.abi.packed[size_t(a.index)].element == PackedElement::BF16 ? Halide::BFloat(16)
                                                                                       : Halide::Float(32));
        break;
      case Kind::Param:
      case Kind::State:
      case Kind::Saved:
      case Kind::Gradient:
        buffer(a.name, Halide::Float(32));
        break;
      case Kind::Parent:
      case Kind::ChildSlot:
      case Kind::ParentBegin:
      case Kind::LevelBegin:
      case Kind::ChildBegin:
      case Kind::Children:
      case Kind::Token:
      case Kind::TeamBegin:
        buffer(a.name, Halide::Int(32));
        break;
      case Kind::NumLevels:
        scalar(a.name);
        break;
    }
  }
  for (const std::string &v : plan.unbound_sizes) scalar(v);
  return args;
}

// Emits the plan's stages as loops, in the order its Recursion says.
class Lowerer {
 public:
  explicit Lowerer(const plan::LevelPlan &plan) : plan_(plan), recursion_(plan.recursion) {}

  LoopNest run() {
    LoopNest nest;
    if (recursion_.order == plan::Order::NodeByNode)
      nest.body = with_hoisted_nodes(node_at_a_time(), HI::ForType::Serial);
    else if (recursion_.team > 0)
      nest.body = batched_region(recursion_.team);
    else if (recursion_.specialized)
      nest.body = batched();
    else
      nest.body = with_hoisted_nodes(batched_unspecialized(), parallel());
    if (!plan_.program.reductions.empty()) nest.body = HI::Block::make(nest.body, reductions());
    nest.args = arguments(plan_);
    return nest;
  }

 private:
  HI::ForType parallel() const { return recursion_.parallel ? HI::ForType::Parallel : HI::ForType::Serial; }

  // for v in [min, min + extent), serially, in descending order when the program runs top down
  // (parents first: they have the larger ids and the higher levels).
  Stmt ordered_for(const std::string &v, const HExpr &min, const HExpr &extent, Stmt body) const {
    if (!recursion_.top_down)
      return HI::For::make(v, min, extent, HI::ForType::Serial, Halide::DeviceAPI::None, std::move(body));
    const std::string r = v + "_rev";
    body = HI::LetStmt::make(v, min + extent - 1 - var(r), std::move(body));
    return HI::For::make(r, 0, extent, HI::ForType::Serial, Halide::DeviceAPI::None, std::move(body));
  }

  // The leaves' work and the internal levels' (a loop over them), in the order the recursion runs.
  Stmt leaves_and_levels(Stmt leaves, Stmt internal) const {
    return recursion_.top_down ? HI::Block::make(std::move(internal), std::move(leaves))
                               : HI::Block::make(std::move(leaves), std::move(internal));
  }

  // A top-down program's reductions, after the recursion, each over the nodes of its case.
  Stmt reductions() const {
    TensorAccess access(plan_.program, plan_.sizes, TempStorage::PerNode);
    std::vector<Stmt> out;
    for (const ilir::Reduction &r : plan_.program.reductions) {
      HExpr leaves = level_begin(1), nodes = level_begin(var(names::kNumLevels));
      HExpr first = r.over == ilir::CaseKind::Leaf ? HExpr(0) : leaves;
      HExpr count = r.over == ilir::CaseKind::Leaf ? leaves : nodes - leaves;
      out.push_back(lower_reduction(access, r, first, count, plan_.schedule.vector,
                                    recursion_.parallel ? recursion_.threads : 1));
    }
    return HI::Block::make(out);
  }

  // One step of a node loop for the current node `n`.
  Stmt node_step(const TensorAccess &access, ilir::CaseKind kind, const plan::NodeStep &step,
                 const HExpr &first_column = HExpr(), int64_t columns = 0) const {
    const ilir::Compute &op = plan_.compute(kind, step.compute);
    if (step.matmul) return lower_matmul(access, op, *step.matmul);
    return lower_compute(access, op, plan_.schedule.vector, first_column, columns);
  }

  // One node's computation of a case planned node by node (node loops only), temps in per-node
  // buffers.
  Stmt node_body(ilir::CaseKind kind) const {
    TensorAccess access(plan_.program, plan_.sizes, TempStorage::PerNode);
    std::vector<Stmt> computes;
    for (const plan::Stage &stage : plan_.plan_of(kind).stages) {
      GROVE_CHECK(stage.kind == plan::StageKind::NodeLoop, "a case run node by node has a level stage");
      for (const plan::NodeStep &step : stage.steps) computes.push_back(node_step(access, kind, step));
    }
    return allocate_temps(access, plan_.case_of(kind), HI::Block::make(computes), TempStorage::PerNode);
  }

  Stmt branch_on_leaf() const {
    HExpr n = var("n");
    HExpr leaf = int_load(names::kChildBegin, n + 1) == int_load(names::kChildBegin, n);
    return HI::IfThenElse::make(leaf, node_body(ilir::CaseKind::Leaf), node_body(ilir::CaseKind::Internal));
  }

  // batch=off: one node at a time in id order, which is topological (children have smaller ids).
  Stmt node_at_a_time() const {
    HExpr leaves = level_begin(1), nodes = level_begin(var(names::kNumLevels));
    if (!recursion_.specialized) return ordered_for("n", 0, nodes, branch_on_leaf());
    return leaves_and_levels(ordered_for("n", 0, leaves, node_body(ilir::CaseKind::Leaf)),
                             ordered_for("n", leaves, nodes - leaves, node_body(ilir::CaseKind::Internal)));
  }

  // batch=on, specialize=off: levels in order, each level's nodes in parallel, one code for all.
  Stmt batched_unspecialized() const {
    Stmt nodes = dispatch_for("n", level_begin(var("level")),
                              level_begin(var("level") + 1) - level_begin(var("level")), parallel(),
                              recursion_.threads, branch_on_leaf());
    return ordered_for("level", 0, var(names::kNumLevels), nodes);
  }

  // A level's work: the case's stages in order, over the nodes [base, base + size) (the current
  // thread's share of them when unrolled). Temps hold a row per node from `level_base` on.
  Stmt level_body(ilir::CaseKind kind, HExpr base, HExpr size) const {
    const ilir::Case &c = plan_.case_of(kind);
    const HExpr level_base = var("level_base");
    TensorAccess access(plan_.program, plan_.sizes, TempStorage::PerLevel, level_base);
    // Unrolled, the thread runs the nodes it owns, serially, with no barrier.
    const HExpr first = unrolled_ ? var("team_base") : level_base;
    const HExpr count = unrolled_ ? var("team_size") : var("level_size");
    const HI::ForType type = unrolled_ ? HI::ForType::Serial : parallel();
    // The loop over `v` in [0, extent) or [first, first + count): a dispatch of its own, or a stage
    // of the team.
    auto split = [&](const std::string &v, const HExpr &min, const HExpr &extent, Stmt body,
                     int chunks_per_thread) {
      return team_ ? team_->share(v, min, extent, std::move(body), chunks_per_thread)
                   : dispatch_for(v, min, extent, type, recursion_.threads, std::move(body));
    };
    std::vector<Stmt> stages;
    for (const plan::Stage &stage : plan_.plan_of(kind).stages) {
      switch (stage.kind) {
        case plan::StageKind::GemmGroup: {
          GemmLoops loops{first,
                          count,
                          plan_.schedule.node_block,
                          plan_.schedule.persist,
                          type,
                          recursion_.threads,
                          team_,
                          plan_.abi.gemm_kernel,
                          nullptr,
                          {}};
          loops.lanes = plan_.schedule.vector;
          if (const std::optional<plan::ColumnSteps> &columns = stage.columns) {
            GROVE_CHECK(team_ && plan_.schedule.persist, "column steps outside a persistent team");
            loops.columns = &*columns;
            // The steps at columns [col, col + width) of the nodes [node, node + nodes).
            loops.column_steps = [&, kind](HExpr col, HExpr node, HExpr nodes) {
              std::vector<Stmt> steps;
              for (const plan::NodeStep &step : columns->steps)
                steps.push_back(node_step(access, kind, step, col, columns->width));
              return HI::For::make("n", std::move(node), std::move(nodes), HI::ForType::Serial,
                                   Halide::DeviceAPI::None, HI::Block::make(steps));
            };
          }
          stages.push_back(lower_gemms(access, c, stage.gemms, plan_.abi.packed, loops));
          break;
        }
        case plan::StageKind::Matmuls: {
          // Over (node, row block) pairs: a level of one node still keeps every thread busy.
          GROVE_CHECK(stage.matmul.has_value(), "a Matmuls stage without its matrix product");
          const plan::Matmul &mm = *stage.matmul;
          HExpr blocks = matmul_row_blocks(mm), chunk = var("matmul_chunk");
          Stmt body = HI::LetStmt::make("n", first + chunk / blocks,
                                        lower_matmul(access, c.body[mm.compute], mm, chunk % blocks));
          stages.push_back(split("matmul_chunk", 0, count * blocks, body, 0));
          break;
        }
        case plan::StageKind::NodeLoop: {
          std::vector<Stmt> steps;
          for (const plan::NodeStep &step : stage.steps) steps.push_back(node_step(access, kind, step));
          // In a region, about four chunks of nodes per thread: enough to even out, few claims.
          stages.push_back(split("n", first, count, HI::Block::make(steps), 4));
          break;
        }
      }
    }
    // In a region the temps are allocated once, outside it (batched_region).
    Stmt s = HI::Block::make(stages);
    if (unrolled_) s = with_team_range(s);
    if (!team_ && !unrolled_) s = allocate_temps(access, c, s, TempStorage::PerLevel);
    s = HI::LetStmt::make("level_size", size, s);
    return HI::LetStmt::make("level_base", base, s);
  }

  // The hoisted work over all nodes at once, as one level.
  Stmt hoisted_level() const {
    return level_body(ilir::CaseKind::Hoisted, 0, level_begin(var(names::kNumLevels)));
  }

  // batch=on, specialize=on: the hoisted work over all nodes at once, then the leaf level (one batch
  // of all leaves), then each internal level.
  Stmt batched() const {
    HExpr level = var("level");
    Stmt leaves = HI::LetStmt::make(
        "level", 0,
        level_body(ilir::CaseKind::Leaf, level_begin(level), level_begin(level + 1) - level_begin(level)));
    Stmt internal = ordered_for("level", 1, var(names::kNumLevels) - 1,
                                level_body(ilir::CaseKind::Internal, level_begin(level),
                                           level_begin(level + 1) - level_begin(level)));
    Stmt s = leaves_and_levels(leaves, internal);
    if (plan_.hoisted.stages.empty()) return s;
    return HI::Block::make(hoisted_level(), s);
  }

  // A team (Recursion::team threads): as batched(), but the leaf level and every internal level
  // run in one parallel region of `threads` threads (one dispatch per call instead of one per
  // stage): each stage is split among them and they meet at a barrier after it. With persistence
  // a thread owns the same GEMM panels at every level. The temps live outside the region, sized
  // for the widest level; the barrier's state is a zeroed stack array.
  //
  // Unrolled (Recursion::unroll = K > 1), a thread runs the nodes the inspector gave it
  // (team_begin, TeamPartition.h), every stage on them serially, and the team meets only after
  // every K-th level; `level_base` (which numbers the temps' rows) is then the block's first node.
  Stmt batched_region(int threads) {
    Team team{var("tid"), threads};
    const int unroll = recursion_.unroll;
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
    Stmt leaves = HI::LetStmt::make("level", 0, block_end(level_body(ilir::CaseKind::Leaf, base, size)));
    Stmt internal = ordered_for("level", 1, var(names::kNumLevels) - 1,
                                block_end(level_body(ilir::CaseKind::Internal, base, size)));
    team_ = nullptr;
    unrolled_ = false;
    Stmt s = HI::For::make("tid", 0, threads, HI::ForType::Parallel, Halide::DeviceAPI::None,
                           team.with_stage_counter(leaves_and_levels(leaves, internal)));
    TensorAccess access(plan_.program, plan_.sizes, TempStorage::PerLevel);
    const ilir::Case &leaf = plan_.case_of(ilir::CaseKind::Leaf);
    std::set<std::string> leaf_temps;
    for (const ilir::Compute &op : leaf.body) leaf_temps.insert(op.tensor);
    s = allocate_temps(access, leaf, s, TempStorage::PerLevel, var("max_level_size"));
    s = allocate_temps(access, plan_.case_of(ilir::CaseKind::Internal), s, TempStorage::PerLevel,
                       var("max_level_size"), leaf_temps);
    s = with_max_level_size(s, unroll);
    const int state_ints = Team::state_ints(threads);
    Stmt zero = HI::For::make("i", 0, state_ints, HI::ForType::Serial, Halide::DeviceAPI::None,
                              store(Team::kBarrierState, 0, var("i"), false));
    s = HI::Block::make(zero, s);
    s = HI::Allocate::make(Team::kBarrierState, Halide::Int(32), Halide::MemoryType::Stack, {state_ints},
                           HI::const_true(), s);
    if (plan_.hoisted.stages.empty()) return s;
    return HI::Block::make(hoisted_level(), s);
  }

  // let team_base, team_size = the current thread's nodes of the current level (unrolled).
  Stmt with_team_range(Stmt s) const {
    HExpr at = var("level") * (recursion_.team + 1) + var("tid");
    HExpr begin = int_load(names::kTeamBegin, at), end = int_load(names::kTeamBegin, at + 1);
    s = HI::LetStmt::make("team_size", end - var("team_base"), s);
    return HI::LetStmt::make("team_base", begin, s);
  }

  // The hoisted work one node at a time (no batching), before everything else.
  Stmt with_hoisted_nodes(Stmt s, HI::ForType type) const {
    if (plan_.hoisted.stages.empty()) return s;
    Stmt nodes = dispatch_for("n", 0, level_begin(var(names::kNumLevels)), type, recursion_.threads,
                              node_body(ilir::CaseKind::Hoisted));
    return HI::Block::make(nodes, s);
  }

  const plan::LevelPlan &plan_;
  const plan::Recursion &recursion_;
  const Team *team_ = nullptr;  // set while lowering the levels of a parallel region
  bool unrolled_ = false;       // set while lowering the levels of an unrolled region
};

}  // namespace

LoopNest lower_to_loops(const plan::LevelPlan &plan) { return Lowerer(plan).run(); }

}  // namespace grove::lowering
