#pragma once
// What several Relay passes share: an effect analysis (which expressions may touch references) and
// an iterative mutator that lets a pass act between a Let's value and its body (to replace the
// let-bound variable in the body) and at scope boundaries (If branches, Match clauses, Function
// bodies, Let bodies).

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// Which expressions of a module may read, write or create a reference when evaluated (the only
// effects in Relay; op calls have none).
//
//   1. A Function literal is "impure to call" when evaluating its body may have an effect.
//   2. A call has an effect when an argument or the callee expression has one, or when the callee is
//      not known to be pure to call: an Op or a Constructor is pure; a GlobalVar, a Function literal,
//      or a Var let-bound (possibly through aliases) to one of those is as pure as that function;
//      anything else (a parameter, a projection, the result of a call or an `if`) is assumed impure.
//   3. Steps 1 and 2 depend on each other through (mutually) recursive functions: start with every
//      function pure, recompute every node's effect in post order, and repeat until no function
//      becomes impure (impurity only grows, so this terminates; usually after two rounds).
class Effects {
 public:
  explicit Effects(const Module &module);
  // Whether evaluating `e` (a node of the module given to the constructor) may have an effect.
  // Nodes the analysis never saw are assumed effectful.
  bool effectful(const Expr &e) const;

 private:
  std::unordered_map<const ExprNode *, bool> effect_;
};

// The operands of `e` in evaluation order, without binders (a Let's var, a Function's params, a
// pattern's variables): Tuple fields; TupleGetItem tuple; Call op, args; Function body; Let value,
// body; If cond, then, else; Match data, each clause's rhs; RefCreate value; RefRead ref; RefWrite
// ref, value.
std::vector<Expr> operands(const Expr &e);

// `e` rebuilt with `ops` (in operands() order) in place of its operands; `e` itself when none changed.
Expr with_operands(const Expr &e, const std::vector<Expr> &ops);

// Whether operand `i` of `e` is evaluated in a scope of its own: a Function body, an If branch, a
// Match clause's rhs.
bool opens_scope(const Expr &e, size_t i);

// A memoized post-order mutator, iterative (100,000-let chains are fine), with hooks a plain
// ExprMutator lacks:
//   * bind(): called for each Let after its value is rewritten and before its body is; returning an
//     expression drops the binding and replaces every later use of the variable by that expression;
//   * enter_scope() / exit_scope(): around each operand that opens a scope (see opens_scope) and
//     around each whole Let (value and body).
// Variables are never rewritten through rewrite(): a use becomes its replacement from bind(), or
// stays. Every other node is rebuilt from its rewritten operands and handed to rewrite(pre, post).
class LetMutator {
 public:
  virtual ~LetMutator() = default;
  Expr mutate(const Expr &e);

 protected:
  virtual Expr rewrite(const Expr &pre, const Expr &post) { return post; }
  virtual std::optional<Expr> bind(const Let *pre, const Expr &new_value) { return std::nullopt; }
  virtual void enter_scope() {}
  virtual void exit_scope() {}

  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> memo_;
  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> var_replacement_;
};

// Rewrites every global function of `module` with `f` (Function in, Function out), keeping the
// order of definitions and the ADTs.
Module map_functions(const Module &module, const std::function<Expr(const std::string &, const Expr &)> &f);

}  // namespace grove::relay
