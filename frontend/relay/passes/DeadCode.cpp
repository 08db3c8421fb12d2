#include "frontend/relay/passes/DeadCode.h"

#include <unordered_map>
#include <unordered_set>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"

namespace grove::relay {

namespace {

// Liveness, lazily through pure bindings (as TVM's UsageVisitor), so that a chain of pure bindings
// used only by a dead binding dies with it in one pass:
//   1. The function is live. A live node makes its operands live, except a Let's value.
//   2. A Let's value is live when it has an effect, or once its variable is used by a live node.
//   3. Both orders happen (the Let before a use of its variable, or a use first through a recursive
//      value), so a pure value waits in `pending` until its variable's first live use.
class Liveness {
 public:
  Liveness(const Expr &function, const Effects &effects) : effects_(effects) {
    push(function);
    while (!work_.empty()) {
      Expr e = std::move(work_.back());
      work_.pop_back();
      visit(e);
    }
  }
  bool live(const Expr &e) const { return live_.count(e.get()); }
  bool used(const Expr &var) const { return used_.count(var.get()); }

 private:
  void push(const Expr &e) {
    if (live_.insert(e.get()).second) work_.push_back(e);
  }
  void visit(const Expr &e) {
    if (e.as<Var>()) {
      if (!used_.insert(e.get()).second) return;
      auto it = pending_.find(e.get());
      if (it != pending_.end()) push(it->second);
      return;
    }
    if (const auto *l = e.as<Let>()) {
      push(l->body);
      if (effects_.effectful(l->value) || used(l->var))
        push(l->value);
      else
        pending_[l->var.get()] = l->value;
      return;
    }
    for (const Expr &o : operands(e)) push(o);
  }

  const Effects &effects_;
  std::vector<Expr> work_;
  std::unordered_set<const ExprNode *> live_, used_;
  std::unordered_map<const ExprNode *, Expr> pending_;
};

class Eliminator : public ExprMutator {
 public:
  Eliminator(const Liveness &liveness, const Effects &effects) : liveness_(liveness), effects_(effects) {}

 protected:
  // Dead subtrees are dropped by their Let; no need to walk them.
  bool descend(const Expr &e) override { return liveness_.live(e); }
  Expr rewrite(const Expr &pre, const Expr &post) override {
    const auto *l = pre.as<Let>();
    if (l && !liveness_.used(l->var) && !effects_.effectful(l->value)) return post.as<Let>()->body;
    return post;
  }

 private:
  const Liveness &liveness_;
  const Effects &effects_;
};

}  // namespace

Module dead_code_elimination(const Module &module) {
  Effects effects(module);
  return map_functions(module, [&](const std::string &, const Expr &fn) {
    Liveness liveness(fn, effects);
    return Eliminator(liveness, effects).mutate(fn);
  });
}

}  // namespace grove::relay
