#include "plan/LevelPlan.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <set>

#include "ilir/Affine.h"
#include "ilir/IRVisitor.h"
#include "plan/FuseColumns.h"
#include "plan/Names.h"
#include "plan/WeightTerms.h"
#include "support/Error.h"

namespace grove::plan {

namespace {

std::vector<const ilir::ExprNode *> sums_of(const std::vector<WeightTerm> &terms) {
  std::vector<const ilir::ExprNode *> sums;
  for (const WeightTerm &t : terms) sums.push_back(t.sum);
  return sums;
}

// Whether `op` loads `tensor`.
bool reads(const ilir::Compute &op, const std::string &tensor) {
  return ilir::contains(op.value, [&](const ilir::Expr &e) {
    const auto *l = e.as<ilir::Load>();
    return l && l->tensor == tensor;
  });
}

// A shape's extents under `sizes`, -1 where a dimension is not constant (sizes left unbound).
std::vector<int64_t> shape_of(const ilir::TensorDecl &t, const std::map<std::string, int64_t> &sizes) {
  std::vector<int64_t> shape;
  for (const ilir::Expr &d : t.shape) shape.push_back(ilir::constant_value(d, sizes).value_or(-1));
  return shape;
}

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = d < 0 || n < 0 ? -1 : n * d;
  return n;
}

// The fewest rows of a table that a node indexes with its token (the vocabulary size), or -1. Every
// case is read: hoisting moves a DAG's or sequence's token products into the hoisted case.
int64_t vocab_size(const ilir::Program &p, const std::map<std::string, int64_t> &sizes) {
  int64_t rows = -1;
  for (const ilir::Case *c : {&p.hoisted, &p.leaf, &p.internal})
    for (const ilir::Compute &op : c->body)
      ilir::for_each_node(op.value, [&](const ilir::Expr &e) {
        const auto *load = e.as<ilir::Load>();
        if (!load || load->indices.empty()) return;
        const auto *call = load->indices[0].as<ilir::StructCall>();
        if (!call || call->fn != ilir::StructFn::Token) return;
        if (std::optional<int64_t> r = ilir::constant_value(p.get(load->tensor).shape[0], sizes))
          rows = rows < 0 ? *r : std::min(rows, *r);
      });
  return rows;
}

class Planner {
 public:
  Planner(const ilir::Program &p, const std::map<std::string, int64_t> &sizes, const scheduling::Schedule &s)
      : p_(p), sizes_(sizes), schedule_(s) {}

  LevelPlan run() {
    LevelPlan plan;
    plan.program = p_;
    plan.sizes = sizes_;
    plan.schedule = schedule_;
    for (const std::string &v : p_.size_vars)
      if (!sizes_.count(v)) plan.unbound_sizes.push_back(v);
    Recursion &r = plan.recursion;
    r.order = schedule_.batch ? Order::ByLevel : Order::NodeByNode;
    r.specialized = schedule_.specialize;
    r.parallel = schedule_.parallel;
    r.threads = schedule_.team_size();
    r.team = schedule_.uses_region() ? schedule_.team_size() : 0;
    r.top_down = p_.direction == ilir::Direction::TopDown;
    r.unroll = schedule_.uses_unroll(p_.structure) && !r.top_down ? schedule_.unroll : 1;
    // Level stages only where each case has code of its own; otherwise a node loop per case.
    const bool levels = schedule_.batch && schedule_.specialize;
    // 1. The stages of each case. The packed weights are numbered in this order: leaf,
    //    internal, hoisted, stage by stage.
    for (auto [kind, out] :
         {std::pair{ilir::CaseKind::Leaf, &plan.leaf}, std::pair{ilir::CaseKind::Internal, &plan.internal},
          std::pair{ilir::CaseKind::Hoisted, &plan.hoisted}}) {
      out->kind = kind;
      const ilir::Case &c = plan.case_of(kind);
      if (c.body.empty()) continue;
      out->stages = levels ? level_stages(c) : std::vector<Stage>{node_loop(c)};
      // In the team's region with persistence, a node loop after a GEMM group joins it by columns.
      if (levels && r.team > 0 && r.unroll == 1 && !r.top_down && schedule_.persist && schedule_.fuse &&
          kind != ilir::CaseKind::Hoisted)
        fuse_columns(out->stages, p_, c, sizes_, r.team);
    }
    const PackedElement element = schedule_.precision == scheduling::Schedule::Precision::Bf16
                                      ? PackedElement::BF16
                                      : PackedElement::F32;
    for (CasePlan *c : {&plan.leaf, &plan.internal, &plan.hoisted})
      number_packed(*c, element, plan.abi.packed);
    // 2. The entry function's contract.
    fill_abi(plan);
    check(plan);
    return plan;
  }

 private:
  NodeStep step(const ilir::Compute &op, int index) const {
    NodeStep s{index, match_matmul(p_, op, sizes_, schedule_)};
    if (s.matmul) s.matmul->compute = index;
    return s;
  }

  Stage node_loop(const ilir::Case &c) const {
    Stage s;
    for (size_t i = 0; i < c.body.size(); i++) s.steps.push_back(step(c.body[i], int(i)));
    return s;
  }

  // A level's work: each Compute in order, as a level GEMM where it is one, else a step of a loop
  // over the level's nodes that runs the consecutive non-GEMM Computes node by node. Consecutive
  // GEMMs that do not read each other's results form one group; a per-node matrix product is a
  // stage of its own (over node × row block pairs, so that a level of one node still splits).
  std::vector<Stage> level_stages(const ilir::Case &c) const {
    std::vector<Stage> stages;
    Stage gemms{StageKind::GemmGroup, {}, std::nullopt, {}, std::nullopt};
    Stage nodes{StageKind::NodeLoop, {}, std::nullopt, {}, std::nullopt};
    auto flush = [&](Stage &s) {
      if (s.gemms.empty() && s.steps.empty()) return;
      stages.push_back(s);
      s.gemms.clear();
      s.steps.clear();
    };
    for (size_t i = 0; i < c.body.size(); i++) {
      const ilir::Compute &op = c.body[i];
      std::optional<Gemm> gemm = match_gemm(p_, op, sizes_, schedule_);
      std::optional<Matmul> mm = gemm ? std::nullopt : match_matmul(p_, op, sizes_, schedule_);
      if (mm) {
        flush(gemms);
        flush(nodes);
        mm->compute = int(i);
        stages.push_back(Stage{StageKind::Matmuls, {}, mm, {}, std::nullopt});
      } else if (gemm) {
        flush(nodes);
        if (std::any_of(gemms.gemms.begin(), gemms.gemms.end(),
                        [&](const Gemm &g) { return reads(op, c.body[g.compute].tensor); }))
          flush(gemms);
        gemm->compute = int(i);
        gemms.gemms.push_back(*gemm);
      } else {
        flush(gemms);
        nodes.steps.push_back(NodeStep{int(i), std::nullopt});
      }
    }
    flush(gemms);
    flush(nodes);
    return stages;
  }

  static void number_packed(CasePlan &c, PackedElement element, std::vector<PackedWeight> &packed) {
    for (Stage &s : c.stages)
      for (Gemm &g : s.gemms)
        for (WeightTerm &t : g.terms) {
          t.packed = int(packed.size());
          packed.push_back(
              {names::packed(t.packed), t.param, t.row_offset, g.rows, t.cols, g.panel, element});
        }
  }

  void fill_abi(LevelPlan &plan) const {
    using Kind = ModelAbi::ArgKind;
    ModelAbi &abi = plan.abi;
    abi.model = p_.name;
    abi.structure = ilir::to_string(p_.structure);
    abi.schedule = schedule_.to_string();
    abi.sizes = sizes_;
    if (p_.structure == ilir::StructureKind::BinaryTree) {
      abi.min_children = abi.max_children = 2;
    } else {
      abi.min_children = 1;
      abi.max_children = INT32_MAX;
    }
    abi.predecessor_slots =
        ilir::has_predecessor_slots(p_.structure) ? ilir::predecessor_slots(p_.structure) : 0;
    abi.vocab_size = vocab_size(p_, sizes_);
    // The params and states of the program after its passes (hoisting may add states).
    for (const ilir::TensorDecl &t : p_.tensors) {
      if (t.kind == ilir::TensorKind::Param) abi.params.push_back({t.name, shape_of(t, sizes_)});
      if (t.kind == ilir::TensorKind::Gradient) abi.gradients.push_back({t.name, shape_of(t, sizes_)});
      if (t.kind == ilir::TensorKind::Saved) abi.saved.push_back({t.name, elements(shape_of(t, sizes_))});
      if (t.kind != ilir::TensorKind::State) continue;
      std::vector<int64_t> shape = shape_of(t, sizes_);
      if (t.name == p_.output) {
        abi.output = int(abi.states.size());
        abi.output_shape = shape;
      }
      abi.states.push_back({t.name, elements(shape)});
    }
    GROVE_CHECK(abi.output >= 0, "the output {} is not a state", p_.output);
    // The arguments in call order: params, packed weights, states, the inspector's arrays.
    for (size_t i = 0; i < abi.params.size(); i++)
      abi.args.push_back({Kind::Param, names::param(abi.params[i].name), int(i)});
    for (size_t i = 0; i < abi.packed.size(); i++)
      abi.args.push_back({Kind::Packed, abi.packed[i].buffer, int(i)});
    for (size_t i = 0; i < abi.states.size(); i++)
      abi.args.push_back({Kind::State, names::state(abi.states[i].name), int(i)});
    for (size_t i = 0; i < abi.saved.size(); i++)
      abi.args.push_back({Kind::Saved, names::saved(abi.saved[i].name), int(i)});
    for (size_t i = 0; i < abi.gradients.size(); i++)
      abi.args.push_back({Kind::Gradient, names::gradient(abi.gradients[i].name), int(i)});
    abi.args.push_back({Kind::LevelBegin, names::kLevelBegin, -1});
    abi.args.push_back({Kind::ChildBegin, names::kChildBegin, -1});
    abi.args.push_back({Kind::Children, names::kChildren, -1});
    abi.args.push_back({Kind::Token, names::kToken, -1});
    if (plan.recursion.unroll > 1) abi.args.push_back({Kind::TeamBegin, names::kTeamBegin, -1});
    if (plan.recursion.top_down) {
      if (ilir::has_predecessor_slots(p_.structure))
        abi.args.push_back({Kind::ParentBegin, names::kParentBegin, -1});
      abi.args.push_back({Kind::Parent, names::kParent, -1});
      abi.args.push_back({Kind::ChildSlot, names::kChildSlot, -1});
    }
    abi.args.push_back({Kind::NumLevels, names::kNumLevels, -1});
    abi.hoist = schedule_.hoist;
    if (plan.recursion.unroll > 1) {
      abi.unroll = plan.recursion.unroll;
      abi.unroll_team = plan.recursion.team;
    }
    abi.threads = schedule_.threads;
  }

  // The guarantees of LevelPlan.h's header; a failure is a bug in this file.
  static void check(const LevelPlan &plan) {
    for (const CasePlan *c : {&plan.leaf, &plan.internal, &plan.hoisted}) {
      const ilir::Case &body = plan.case_of(c->kind);
      std::vector<int> order;
      for (const Stage &s : c->stages) {
        std::set<std::string> group;
        for (const Gemm &g : s.gemms) {
          const ilir::Compute &op = body.body[size_t(g.compute)];
          for (const std::string &t : group)
            GROVE_CHECK(!reads(op, t), "GEMM {} reads {} of its own group", op.tensor, t);
          group.insert(op.tensor);
          GROVE_CHECK(g.epilogue_cuts.size() >= 2 && g.epilogue_cuts.front() == 0 &&
                          g.epilogue_cuts.back() == g.rows &&
                          std::is_sorted(g.epilogue_cuts.begin(), g.epilogue_cuts.end()),
                      "GEMM {}: epilogue cuts {} do not ascend from 0 to its {} rows", op.tensor,
                      fmt::join(g.epilogue_cuts, " "), g.rows);
          for (const WeightTerm &t : g.terms) {
            const PackedWeight &w = plan.abi.packed.at(size_t(t.packed));
            GROVE_CHECK(w.param == t.param && w.row_offset == t.row_offset && w.rows == g.rows,
                        "GEMM {}: term packed in {} with other rows", op.tensor, w.buffer);
          }
          order.push_back(g.compute);
        }
        if (s.columns) {
          GROVE_CHECK(s.kind == StageKind::GemmGroup && s.columns->panel_offsets.size() == s.gemms.size(),
                      "column steps without their GEMMs' panels");
          for (const NodeStep &st : s.columns->steps) order.push_back(st.compute);
        }
        if (s.matmul) order.push_back(s.matmul->compute);
        for (const NodeStep &st : s.steps) order.push_back(st.compute);
      }
      // Stages keep program order, so every Compute follows what it reads.
      for (size_t i = 0; i < order.size(); i++)
        GROVE_CHECK(order[i] == int(i), "case plan out of order at compute {}", i);
      GROVE_CHECK(order.size() == body.body.size(), "case plan covers {} of {} computes", order.size(),
                  body.body.size());
    }
  }

  const ilir::Program &p_;
  const std::map<std::string, int64_t> &sizes_;
  const scheduling::Schedule &schedule_;
};

}  // namespace

namespace {

// A GEMM's value with each packed term's Sum replaced by its operand x: what the code still reads in
// place (the epilogue and the operands), the weight read through its panels.
class PackedTermsOut : public ilir::IRMutator {
 public:
  explicit PackedTermsOut(const std::vector<WeightTerm> &terms) : terms_(terms) {}

 protected:
  ilir::Expr visit_Sum(const ilir::Sum *op, const ilir::Expr &e) override {
    for (const WeightTerm &t : terms_)
      if (t.sum == op && t.packed >= 0) return mutate(t.x);
    return IRMutator::visit_Sum(op, e);
  }

 private:
  const std::vector<WeightTerm> &terms_;
};

}  // namespace

bool reads_in_place(const LevelPlan &plan, const std::string &param) {
  auto loads = [&](const ilir::Expr &e) {
    return ilir::contains(e, [&](const ilir::Expr &x) {
      const auto *l = x.as<ilir::Load>();
      return l && l->tensor == param;
    });
  };
  for (const CasePlan *c : {&plan.leaf, &plan.internal, &plan.hoisted}) {
    const ilir::Case &body = plan.case_of(c->kind);
    for (const Stage &s : c->stages) {
      for (const Gemm &g : s.gemms)
        if (loads(PackedTermsOut(g.terms).mutate(body.body[size_t(g.compute)].value))) return true;
      if (s.matmul && loads(body.body[size_t(s.matmul->compute)].value)) return true;
      for (const NodeStep &step : s.steps)
        if (loads(body.body[size_t(step.compute)].value)) return true;
      if (s.columns)
        for (const NodeStep &step : s.columns->steps)
          if (loads(body.body[size_t(step.compute)].value)) return true;
    }
  }
  for (const ilir::Reduction &r : plan.program.reductions)
    if (loads(r.value)) return true;
  return false;
}

const CasePlan &LevelPlan::plan_of(ilir::CaseKind kind) const {
  return kind == ilir::CaseKind::Leaf ? leaf : kind == ilir::CaseKind::Internal ? internal : hoisted;
}

const ilir::Case &LevelPlan::case_of(ilir::CaseKind kind) const {
  return kind == ilir::CaseKind::Leaf       ? program.leaf
         : kind == ilir::CaseKind::Internal ? program.internal
                                            : program.hoisted;
}

std::optional<Gemm> match_gemm(const ilir::Program &program, const ilir::Compute &op,
                               const std::map<std::string, int64_t> &sizes,
                               const scheduling::Schedule &schedule) {
  if (!schedule.gemm || op.indices.size() != 1) return std::nullopt;
  const ilir::TensorDecl &t = program.get(op.tensor);
  std::optional<int64_t> rows = ilir::constant_value(t.shape[0], sizes);
  if (!rows) return std::nullopt;
  if (*rows < 1) return std::nullopt;
  Gemm gemm;
  gemm.rows = *rows;
  // Every outermost Sum must be a GEMM term (whose operand has no Sum inside).
  std::optional<std::vector<WeightTerm>> terms =
      match_weight_terms(program, op.value, op.indices[0], sizes, true);
  if (!terms) return std::nullopt;
  gemm.terms = std::move(*terms);
  // The epilogue's conditions on j (concatenated biases, slices of gates) change at the cuts.
  std::vector<int64_t> cuts =
      ilir::condition_cuts(op.value, op.indices[0], 0, gemm.rows, sizes, sums_of(gemm.terms));
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(gemm.rows);
  gemm.epilogue_cuts = std::move(cuts);
  // The panel: the schedule's, else one vector, where the rows and every cut fall on panel
  // boundaries (each panel whole, one branch of the epilogue); otherwise the schedule's panel with
  // a partial last panel and split epilogues (one vector's for rows that fit in one).
  for (int64_t panel : {int64_t(schedule.panel), int64_t(schedule.vector)}) {
    gemm.panel = panel;
    if (gemm.aligned()) return gemm;
  }
  gemm.panel = gemm.rows <= schedule.vector ? schedule.vector : schedule.panel;
  return gemm;
}

bool Gemm::aligned() const {
  return std::all_of(epilogue_cuts.begin(), epilogue_cuts.end(), [&](int64_t c) { return c % panel == 0; });
}

std::optional<Matmul> match_matmul(const ilir::Program &program, const ilir::Compute &op,
                                   const std::map<std::string, int64_t> &sizes,
                                   const scheduling::Schedule &schedule) {
  if (!schedule.gemm || op.indices.size() != 2) return std::nullopt;
  const ilir::TensorDecl &t = program.get(op.tensor);
  std::optional<int64_t> m = ilir::constant_value(t.shape[0], sizes),
                         n = ilir::constant_value(t.shape[1], sizes);
  if (!m || !n) return std::nullopt;
  Matmul mm;
  mm.rows = *m;
  mm.cols = *n;
  for (int rows : {8, 4, 2, 1})
    if (*m % rows == 0) {
      mm.row_block = rows;
      break;
    }
  // Two vectors of columns or one where the columns are a multiple of it; else one vector, the
  // last block narrower.
  mm.col_block = *n % (2 * schedule.vector) == 0 ? 2 * schedule.vector : schedule.vector;
  if (*m < 1 || *n < 1) return std::nullopt;
  // Sums that are all terms, and no selects outside them (the block is not split at
  // concatenation boundaries of i or j).
  std::optional<std::vector<WeightTerm>> terms =
      match_weight_terms(program, op.value, op.indices[0], sizes, false);
  if (!terms) return std::nullopt;
  mm.terms = std::move(*terms);
  return mm;
}

LevelPlan plan_levels(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                      const scheduling::Schedule &schedule) {
  return Planner(program, sizes, schedule).run();
}

}  // namespace grove::plan
