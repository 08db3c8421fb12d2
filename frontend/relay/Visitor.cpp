#include "frontend/relay/Visitor.h"

#include <unordered_set>

namespace grove::relay {

namespace {

void collect_pattern_vars(const Pattern &p, std::vector<Expr> &out) {
  switch (p->kind) {
    case PatternKind::Wildcard:
      return;
    case PatternKind::Var:
      out.push_back(p->var);
      return;
    case PatternKind::Constructor:
    case PatternKind::Tuple:
      for (const Pattern &q : p->patterns) collect_pattern_vars(q, out);
      return;
  }
}

// `p` with its variables replaced, in pattern_vars order, by vars[next], vars[next + 1], ...
Pattern rebuild_pattern(const Pattern &p, const std::vector<Expr> &vars, size_t &next, bool &changed) {
  switch (p->kind) {
    case PatternKind::Wildcard:
      return p;
    case PatternKind::Var: {
      const Expr &v = vars[next++];
      if (v.same_as(p->var)) return p;
      changed = true;
      return PatternNode::variable(v, p->span);
    }
    case PatternKind::Constructor:
    case PatternKind::Tuple: {
      bool sub_changed = false;
      std::vector<Pattern> subs;
      for (const Pattern &q : p->patterns) subs.push_back(rebuild_pattern(q, vars, next, sub_changed));
      if (!sub_changed) return p;
      changed = true;
      return p->kind == PatternKind::Tuple
                 ? PatternNode::tuple(std::move(subs), p->span)
                 : PatternNode::constructor_of(p->constructor, std::move(subs), p->span);
    }
  }
  GROVE_CHECK(false, "unknown pattern kind");
}

bool all_same(const std::vector<Expr> &a, const std::vector<Expr> &b, size_t offset) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[offset + i])) return false;
  return true;
}

std::vector<Expr> slice(const std::vector<Expr> &v, size_t begin, size_t count) {
  return std::vector<Expr>(v.begin() + static_cast<ptrdiff_t>(begin),
                           v.begin() + static_cast<ptrdiff_t>(begin + count));
}

}  // namespace

std::vector<Expr> pattern_vars(const Pattern &p) {
  std::vector<Expr> out;
  collect_pattern_vars(p, out);
  return out;
}

void for_each_child(const Expr &e, const std::function<void(const Expr &)> &f) {
  switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
      return;
    case ExprKind::Tuple:
      for (const Expr &x : e.as<Tuple>()->fields) f(x);
      return;
    case ExprKind::TupleGetItem:
      f(e.as<TupleGetItem>()->tuple);
      return;
    case ExprKind::Call: {
      const auto *c = e.as<Call>();
      f(c->op);
      for (const Expr &x : c->args) f(x);
      return;
    }
    case ExprKind::Function: {
      const auto *fn = e.as<Function>();
      for (const Expr &p : fn->params) f(p);
      f(fn->body);
      return;
    }
    case ExprKind::Let: {
      const auto *l = e.as<Let>();
      f(l->var);
      f(l->value);
      f(l->body);
      return;
    }
    case ExprKind::If: {
      const auto *i = e.as<If>();
      f(i->cond);
      f(i->then_branch);
      f(i->else_branch);
      return;
    }
    case ExprKind::Match: {
      const auto *m = e.as<Match>();
      f(m->data);
      for (const Clause &c : m->clauses) {
        for (const Expr &v : pattern_vars(c.lhs)) f(v);
        f(c.rhs);
      }
      return;
    }
    case ExprKind::RefCreate:
      f(e.as<RefCreate>()->value);
      return;
    case ExprKind::RefRead:
      f(e.as<RefRead>()->ref);
      return;
    case ExprKind::RefWrite: {
      const auto *w = e.as<RefWrite>();
      f(w->ref);
      f(w->value);
      return;
    }
  }
}

Expr with_children(const Expr &e, const std::vector<Expr> &k) {
  const Span &span = e->span;
  switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
      GROVE_CHECK(k.empty(), "children given to a leaf");
      return e;
    case ExprKind::Tuple: {
      const auto *t = e.as<Tuple>();
      GROVE_CHECK(k.size() == t->fields.size(), "a Tuple rebuilt with {} fields", k.size());
      return all_same(t->fields, k, 0) ? e : Tuple::make(k, span);
    }
    case ExprKind::TupleGetItem: {
      const auto *t = e.as<TupleGetItem>();
      GROVE_CHECK(k.size() == 1, "a TupleGetItem rebuilt with {} children", k.size());
      return k[0].same_as(t->tuple) ? e : TupleGetItem::make(k[0], t->index, span);
    }
    case ExprKind::Call: {
      const auto *c = e.as<Call>();
      GROVE_CHECK(k.size() == c->args.size() + 1, "a Call rebuilt with {} children", k.size());
      if (k[0].same_as(c->op) && all_same(c->args, k, 1)) return e;
      return Call::make(k[0], slice(k, 1, c->args.size()), c->attrs, c->type_args, span);
    }
    case ExprKind::Function: {
      const auto *f = e.as<Function>();
      GROVE_CHECK(k.size() == f->params.size() + 1, "a Function rebuilt with {} children", k.size());
      if (all_same(f->params, k, 0) && k.back().same_as(f->body)) return e;
      return Function::make(slice(k, 0, f->params.size()), k.back(), f->ret_type, f->type_params, f->attrs,
                            span);
    }
    case ExprKind::Let: {
      const auto *l = e.as<Let>();
      GROVE_CHECK(k.size() == 3, "a Let rebuilt with {} children", k.size());
      if (k[0].same_as(l->var) && k[1].same_as(l->value) && k[2].same_as(l->body)) return e;
      return Let::make(k[0], k[1], k[2], span);
    }
    case ExprKind::If: {
      const auto *i = e.as<If>();
      GROVE_CHECK(k.size() == 3, "an If rebuilt with {} children", k.size());
      if (k[0].same_as(i->cond) && k[1].same_as(i->then_branch) && k[2].same_as(i->else_branch)) return e;
      return If::make(k[0], k[1], k[2], span);
    }
    case ExprKind::Match: {
      const auto *m = e.as<Match>();
      bool changed = !k[0].same_as(m->data);
      size_t next = 1;
      std::vector<Clause> clauses;
      for (const Clause &c : m->clauses) {
        Clause nc;
        nc.lhs = rebuild_pattern(c.lhs, k, next, changed);
        GROVE_CHECK(next < k.size(), "a Match rebuilt with too few children");
        nc.rhs = k[next++];
        changed = changed || !nc.rhs.same_as(c.rhs);
        clauses.push_back(std::move(nc));
      }
      GROVE_CHECK(next == k.size(), "a Match rebuilt with {} children, expected {}", k.size(), next);
      return changed ? Match::make(k[0], std::move(clauses), m->complete, span) : e;
    }
    case ExprKind::RefCreate:
      GROVE_CHECK(k.size() == 1, "a RefCreate rebuilt with {} children", k.size());
      return k[0].same_as(e.as<RefCreate>()->value) ? e : RefCreate::make(k[0], span);
    case ExprKind::RefRead:
      GROVE_CHECK(k.size() == 1, "a RefRead rebuilt with {} children", k.size());
      return k[0].same_as(e.as<RefRead>()->ref) ? e : RefRead::make(k[0], span);
    case ExprKind::RefWrite: {
      const auto *w = e.as<RefWrite>();
      GROVE_CHECK(k.size() == 2, "a RefWrite rebuilt with {} children", k.size());
      return k[0].same_as(w->ref) && k[1].same_as(w->value) ? e : RefWrite::make(k[0], k[1], span);
    }
  }
  GROVE_CHECK(false, "unknown expression kind");
}

// Iterative post order: a node is pushed unexpanded, then re-pushed expanded above its children;
// popping it expanded means every child is done.
void post_order_visit(const Expr &root, const std::function<void(const Expr &)> &f) {
  std::unordered_set<const ExprNode *> done;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  std::vector<Expr> kids;
  while (!stack.empty()) {
    auto [e, expanded] = std::move(stack.back());
    stack.pop_back();
    if (done.count(e.get())) continue;
    if (expanded) {
      done.insert(e.get());
      f(e);
      continue;
    }
    stack.emplace_back(e, true);
    kids.clear();
    for_each_child(e, [&](const Expr &c) { kids.push_back(c); });
    for (auto it = kids.rbegin(); it != kids.rend(); ++it)
      if (!done.count(it->get())) stack.emplace_back(*it, false);
  }
}

Expr ExprMutator::mutate(const Expr &root) {
  if (!root.defined()) return root;
  if (auto it = memo_.find(root); it != memo_.end()) return it->second;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  std::vector<Expr> kids;
  while (!stack.empty()) {
    auto [e, expanded] = std::move(stack.back());
    stack.pop_back();
    if (memo_.count(e)) continue;
    if (!expanded && !descend(e)) {
      memo_.emplace(e, rewrite(e, e));
      continue;
    }
    kids.clear();
    for_each_child(e, [&](const Expr &c) { kids.push_back(c); });
    if (expanded) {
      for (Expr &c : kids) {
        auto it = memo_.find(c);
        GROVE_CHECK(it != memo_.end(), "a child mutated out of order");
        c = it->second;
      }
      Expr post = with_children(e, kids);
      memo_.emplace(e, rewrite(e, post));
      continue;
    }
    stack.emplace_back(e, true);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it)
      if (!memo_.count(*it)) stack.emplace_back(*it, false);
  }
  return memo_.at(root);
}

std::vector<Expr> free_vars(const Expr &e) {
  std::unordered_set<const ExprNode *> bound, seen;
  std::vector<Expr> uses;
  post_order_visit(e, [&](const Expr &x) {
    if (const auto *l = x.as<Let>()) bound.insert(l->var.get());
    if (const auto *f = x.as<Function>())
      for (const Expr &p : f->params) bound.insert(p.get());
    if (const auto *m = x.as<Match>())
      for (const Clause &c : m->clauses)
        for (const Expr &v : pattern_vars(c.lhs)) bound.insert(v.get());
    if (x.as<Var>() && seen.insert(x.get()).second) uses.push_back(x);
  });
  std::vector<Expr> out;
  for (const Expr &v : uses)
    if (!bound.count(v.get())) out.push_back(v);
  return out;
}

std::vector<std::string> called_globals(const Expr &e) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  post_order_visit(e, [&](const Expr &x) {
    if (const auto *g = x.as<GlobalVar>())
      if (seen.insert(g->name).second) out.push_back(g->name);
  });
  return out;
}

namespace {
class Substituter : public ExprMutator {
 public:
  explicit Substituter(const std::unordered_map<Expr, Expr, ExprHash, ExprEqual> &map) : map_(map) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (pre.as<Var>()) {
      auto it = map_.find(pre);
      if (it != map_.end()) return it->second;
    }
    return post;
  }

 private:
  const std::unordered_map<Expr, Expr, ExprHash, ExprEqual> &map_;
};
}  // namespace

Expr substitute(const Expr &e, const std::unordered_map<Expr, Expr, ExprHash, ExprEqual> &map) {
  return Substituter(map).mutate(e);
}

}  // namespace grove::relay
