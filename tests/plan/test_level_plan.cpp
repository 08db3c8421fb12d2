// The level plan (plan_levels): small models in the model language, each with the plan it must get —
// the stages of a case written as a one-line summary, and the fields that say how a GEMM, a matrix
// product, a packed weight or the entry function's arguments look — then a sweep over every model
// file and several schedules that checks the guarantees of LevelPlan.h's header comment on the plan
// itself (independently of plan_levels' own checks). The loops the plans become are checked against
// the old compiler's byte for byte by `make` golden dumps, and their numbers by the schedule sweep.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ilir/IRVisitor.h"
#include "plan/Differentiate.h"
#include "plan/LevelPlan.h"
#include "plan/Passes.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using Kind = ModelAbi::ArgKind;
using testing::model;
using testing::model_file;
using Sizes = std::map<std::string, int64_t>;

scheduling::Schedule schedule(const std::string &overrides = "") {
  scheduling::Schedule s;
  if (!overrides.empty()) s.apply(overrides, "test");
  return s;
}

// The plan lowering::lower makes: the ILIR passes it runs under `s` (lowering/cpu/Lower.cpp), then
// plan_levels.
LevelPlan planned(const ilir::Program &program, const Sizes &sizes, const scheduling::Schedule &s = {}) {
  ilir::Program p = program;
  for (const IlirPass &pass : ilir_passes(s, sizes)) p = pass.run(p);
  return plan_levels(p, sizes, s);
}

// A case's stages in one line: `gemms(x, y) | nodes(c, P*) | matmuls(P)`, each Compute by its
// tensor, `*` marking a node-loop step that runs as a matrix product; a group's column steps
// (plan::ColumnSteps) as `gemms(x, y) + columns(c)`.
std::string stages(const LevelPlan &plan, ilir::CaseKind kind) {
  std::string s;
  for (const Stage &stage : plan.plan_of(kind).stages) {
    std::vector<std::string> names;
    for (const Gemm &g : stage.gemms) names.push_back(plan.compute(kind, g.compute).tensor);
    if (stage.matmul) names.push_back(plan.compute(kind, stage.matmul->compute).tensor);
    for (const NodeStep &step : stage.steps)
      names.push_back(plan.compute(kind, step.compute).tensor + (step.matmul ? "*" : ""));
    const char *what = stage.kind == StageKind::GemmGroup ? "gemms"
                       : stage.kind == StageKind::Matmuls ? "matmuls"
                                                          : "nodes";
    s += (s.empty() ? "" : " | ") + std::string(what) + "(";
    for (size_t i = 0; i < names.size(); i++) s += (i ? ", " : "") + names[i];
    s += ")";
    if (stage.columns) {
      s += " + columns(";
      for (size_t i = 0; i < stage.columns->steps.size(); i++)
        s += (i ? ", " : "") + plan.compute(kind, stage.columns->steps[i].compute).tensor;
      s += ")";
    }
  }
  return s;
}

// The GEMM that computes `tensor` in `kind`, or a test failure.
const Gemm *gemm_of(const LevelPlan &plan, ilir::CaseKind kind, const std::string &tensor) {
  for (const Stage &stage : plan.plan_of(kind).stages)
    for (const Gemm &g : stage.gemms)
      if (plan.compute(kind, g.compute).tensor == tensor) return &g;
  ADD_FAILURE() << "no GEMM computes " << tensor << "\n" << to_string(plan);
  return nullptr;
}

const Sizes kSizes = {{"H", 64}, {"D", 32}, {"V", 100}};

TEST(LevelPlan, GemmsReadingEachOthersResultsGoInSeparateGroups) {
  // x and y read only the children: one group. h reads x inside its product and y in its epilogue,
  // so it waits for both; g reads neither and comes after h in program order, so it joins h's group.
  // (A GEMM that reads the children's h does not: plan_levels keeps it apart from the GEMM that
  // writes h, by name.)
  const LevelPlan plan = planned(model(R"(
model M
structure binary_tree
param emb [V, H]
param A [H, 2H]
param B [H, 2H]
param C [H, H]
param E [H, 2H]
state h [H]
state g [H]
leaf {
  h = emb[token]
  g = emb[token]
}
internal {
  s = [h[left]; h[right]]
  x = A @ s
  y = B @ s
  h = tanh(C @ x + y)
  g = E @ [g[left]; g[right]]
}
output h
)"),
                                 kSizes);
  EXPECT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(x, y) | gemms(h, g)") << to_string(plan);
  EXPECT_EQ(stages(plan, ilir::CaseKind::Leaf), "nodes(h, g)");
}

TEST(LevelPlan, PerNodeMatrixProductIsAMatmulsStage) {
  // P = W_M [P_l; P_r] is one matrix–matrix product per node (MV-RNN's matrix composition); p's
  // product with a child's matrix (not a param) stays a node-loop step.
  const LevelPlan plan = planned(model(R"(
model M
structure binary_tree
param emb [V, H]
param emb_mat [V, H, H]
param W_M [H, 2H]
state p [H]
state P [H, H]
leaf {
  p = emb[token]
  P = emb_mat[token]
}
internal {
  p = tanh(P[left] @ p[right])
  P = W_M @ [P[left]; P[right]]
}
output p
)"),
                                 kSizes);
  EXPECT_EQ(stages(plan, ilir::CaseKind::Internal), "nodes(p) | matmuls(P)") << to_string(plan);
  const Matmul &mm = *plan.internal.stages[1].matmul;
  EXPECT_EQ(mm.rows, 64);
  EXPECT_EQ(mm.cols, 64);
  EXPECT_EQ(mm.row_block, 8);
  EXPECT_EQ(mm.col_block, 32);  // two vectors of 16
  ASSERT_EQ(mm.terms.size(), 1u);
  EXPECT_EQ(mm.terms[0].param, "W_M");
  EXPECT_EQ(mm.terms[0].cols, 128);
  EXPECT_EQ(mm.terms[0].packed, -1);  // read in place: no packed panels
  EXPECT_TRUE(plan.abi.packed.empty());
}

// t = W s + [b1; b2], rows D + E, with the epilogue's bias switching tensors at row D.
LevelPlan concatenated_bias(int64_t d, int64_t e) {
  return planned(model(R"(
model M
structure binary_tree
param emb [V, D]
param W [D+E, 2D]
param b1 [D]
param b2 [E]
state h [D]
leaf {
  h = emb[token]
}
internal {
  t = W @ [h[left]; h[right]] + [b1; b2]
  h = tanh(t[0:D])
}
output h
)"),
                 {{"D", d}, {"E", e}, {"V", 100}});
}

TEST(LevelPlan, ConcatenatedBiasCutsTheEpilogueAtItsBoundary) {
  // The cut at D on a panel boundary: panels of 32, the epilogue specialized on [0, 64), [64, 128).
  LevelPlan plan = concatenated_bias(64, 64);
  // (In a team of two or more, h, read at [n, i0] only, runs by columns of t's panels.)
  ASSERT_EQ(stages(plan, ilir::CaseKind::Internal),
            plan.recursion.team >= 2 ? "gemms(t) + columns(h)" : "gemms(t) | nodes(h)")
      << to_string(plan);
  const Gemm *t = gemm_of(plan, ilir::CaseKind::Internal, "t");
  EXPECT_EQ(t->panel, 32);
  EXPECT_EQ(t->epilogue_cuts, (std::vector<int64_t>{0, 64, 128}));
  // At D = 16 the cut is inside a panel of 32 but on a vector of 16: panels of 16.
  plan = concatenated_bias(16, 48);
  ASSERT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(t) | nodes(h)") << to_string(plan);
  t = gemm_of(plan, ilir::CaseKind::Internal, "t");
  EXPECT_EQ(t->panel, 16);
  EXPECT_EQ(t->epilogue_cuts, (std::vector<int64_t>{0, 16, 64}));
  EXPECT_EQ(plan.abi.packed[size_t(t->terms[0].packed)].panel, 16);
  EXPECT_TRUE(t->aligned());
  // At D = 8 no panel holds one branch: panels of 32, the first split at the cut by the emitter.
  plan = concatenated_bias(8, 56);
  ASSERT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(t) | nodes(h)") << to_string(plan);
  t = gemm_of(plan, ilir::CaseKind::Internal, "t");
  EXPECT_EQ(t->panel, 32);
  EXPECT_EQ(t->epilogue_cuts, (std::vector<int64_t>{0, 8, 64}));
  EXPECT_FALSE(t->aligned());
  EXPECT_NE(to_string(plan).find("64 rows in panels of 32 (split at the cuts and rows inside a panel)"),
            std::string::npos)
      << to_string(plan);
}

// --- Column steps (plan/FuseColumns) ------------------------------------------------------------

// g = W s + b (2D rows), then h from g's two D-row slices read at `first` (g[first:D+first]) and D.
LevelPlan gates(int64_t d, const std::string &first, const std::string &overrides) {
  return planned(model(fmt::format(R"(
model G
structure binary_tree
param emb [V, D]
param W [2D, 2D]
param b [2D]
state h [D]
leaf {{
  h = emb[token]
}}
internal {{
  g = W @ [h[left]; h[right]] + b
  h = tanh(g[{0}:D+{0}]) * sigmoid(g[D:2D])
}}
output h
)",
                                   first)),
                 {{"D", d}, {"V", 100}}, schedule(overrides));
}

TEST(LevelPlan, ANodeLoopReadingItsGemmByColumnsJoinsTheGroup) {
  // h's column i0 reads g's rows i0 and i0 + D: with panels of 32 at D = 64, block j (columns
  // 32j ... 32j + 31) is g's panels j and j + 2.
  LevelPlan plan = gates(64, "0", "threads=2");
  ASSERT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(g) + columns(h)") << to_string(plan);
  const ColumnSteps &columns = *plan.internal.stages[0].columns;
  EXPECT_EQ(columns.width, 32);
  EXPECT_EQ(columns.blocks, 2);
  EXPECT_EQ(columns.panel_offsets, std::vector<std::vector<int64_t>>({{0, 2}}));
  EXPECT_NE(
      to_string(plan).find("then by columns: 2 blocks of 32, block j the panels j + g 0,2; for each node, 1 "
                           "step at its columns"),
      std::string::npos)
      << to_string(plan);
}

TEST(LevelPlan, NodeLoopsStayApartWhereColumnsCannotHoldTheirReads) {
  for (auto [d, first, overrides, why] :
       std::vector<std::tuple<int64_t, std::string, std::string, std::string>>{
           {64, "1", "threads=2", "a read at another column (g[n, i0 + 1])"},
           {40, "0", "threads=2", "an extent (40) that the panels (32) do not divide"},
           {64, "0", "threads=4", "fewer column blocks (2) than threads (4)"},
           {64, "0", "threads=1", "no team"},
           {64, "0", "threads=2,persist=off", "no persistence"},
           {64, "0", "threads=2,region=off", "no region"},
           {64, "0", "threads=2,unroll=2", "recursive unrolling"},
       }) {
    LevelPlan plan = gates(d, first, overrides);
    for (const Stage &stage : plan.internal.stages) EXPECT_FALSE(stage.columns.has_value()) << why;
    EXPECT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(g) | nodes(h)") << why << "\n"
                                                                             << to_string(plan);
  }
}

// Rows that are no multiple of a vector (H = 150, the TreeLSTM paper's size) still make a level
// GEMM: the schedule's panels, the last one partial, its packed weights zero-padded to a whole panel.
TEST(LevelPlan, AnyRowCountIsAGemmWithAPartialLastPanel) {
  LevelPlan plan = concatenated_bias(75, 75);  // t: 150 rows, cuts 0 75 150
  ASSERT_EQ(stages(plan, ilir::CaseKind::Internal), "gemms(t) | nodes(h)") << to_string(plan);
  const Gemm *t = gemm_of(plan, ilir::CaseKind::Internal, "t");
  EXPECT_EQ(t->rows, 150);
  EXPECT_EQ(t->panel, 32);
  EXPECT_EQ(t->panels(), 5);
  EXPECT_FALSE(t->aligned());
  const PackedWeight &w = plan.abi.packed[size_t(t->terms[0].packed)];
  EXPECT_EQ(w.rows, 150);
  EXPECT_EQ(w.size(), 5 * 32 * 150);  // 5 whole panels of 2D = 150 columns
  // Rows that fit in one vector take one panel of a vector: D = E = 3 gives 6 rows.
  plan = concatenated_bias(3, 3);
  t = gemm_of(plan, ilir::CaseKind::Internal, "t");
  ASSERT_NE(t, nullptr) << to_string(plan);
  EXPECT_EQ(t->panel, 16);
  EXPECT_EQ(t->panels(), 1);
}

TEST(LevelPlan, UnboundSizesGiveNoGemmsAndAreListed) {
  const LevelPlan plan = planned(model_file("treelstm"), {{"D", 32}});
  EXPECT_EQ(plan.unbound_sizes, (std::vector<std::string>{"V", "H"}));
  EXPECT_EQ(stages(plan, ilir::CaseKind::Leaf), "nodes(iou, c, h)");
  EXPECT_EQ(stages(plan, ilir::CaseKind::Internal), "nodes(iou, f, c, h)");
  EXPECT_TRUE(plan.abi.packed.empty());
  const std::string text = to_string(plan);
  EXPECT_NE(text.find("unbound sizes V, H"), std::string::npos) << text;
  EXPECT_NE(text.find("  13 size V\n  14 size H\n"), std::string::npos) << text;  // after num_levels
}

TEST(LevelPlan, BatchOffIsOneNodeLoopPerCaseWithMatrixProductSteps) {
  for (const char *overrides : {"batch=off", "specialize=off"}) {
    const LevelPlan plan = planned(model_file("mvrnn"), {{"H", 64}, {"V", 100}}, schedule(overrides));
    EXPECT_EQ(stages(plan, ilir::CaseKind::Leaf), "nodes(p, P)") << overrides;
    EXPECT_EQ(stages(plan, ilir::CaseKind::Internal), "nodes(_t0, _t1, p, P*)")
        << overrides << to_string(plan);
    EXPECT_TRUE(plan.abi.packed.empty()) << overrides;
    EXPECT_EQ(plan.recursion.order == Order::NodeByNode, std::string(overrides) == "batch=off");
    EXPECT_EQ(plan.recursion.specialized, std::string(overrides) == "batch=off");
  }
}

TEST(LevelPlan, PackedWeightsAreNumberedLeafInternalHoisted) {
  // LSTM: W_hh in the leaf (pk0) and internal (pk1) cases, the input product W_ih hoisted (pk2).
  const LevelPlan plan = planned(model_file("lstm"), kSizes);
  ASSERT_EQ(plan.abi.packed.size(), 3u) << to_string(plan);
  EXPECT_EQ(gemm_of(plan, ilir::CaseKind::Leaf, "gates")->terms[0].packed, 0);
  EXPECT_EQ(gemm_of(plan, ilir::CaseKind::Internal, "gates")->terms[0].packed, 1);
  EXPECT_EQ(gemm_of(plan, ilir::CaseKind::Hoisted, "_in0")->terms[0].packed, 2);
  EXPECT_EQ(plan.abi.packed[2].param, "W_ih");
  for (int i = 0; i < 3; i++) EXPECT_EQ(plan.abi.packed[size_t(i)].buffer, "pk" + std::to_string(i));

  // With epilogue fusion each gate's rows of W_iou are a packed weight of their own: c's terms read
  // rows [128, 192) (u) and [0, 64) (i), h's [64, 128) (o).
  const LevelPlan fused = planned(model_file("treelstm"), kSizes, schedule("epilogue=on"));
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (const char *t : {"c", "h"})
    for (const WeightTerm &term : gemm_of(fused, ilir::CaseKind::Leaf, t)->terms) {
      const PackedWeight &w = fused.abi.packed.at(size_t(term.packed));
      EXPECT_EQ(w.param, "W_iou");
      EXPECT_EQ(w.row_offset, term.row_offset);
      rows.emplace_back(w.row_offset, w.rows);
    }
  EXPECT_EQ(rows, (std::vector<std::pair<int64_t, int64_t>>{{128, 64}, {0, 64}, {64, 64}}))
      << to_string(fused);
}

std::vector<Kind> kinds(const ModelAbi &abi) {
  std::vector<Kind> k;
  for (const ModelAbi::Arg &a : abi.args) k.push_back(a.kind);
  return k;
}

TEST(LevelPlan, EntryArgumentsInCallOrder) {
  const std::vector<Kind> inspector = {Kind::LevelBegin, Kind::ChildBegin, Kind::Children, Kind::Token};
  std::vector<Kind> expected(6, Kind::Param);  // TreeLSTM: 6 params, 3 packed, 2 states
  expected.insert(expected.end(), 3, Kind::Packed);
  expected.insert(expected.end(), 2, Kind::State);
  expected.insert(expected.end(), inspector.begin(), inspector.end());
  std::vector<Kind> unrolled = expected;
  expected.push_back(Kind::NumLevels);
  unrolled.push_back(Kind::TeamBegin);  // the team's partition, with recursive unrolling only
  unrolled.push_back(Kind::NumLevels);

  const LevelPlan plan = planned(model_file("treelstm"), kSizes);
  EXPECT_EQ(kinds(plan.abi), expected);
  std::vector<std::string> names;
  for (const ModelAbi::Arg &a : plan.abi.args) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"p_emb", "p_W_iou", "p_U_iou", "p_b_iou", "p_U_f", "p_b_f",
                                             "pk0", "pk1", "pk2", "s_h", "s_c", "level_begin", "child_begin",
                                             "children", "token", "num_levels"}));
  EXPECT_EQ(plan.abi.states[size_t(plan.abi.output)].name, "h");

  const LevelPlan team = planned(model_file("treelstm"), kSizes, schedule("unroll=4,threads=4"));
  EXPECT_EQ(kinds(team.abi), unrolled);
  EXPECT_EQ(team.recursion.team, 4);
  EXPECT_EQ(team.recursion.unroll, 4);
  EXPECT_EQ(team.abi.unroll, 4);
  // A DAG model does not unroll: no team_begin.
  const LevelPlan dag = planned(model_file("dagrnn"), kSizes, schedule("unroll=4,threads=4"));
  EXPECT_EQ(dag.recursion.unroll, 1);
  EXPECT_EQ(kinds(dag.abi).back(), Kind::NumLevels);
  EXPECT_EQ(kinds(dag.abi)[kinds(dag.abi).size() - 2], Kind::Token);
}

TEST(LevelPlan, InputChecks) {
  EXPECT_EQ(planned(model_file("treelstm"), kSizes).abi.vocab_size, 100);
  const ModelAbi tree = planned(model_file("childsum_treelstm"), kSizes).abi;
  EXPECT_EQ(tree.min_children, 1);
  EXPECT_EQ(tree.max_children, INT32_MAX);
  EXPECT_EQ(tree.predecessor_slots, 0);
  EXPECT_EQ(planned(model_file("treelstm"), kSizes).abi.max_children, 2);
  EXPECT_EQ(planned(model_file("dagrnn"), kSizes).abi.predecessor_slots, 2);
  EXPECT_EQ(planned(model_file("lstm"), kSizes).abi.predecessor_slots, 1);
  // Unknown rows: unchecked.
  EXPECT_EQ(planned(model_file("treelstm"), {{"D", 32}}).abi.vocab_size, -1);

  // vocab_size is the rows of the table the leaf case indexes with its token: the smaller of two.
  const ilir::Program two_tables = model(R"(
model M
structure binary_tree
param emb [V, H]
param tag [T, H]
param W [H, 2H]
state h [H]
leaf {
  h = emb[token] + tag[token]
}
internal {
  h = tanh(W @ [h[left]; h[right]])
}
output h
)");
  EXPECT_EQ(planned(two_tables, {{"H", 16}, {"V", 100}, {"T", 7}}).abi.vocab_size, 7);
  EXPECT_EQ(planned(two_tables, {{"H", 16}, {"V", 5}, {"T", 7}}).abi.vocab_size, 5);

  // DAG and sequence models: hoisting moves the token's product into the hoisted case, which is
  // read too (else tokens would go unchecked and index past the table).
  for (const char *m : {"dagrnn", "lstm", "gru"})
    for (const char *hoist : {"hoist=on", "hoist=off"})
      EXPECT_EQ(planned(model_file(m), kSizes, schedule(hoist)).abi.vocab_size, 100) << m << " " << hoist;
}

// The guarantees of LevelPlan.h's header comment, checked on `plan` (ADD_FAILURE naming `what`).
void check_invariants(const LevelPlan &plan, const std::string &what) {
  const ModelAbi &abi = plan.abi;
  std::vector<int> packed_uses(abi.packed.size(), 0);
  for (ilir::CaseKind kind : {ilir::CaseKind::Leaf, ilir::CaseKind::Internal, ilir::CaseKind::Hoisted}) {
    const CasePlan &c = plan.plan_of(kind);
    const ilir::Case &body = plan.case_of(kind);
    EXPECT_EQ(c.kind, kind) << what;
    if (plan.recursion.order == Order::NodeByNode || !plan.recursion.specialized) {
      EXPECT_LE(c.stages.size(), 1u) << what;
      for (const Stage &s : c.stages) EXPECT_EQ(s.kind, StageKind::NodeLoop) << what;
    }
    std::vector<int> order;
    for (const Stage &s : c.stages) {
      EXPECT_EQ(s.gemms.empty(), s.kind != StageKind::GemmGroup) << what;
      EXPECT_EQ(s.matmul.has_value(), s.kind == StageKind::Matmuls) << what;
      EXPECT_EQ(s.steps.empty(), s.kind != StageKind::NodeLoop) << what;
      std::set<std::string> group;
      for (const Gemm &g : s.gemms) {
        const ilir::Compute &op = body.body.at(size_t(g.compute));
        for (const std::string &t : group)
          EXPECT_FALSE(ilir::contains(op.value,
                                      [&](const ilir::Expr &e) {
                                        const auto *l = e.as<ilir::Load>();
                                        return l && l->tensor == t;
                                      }))
              << what << ": " << op.tensor << " reads " << t << " of its own group";
        group.insert(op.tensor);
        ASSERT_GT(g.panel, 0) << what;
        EXPECT_EQ(g.rows % g.panel, 0) << what;
        ASSERT_GE(g.epilogue_cuts.size(), 2u) << what;
        EXPECT_EQ(g.epilogue_cuts.front(), 0) << what;
        EXPECT_EQ(g.epilogue_cuts.back(), g.rows) << what;
        for (size_t i = 0; i < g.epilogue_cuts.size(); i++) {
          EXPECT_EQ(g.epilogue_cuts[i] % g.panel, 0) << what << ": " << op.tensor;
          if (i > 0) {
            EXPECT_LT(g.epilogue_cuts[i - 1], g.epilogue_cuts[i]) << what;
          }
        }
        EXPECT_FALSE(g.terms.empty()) << what;
        for (const WeightTerm &t : g.terms) {
          ASSERT_GE(t.packed, 0) << what;
          ASSERT_LT(size_t(t.packed), abi.packed.size()) << what;
          packed_uses[size_t(t.packed)]++;
          const PackedWeight &w = abi.packed[size_t(t.packed)];
          EXPECT_EQ(w.param, t.param) << what;
          EXPECT_EQ(w.row_offset, t.row_offset) << what;
          EXPECT_EQ(w.rows, g.rows) << what;
          EXPECT_EQ(w.cols, t.cols) << what;
          EXPECT_EQ(w.panel, g.panel) << what;
        }
        order.push_back(g.compute);
      }
      if (s.columns) {
        // Block j's panels j + offset: every panel of the group exactly once over the blocks.
        ASSERT_EQ(s.columns->panel_offsets.size(), s.gemms.size()) << what;
        for (size_t g = 0; g < s.gemms.size(); g++) {
          std::vector<int> covered(size_t(s.gemms[g].panels()), 0);
          for (int64_t j = 0; j < s.columns->blocks; j++)
            for (int64_t o : s.columns->panel_offsets[g]) {
              ASSERT_LT(j + o, s.gemms[g].panels()) << what;
              covered[size_t(j + o)]++;
            }
          EXPECT_EQ(covered, std::vector<int>(covered.size(), 1)) << what;
          EXPECT_EQ(s.gemms[g].panel, s.columns->width) << what;
        }
        for (const NodeStep &st : s.columns->steps) {
          EXPECT_FALSE(st.matmul.has_value()) << what;
          order.push_back(st.compute);
        }
      }
      if (s.matmul) order.push_back(s.matmul->compute);
      for (const NodeStep &st : s.steps) {
        if (st.matmul) {
          EXPECT_EQ(st.matmul->compute, st.compute) << what;
        }
        order.push_back(st.compute);
      }
    }
    // Every Compute once, in program order (so after everything it reads).
    std::vector<int> all(body.body.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = int(i);
    EXPECT_EQ(order, all) << what;
  }
  // Each packed weight is read by exactly one GEMM term.
  for (size_t i = 0; i < packed_uses.size(); i++) EXPECT_EQ(packed_uses[i], 1) << what << ": pk" << i;
  // Every param, packed weight and state is an argument once, in that order, then the inspector's.
  std::vector<std::pair<Kind, int>> indexed;
  for (const ModelAbi::Arg &a : abi.args)
    if (a.kind == Kind::Param || a.kind == Kind::Packed || a.kind == Kind::State)
      indexed.emplace_back(a.kind, a.index);
  std::vector<std::pair<Kind, int>> expected;
  for (size_t i = 0; i < abi.params.size(); i++) expected.emplace_back(Kind::Param, int(i));
  for (size_t i = 0; i < abi.packed.size(); i++) expected.emplace_back(Kind::Packed, int(i));
  for (size_t i = 0; i < abi.states.size(); i++) expected.emplace_back(Kind::State, int(i));
  EXPECT_EQ(indexed, expected) << what;
  ASSERT_GE(abi.args.size(), expected.size() + 5) << what;
  EXPECT_EQ(abi.args.back().kind, Kind::NumLevels) << what;
  EXPECT_EQ(abi.args[expected.size()].kind, Kind::LevelBegin) << what;
  EXPECT_EQ(abi.args[abi.args.size() - 2].kind == Kind::TeamBegin, plan.recursion.unroll > 1) << what;
  ASSERT_GE(abi.output, 0) << what;
  EXPECT_EQ(abi.states[size_t(abi.output)].name, plan.program.output) << what;
}

// What the code reads in place, beside the panels: TreeLSTM's backward reads its transposed weights
// only through their panels under the default schedule, and in place without GEMMs; the embedding,
// read at a token by the leaves' weight gradient, always in place.
TEST(LevelPlan, ReadsInPlace) {
  const Derivative d = differentiate(model_file("treelstm"));
  const LevelPlan gemms = planned(d.backward, kSizes);
  ASSERT_FALSE(d.transposed.empty());
  for (const TransposedWeight &t : d.transposed) EXPECT_FALSE(reads_in_place(gemms, t.name)) << t.name;
  EXPECT_TRUE(reads_in_place(gemms, "emb"));
  EXPECT_FALSE(reads_in_place(gemms, "b_iou")) << "the backward needs no bias";
  EXPECT_FALSE(reads_in_place(gemms, "W_iou")) << "the forward's weight: the backward reads its transpose";
  const LevelPlan loops = planned(d.backward, kSizes, schedule("gemm=off"));
  for (const TransposedWeight &t : d.transposed) EXPECT_TRUE(reads_in_place(loops, t.name)) << t.name;
  // The forward: its GEMMs' weights through their panels, the biases in their epilogues, the
  // embedding as the leaves' operand.
  const LevelPlan forward = planned(model_file("treelstm"), kSizes);
  EXPECT_FALSE(reads_in_place(forward, "U_iou"));
  EXPECT_TRUE(reads_in_place(forward, "b_iou"));
  EXPECT_TRUE(reads_in_place(forward, "emb"));
}

TEST(LevelPlan, EveryModelAndScheduleKeepsThePlanGuarantees) {
  const std::vector<std::string> schedules = {"",
                                              "epilogue=on",
                                              "batch=off",
                                              "specialize=off",
                                              "gemm=off",
                                              "hoist=off,fuse=off",
                                              "panel=16,unroll=4,threads=4"};
  int models = 0;
  for (const auto &entry : std::filesystem::directory_iterator(std::string(GROVE_SOURCE_DIR) + "/models")) {
    if (entry.path().extension() != ".grove") continue;
    models++;
    const ilir::Program program = dsl::parse_model_file(entry.path().string());
    Sizes all, some;
    for (const std::string &v : program.size_vars) {
      all[v] = v == "H" ? 64 : v == "V" ? 100 : 32;
      if (v != "H") some[v] = all[v];
    }
    for (const Sizes *sizes : {&all, &some})
      for (const std::string &s : schedules) {
        const std::string what =
            entry.path().filename().string() + " [" + s + "]" + (sizes == &some ? " H unbound" : "");
        check_invariants(planned(program, *sizes, schedule(s)), what);
      }
    // Bound sizes and batching give the models' level GEMMs.
    EXPECT_FALSE(planned(program, all).abi.packed.empty()) << entry.path();
  }
  EXPECT_GE(models, 8);
}

}  // namespace
}  // namespace grove::plan
