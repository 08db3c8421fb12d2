// The level plan as text (`grove dump --stage plan`): what each case runs, stage by stage, with the
// ILIR printer's expressions, then the entry function's contract. A GEMM's or matrix product's
// Compute is printed with each of its products replaced by an accumulator `acc<m>[n, i0]` (the
// term listed under it), so the line shows exactly what the epilogue computes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <map>
#include <string>
#include <vector>

#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"
#include "plan/LevelPlan.h"
#include "plan/Names.h"

namespace grove::plan {

namespace {

// The value with each term's Sum replaced by a load of accumulator `acc<m>` at the Compute's own
// indices.
class AccumulatorNames : public ilir::IRMutator {
 public:
  AccumulatorNames(const ilir::Compute &op, const std::vector<WeightTerm> &terms) {
    std::vector<ilir::Expr> at;
    for (const std::string &i : op.indices) at.push_back(ilir::Var::make(i, ilir::VarKind::Index));
    for (size_t m = 0; m < terms.size(); m++)
      accs_[terms[m].sum] = ilir::Load::make(fmt::format("acc{}", m), ilir::Var::node(), at);
  }

 protected:
  ilir::Expr visit_Sum(const ilir::Sum *op, const ilir::Expr &e) override {
    auto it = accs_.find(op);
    return it != accs_.end() ? it->second : ilir::IRMutator::visit_Sum(op, e);
  }

 private:
  std::map<const ilir::ExprNode *, ilir::Expr> accs_;
};

// As the ILIR printer writes a Compute's left side: `t[n, i0, i1]`.
std::string lhs(const ilir::Compute &op) {
  std::string s = op.tensor + "[n";
  for (const std::string &i : op.indices) s += ", " + i;
  return s + "]";
}

std::string compute_line(const ilir::Compute &op, const std::vector<WeightTerm> &terms) {
  return fmt::format("{} = {}", lhs(op), ilir::to_string(AccumulatorNames(op, terms).mutate(op.value)));
}

std::string extent(int64_t e) { return e < 0 ? "?" : std::to_string(e); }

// `acc<m> = sum(k < cols, W[row + offset, k] * x)`; a GEMM's terms name their packed weight.
void print_terms(std::string &s, const ilir::Compute &op, const std::vector<WeightTerm> &terms,
                 const std::string &indent) {
  for (size_t m = 0; m < terms.size(); m++) {
    const WeightTerm &t = terms[m];
    const std::string &k = t.sum->var;
    std::string row = t.row_offset == 0 ? op.indices[0] : fmt::format("{} + {}", op.indices[0], t.row_offset);
    std::string from = t.packed >= 0 ? fmt::format(", {} from {}", t.param, names::packed(t.packed)) : "";
    s += fmt::format("{}acc{} = sum({} < {}, {}[{}, {}] * {}){}\n", indent, m, k, t.cols, t.param, row, k,
                     ilir::to_string(t.x), from);
  }
}

void print_matmul(std::string &s, const LevelPlan &plan, ilir::CaseKind kind, const Matmul &mm,
                  const std::string &indent) {
  const ilir::Compute &op = plan.compute(kind, mm.compute);
  s += fmt::format("{}matmul {}: {} x {}, register blocks of {} x {}\n", indent, op.tensor, mm.rows, mm.cols,
                   mm.row_block, mm.col_block);
  s += fmt::format("{}  {}\n", indent, compute_line(op, mm.terms));
  print_terms(s, op, mm.terms, indent + "    ");
}

void print_stage(std::string &s, const LevelPlan &plan, ilir::CaseKind kind, const Stage &stage,
                 size_t number) {
  switch (stage.kind) {
    case StageKind::GemmGroup: {
      int64_t panels = 0;
      for (const Gemm &g : stage.gemms) panels += g.panels();
      s += fmt::format("  stage {}: GEMM group: {} GEMM{}, one loop over the nodes x {} panels\n", number,
                       stage.gemms.size(), stage.gemms.size() == 1 ? "" : "s", panels);
      for (const Gemm &g : stage.gemms) {
        const ilir::Compute &op = plan.compute(kind, g.compute);
        s += fmt::format("    gemm {}: {} rows in panels of {}{}, epilogue cuts {}\n", op.tensor, g.rows,
                         g.panel, g.aligned() ? "" : " (split at the cuts and rows inside a panel)",
                         fmt::join(g.epilogue_cuts, " "));
        s += fmt::format("      {}\n", compute_line(op, g.terms));
        print_terms(s, op, g.terms, "        ");
      }
      if (const std::optional<ColumnSteps> &cs = stage.columns) {
        s += fmt::format("    then by columns: {} blocks of {}, block j the panels j +", cs->blocks,
                         cs->width);
        for (size_t g = 0; g < stage.gemms.size(); g++)
          s += fmt::format(" {} {}", plan.compute(kind, stage.gemms[g].compute).tensor,
                           fmt::join(cs->panel_offsets[g], ","));
        s += fmt::format("; for each node, {} step{} at its columns\n", cs->steps.size(),
                         cs->steps.size() == 1 ? "" : "s");
        for (const NodeStep &step : cs->steps)
          s += fmt::format("      {}\n", compute_line(plan.compute(kind, step.compute), {}));
      }
      return;
    }
    case StageKind::Matmuls:
      s += fmt::format("  stage {}: matmuls: a matrix product per node, over (node, row block) pairs\n",
                       number);
      print_matmul(s, plan, kind, *stage.matmul, "    ");
      return;
    case StageKind::NodeLoop:
      s += fmt::format("  stage {}: node loop: for each node, {} step{}\n", number, stage.steps.size(),
                       stage.steps.size() == 1 ? "" : "s");
      for (const NodeStep &step : stage.steps) {
        if (step.matmul)
          print_matmul(s, plan, kind, *step.matmul, "    ");
        else
          s += fmt::format("    {}\n", compute_line(plan.compute(kind, step.compute), {}));
      }
      return;
  }
}

void print_case(std::string &s, const LevelPlan &plan, const CasePlan &c) {
  const char *name = c.kind == ilir::CaseKind::Leaf       ? "leaf"
                     : c.kind == ilir::CaseKind::Internal ? "internal"
                                                          : "hoisted (first, over every node of the call)";
  s += fmt::format("{}:{}\n", name, c.stages.empty() ? " nothing" : "");
  for (size_t i = 0; i < c.stages.size(); i++) print_stage(s, plan, c.kind, c.stages[i], i + 1);
}

std::string recursion_line(const Recursion &r) {
  return fmt::format(
      "recursion: {}, {}, {}, {}, unroll {}{}\n", r.order == Order::ByLevel ? "by level" : "node by node",
      r.specialized ? "specialized" : "one branching loop",
      r.parallel ? fmt::format("parallel on {} thread{}", r.threads, r.threads == 1 ? "" : "s") : "serial",
      r.team > 0 ? fmt::format("one region of a team of {}", r.team) : "no team", r.unroll,
      r.top_down ? ", top down (the highest level first, the leaves last)" : "");
}

std::string arg_kind(ModelAbi::ArgKind kind) {
  switch (kind) {
    case ModelAbi::ArgKind::Param:
      return "param";
    case ModelAbi::ArgKind::Packed:
      return "packed";
    case ModelAbi::ArgKind::State:
      return "state";
    case ModelAbi::ArgKind::LevelBegin:
    case ModelAbi::ArgKind::ChildBegin:
    case ModelAbi::ArgKind::Children:
    case ModelAbi::ArgKind::Token:
    case ModelAbi::ArgKind::TeamBegin:
    case ModelAbi::ArgKind::Parent:
    case ModelAbi::ArgKind::ChildSlot:
    case ModelAbi::ArgKind::ParentBegin:
      return "inspector";
    case ModelAbi::ArgKind::Saved:
      return "saved";
    case ModelAbi::ArgKind::Gradient:
      return "gradient";
    case ModelAbi::ArgKind::NumLevels:
      return "int32";
  }
  return "?";
}

// What an argument holds: a param's shape, a state's row, nothing for the rest.
std::string arg_detail(const ModelAbi &abi, const ModelAbi::Arg &a) {
  if (a.kind == ModelAbi::ArgKind::Param) {
    std::vector<std::string> shape;
    for (int64_t d : abi.params[size_t(a.index)].shape) shape.push_back(extent(d));
    return fmt::format(" [{}]", fmt::join(shape, ", "));
  }
  if (a.kind == ModelAbi::ArgKind::State)
    return fmt::format(" ({} floats per node{})", extent(abi.states[size_t(a.index)].row_elements),
                       a.index == abi.output ? ", the output" : "");
  if (a.kind == ModelAbi::ArgKind::Saved)
    return fmt::format(" ({} floats per node)", extent(abi.saved[size_t(a.index)].row_elements));
  if (a.kind == ModelAbi::ArgKind::Gradient) {
    std::vector<std::string> shape;
    for (int64_t d : abi.gradients[size_t(a.index)].shape) shape.push_back(extent(d));
    return fmt::format(" [{}]", fmt::join(shape, ", "));
  }
  return "";
}

std::string checks_line(const ModelAbi &abi) {
  std::string tokens = abi.vocab_size < 0 ? "tokens unchecked" : fmt::format("tokens < {}", abi.vocab_size);
  std::string nodes =
      abi.runs_dags() ? fmt::format("{} predecessor slot{} per node", abi.predecessor_slots,
                                    abi.predecessor_slots == 1 ? "" : "s")
      : abi.min_children == abi.max_children
          ? fmt::format("internal nodes have {} children", abi.min_children)
      : abi.max_children == INT32_MAX
          ? fmt::format("internal nodes have {} or more children", abi.min_children)
          : fmt::format("internal nodes have {} to {} children", abi.min_children, abi.max_children);
  return fmt::format("input checks: {}; {}\n", tokens, nodes);
}

}  // namespace

std::string to_string(const LevelPlan &plan) {
  const ModelAbi &abi = plan.abi;
  std::string s = fmt::format("plan {} over {}\n", abi.model, abi.structure);
  std::vector<std::string> sizes;
  for (const auto &[name, value] : plan.sizes) sizes.push_back(fmt::format("{}={}", name, value));
  if (!sizes.empty()) s += fmt::format("sizes {}\n", fmt::join(sizes, ", "));
  if (!plan.unbound_sizes.empty())
    s += fmt::format("unbound sizes {} (no GEMMs or matrix products)\n", fmt::join(plan.unbound_sizes, ", "));
  s += fmt::format("schedule {}\n", abi.schedule);
  s += recursion_line(plan.recursion);
  if (!plan.hoisted.stages.empty()) print_case(s, plan, plan.hoisted);
  if (plan.recursion.top_down) {
    print_case(s, plan, plan.internal);
    print_case(s, plan, plan.leaf);
  } else {
    print_case(s, plan, plan.leaf);
    print_case(s, plan, plan.internal);
  }
  if (!plan.program.reductions.empty()) s += "reductions (after the recursion, over the nodes of a case):\n";
  for (const ilir::Reduction &r : plan.program.reductions)
    s += fmt::format("  {}[{}] += sum(n in {}, {})\n", r.tensor, fmt::join(r.indices, ", "),
                     ilir::to_string(r.over), ilir::to_string(r.value));

  s += fmt::format("packed weights ({}):\n",
                   abi.hoist ? "filled once when weights are bound" : "filled per call");
  if (abi.packed.empty()) s += "  none\n";
  for (const PackedWeight &w : abi.packed)
    s += fmt::format("  {}: {} rows [{}, {}), {} cols, panels of {}, {} {}\n", w.buffer, w.param,
                     w.row_offset, w.row_offset + w.rows, w.cols, w.panel, w.size(),
                     w.element == PackedElement::BF16 ? "bf16 (column pairs)" : "floats");
  s += "entry arguments, in call order:\n";
  for (size_t i = 0; i < abi.args.size(); i++)
    s += fmt::format("  {} {} {}{}\n", i, arg_kind(abi.args[i].kind), abi.args[i].name,
                     arg_detail(abi, abi.args[i]));
  for (size_t i = 0; i < plan.unbound_sizes.size(); i++)
    s += fmt::format("  {} size {}\n", abi.args.size() + i, plan.unbound_sizes[i]);
  return s + checks_line(abi);
}

}  // namespace grove::plan
