#include "ilir/Verifier.h"

#include <algorithm>
#include <set>

#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"

namespace grove::ilir {
namespace {

bool is_size_expr(const Expr &e, const std::vector<std::string> &size_vars) {
  return !contains(e, [&](const Expr &x) {
    if (x.as<IntImm>()) return false;
    if (const Var *v = x.as<Var>())
      return v->var_kind != VarKind::Size ||
             std::find(size_vars.begin(), size_vars.end(), v->name) == size_vars.end();
    const Binary *b = x.as<Binary>();
    return !(b && (b->op == BinOp::Add || b->op == BinOp::Mul || b->op == BinOp::Sub));
  });
}

// Checks one Compute's value with the set of index variables in scope.
class ComputeChecker : public IRMutator {
 public:
  ComputeChecker(const Program &p, const Case &c, const Compute &op, std::set<std::string> defined,
                 std::set<std::string> *read_at_parent = nullptr)
      : p_(p), case_(c), op_(op), defined_(std::move(defined)), read_at_parent_(read_at_parent) {
    for (const std::string &i : op.indices) scope_.insert(i);
  }

 protected:
  [[noreturn]] void fail(const std::string &what, const Expr &e) {
    GROVE_CHECK(false, "{} case, compute of {}: {}: {}", to_string(case_.kind), op_.tensor, what,
                to_string(e));
  }

  Expr visit_Var(const Var *op, const Expr &e) override {
    if (op->var_kind == VarKind::Index && !scope_.count(op->name)) fail("unbound index variable", e);
    if (op->var_kind == VarKind::Node && op->name != "n") fail("unknown node variable", e);
    if (op->var_kind == VarKind::Size &&
        std::find(p_.size_vars.begin(), p_.size_vars.end(), op->name) == p_.size_vars.end())
      fail("undeclared size variable", e);
    return e;
  }

  Expr visit_Sum(const Sum *op, const Expr &e) override {
    if (scope_.count(op->var)) fail("Sum rebinds a variable in scope", e);
    mutate(op->extent);
    scope_.insert(op->var);
    mutate(op->body);
    scope_.erase(op->var);
    return e;
  }

  Expr visit_StructCall(const StructCall *op, const Expr &e) override {
    // A DAG or sequence node has a token and its predecessor slots in both (identical) cases.
    bool slots = has_predecessor_slots(p_.structure);
    bool top_down = p_.direction == Direction::TopDown;
    const bool upward =
        op->fn == StructFn::Parent || op->fn == StructFn::ChildSlot || op->fn == StructFn::NumParents;
    if (upward && !top_down) fail("parent() or child_slot() in a bottom-up program", e);
    // A tree node has one parent, parent(n); a DAG's or sequence's has num_parents(n), parent(n, j).
    if (upward && slots != (op->fn == StructFn::NumParents || op->arg.defined()))
      fail(slots ? "a DAG's or sequence's parents are parent(n, j) over j < num_parents(n)"
                 : "a tree node's parent is parent(n)",
           e);
    if (op->fn == StructFn::Token && case_.kind == CaseKind::Internal && !slots)
      fail("token() outside the leaf case", e);
    if (op->fn == StructFn::Child &&
        (case_.kind == CaseKind::Hoisted || (case_.kind == CaseKind::Leaf && !slots)))
      fail("child() outside the internal case", e);
    if (op->fn == StructFn::Child && p_.structure == StructureKind::BinaryTree) {
      const IntImm *k = op->arg.as<IntImm>();
      if (!k || k->value < 0 || k->value > 1) fail("a binary tree's child slot must be 0 or 1", e);
    }
    if (op->fn == StructFn::Child && slots) {
      const IntImm *k = op->arg.as<IntImm>();
      if (!k || k->value < 0 || k->value >= predecessor_slots(p_.structure))
        fail(p_.structure == StructureKind::Dag ? "a DAG's predecessor slot must be 0 or 1"
                                                : "a sequence's predecessor slot must be 0",
             e);
    }
    return IRMutator::visit_StructCall(op, e);
  }

  Expr visit_Load(const Load *op, const Expr &e) override {
    const TensorDecl *t = p_.find(op->tensor);
    if (!t) fail("load of an undeclared tensor", e);
    if (op->indices.size() != t->shape.size()) fail("load with the wrong number of indices", e);
    if (t->kind == TensorKind::Gradient) fail("a gradient is read", e);
    if (t->kind == TensorKind::Param && op->node.defined()) fail("param loaded at a node", e);
    if (t->kind != TensorKind::Param) {
      if (!op->node.defined()) fail("node tensor loaded without a node", e);
      bool at_self = is_node_var(op->node);
      const StructCall *c = op->node.as<StructCall>();
      bool at_child = c && c->fn == StructFn::Child && is_node_var(c->node);
      bool at_parent = c && c->fn == StructFn::Parent && is_node_var(c->node);
      bool top_down = p_.direction == Direction::TopDown;
      bool ok = at_self || (t->kind == TensorKind::Saved && (at_child || at_parent)) ||
                (t->kind == TensorKind::State && (top_down ? at_parent : at_child));
      if (!ok)
        fail(top_down ? "tensor read at a node other than n or its parent (a saved tensor: or a child)"
                      : "tensor read at a node other than n or a child",
             e);
      if (at_parent && t->kind == TensorKind::State && read_at_parent_) read_at_parent_->insert(t->name);
      if (at_self && t->kind != TensorKind::Saved && !defined_.count(op->tensor))
        fail("read of a tensor before this case defines it", e);
    }
    return IRMutator::visit_Load(op, e);
  }

 private:
  const Program &p_;
  const Case &case_;
  const Compute &op_;
  std::set<std::string> defined_, scope_;
  std::set<std::string> *read_at_parent_;
};

// `defined`: the tensors the case may read at n before computing them (the hoisted case's). Adds
// the states the case reads at parent(n) to `read_at_parent`; returns what the case defines.
std::set<std::string> verify_case(const Program &p, const Case &c, std::set<std::string> defined,
                                  std::set<std::string> *read_at_parent = nullptr) {
  for (const Compute &op : c.body) {
    const TensorDecl *t = p.find(op.tensor);
    GROVE_CHECK(t != nullptr, "compute of undeclared tensor {}", op.tensor);
    GROVE_CHECK(t->kind == TensorKind::State || t->kind == TensorKind::Temp, "compute of {} {}",
                to_string(t->kind), op.tensor);
    GROVE_CHECK(op.indices.size() == t->shape.size(), "compute of {} with {} indices for rank {}", op.tensor,
                op.indices.size(), t->shape.size());
    GROVE_CHECK(!defined.count(op.tensor), "{} defined twice in one case", op.tensor);
    GROVE_CHECK(op.value.defined() && op.value.type() == ScalarType::Float, "compute of {} is not Float",
                op.tensor);
    ComputeChecker(p, c, op, defined, read_at_parent).mutate(op.value);
    defined.insert(op.tensor);
  }
  if (c.kind == CaseKind::Hoisted || p.direction == Direction::TopDown) return defined;
  for (const TensorDecl &t : p.tensors)
    GROVE_CHECK(t.kind != TensorKind::State || defined.count(t.name), "state {} not defined by the {} case",
                t.name, to_string(c.kind));
  return defined;
}

void verify_reduction(const Program &p, const Reduction &r, const std::set<std::string> &defined) {
  const TensorDecl *t = p.find(r.tensor);
  GROVE_CHECK(t && t->kind == TensorKind::Gradient, "reduction into {}, which is not a gradient", r.tensor);
  GROVE_CHECK(r.indices.size() == t->shape.size(), "reduction into {} with {} indices for rank {}", r.tensor,
              r.indices.size(), t->shape.size());
  GROVE_CHECK(r.over != CaseKind::Hoisted, "reduction into {} over the hoisted case", r.tensor);
  GROVE_CHECK(r.value.defined() && r.value.type() == ScalarType::Float, "reduction into {} is not Float",
              r.tensor);
  const Case &over = r.over == CaseKind::Leaf ? p.leaf : p.internal;
  ComputeChecker(p, over, Compute{r.tensor, r.indices, r.value}, defined).mutate(r.value);
}

}  // namespace

void verify(const Program &p) {
  std::set<std::string> names;
  for (const TensorDecl &t : p.tensors) {
    GROVE_CHECK(names.insert(t.name).second, "tensor {} declared twice", t.name);
    for (const Expr &d : t.shape)
      GROVE_CHECK(is_size_expr(d, p.size_vars), "{}: bad size {}", t.name, to_string(d));
  }
  const TensorDecl *out = p.find(p.output);
  GROVE_CHECK(out && out->kind == TensorKind::State, "output {} is not a state", p.output);
  std::set<std::string> hoisted;
  for (const Compute &op : p.hoisted.body) {
    GROVE_CHECK(p.find(op.tensor) && p.find(op.tensor)->kind == TensorKind::State,
                "hoisted compute of {} is not a state", op.tensor);
    hoisted.insert(op.tensor);
  }
  if (p.direction == Direction::BottomUp) {
    GROVE_CHECK(p.reductions.empty(), "a bottom-up program with reductions");
    for (const TensorDecl &t : p.tensors)
      GROVE_CHECK(t.kind != TensorKind::Saved && t.kind != TensorKind::Gradient,
                  "{} tensor {} in a bottom-up program", to_string(t.kind), t.name);
    verify_case(p, p.hoisted, {});
    verify_case(p, p.leaf, hoisted);
    verify_case(p, p.internal, hoisted);
    return;
  }
  GROVE_CHECK(p.hoisted.body.empty(), "a top-down program with a hoisted case");
  std::set<std::string> read_at_parent;
  std::set<std::string> leaf = verify_case(p, p.leaf, {}, &read_at_parent);
  std::set<std::string> internal = verify_case(p, p.internal, {}, &read_at_parent);
  for (const std::string &s : read_at_parent)
    GROVE_CHECK(internal.count(s), "state {} is read at parent(n) but the internal case does not define it",
                s);
  for (const Reduction &r : p.reductions) verify_reduction(p, r, r.over == CaseKind::Leaf ? leaf : internal);
}

}  // namespace grove::ilir
