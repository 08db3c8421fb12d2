#include "frontend/dsl/Check.h"

#include <map>
#include <regex>
#include <set>

#include "frontend/dsl/Messages.h"

namespace grove::dsl {
namespace {

const char *case_name(const CaseAst &kase) {
  if (kase.node) return "node";
  return kase.kind == ilir::CaseKind::Leaf ? "leaf" : "internal";
}

// How a model of `structure` reads the states its node depends on, for messages.
std::string how_to_read(ilir::StructureKind structure, const std::string &state) {
  switch (structure) {
    case ilir::StructureKind::BinaryTree:
      return fmt::format("{0}[left] and {0}[right]", state);
    case ilir::StructureKind::Tree:
      return fmt::format("sum(k in children) {}[k]", state);
    case ilir::StructureKind::Dag:
      return fmt::format("its predecessors' states as {0}[pred0] and {0}[pred1]", state);
    case ilir::StructureKind::Sequence:
      return fmt::format("the previous token's state as {}[prev]", state);
  }
  return "?";
}

const char *kind_name(NameKind kind) {
  switch (kind) {
    case NameKind::Param:
      return "param";
    case NameKind::State:
      return "state";
    case NameKind::Temp:
      return "temporary";
    case NameKind::Unresolved:
      break;
  }
  return "name";
}

// ILIR names its index variables i0, i1, ..., its reductions k0, ... and the node n; a size
// variable of the same name would be captured by them.
bool is_reserved_size_name(const std::string &name) {
  static const std::regex reserved("n|[ik][0-9]+");
  return std::regex_match(name, reserved);
}

// Checks one model, in these steps:
//   1. every required section is present;
//   2. declarations: unique names, size variables collected in order of first appearance, every
//      dimension provably >= 1, states are vectors or matrices, every size variable is bound by a
//      param, no tensor is named like a size variable, the output is a state;
//   3. each case, statement by statement: the value's names resolve to params, states or earlier
//      temps, structure access fits the structure kind and the case, shapes agree; then the target
//      is defined (once; a state with its declared shape); at the end every state is assigned.
class Checker {
 public:
  Checker(const SourceFile &source, ModelAst &model) : source_(source), model_(model) {}

  void run() {
    check_sections();
    check_declarations();
    check_output();
    if (model_.node) {
      check_case(*model_.node);
    } else {
      check_case(*model_.leaf);
      check_case(*model_.internal);
    }
  }

 private:
  struct Temp {
    Shape shape;
    Loc loc;
  };
  // What is visible while checking one case.
  struct Scope {
    const CaseAst *kase;
    std::map<std::string, Temp> temps;    // assigned so far
    std::map<std::string, Loc> assigned;  // states and temps assigned so far
    std::set<std::string> later_targets;  // names assigned somewhere in the case
    const ExprAst *sum = nullptr;         // the enclosing sum(k in children), if any
  };

  void check_sections() {
    if (!model_.structure)
      source_.error(model_.end_loc, msg::kMissing, "structure",
                    "'structure binary_tree', 'structure tree', 'structure dag' or 'structure sequence'");
    ilir::StructureKind structure = *model_.structure;
    const char *structure_name = ilir::to_string(structure);
    if (ilir::has_predecessor_slots(structure)) {
      // A DAG or sequence node is not a leaf or an internal node: it has one case.
      for (const std::optional<CaseAst> *kase : {&model_.leaf, &model_.internal}) {
        if (*kase) {
          source_.error((*kase)->loc, msg::kTreeCaseInDag, structure_name, case_name(**kase), structure_name,
                        how_to_read(structure, "h"));
        }
      }
      if (!model_.node) source_.error(model_.end_loc, msg::kMissing, "node", "'node { ... }'");
    } else if (model_.node) {
      source_.error(model_.node->loc, msg::kNodeCaseInTree, structure_name);
    }
    if (!model_.output)
      source_.error(model_.end_loc, msg::kMissing, "output", "'output NAME' naming a state");
    if (model_.node) return;
    if (!model_.leaf) source_.error(model_.end_loc, msg::kMissing, "leaf", "'leaf { ... }'");
    if (!model_.internal) source_.error(model_.end_loc, msg::kMissing, "internal", "'internal { ... }'");
  }

  void check_declarations() {
    std::map<std::string, Loc> first_use;  // size variable → first place it appears
    std::set<std::string> bound;           // size variables appearing in a param
    for (TensorDeclAst &decl : model_.tensors) {
      auto [it, inserted] = tensors_.emplace(decl.name, &decl);
      if (!inserted) source_.error(decl.loc, msg::kDuplicate, decl.name, it->second->loc.line);
      for (const SizeAst &dim : decl.dims) {
        for (const auto &[name, loc] : dim.vars) {
          if (is_reserved_size_name(name)) source_.error(loc, msg::kReservedSize, name);
          if (first_use.emplace(name, loc).second) model_.size_vars.push_back(name);
          if (decl.kind == ilir::TensorKind::Param) bound.insert(name);
        }
      }
      for (size_t i = 0; i < decl.dims.size(); ++i) {
        const SizeAst &dim = decl.dims[i];
        if (!dim.value.provably_positive())
          source_.error(dim.loc, msg::kDimNotPositive, i + 1, decl.name, dim.value.to_string());
        decl.shape.push_back(dim.value);
      }
      if (decl.kind == ilir::TensorKind::State && decl.dims.size() > 2) {
        source_.error(decl.loc, msg::kStateRank, decl.name, decl.dims.size());
      }
    }
    for (const std::string &name : model_.size_vars) {
      if (!bound.count(name)) source_.error(first_use.at(name), msg::kSizeUnbound, name);
      auto tensor = tensors_.find(name);
      if (tensor != tensors_.end()) source_.error(tensor->second->loc, msg::kNameIsSize, name);
    }
  }

  std::string state_list() const {
    std::string list;
    for (const TensorDeclAst &decl : model_.tensors) {
      if (decl.kind != ilir::TensorKind::State) continue;
      list += (list.empty() ? "" : ", ") + decl.name;
    }
    return list.empty() ? "(none declared)" : list;
  }

  void check_output() {
    auto it = tensors_.find(*model_.output);
    if (it == tensors_.end())
      source_.error(model_.output_loc, msg::kOutputUnknown, *model_.output, state_list());
    if (it->second->kind != ilir::TensorKind::State) {
      source_.error(model_.output_loc, msg::kOutputNotState, *model_.output, state_list());
    }
  }

  const TensorDeclAst *find_tensor(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : it->second;
  }
  bool is_size_var(const std::string &name) const {
    for (const std::string &size : model_.size_vars) {
      if (size == name) return true;
    }
    return false;
  }

  void check_case(CaseAst &kase) {
    Scope scope{&kase, {}, {}, {}, nullptr};
    for (const StatementAst &statement : kase.body) scope.later_targets.insert(statement.target);
    for (StatementAst &statement : kase.body) {
      check_expr(*statement.value, scope);
      define(statement, scope);
    }
    for (const TensorDeclAst &decl : model_.tensors) {
      if (decl.kind == ilir::TensorKind::State && !scope.assigned.count(decl.name)) {
        source_.error(kase.loc, msg::kStateNotAssigned, case_name(kase), decl.name);
      }
    }
  }

  void define(StatementAst &statement, Scope &scope) {
    const std::string &name = statement.target;
    const Shape &shape = statement.value->shape;
    auto previous = scope.assigned.find(name);
    if (previous != scope.assigned.end()) {
      source_.error(statement.loc, msg::kAssignedTwice, name, case_name(*scope.kase), previous->second.line);
    }
    const TensorDeclAst *decl = find_tensor(name);
    if (decl && decl->kind == ilir::TensorKind::Param) source_.error(statement.loc, msg::kAssignParam, name);
    if (is_size_var(name)) source_.error(statement.loc, msg::kAssignSize, name);
    if (shape.empty()) source_.error(statement.loc, msg::kAssignScalar, name);
    if (decl) {
      if (decl->shape != shape) {
        source_.error(statement.loc, msg::kStateShape, name, to_string(decl->shape), to_string(shape));
      }
      statement.resolved = NameKind::State;
    } else {
      scope.temps[name] = Temp{shape, statement.loc};
      statement.resolved = NameKind::Temp;
    }
    scope.assigned[name] = statement.loc;
  }

  void check_expr(ExprAst &e, Scope &scope) {
    switch (e.kind) {
      case ExprAstKind::Number:
        e.shape = {};
        return;
      case ExprAstKind::Name:
        check_name(e, scope);
        return;
      case ExprAstKind::Neg:
      case ExprAstKind::Call:
        check_expr(*e.operands[0], scope);
        e.shape = e.operands[0]->shape;
        return;
      case ExprAstKind::Binary:
        check_binary(e, scope);
        return;
      case ExprAstKind::Concat:
        check_concat(e, scope);
        return;
      case ExprAstKind::Slice:
        check_slice(e, scope);
        return;
      case ExprAstKind::Token:
        check_token(e, scope);
        return;
      case ExprAstKind::Child:
        check_child(e, scope);
        return;
      case ExprAstKind::SumChildren:
        check_sum(e, scope);
        return;
    }
  }

  void check_name(ExprAst &e, Scope &scope) {
    auto temp = scope.temps.find(e.name);
    if (temp != scope.temps.end()) {
      e.resolved = NameKind::Temp;
      e.shape = temp->second.shape;
      return;
    }
    const char *kase = case_name(*scope.kase);
    if (const TensorDeclAst *decl = find_tensor(e.name)) {
      if (decl->kind == ilir::TensorKind::State && !scope.assigned.count(e.name)) {
        if (scope.kase->node) {
          source_.error(e.loc, msg::kStateBeforeDefSlots, e.name, how_to_read(*model_.structure, e.name));
        }
        if (scope.kase->kind == ilir::CaseKind::Leaf) source_.error(e.loc, msg::kUseBeforeDef, e.name, kase);
        if (model_.structure == ilir::StructureKind::Tree) {
          source_.error(e.loc, msg::kStateBeforeDefTree, e.name, kase, e.name);
        }
        source_.error(e.loc, msg::kStateBeforeDef, e.name, kase, e.name, e.name);
      }
      e.resolved = decl->kind == ilir::TensorKind::Param ? NameKind::Param : NameKind::State;
      e.shape = decl->shape;
      return;
    }
    if (scope.later_targets.count(e.name)) source_.error(e.loc, msg::kUseBeforeDef, e.name, kase);
    if (is_size_var(e.name)) source_.error(e.loc, msg::kSizeAsValue, e.name);
    source_.error(e.loc, msg::kUnknownName, e.name);
  }

  void check_binary(ExprAst &e, Scope &scope) {
    ExprAst &a = *e.operands[0];
    ExprAst &b = *e.operands[1];
    check_expr(a, scope);
    check_expr(b, scope);
    if (e.op != BinaryOp::MatMul) {
      // Elementwise; a scalar broadcasts.
      if (a.shape.empty() || b.shape.empty() || a.shape == b.shape) {
        e.shape = a.shape.empty() ? b.shape : a.shape;
        return;
      }
      source_.error(e.loc, msg::kShapeElementwise, to_string(e.op), to_string(a.shape), to_string(e.op),
                    to_string(b.shape));
    }
    if (a.shape.size() != 2 || (b.shape.size() != 1 && b.shape.size() != 2)) {
      source_.error(e.loc, msg::kShapeMatmulRank, to_string(a.shape), to_string(b.shape));
    }
    if (a.shape[1] != b.shape[0]) {
      if (b.shape.size() == 1) {
        source_.error(e.loc, msg::kShapeMatVec, to_string(a.shape), to_string(b.shape),
                      a.shape[1].to_string());
      }
      source_.error(e.loc, msg::kShapeMatMat, to_string(a.shape), to_string(b.shape), a.shape[1].to_string());
    }
    e.shape = b.shape.size() == 1 ? Shape{a.shape[0]} : Shape{a.shape[0], b.shape[1]};
    if (scope.sum) {
      check_materializable(a, scope);
      check_materializable(b, scope);
    }
  }

  // ToILIR computes a non-index operand of '@' into a per-node temp; inside sum(k in children)
  // that is impossible when the operand depends on the child k.
  void check_materializable(const ExprAst &e, const Scope &scope) {
    if (is_index_expression(e)) return;
    if (e.kind == ExprAstKind::Concat || e.kind == ExprAstKind::Slice) {
      for (const ExprPtr &operand : e.operands) check_materializable(*operand, scope);
      return;
    }
    if (depends_on_child(e)) {
      source_.error(e.loc, msg::kSumOperandDependsOnChild, scope.sum->name, scope.sum->name);
    }
  }
  static bool depends_on_child(const ExprAst &e) {
    if (e.kind == ExprAstKind::Child && e.slot == ChildSlot::Var) return true;
    for (const ExprPtr &operand : e.operands) {
      if (depends_on_child(*operand)) return true;
    }
    return false;
  }

  void check_concat(ExprAst &e, Scope &scope) {
    const ExprAst *first = nullptr;
    Size rows;
    for (const ExprPtr &part : e.operands) {
      check_expr(*part, scope);
      const Shape &shape = part->shape;
      if (!first) first = part.get();
      if (shape.empty() || shape.size() != first->shape.size()) {
        source_.error(part->loc, msg::kShapeConcatRank, to_string(shape), to_string(first->shape));
      }
      if (!std::equal(shape.begin() + 1, shape.end(), first->shape.begin() + 1)) {
        source_.error(part->loc, msg::kShapeConcatCols, to_string(first->shape), to_string(shape));
      }
      rows = rows + shape[0];
    }
    e.shape = first->shape;
    e.shape[0] = rows;
  }

  void check_size_vars(const SizeAst &size) {
    for (const auto &[name, loc] : size.vars) {
      if (is_size_var(name)) continue;
      std::string known;
      for (const std::string &var : model_.size_vars) known += (known.empty() ? "" : ", ") + var;
      source_.error(loc, msg::kUnknownSize, name, known.empty() ? "(none declared)" : known);
    }
  }

  void check_slice(ExprAst &e, Scope &scope) {
    ExprAst &base = *e.operands[0];
    check_expr(base, scope);
    check_size_vars(e.lo);
    check_size_vars(e.hi);
    if (base.shape.empty()) source_.error(e.loc, msg::kShapeSliceScalar);
    const Size &lo = e.lo.value;
    const Size &hi = e.hi.value;
    const Size &dim = base.shape[0];
    if (!lo.provably_nonnegative() || !(hi - lo).provably_positive() || !(dim - hi).provably_nonnegative()) {
      source_.error(e.lo.loc, msg::kSliceRange, lo.to_string(), hi.to_string(), to_string(base.shape),
                    dim.to_string());
    }
    e.shape = base.shape;
    e.shape[0] = hi - lo;
  }

  // Resolves the tensor named by E[token] or h[left]: its declaration, or null for a temp.
  const TensorDeclAst *resolve_tensor(ExprAst &e, const Scope &scope) {
    if (scope.temps.count(e.name)) {
      e.resolved = NameKind::Temp;
      return nullptr;
    }
    const TensorDeclAst *decl = find_tensor(e.name);
    if (!decl) source_.error(e.loc, msg::kUnknownName, e.name);
    e.resolved = decl->kind == ilir::TensorKind::Param ? NameKind::Param : NameKind::State;
    return decl;
  }

  void check_token(ExprAst &e, Scope &scope) {
    if (scope.kase->kind != ilir::CaseKind::Leaf && !scope.kase->node)
      source_.error(e.loc, msg::kTokenInInternal);
    const TensorDeclAst *decl = resolve_tensor(e, scope);
    if (e.resolved != NameKind::Param)
      source_.error(e.loc, msg::kTokenNotParam, e.name, e.name, kind_name(e.resolved));
    if (decl->shape.size() < 2) source_.error(e.loc, msg::kTokenRank, e.name, e.name, to_string(decl->shape));
    e.shape.assign(decl->shape.begin() + 1, decl->shape.end());
  }

  void check_child(ExprAst &e, Scope &scope) {
    ilir::StructureKind structure = *model_.structure;
    bool dag_slot = e.slot == ChildSlot::Pred0 || e.slot == ChildSlot::Pred1;
    bool sequence_slot = e.slot == ChildSlot::Prev;
    bool tree_slot = e.slot == ChildSlot::Left || e.slot == ChildSlot::Right || e.slot == ChildSlot::Var;
    if ((dag_slot && structure != ilir::StructureKind::Dag) ||
        (sequence_slot && structure != ilir::StructureKind::Sequence) ||
        (tree_slot && ilir::has_predecessor_slots(structure))) {
      std::string slot = e.slot == ChildSlot::Var ? e.child_var : to_string(e.slot);
      source_.error(e.loc, msg::kSlotWrongStructure, e.name, slot, ilir::to_string(structure),
                    how_to_read(structure, e.name));
    }
    if (e.slot == ChildSlot::Var) {
      if (!scope.sum || scope.sum->name != e.child_var)
        source_.error(e.loc, msg::kChildVarOutsideSum, e.child_var, e.name);
    } else if (e.slot == ChildSlot::Left || e.slot == ChildSlot::Right) {
      const char *slot = e.slot == ChildSlot::Left ? "left" : "right";
      if (model_.structure == ilir::StructureKind::Tree)
        source_.error(e.loc, msg::kChildInTree, slot, e.name);
      if (scope.kase->kind == ilir::CaseKind::Leaf) source_.error(e.loc, msg::kChildInLeaf, slot);
    }
    const TensorDeclAst *decl = resolve_tensor(e, scope);
    if (e.resolved != NameKind::State) {
      std::string slot = e.slot == ChildSlot::Var ? e.child_var : to_string(e.slot);
      source_.error(e.loc, msg::kChildNotState, e.name, slot, e.name, kind_name(e.resolved));
    }
    e.shape = decl->shape;
  }

  void check_sum(ExprAst &e, Scope &scope) {
    if (ilir::has_predecessor_slots(*model_.structure)) {
      source_.error(e.loc, msg::kSumInSlots, ilir::to_string(*model_.structure),
                    how_to_read(*model_.structure, "h"));
    }
    if (model_.structure != ilir::StructureKind::Tree) source_.error(e.loc, msg::kSumInBinary);
    if (scope.kase->kind == ilir::CaseKind::Leaf) source_.error(e.loc, msg::kSumInLeaf);
    if (scope.sum) source_.error(e.loc, msg::kSumNested, scope.sum->name);
    if (find_tensor(e.name) || is_size_var(e.name) || scope.later_targets.count(e.name)) {
      source_.error(e.loc, msg::kChildVarShadows, e.name);
    }
    scope.sum = &e;
    check_expr(*e.operands[0], scope);
    scope.sum = nullptr;
    e.shape = e.operands[0]->shape;
  }

  const SourceFile &source_;
  ModelAst &model_;
  std::map<std::string, const TensorDeclAst *> tensors_;
};

}  // namespace

void check(const SourceFile &source, ModelAst &model) { Checker(source, model).run(); }

}  // namespace grove::dsl
