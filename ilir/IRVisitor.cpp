#include "ilir/IRVisitor.h"

namespace grove::ilir {

Expr IRMutator::visit_FloatImm(const FloatImm *, const Expr &e) { return e; }
Expr IRMutator::visit_IntImm(const IntImm *, const Expr &e) { return e; }
Expr IRMutator::visit_Var(const Var *, const Expr &e) { return e; }

Expr IRMutator::visit_Binary(const Binary *op, const Expr &e) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return a.same_as(op->a) && b.same_as(op->b) ? e : Binary::make(op->op, a, b);
}

Expr IRMutator::visit_Unary(const Unary *op, const Expr &e) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? e : Unary::make(op->op, a);
}

Expr IRMutator::visit_Select(const Select *op, const Expr &e) {
  Expr c = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
  return c.same_as(op->cond) && t.same_as(op->t) && f.same_as(op->f) ? e : Select::make(c, t, f);
}

Expr IRMutator::visit_Load(const Load *op, const Expr &e) {
  Expr node = mutate(op->node);
  bool changed = !node.same_as(op->node);
  std::vector<Expr> indices;
  for (const Expr &i : op->indices) {
    indices.push_back(mutate(i));
    changed |= !indices.back().same_as(i);
  }
  return changed ? Load::make(op->tensor, node, std::move(indices)) : e;
}

Expr IRMutator::visit_StructCall(const StructCall *op, const Expr &e) {
  Expr node = mutate(op->node), arg = mutate(op->arg);
  return node.same_as(op->node) && arg.same_as(op->arg) ? e : StructCall::make(op->fn, node, arg);
}

Expr IRMutator::visit_Sum(const Sum *op, const Expr &e) {
  Expr extent = mutate(op->extent), body = mutate(op->body);
  return extent.same_as(op->extent) && body.same_as(op->body) ? e : Sum::make(op->var, extent, body);
}

namespace {

class Walker : public IRMutator {
 public:
  explicit Walker(const std::function<void(const Expr &)> &f) : f_(f) {}
  Expr visit_node(const Expr &e) { return mutate(e); }

 protected:
  // Every visit_* funnels through here by overriding mutate's dispatch points.
  Expr visit_FloatImm(const FloatImm *op, const Expr &e) override { return f_(e), e; }
  Expr visit_IntImm(const IntImm *op, const Expr &e) override { return f_(e), e; }
  Expr visit_Var(const Var *op, const Expr &e) override { return f_(e), e; }
  Expr visit_Binary(const Binary *op, const Expr &e) override {
    return f_(e), IRMutator::visit_Binary(op, e);
  }
  Expr visit_Unary(const Unary *op, const Expr &e) override { return f_(e), IRMutator::visit_Unary(op, e); }
  Expr visit_Select(const Select *op, const Expr &e) override {
    return f_(e), IRMutator::visit_Select(op, e);
  }
  Expr visit_Load(const Load *op, const Expr &e) override { return f_(e), IRMutator::visit_Load(op, e); }
  Expr visit_StructCall(const StructCall *op, const Expr &e) override {
    return f_(e), IRMutator::visit_StructCall(op, e);
  }
  Expr visit_Sum(const Sum *op, const Expr &e) override { return f_(e), IRMutator::visit_Sum(op, e); }

 private:
  const std::function<void(const Expr &)> &f_;
};

class Substituter : public IRMutator {
 public:
  Substituter(const std::string &name, const Expr &value) : name_(name), value_(value) {}

 protected:
  Expr visit_Var(const Var *op, const Expr &e) override { return op->name == name_ ? value_ : e; }
  Expr visit_Sum(const Sum *op, const Expr &e) override {
    // A Sum that rebinds the name shadows it in its body.
    if (op->var == name_) {
      Expr extent = mutate(op->extent);
      return extent.same_as(op->extent) ? e : Sum::make(op->var, extent, op->body);
    }
    return IRMutator::visit_Sum(op, e);
  }

 private:
  const std::string &name_;
  const Expr &value_;
};

}  // namespace

void for_each_node(const Expr &e, const std::function<void(const Expr &)> &f) {
  if (e.defined()) Walker(f).visit_node(e);
}

Expr substitute(const Expr &e, const std::string &name, const Expr &value) {
  return Substituter(name, value).mutate(e);
}

bool contains(const Expr &e, const std::function<bool(const Expr &)> &pred) {
  bool found = false;
  for_each_node(e, [&](const Expr &x) { found = found || pred(x); });
  return found;
}

namespace {

class Inliner : public IRMutator {
 public:
  explicit Inliner(const Compute &def) : def_(def) {}

 protected:
  Expr visit_Load(const Load *op, const Expr &e) override {
    if (op->tensor != def_.tensor) return IRMutator::visit_Load(op, e);
    // Rename the definition's indices apart first, so the substitution is simultaneous.
    Expr value = def_.value;
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = substitute(value, def_.indices[d], Var::make("__inline" + std::to_string(d), VarKind::Index));
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = substitute(value, "__inline" + std::to_string(d), mutate(op->indices[d]));
    return value;
  }

 private:
  const Compute &def_;
};

}  // namespace

Expr inline_definition(const Expr &e, const Compute &def) { return Inliner(def).mutate(e); }

bool read_inside_sum(const Expr &e, const std::string &tensor) {
  bool found = false;
  for_each_node(e, [&](const Expr &x) {
    if (const auto *s = x.as<Sum>())
      found = found || contains(s->body, [&](const Expr &y) {
                const auto *l = y.as<Load>();
                return l && l->tensor == tensor;
              });
  });
  return found;
}

}  // namespace grove::ilir
