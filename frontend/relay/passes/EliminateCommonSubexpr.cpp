#include "frontend/relay/passes/EliminateCommonSubexpr.h"

#include <unordered_map>
#include <unordered_set>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"

namespace grove::relay {

namespace {

bool is_scalar_constant(const Expr &e) {
  const auto *c = e.as<Constant>();
  return c && c->data.defined() && c->data.ndim() == 0;
}

// Two operands are interchangeable when they are the same node, or equal scalar constants.
bool same_operand(const Expr &a, const Expr &b) {
  if (a.same_as(b)) return true;
  return is_scalar_constant(a) && is_scalar_constant(b) &&
         a.as<Constant>()->data.bitwise_equal(b.as<Constant>()->data);
}

size_t operand_hash(const Expr &e) {
  // Scalar constants compare by value, so they hash by dtype only.
  if (is_scalar_constant(e)) return static_cast<size_t>(e.as<Constant>()->data.dtype()) * 7919u;
  return ExprHash()(e);
}

void mix(size_t &h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

// Whether `e` is a candidate for merging: an op call with arguments, a tuple, a projection.
bool mergeable(const Expr &e) {
  if (const auto *c = e.as<Call>()) return c->op.as<Op>() && !c->args.empty();
  return e.as<Tuple>() || e.as<TupleGetItem>();
}

size_t key_of(const Expr &e) {
  size_t h = static_cast<size_t>(e->kind);
  if (const auto *c = e.as<Call>()) {
    mix(h, std::hash<std::string>()(c->op.as<Op>()->name));
    for (const Expr &a : c->args) mix(h, operand_hash(a));
  } else if (const auto *t = e.as<Tuple>()) {
    for (const Expr &f : t->fields) mix(h, operand_hash(f));
  } else if (const auto *g = e.as<TupleGetItem>()) {
    mix(h, operand_hash(g->tuple));
    mix(h, static_cast<size_t>(g->index));
  }
  return h;
}

bool same_operands(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_operand(a[i], b[i])) return false;
  return true;
}

bool equivalent(const Expr &a, const Expr &b) {
  if (a->kind != b->kind) return false;
  if (const auto *ca = a.as<Call>()) {
    const auto *cb = b.as<Call>();
    if (ca->op.as<Op>()->name != cb->op.as<Op>()->name || !(ca->attrs == cb->attrs)) return false;
    if (ca->type_args.size() != cb->type_args.size()) return false;
    for (size_t i = 0; i < ca->type_args.size(); ++i)
      if (!ca->type_args[i].same_as(cb->type_args[i])) return false;
    return same_operands(ca->args, cb->args);
  }
  if (const auto *ta = a.as<Tuple>()) return same_operands(ta->fields, b.as<Tuple>()->fields);
  const auto *ga = a.as<TupleGetItem>();
  const auto *gb = b.as<TupleGetItem>();
  return ga->index == gb->index && same_operand(ga->tuple, gb->tuple);
}

// Nodes with more than one parent (graph form sharing).
std::unordered_set<const ExprNode *> shared_nodes(const Expr &root) {
  std::unordered_map<const ExprNode *, int> parents;
  post_order_visit(root, [&](const Expr &e) {
    for (const Expr &o : operands(e)) ++parents[o.get()];
  });
  std::unordered_set<const ExprNode *> out;
  for (const auto &[n, count] : parents)
    if (count > 1) out.insert(n);
  return out;
}

// 1. Rewrite in post order; each mergeable node, rebuilt from its rewritten operands, is looked up
//    among the candidates of the enclosing scopes: a match replaces it by the candidate's
//    representative, otherwise it becomes a candidate, represented by itself.
// 2. A let whose value became a candidate makes its variable the representative (A-normal form); a
//    let whose value was replaced by an earlier variable is dropped, its variable replaced by that one.
// 3. Scopes (If branches, Match clauses, Function bodies, and each Let, whose variable is visible in
//    its body only) forget the candidates added inside them when they close.
// 4. A node with several parents is not replaced by a let-bound variable: the rewritten node is
//    reused at every parent, some of which may lie outside that variable's scope.
class Eliminator : public LetMutator {
 public:
  explicit Eliminator(const Expr &root) : shared_(shared_nodes(root)) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (!mergeable(post)) return post;
    size_t key = key_of(post);
    auto &bucket = table_[key];
    for (const Entry &c : bucket) {
      if (!equivalent(c.node, post)) continue;
      if (c.representative.as<Var>() && shared_.count(pre.get())) return post;
      return c.representative;
    }
    bucket.push_back(Entry{post, post});
    undo_.push_back(key);
    return post;
  }

  std::optional<Expr> bind(const Let *let, const Expr &value) override {
    if (value.as<Var>() && !let->value.as<Var>()) return value;  // merged with an earlier binding
    // Only an entry added while rewriting this let's value may take its variable (the let's scope
    // was opened before the value, so marks_.back() is that scope's start).
    if (undo_.size() > marks_.back()) {
      auto &bucket = table_[undo_.back()];
      if (!bucket.empty() && bucket.back().node.same_as(value)) bucket.back().representative = let->var;
    }
    return std::nullopt;
  }

  void enter_scope() override { marks_.push_back(undo_.size()); }
  void exit_scope() override {
    size_t mark = marks_.back();
    marks_.pop_back();
    while (undo_.size() > mark) {
      table_[undo_.back()].pop_back();
      undo_.pop_back();
    }
  }

 private:
  struct Entry {
    Expr node;            // the rewritten candidate
    Expr representative;  // what replaces a later equivalent: the node, or the Var bound to it
  };
  std::unordered_set<const ExprNode *> shared_;
  std::unordered_map<size_t, std::vector<Entry>> table_;
  std::vector<size_t> undo_;   // keys of the entries added, in order
  std::vector<size_t> marks_;  // undo_.size() at each open scope
};

}  // namespace

Module eliminate_common_subexpr(const Module &module) {
  return map_functions(module, [](const std::string &, const Expr &fn) { return Eliminator(fn).mutate(fn); });
}

}  // namespace grove::relay
