#pragma once
// Walking and rewriting Relay expressions without recursion on the C stack.
//
//   * ExprFunctor<R>: strict dispatch on the node kind — every node type is a pure virtual method,
//     so a printer or back end that forgets a node does not compile. It does not recurse by itself.
//   * post_order_visit: every node reachable from an expression, once, children before parents.
//   * ExprMutator: memoized post-order rewriting. Each node is rebuilt once from its rewritten
//     children (the same node when none changed) and handed to rewrite(); a node shared by several
//     parents (graph form) is rewritten once and stays shared.
//
// Both walks keep their own stack, so a chain of 100,000 lets or a 100,000-deep nest of calls is
// fine. "Children" (for_each_child) include binders: a Let's var, a Function's params and the
// variables bound by a Match clause's pattern are visited (and mutated, through the same memo
// table) before the expressions that use them, so replacing a Var replaces it at its binding site
// and at every use consistently.

#include <functional>
#include <unordered_map>
#include <vector>

#include "frontend/relay/IR.h"
#include "support/Error.h"

namespace grove::relay {

template <typename R, typename... Args>
class ExprFunctor {
 public:
  virtual ~ExprFunctor() = default;

  R dispatch(const Expr &e, Args... args) {
    GROVE_CHECK(e.defined(), "dispatching on an undefined Relay expression");
    switch (e->kind) {
#define GROVE_RELAY_DISPATCH(N) \
  case ExprKind::N:             \
    return visit_##N(static_cast<const N *>(e.get()), e, args...);
      GROVE_RELAY_EXPR_NODES(GROVE_RELAY_DISPATCH)
#undef GROVE_RELAY_DISPATCH
    }
    GROVE_CHECK(false, "unknown Relay expression kind");
  }

 protected:
#define GROVE_RELAY_VISIT(N) virtual R visit_##N(const N *op, const Expr &e, Args... args) = 0;
  GROVE_RELAY_EXPR_NODES(GROVE_RELAY_VISIT)
#undef GROVE_RELAY_VISIT
};

// Same for types (types are small: recursion over them is fine).
template <typename R, typename... Args>
class TypeFunctor {
 public:
  virtual ~TypeFunctor() = default;

  R dispatch(const Type &t, Args... args) {
    GROVE_CHECK(t.defined(), "dispatching on an undefined Relay type");
    switch (t->kind) {
#define GROVE_RELAY_DISPATCH(N) \
  case TypeKind::N:             \
    return visit_##N(static_cast<const N *>(t.get()), t, args...);
      GROVE_RELAY_TYPE_NODES(GROVE_RELAY_DISPATCH)
#undef GROVE_RELAY_DISPATCH
    }
    GROVE_CHECK(false, "unknown Relay type kind");
  }

 protected:
#define GROVE_RELAY_VISIT(N) virtual R visit_##N(const N *op, const Type &t, Args... args) = 0;
  GROVE_RELAY_TYPE_NODES(GROVE_RELAY_VISIT)
#undef GROVE_RELAY_VISIT
};

// The variables a pattern binds, left to right.
std::vector<Expr> pattern_vars(const Pattern &p);

// Calls `f` on each child of `e`, in evaluation order, binders first where they bind:
//   Tuple: fields; TupleGetItem: tuple; Call: op, args; Function: params, body;
//   Let: var, value, body; If: cond, then, else; Match: data, then per clause its pattern's
//   variables and its rhs; RefCreate: value; RefRead: ref; RefWrite: ref, value;
//   Constant, Var, GlobalVar, Op, Constructor: none.
void for_each_child(const Expr &e, const std::function<void(const Expr &)> &f);

// The node rebuilt with `children` (in for_each_child's order) in place of its own; returns `e`
// itself when every child is the same node. Span, attributes and annotations are kept.
Expr with_children(const Expr &e, const std::vector<Expr> &children);

// Calls `f` once on every node reachable from `e` (Op and Constructor nodes included), children
// before parents. Iterative.
void post_order_visit(const Expr &e, const std::function<void(const Expr &)> &f);

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  // The rewritten `e` (memoized: the same input node always gives the same result).
  Expr mutate(const Expr &e);

 protected:
  // Called once per node, after its children: `post` is `pre` rebuilt with the rewritten children
  // (`pre` itself when none changed). The default keeps `post`.
  virtual Expr rewrite(const Expr &pre, const Expr &post) { return post; }
  // False leaves `e`'s subtree untouched: its children are not visited, and rewrite(e, e) is
  // called. The default descends everywhere.
  virtual bool descend(const Expr &e) { return true; }

  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> memo_;
};

// Free variables of `e`, in order of first occurrence (binders inside `e` excluded).
std::vector<Expr> free_vars(const Expr &e);
// Global functions `e` refers to (each name once, in order of first occurrence).
std::vector<std::string> called_globals(const Expr &e);

// Replaces Vars by expressions (by node identity) everywhere in `e`.
Expr substitute(const Expr &e, const std::unordered_map<Expr, Expr, ExprHash, ExprEqual> &map);

}  // namespace grove::relay
