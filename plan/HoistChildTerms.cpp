#include "plan/HoistChildTerms.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"

namespace grove::plan {

namespace {

bool is_ragged(const ilir::Sum *s) {
  const auto *c = s->extent.as<ilir::StructCall>();
  return c && c->fn == ilir::StructFn::NumChildren;
}

// child(n, k) for the Sum variable k.
bool is_child_k(const ilir::Expr &e, const std::string &k) {
  const auto *c = e.as<ilir::StructCall>();
  if (!c || c->fn != ilir::StructFn::Child) return false;
  const auto *node = c->node.as<ilir::Var>();
  const auto *arg = c->arg.as<ilir::Var>();
  return node && node->var_kind == ilir::VarKind::Node && arg && arg->name == k;
}

// child(n, k) → n everywhere.
class AtChild : public ilir::IRMutator {
 public:
  explicit AtChild(std::string k) : k_(std::move(k)) {}

 protected:
  ilir::Expr visit_StructCall(const ilir::StructCall *op, const ilir::Expr &e) override {
    return is_child_k(e, k_) ? ilir::Var::node() : IRMutator::visit_StructCall(op, e);
  }

 private:
  std::string k_;
};

// Replaces the maximal child-only subexpressions with a product inside one ragged Sum's body by
// loads of hoisted states, creating their definitions (once per distinct expression and shape).
class ChildTerms : public ilir::IRMutator {
 public:
  ChildTerms(ilir::Program &p, const ilir::Compute &op, std::string k,
             std::map<std::string, std::string> &hoisted)
      : p_(p), op_(op), k_(std::move(k)), hoisted_(hoisted) {}

 protected:
  ilir::Expr visit_Binary(const ilir::Binary *op, const ilir::Expr &e) override {
    return hoistable(e) ? hoist(e) : IRMutator::visit_Binary(op, e);
  }
  ilir::Expr visit_Unary(const ilir::Unary *op, const ilir::Expr &e) override {
    return hoistable(e) ? hoist(e) : IRMutator::visit_Unary(op, e);
  }
  ilir::Expr visit_Select(const ilir::Select *op, const ilir::Expr &e) override {
    return hoistable(e) ? hoist(e) : IRMutator::visit_Select(op, e);
  }
  ilir::Expr visit_Sum(const ilir::Sum *op, const ilir::Expr &e) override {
    return hoistable(e) ? hoist(e) : IRMutator::visit_Sum(op, e);
  }

 private:
  // Float valued, with a product inside, reading only params and child(n, k)'s states, and
  // indexed only by the Compute's indices and its own Sums' variables.
  bool hoistable(const ilir::Expr &e) const {
    if (e.type() != ilir::ScalarType::Float) return false;
    if (!ilir::contains(e, [](const ilir::Expr &x) { return x.as<ilir::Sum>() != nullptr; })) return false;
    std::set<std::string> bound(op_.indices.begin(), op_.indices.end());
    ilir::for_each_node(e, [&](const ilir::Expr &x) {
      if (const auto *s = x.as<ilir::Sum>()) bound.insert(s->var);
    });
    bool ok = true;
    ilir::for_each_node(e, [&](const ilir::Expr &x) {
      if (const auto *l = x.as<ilir::Load>()) {
        ilir::TensorKind kind = p_.get(l->tensor).kind;
        ok = ok && (kind == ilir::TensorKind::Param ||
                    (kind == ilir::TensorKind::State && is_child_k(l->node, k_)));
      } else if (x.as<ilir::StructCall>()) {
        ok = ok && is_child_k(x, k_);
      } else if (const auto *s = x.as<ilir::Sum>()) {
        ok = ok && !s->extent.as<ilir::StructCall>();  // no ragged Sum inside
      }
    });
    if (!ok) return false;
    // After child(n, k) → n, the only variables left are n and bound indices.
    return !ilir::contains(AtChild(k_).mutate(e), [&](const ilir::Expr &x) {
      const auto *v = x.as<ilir::Var>();
      return v && v->var_kind == ilir::VarKind::Index && !bound.count(v->name);
    });
  }

  ilir::Expr hoist(const ilir::Expr &e) {
    const ilir::TensorDecl &t = p_.get(op_.tensor);
    ilir::Expr value = AtChild(k_).mutate(e);
    std::string key = fmt::format("{}|{}", ilir::to_string(value), fmt::join(op_.indices, ","));
    for (const ilir::Expr &d : t.shape) key += "|" + ilir::to_string(d);
    auto it = hoisted_.find(key);
    if (it == hoisted_.end()) {
      std::string name = fmt::format("_child{}", hoisted_.size());
      auto temps = std::find_if(p_.tensors.begin(), p_.tensors.end(),
                                [](const ilir::TensorDecl &d) { return d.kind == ilir::TensorKind::Temp; });
      p_.tensors.insert(temps, ilir::TensorDecl{name, ilir::TensorKind::State, t.shape});
      // Last in both cases: every state the value reads is final there.
      p_.leaf.body.push_back({name, op_.indices, value});
      p_.internal.body.push_back({name, op_.indices, value});
      it = hoisted_.emplace(key, name).first;
    }
    std::vector<ilir::Expr> indices;
    for (const std::string &i : op_.indices) indices.push_back(ilir::Var::make(i, ilir::VarKind::Index));
    return ilir::Load::make(
        it->second, ilir::StructCall::child(ilir::Var::node(), ilir::Var::make(k_, ilir::VarKind::Index)),
        indices);
  }

  ilir::Program &p_;
  const ilir::Compute &op_;
  std::string k_;
  std::map<std::string, std::string> &hoisted_;
};

// Finds the ragged Sums of one Compute and hoists their child terms.
class RaggedSums : public ilir::IRMutator {
 public:
  RaggedSums(ilir::Program &p, const ilir::Compute &op, std::map<std::string, std::string> &hoisted)
      : p_(p), op_(op), hoisted_(hoisted) {}

 protected:
  ilir::Expr visit_Sum(const ilir::Sum *op, const ilir::Expr &e) override {
    if (!is_ragged(op)) return IRMutator::visit_Sum(op, e);
    ilir::Expr body = ChildTerms(p_, op_, op->var, hoisted_).mutate(op->body);
    return body.same_as(op->body) ? e : ilir::Sum::make(op->var, op->extent, body);
  }

 private:
  ilir::Program &p_;
  const ilir::Compute &op_;
  std::map<std::string, std::string> &hoisted_;
};

}  // namespace

ilir::Program hoist_child_terms(const ilir::Program &program) {
  if (program.structure != ilir::StructureKind::Tree) return program;  // only trees have ragged Sums
  ilir::Program p = program;
  std::map<std::string, std::string> hoisted;  // printed value and shape → hoisted state
  // Index-based: hoisting appends to p.internal.body.
  for (size_t i = 0, n = p.internal.body.size(); i < n; i++) {
    ilir::Compute op = p.internal.body[i];
    p.internal.body[i].value = RaggedSums(p, op, hoisted).mutate(op.value);
  }
  return hoisted.empty() ? program : p;
}

}  // namespace grove::plan
