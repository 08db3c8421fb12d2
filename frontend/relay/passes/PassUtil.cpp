#include "frontend/relay/passes/PassUtil.h"

#include "frontend/relay/Visitor.h"
#include "support/Error.h"

namespace grove::relay {

// ---------------------------------------------------------------------------------------------
// Operands
// ---------------------------------------------------------------------------------------------

std::vector<Expr> operands(const Expr &e) {
  switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
      return {};
    case ExprKind::Tuple:
      return e.as<Tuple>()->fields;
    case ExprKind::TupleGetItem:
      return {e.as<TupleGetItem>()->tuple};
    case ExprKind::Call: {
      const auto *c = e.as<Call>();
      std::vector<Expr> out{c->op};
      out.insert(out.end(), c->args.begin(), c->args.end());
      return out;
    }
    case ExprKind::Function:
      return {e.as<Function>()->body};
    case ExprKind::Let:
      return {e.as<Let>()->value, e.as<Let>()->body};
    case ExprKind::If: {
      const auto *i = e.as<If>();
      return {i->cond, i->then_branch, i->else_branch};
    }
    case ExprKind::Match: {
      const auto *m = e.as<Match>();
      std::vector<Expr> out{m->data};
      for (const Clause &c : m->clauses) out.push_back(c.rhs);
      return out;
    }
    case ExprKind::RefCreate:
      return {e.as<RefCreate>()->value};
    case ExprKind::RefRead:
      return {e.as<RefRead>()->ref};
    case ExprKind::RefWrite:
      return {e.as<RefWrite>()->ref, e.as<RefWrite>()->value};
  }
  GROVE_CHECK(false, "unknown expression kind");
}

Expr with_operands(const Expr &e, const std::vector<Expr> &ops) {
  // with_children() wants the binders too, in for_each_child's order; they stay as they are.
  std::vector<Expr> kids;
  switch (e->kind) {
    case ExprKind::Function: {
      const auto *f = e.as<Function>();
      GROVE_CHECK(ops.size() == 1, "a Function rebuilt with {} operands", ops.size());
      kids = f->params;
      kids.push_back(ops[0]);
      break;
    }
    case ExprKind::Let:
      GROVE_CHECK(ops.size() == 2, "a Let rebuilt with {} operands", ops.size());
      kids = {e.as<Let>()->var, ops[0], ops[1]};
      break;
    case ExprKind::Match: {
      const auto *m = e.as<Match>();
      GROVE_CHECK(ops.size() == m->clauses.size() + 1, "a Match rebuilt with {} operands", ops.size());
      kids.push_back(ops[0]);
      for (size_t i = 0; i < m->clauses.size(); ++i) {
        for (const Expr &v : pattern_vars(m->clauses[i].lhs)) kids.push_back(v);
        kids.push_back(ops[i + 1]);
      }
      break;
    }
    default:
      kids = ops;
  }
  return with_children(e, kids);
}

bool opens_scope(const Expr &e, size_t i) {
  switch (e->kind) {
    case ExprKind::Function:
      return true;
    case ExprKind::If:
      return i >= 1;
    case ExprKind::Match:
      return i >= 1;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Effects
// ---------------------------------------------------------------------------------------------

Effects::Effects(const Module &module) {
  std::unordered_map<const ExprNode *, Expr> let_value;  // let-bound Var -> its value
  std::unordered_map<std::string, const ExprNode *> global_function;
  for (const auto &[name, fn] : module.functions()) {
    global_function[name] = fn.get();
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *l = e.as<Let>()) let_value[l->var.get()] = l->value;
    });
  }

  std::unordered_set<const ExprNode *> impure;  // Function nodes whose calls may have effects
  auto pure_to_call = [&](Expr callee) {
    // Follow let-bound aliases (`let %g = %f`); the hop limit only guards against malformed input.
    for (int hops = 0; hops < 1000; ++hops) {
      switch (callee->kind) {
        case ExprKind::Op:
        case ExprKind::Constructor:
          return true;
        case ExprKind::Function:
          return !impure.count(callee.get());
        case ExprKind::GlobalVar: {
          auto it = global_function.find(callee.as<GlobalVar>()->name);
          return it != global_function.end() && !impure.count(it->second);
        }
        case ExprKind::Var: {
          auto it = let_value.find(callee.get());
          if (it == let_value.end()) return false;  // a parameter or a pattern variable: unknown
          callee = it->second;
          continue;
        }
        default:
          return false;
      }
    }
    return false;
  };

  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto &[name, fn] : module.functions()) {
      post_order_visit(fn, [&](const Expr &e) {
        bool effect = false;
        switch (e->kind) {
          case ExprKind::Constant:
          case ExprKind::Var:
          case ExprKind::GlobalVar:
          case ExprKind::Op:
          case ExprKind::Constructor:
            break;
          case ExprKind::Function:
            // Building a closure has no effect; calling it may.
            if (effect_.at(e.as<Function>()->body.get()) && impure.insert(e.get()).second) changed = true;
            break;
          case ExprKind::RefCreate:
          case ExprKind::RefRead:
          case ExprKind::RefWrite:
            effect = true;
            break;
          case ExprKind::Call:
            effect = !pure_to_call(e.as<Call>()->op);
            [[fallthrough]];
          default:
            for (const Expr &o : operands(e)) effect = effect || effect_.at(o.get());
        }
        effect_[e.get()] = effect;
      });
    }
  }
}

bool Effects::effectful(const Expr &e) const {
  auto it = effect_.find(e.get());
  return it == effect_.end() || it->second;
}

// ---------------------------------------------------------------------------------------------
// LetMutator
// ---------------------------------------------------------------------------------------------

Expr LetMutator::mutate(const Expr &root) {
  // The result for `e` if it is already known: a variable's replacement, or a memoized node.
  auto known = [&](const Expr &e) -> std::optional<Expr> {
    if (e.as<Var>()) {
      auto it = var_replacement_.find(e);
      return it == var_replacement_.end() ? e : it->second;
    }
    auto it = memo_.find(e);
    if (it != memo_.end()) return it->second;
    return std::nullopt;
  };
  if (auto r = known(root)) return *r;

  struct Frame {
    Expr e;
    std::vector<Expr> ops, results;
    bool child_in_scope = false;  // the operand being rewritten opened a scope
    bool bound = false;           // Let: bind() was called
    bool dropped = false;         // Let: bind() replaced the variable
  };
  std::vector<Frame> stack;
  auto push = [&](const Expr &e) {
    if (e.as<Let>()) enter_scope();
    stack.push_back(Frame{e, operands(e), {}});
  };
  push(root);
  Expr result;
  while (!stack.empty()) {
    Frame &f = stack.back();
    size_t i = f.results.size();
    if (i < f.ops.size()) {
      if (i == 1 && !f.bound) {
        if (const auto *l = f.e.as<Let>()) {
          f.bound = true;
          if (std::optional<Expr> r = bind(l, f.results[0])) {
            var_replacement_[l->var] = *r;
            f.dropped = true;
          }
        }
      }
      bool scoped = opens_scope(f.e, i);
      if (scoped) enter_scope();
      if (std::optional<Expr> r = known(f.ops[i])) {
        f.results.push_back(*r);
        if (scoped) exit_scope();
        continue;
      }
      f.child_in_scope = scoped;
      Expr child = f.ops[i];
      push(child);  // invalidates f
      continue;
    }
    if (f.dropped) {
      result = f.results[1];
    } else {
      result = rewrite(f.e, with_operands(f.e, f.results));
    }
    memo_.emplace(f.e, result);
    if (f.e.as<Let>()) exit_scope();
    stack.pop_back();
    if (!stack.empty()) {
      Frame &parent = stack.back();
      parent.results.push_back(result);
      if (parent.child_in_scope) {
        parent.child_in_scope = false;
        exit_scope();
      }
    }
  }
  return result;
}

Module map_functions(const Module &module, const std::function<Expr(const std::string &, const Expr &)> &f) {
  Module out;
  for (const TypeData &t : module.types()) out.add_type(t);
  for (const auto &[name, fn] : module.functions()) out.add_function(name, f(name, fn));
  return out;
}

}  // namespace grove::relay
