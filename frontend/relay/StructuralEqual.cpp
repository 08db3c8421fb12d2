#include "frontend/relay/StructuralEqual.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "frontend/relay/Printer.h"
#include "frontend/relay/Visitor.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// ---------------------------------------------------------------------------------------------
// Children with their place in a path and whether they bind
// ---------------------------------------------------------------------------------------------

// One child of an expression, labelled for paths: `.field`, `.field[index]`, `.field[index]suffix`.
struct Child {
  const Expr *expr;
  const char *field;
  int index = -1;
  const char *suffix = nullptr;
  bool binds = false;  // a binder: a Function parameter or a Let variable
};

// The children both walks visit, in one order (binders before the expressions in their scope).
// Pattern variables are bound by the Match itself (see the walks), types and attributes are
// node-local.
void children_of(const Expr &e, std::vector<Child> &out) {
  out.clear();
  switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
      return;
    case ExprKind::Tuple: {
      const auto *n = e.as<Tuple>();
      for (size_t i = 0; i < n->fields.size(); ++i)
        out.push_back({&n->fields[i], "fields", static_cast<int>(i)});
      return;
    }
    case ExprKind::TupleGetItem:
      out.push_back({&e.as<TupleGetItem>()->tuple, "tuple"});
      return;
    case ExprKind::Call: {
      const auto *n = e.as<Call>();
      out.push_back({&n->op, "op"});
      for (size_t i = 0; i < n->args.size(); ++i) out.push_back({&n->args[i], "args", static_cast<int>(i)});
      return;
    }
    case ExprKind::Function: {
      const auto *n = e.as<Function>();
      for (size_t i = 0; i < n->params.size(); ++i) {
        out.push_back({&n->params[i], "params", static_cast<int>(i), nullptr, true});
      }
      out.push_back({&n->body, "body"});
      return;
    }
    case ExprKind::Let: {
      const auto *n = e.as<Let>();
      out.push_back({&n->var, "var", -1, nullptr, true});
      out.push_back({&n->value, "value"});
      out.push_back({&n->body, "body"});
      return;
    }
    case ExprKind::If: {
      const auto *n = e.as<If>();
      out.push_back({&n->cond, "cond"});
      out.push_back({&n->then_branch, "then_branch"});
      out.push_back({&n->else_branch, "else_branch"});
      return;
    }
    case ExprKind::Match: {
      const auto *n = e.as<Match>();
      out.push_back({&n->data, "data"});
      for (size_t i = 0; i < n->clauses.size(); ++i) {
        out.push_back({&n->clauses[i].rhs, "clauses", static_cast<int>(i), ".rhs"});
      }
      return;
    }
    case ExprKind::RefCreate:
      out.push_back({&e.as<RefCreate>()->value, "value"});
      return;
    case ExprKind::RefRead:
      out.push_back({&e.as<RefRead>()->ref, "ref"});
      return;
    case ExprKind::RefWrite: {
      const auto *n = e.as<RefWrite>();
      out.push_back({&n->ref, "ref"});
      out.push_back({&n->value, "value"});
      return;
    }
  }
  GROVE_CHECK(false, "unknown Relay expression kind");
}

// ---------------------------------------------------------------------------------------------
// Paths, kept as a tree of steps so that a 100,000-deep walk does not copy long strings
// ---------------------------------------------------------------------------------------------

// One step: `.field`, `.field[index]` or `.field[index]suffix` below its parent step.
struct PathStep {
  int parent;  // -1 below the root
  const char *field;
  int index;
  const char *suffix;
};

class PathTree {
 public:
  explicit PathTree(std::string root) : root_(std::move(root)) {}
  int add(int parent, const Child &c) {
    steps_.push_back({parent, c.field, c.index, c.suffix});
    return static_cast<int>(steps_.size()) - 1;
  }
  // The path to `step` (-1: the root); a run of one label repeated (a let chain's `.body.body...`)
  // is shortened to `(.body)*N`.
  std::string render(int step, const std::string &tail) const {
    std::vector<std::string> labels;
    for (int s = step; s >= 0; s = steps_[s].parent) labels.push_back(label(steps_[s]));
    std::reverse(labels.begin(), labels.end());
    std::string out = root_;
    for (size_t i = 0; i < labels.size();) {
      size_t j = i;
      while (j < labels.size() && labels[j] == labels[i]) ++j;
      if (j - i > 3) {
        out += fmt::format("({})*{}", labels[i], j - i);
      } else {
        for (size_t k = i; k < j; ++k) out += labels[k];
      }
      i = j;
    }
    return out + tail;
  }

 private:
  static std::string label(const PathStep &s) {
    std::string out = std::string(".") + s.field;
    if (s.index >= 0) out += fmt::format("[{}]", s.index);
    if (s.suffix) out += s.suffix;
    return out;
  }

  std::string root_;
  std::vector<PathStep> steps_;
};

constexpr size_t kMaxShown = 240;

std::string clip(std::string s) {
  if (s.size() > kMaxShown) s = s.substr(0, kMaxShown) + " ...";
  return s;
}
std::string show(const Expr &e) {
  if (!e.defined()) return "<none>";
  if (const auto *v = e.as<Var>()) {
    return clip("%" + v->name_hint +
                (v->type_annotation.defined() ? ": " + to_string(v->type_annotation) : ""));
  }
  // Without print_expr's `free_var` declarations: the variables are shown where they are used.
  std::string text = print_expr(e);
  while (text.rfind("free_var ", 0) == 0 && text.find('\n') != std::string::npos)
    text.erase(0, text.find('\n') + 1);
  return clip(text);
}
std::string show(const Type &t) { return t.defined() ? clip(to_string(t)) : "<none>"; }
std::string show(const Attrs &a) {
  std::string s = "{";
  for (const auto &[name, value] : a.entries()) {
    if (s.size() > 1) s += ", ";
    s += name + "=" + print_attr_value(value);
  }
  return clip(s + "}");
}

// ---------------------------------------------------------------------------------------------
// Equality
// ---------------------------------------------------------------------------------------------

// A difference found inside a node: the path below the node, and both sides printed.
struct Difference {
  std::string tail;
  std::string lhs, rhs;
};

// A one-to-one pairing of nodes (variables, type variables).
template <typename Node>
class Bijection {
 public:
  // Whether a and b may be paired: each is either unpaired or paired with the other. Pairs them.
  bool pair(const Node *a, const Node *b) {
    auto ia = l2r_.find(a);
    auto ib = r2l_.find(b);
    if (ia != l2r_.end() || ib != r2l_.end()) {
      return ia != l2r_.end() && ib != r2l_.end() && ia->second == b;
    }
    l2r_.emplace(a, b);
    r2l_.emplace(b, a);
    return true;
  }
  // The partner of a (or null), and whether b is paired with anything.
  const Node *partner_of(const Node *a) const {
    auto it = l2r_.find(a);
    return it == l2r_.end() ? nullptr : it->second;
  }
  bool has_rhs(const Node *b) const { return r2l_.count(b) != 0; }
  void unpair(const Node *a, const Node *b) {
    l2r_.erase(a);
    r2l_.erase(b);
  }

 private:
  std::unordered_map<const Node *, const Node *> l2r_, r2l_;
};

struct PairHash {
  size_t operator()(const std::pair<const void *, const void *> &p) const {
    return std::hash<const void *>()(p.first) * 31 + std::hash<const void *>()(p.second);
  }
};

// Compares expressions with the iterative algorithm:
//   1. A work stack holds pairs (lhs, rhs, path step). Popping a pair already compared skips it:
//      compared pairs are memoized, so shared subgraphs are compared once. Any difference ends the
//      whole comparison, so a pair that is still being compared can be assumed equal.
//   2. Node-local parts are compared at once: kind, names, constants, attributes, types, and the
//      binders a node introduces (a Function's parameters and type parameters, a Let's variable, a
//      Match's pattern variables), which are paired with their counterparts, annotations compared.
//   3. A node that paired binders pushes a task that unpairs them, then its children, in reverse,
//      so that children are compared in children_of's order and the binders stay paired exactly
//      while the node's subtree is compared. A shared binder (a Let in graph form reached twice)
//      may thus pair with a different counterpart each time, so sharing never matters.
//   4. A variable use must be paired with its counterpart; a free one is paired for good on first
//      meeting (map_free_vars) or must be the very same node.
class ExprComparer {
 public:
  explicit ExprComparer(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  // Compares a and b, with `root` naming them in paths (e.g. "@main").
  // Tasks point at the Expr handles inside the nodes (or at a and b), which outlive the walk.
  EqualResult compare(const Expr &a, const Expr &b, const std::string &root) {
    PathTree paths(root);
    std::vector<Task> stack{{&a, &b, -1, false, -1}};
    std::vector<Child> ca, cb;
    while (!stack.empty()) {
      const Task task = stack.back();
      stack.pop_back();
      if (task.unbind >= 0) {
        for (const auto &[x, y] : scopes_[task.unbind].vars) vars_.unpair(x, y);
        for (const auto &[x, y] : scopes_[task.unbind].types) type_vars_.unpair(x, y);
        continue;
      }
      const Expr &lhs = *task.lhs, &rhs = *task.rhs;
      if (!lhs.defined() || !rhs.defined()) {
        if (lhs.defined() != rhs.defined()) return fail(paths, task.step, {"", show(lhs), show(rhs)});
        continue;
      }
      if (!task.binds && !compared_.insert({lhs.get(), rhs.get()}).second) continue;
      if (auto d = compare_local(lhs, rhs, task.binds)) return fail(paths, task.step, *d);
      // 3. The binders this pair introduced are unpaired once its subtree is compared.
      if (!bound_.vars.empty() || !bound_.types.empty()) {
        scopes_.push_back(std::move(bound_));
        bound_ = {};
        stack.push_back({nullptr, nullptr, -1, false, static_cast<int>(scopes_.size()) - 1});
      }
      children_of(lhs, ca);
      children_of(rhs, cb);
      GROVE_CHECK(ca.size() == cb.size(), "equal-looking {} nodes with {} and {} children",
                  to_string(lhs->kind), ca.size(), cb.size());
      for (size_t i = ca.size(); i-- > 0;) {
        stack.push_back({ca[i].expr, cb[i].expr, paths.add(task.step, ca[i]), ca[i].binds, -1});
      }
    }
    return {};
  }

  // Types outside expressions (module type definitions): `root` names them in paths.
  EqualResult compare_type(const Type &a, const Type &b, const std::string &root) {
    if (auto d = types(a, b)) return {false, root + d->tail, d->lhs, d->rhs};
    return {};
  }
  // Pairs the type parameters of an ADT for its constructors' input types, until unbind_type_vars().
  std::optional<Difference> bind_type_vars(const std::vector<Type> &a, const std::vector<Type> &b) {
    return bind_params(a, b, ".type_vars");
  }
  void unbind_type_vars() {
    for (const auto &[x, y] : bound_.types) type_vars_.unpair(x, y);
    bound_.types.clear();
  }

 private:
  struct Task {
    const Expr *lhs, *rhs;
    int step;
    bool binds;
    int unbind;  // >= 0: the task only unpairs scopes_[unbind] (the end of a binder's scope)
  };
  // Pairs made by one node's binders.
  struct Scope {
    std::vector<std::pair<const ExprNode *, const ExprNode *>> vars;
    std::vector<std::pair<const TypeNode *, const TypeNode *>> types;
  };

  static EqualResult fail(const PathTree &paths, int step, const Difference &d) {
    return {false, paths.render(step, d.tail), d.lhs, d.rhs};
  }

  std::optional<Difference> differ(const std::string &tail, std::string lhs, std::string rhs) {
    return Difference{tail, std::move(lhs), std::move(rhs)};
  }

  // 2. The node-local parts of a pair.
  std::optional<Difference> compare_local(const Expr &a, const Expr &b, bool binds) {
    if (a->kind != b->kind) return differ("", show(a), show(b));
    switch (a->kind) {
      case ExprKind::Constant:
        if (!a.as<Constant>()->data.bitwise_equal(b.as<Constant>()->data))
          return differ("", show(a), show(b));
        return std::nullopt;
      case ExprKind::Var:
        return vars(a, b, binds);
      case ExprKind::GlobalVar:
        if (a.as<GlobalVar>()->name != b.as<GlobalVar>()->name) return differ("", show(a), show(b));
        return std::nullopt;
      case ExprKind::Op:
        if (a.as<Op>()->name != b.as<Op>()->name) return differ("", show(a), show(b));
        return std::nullopt;
      case ExprKind::Constructor:
        if (a.as<Constructor>()->name != b.as<Constructor>()->name) return differ("", show(a), show(b));
        return std::nullopt;
      case ExprKind::Tuple:
        if (a.as<Tuple>()->fields.size() != b.as<Tuple>()->fields.size()) {
          return differ(".fields", fmt::format("{} fields", a.as<Tuple>()->fields.size()),
                        fmt::format("{} fields", b.as<Tuple>()->fields.size()));
        }
        return std::nullopt;
      case ExprKind::TupleGetItem:
        if (a.as<TupleGetItem>()->index != b.as<TupleGetItem>()->index) {
          return differ(".index", std::to_string(a.as<TupleGetItem>()->index),
                        std::to_string(b.as<TupleGetItem>()->index));
        }
        return std::nullopt;
      case ExprKind::Call:
        return calls(a.as<Call>(), b.as<Call>());
      case ExprKind::Function:
        return functions(a.as<Function>(), b.as<Function>());
      case ExprKind::Let:
        if (auto d = vars(a.as<Let>()->var, b.as<Let>()->var, true)) {
          return differ(".var" + d->tail, d->lhs, d->rhs);
        }
        return std::nullopt;
      case ExprKind::If:
      case ExprKind::RefCreate:
      case ExprKind::RefRead:
      case ExprKind::RefWrite:
        return std::nullopt;
      case ExprKind::Match:
        return matches(a.as<Match>(), b.as<Match>());
    }
    GROVE_CHECK(false, "unknown Relay expression kind");
  }

  std::optional<Difference> vars(const Expr &a, const Expr &b, bool binds) {
    const ExprNode *pa = a.get(), *pb = b.get();
    if (const ExprNode *partner = vars_.partner_of(pa)) {
      if (partner == pb) return std::nullopt;
      return differ("", show(a), show(b));
    }
    if (vars_.has_rhs(pb)) return differ("", show(a), show(b));
    // Unpaired on both sides: a binder, or a free variable met for the first time.
    if (!binds && !map_free_vars_ && pa != pb) return differ("", show(a), show(b));
    if (auto d = types(a.as<Var>()->type_annotation, b.as<Var>()->type_annotation)) {
      return differ(".type_annotation" + d->tail, d->lhs, d->rhs);
    }
    vars_.pair(pa, pb);
    if (binds) bound_.vars.emplace_back(pa, pb);
    return std::nullopt;
  }

  std::optional<Difference> calls(const Call *a, const Call *b) {
    if (a->args.size() != b->args.size()) {
      return differ(".args", fmt::format("{} arguments", a->args.size()),
                    fmt::format("{} arguments", b->args.size()));
    }
    if (!(a->attrs == b->attrs)) return differ(".attrs", show(a->attrs), show(b->attrs));
    if (auto d = type_lists(a->type_args, b->type_args, ".type_args")) return d;
    return std::nullopt;
  }

  std::optional<Difference> functions(const Function *a, const Function *b) {
    if (a->params.size() != b->params.size()) {
      return differ(".params", fmt::format("{} parameters", a->params.size()),
                    fmt::format("{} parameters", b->params.size()));
    }
    if (auto d = bind_params(a->type_params, b->type_params, ".type_params")) return d;
    if (!(a->attrs == b->attrs)) return differ(".attrs", show(a->attrs), show(b->attrs));
    if (auto d = types(a->ret_type, b->ret_type)) return differ(".ret_type" + d->tail, d->lhs, d->rhs);
    for (size_t i = 0; i < a->params.size(); ++i) {
      if (auto d = vars(a->params[i], b->params[i], true)) {
        return differ(fmt::format(".params[{}]{}", i, d->tail), d->lhs, d->rhs);
      }
    }
    return std::nullopt;
  }

  std::optional<Difference> matches(const Match *a, const Match *b) {
    if (a->complete != b->complete) {
      return differ(".complete", a->complete ? "match" : "match?", b->complete ? "match" : "match?");
    }
    if (a->clauses.size() != b->clauses.size()) {
      return differ(".clauses", fmt::format("{} clauses", a->clauses.size()),
                    fmt::format("{} clauses", b->clauses.size()));
    }
    for (size_t i = 0; i < a->clauses.size(); ++i) {
      if (auto d = patterns(a->clauses[i].lhs, b->clauses[i].lhs)) {
        return differ(fmt::format(".clauses[{}].lhs{}", i, d->tail), d->lhs, d->rhs);
      }
    }
    return std::nullopt;
  }

  // Patterns nest as deep as they are written: recursion is fine. Pattern variables are bound here.
  std::optional<Difference> patterns(const Pattern &a, const Pattern &b) {
    auto describe = [](const Pattern &p) -> std::string {
      switch (p->kind) {
        case PatternKind::Wildcard:
          return "_";
        case PatternKind::Var:
          return show(p->var);
        case PatternKind::Constructor:
          return p->constructor.as<Constructor>()->name + "(...)";
        case PatternKind::Tuple:
          return "(...)";
      }
      return "?";
    };
    if (a->kind != b->kind) return differ("", describe(a), describe(b));
    switch (a->kind) {
      case PatternKind::Wildcard:
        return std::nullopt;
      case PatternKind::Var:
        if (auto d = vars(a->var, b->var, true)) return d;
        return std::nullopt;
      case PatternKind::Constructor:
        if (a->constructor.as<Constructor>()->name != b->constructor.as<Constructor>()->name) {
          return differ("", describe(a), describe(b));
        }
        break;
      case PatternKind::Tuple:
        break;
    }
    if (a->patterns.size() != b->patterns.size()) {
      return differ(".patterns", fmt::format("{} patterns", a->patterns.size()),
                    fmt::format("{} patterns", b->patterns.size()));
    }
    for (size_t i = 0; i < a->patterns.size(); ++i) {
      if (auto d = patterns(a->patterns[i], b->patterns[i])) {
        return differ(fmt::format(".patterns[{}]{}", i, d->tail), d->lhs, d->rhs);
      }
    }
    return std::nullopt;
  }

  // Pairs type parameters, recording the new pairs in bound_ for the end of their scope.
  std::optional<Difference> bind_params(const std::vector<Type> &a, const std::vector<Type> &b,
                                        const char *field) {
    if (a.size() != b.size()) {
      return differ(field, fmt::format("{} type parameters", a.size()),
                    fmt::format("{} type parameters", b.size()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      const bool was_paired = type_vars_.partner_of(a[i].get()) != nullptr;
      if (!type_vars_.pair(a[i].get(), b[i].get())) {
        return differ(fmt::format("{}[{}]", field, i), show(a[i]), show(b[i]));
      }
      if (!was_paired) bound_.types.emplace_back(a[i].get(), b[i].get());
    }
    return std::nullopt;
  }

  std::optional<Difference> type_lists(const std::vector<Type> &a, const std::vector<Type> &b,
                                       const char *field) {
    if (a.size() != b.size()) {
      return differ(field, fmt::format("{} types", a.size()), fmt::format("{} types", b.size()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (auto d = types(a[i], b[i]))
        return differ(fmt::format("{}[{}]{}", field, i, d->tail), d->lhs, d->rhs);
    }
    return std::nullopt;
  }

  // Types are small: recursion over them is fine. A FuncType's type parameters are bound only
  // inside it, so the same polymorphic type written twice pairs with one written once.
  std::optional<Difference> types(const Type &a, const Type &b) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() != b.defined()) return differ("", show(a), show(b));
      return std::nullopt;
    }
    if (a->kind != b->kind) return differ("", show(a), show(b));
    switch (a->kind) {
      case TypeKind::TensorType: {
        const auto *x = a.as<TensorType>(), *y = b.as<TensorType>();
        if (x->dtype != y->dtype || x->shape != y->shape) return differ("", show(a), show(b));
        return std::nullopt;
      }
      case TypeKind::TupleType:
        return type_lists(a.as<TupleType>()->fields, b.as<TupleType>()->fields, ".fields");
      case TypeKind::FuncType: {
        const auto *x = a.as<FuncType>(), *y = b.as<FuncType>();
        if (x->type_params.size() != y->type_params.size()) {
          return differ(".type_params", show(a), show(b));
        }
        std::vector<size_t> bound;  // the parameters this FuncType paired, unpaired on the way out
        std::optional<Difference> d;
        for (size_t i = 0; i < x->type_params.size() && !d; ++i) {
          const bool was_paired = type_vars_.partner_of(x->type_params[i].get()) != nullptr;
          if (!type_vars_.pair(x->type_params[i].get(), y->type_params[i].get())) {
            d = differ(fmt::format(".type_params[{}]", i), show(x->type_params[i]), show(y->type_params[i]));
          } else if (!was_paired) {
            bound.push_back(i);
          }
        }
        if (!d) d = type_lists(x->arg_types, y->arg_types, ".arg_types");
        if (!d) {
          if (auto r = types(x->ret_type, y->ret_type)) d = differ(".ret_type" + r->tail, r->lhs, r->rhs);
        }
        for (size_t i : bound) type_vars_.unpair(x->type_params[i].get(), y->type_params[i].get());
        return d;
      }
      case TypeKind::RefType:
        if (auto d = types(a.as<RefType>()->value, b.as<RefType>()->value)) {
          return differ(".value" + d->tail, d->lhs, d->rhs);
        }
        return std::nullopt;
      case TypeKind::TypeVar:
      case TypeKind::IncompleteType: {
        const TypeNode *pa = a.get(), *pb = b.get();
        if (const TypeNode *partner = type_vars_.partner_of(pa)) {
          if (partner == pb) return std::nullopt;
          return differ("", show(a), show(b));
        }
        if (type_vars_.has_rhs(pb) || (!map_free_vars_ && pa != pb)) return differ("", show(a), show(b));
        type_vars_.pair(pa, pb);
        return std::nullopt;
      }
      case TypeKind::GlobalTypeVar:
        if (a.as<GlobalTypeVar>()->name != b.as<GlobalTypeVar>()->name) return differ("", show(a), show(b));
        return std::nullopt;
      case TypeKind::TypeCall: {
        const auto *x = a.as<TypeCall>(), *y = b.as<TypeCall>();
        if (auto d = types(x->func, y->func)) return differ(".func" + d->tail, d->lhs, d->rhs);
        return type_lists(x->args, y->args, ".args");
      }
    }
    GROVE_CHECK(false, "unknown Relay type kind");
  }

  bool map_free_vars_;
  Bijection<ExprNode> vars_;
  Bijection<TypeNode> type_vars_;
  std::unordered_set<std::pair<const void *, const void *>, PairHash> compared_;
  Scope bound_;                // what the node being compared binds
  std::vector<Scope> scopes_;  // what the open scopes bound, for their unbind tasks
};

// ---------------------------------------------------------------------------------------------
// Hashing
// ---------------------------------------------------------------------------------------------

size_t combine(size_t seed, size_t value) {
  // boost::hash_combine's mixing, widened.
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}
size_t hash_string(const std::string &s) { return std::hash<std::string>()(s); }

size_t hash_attr_value(const AttrValue &v) {
  size_t h = combine(0x41, static_cast<size_t>(v.kind));
  switch (v.kind) {
    case AttrValue::Kind::None:
      return h;
    case AttrValue::Kind::Int:
      return combine(h, std::hash<int64_t>()(v.i));
    case AttrValue::Kind::Float:
      return combine(h, std::hash<double>()(v.f));
    case AttrValue::Kind::Bool:
      return combine(h, v.b);
    case AttrValue::Kind::String:
      return combine(h, hash_string(v.s));
    case AttrValue::Kind::List:
      for (const AttrValue &item : v.list) h = combine(h, hash_attr_value(item));
      return h;
  }
  return h;
}

// Order-insensitive, as Attrs equality is.
size_t hash_attrs(const Attrs &attrs) {
  size_t sum = 0;
  for (const auto &[name, value] : attrs.entries()) sum += combine(hash_string(name), hash_attr_value(value));
  return combine(0x5a, sum);
}

// Hashes by the iterative algorithm:
//   1. Each node's hash combines its kind, its node-local parts and its children's hashes, and is
//      memoized per node: a DAG is hashed in time linear in its nodes.
//   2. A bound variable hashes as where its binder puts it, which does not depend on the context
//      (so a memoized hash stays right however the node is shared): parameter i of a function, the
//      variable of a let, variable i of a pattern; with its annotation. Binders are hashed before
//      the nodes they scope (prepare()). Different variables may hash alike; equal ones always do.
//   3. A free variable is numbered in the order first met (map_free_vars), or hashes as its address.
//   4. A type variable bound by a FuncType hashes as its depth inside the type, a function's type
//      parameter as its position, others like free variables.
class Hasher {
 public:
  explicit Hasher(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  size_t hash(const Expr &root) {
    struct Frame {
      const Expr *e;  // a handle inside a node (or root), which outlives the walk
      bool expanded;
    };
    std::vector<Frame> stack{{&root, false}};
    std::vector<Child> children;
    while (!stack.empty()) {
      const Frame f = stack.back();
      const Expr &e = *f.e;
      if (!e.defined() || memo_.count(e.get())) {
        stack.pop_back();
        continue;
      }
      if (!f.expanded) {
        stack.back().expanded = true;
        if (const auto *v = e.as<Var>()) {
          memo_[e.get()] = free_var_hash(e, v);
          stack.pop_back();
          continue;
        }
        prepare(e);
        children_of(e, children);
        for (size_t i = children.size(); i-- > 0;) stack.push_back({children[i].expr, false});
        continue;
      }
      stack.pop_back();
      size_t h = local_hash(e);
      children_of(e, children);
      for (const Child &c : children) h = combine(h, c.expr->defined() ? memo_.at(c.expr->get()) : 0x17);
      memo_[e.get()] = h;
    }
    return root.defined() ? memo_.at(root.get()) : 0x17;
  }

  size_t type_hash(const Type &t) {
    std::vector<const TypeNode *> scope;
    return type_hash(t, scope);
  }

 private:
  // 3. A variable met before any binder of it: free.
  size_t free_var_hash(const Expr &e, const Var *v) {
    size_t h = combine(0x7a, type_hash(v->type_annotation));
    if (!map_free_vars_) return combine(h, std::hash<const void *>()(e.get()));
    return combine(h, free_numbers_++);
  }

  // 2. Hashes the variables a node binds, before its children (binders and uses) are hashed.
  void prepare(const Expr &e) {
    auto bind = [&](const Expr &v, size_t binder, size_t position) {
      // A variable bound at two places (ill-formed) keeps its first hash.
      if (memo_.count(v.get())) return;
      memo_[v.get()] =
          combine(combine(combine(0x62, binder), position), type_hash(v.as<Var>()->type_annotation));
    };
    if (const auto *f = e.as<Function>()) {
      // Type parameters first: the parameters' annotations may use them.
      for (size_t i = 0; i < f->type_params.size(); ++i) function_type_params_[f->type_params[i].get()] = i;
      for (size_t i = 0; i < f->params.size(); ++i) bind(f->params[i], 1, i);
    } else if (const auto *l = e.as<Let>()) {
      bind(l->var, 2, 0);
    } else if (const auto *m = e.as<Match>()) {
      for (const Clause &c : m->clauses) {
        std::vector<Expr> vars = pattern_vars(c.lhs);
        for (size_t i = 0; i < vars.size(); ++i) bind(vars[i], 3, i);
      }
    }
  }

  size_t local_hash(const Expr &e) {
    size_t h = combine(0x3c, static_cast<size_t>(e->kind));
    switch (e->kind) {
      case ExprKind::Constant: {
        const NDArray &data = e.as<Constant>()->data;
        h = combine(h, static_cast<size_t>(data.dtype()));
        for (int64_t d : data.shape()) h = combine(h, std::hash<int64_t>()(d));
        if (data.defined()) {
          h = combine(h, std::hash<std::string_view>()(
                             std::string_view(reinterpret_cast<const char *>(data.raw()), data.nbytes())));
        }
        return h;
      }
      case ExprKind::Var:
        GROVE_CHECK(false, "Vars are hashed before their parents");
      case ExprKind::GlobalVar:
        return combine(h, hash_string(e.as<GlobalVar>()->name));
      case ExprKind::Op:
        return combine(h, hash_string(e.as<Op>()->name));
      case ExprKind::Constructor:
        return combine(h, hash_string(e.as<Constructor>()->name));
      case ExprKind::Tuple:
        return combine(h, e.as<Tuple>()->fields.size());
      case ExprKind::TupleGetItem:
        return combine(h, static_cast<size_t>(e.as<TupleGetItem>()->index));
      case ExprKind::Call: {
        const auto *c = e.as<Call>();
        h = combine(combine(h, c->args.size()), hash_attrs(c->attrs));
        for (const Type &t : c->type_args) h = combine(h, type_hash(t));
        return h;
      }
      case ExprKind::Function: {
        const auto *f = e.as<Function>();
        h = combine(combine(h, f->params.size()), f->type_params.size());
        return combine(combine(h, hash_attrs(f->attrs)), type_hash(f->ret_type));
      }
      case ExprKind::Match: {
        const auto *m = e.as<Match>();
        h = combine(combine(h, m->complete), m->clauses.size());
        for (const Clause &c : m->clauses) h = combine(h, pattern_hash(c.lhs));
        return h;
      }
      case ExprKind::Let:
      case ExprKind::If:
      case ExprKind::RefCreate:
      case ExprKind::RefRead:
      case ExprKind::RefWrite:
        return h;
    }
    GROVE_CHECK(false, "unknown Relay expression kind");
  }

  // Pattern variables were numbered by prepare(), before the clauses that use them.
  size_t pattern_hash(const Pattern &p) {
    size_t h = combine(0x50, static_cast<size_t>(p->kind));
    switch (p->kind) {
      case PatternKind::Wildcard:
        return h;
      case PatternKind::Var:
        return combine(h, memo_.at(p->var.get()));
      case PatternKind::Constructor:
        h = combine(h, hash_string(p->constructor.as<Constructor>()->name));
        break;
      case PatternKind::Tuple:
        break;
    }
    for (const Pattern &q : p->patterns) h = combine(h, pattern_hash(q));
    return h;
  }

  size_t type_hash(const Type &t, std::vector<const TypeNode *> &scope) {
    if (!t.defined()) return 0x2b;
    size_t h = combine(0x71, static_cast<size_t>(t->kind));
    switch (t->kind) {
      case TypeKind::TensorType: {
        const auto *x = t.as<TensorType>();
        h = combine(h, static_cast<size_t>(x->dtype));
        for (int64_t d : x->shape) h = combine(h, std::hash<int64_t>()(d));
        return h;
      }
      case TypeKind::TupleType:
        for (const Type &f : t.as<TupleType>()->fields) h = combine(h, type_hash(f, scope));
        return combine(h, t.as<TupleType>()->fields.size());
      case TypeKind::FuncType: {
        const auto *x = t.as<FuncType>();
        for (const Type &tp : x->type_params) scope.push_back(tp.get());
        h = combine(h, x->type_params.size());
        for (const Type &a : x->arg_types) h = combine(h, type_hash(a, scope));
        h = combine(combine(h, x->arg_types.size()), type_hash(x->ret_type, scope));
        scope.resize(scope.size() - x->type_params.size());
        return h;
      }
      case TypeKind::RefType:
        return combine(h, type_hash(t.as<RefType>()->value, scope));
      case TypeKind::TypeVar:
      case TypeKind::IncompleteType: {
        for (size_t i = scope.size(); i-- > 0;) {
          if (scope[i] == t.get()) return combine(combine(h, 1), scope.size() - 1 - i);
        }
        if (auto it = function_type_params_.find(t.get()); it != function_type_params_.end()) {
          return combine(combine(h, 3), it->second);
        }
        if (!map_free_vars_) return combine(h, std::hash<const void *>()(t.get()));
        auto [it, inserted] = free_type_numbers_.emplace(t.get(), free_type_numbers_.size());
        return combine(combine(h, 2), it->second);
      }
      case TypeKind::GlobalTypeVar:
        return combine(h, hash_string(t.as<GlobalTypeVar>()->name));
      case TypeKind::TypeCall: {
        const auto *x = t.as<TypeCall>();
        h = combine(h, type_hash(x->func, scope));
        for (const Type &a : x->args) h = combine(h, type_hash(a, scope));
        return combine(h, x->args.size());
      }
    }
    GROVE_CHECK(false, "unknown Relay type kind");
  }

  bool map_free_vars_;
  std::unordered_map<const ExprNode *, size_t> memo_;
  size_t free_numbers_ = 0;
  std::unordered_map<const TypeNode *, size_t> function_type_params_;  // position in their function
  std::unordered_map<const TypeNode *, size_t> free_type_numbers_;
};

}  // namespace

EqualResult structural_equal(const Expr &a, const Expr &b, bool map_free_vars) {
  return ExprComparer(map_free_vars).compare(a, b, "");
}

EqualResult structural_equal(const Type &a, const Type &b) {
  return ExprComparer(true).compare_type(a, b, "");
}

EqualResult structural_equal(const Module &a, const Module &b, bool map_free_vars) {
  ExprComparer comparer(map_free_vars);
  // 1. The same type definitions, by name; each one's parameters bound for its constructors.
  for (const TypeData &ta : a.types()) {
    const std::string name = ta.header.as<GlobalTypeVar>()->name;
    const std::string root = "type " + name;
    const TypeData *tb = b.find_type(name);
    if (!tb) return {false, root, "type " + name + " {...}", "<missing>"};
    if (ta.type_vars.size() != tb->type_vars.size()) {
      return {false, root + ".type_vars", fmt::format("{} type parameters", ta.type_vars.size()),
              fmt::format("{} type parameters", tb->type_vars.size())};
    }
    if (auto d = comparer.bind_type_vars(ta.type_vars, tb->type_vars)) {
      return {false, root + d->tail, d->lhs, d->rhs};
    }
    if (ta.constructors.size() != tb->constructors.size()) {
      return {false, root + ".constructors", fmt::format("{} constructors", ta.constructors.size()),
              fmt::format("{} constructors", tb->constructors.size())};
    }
    for (size_t i = 0; i < ta.constructors.size(); ++i) {
      const auto *ca = ta.constructors[i].as<Constructor>(), *cb = tb->constructors[i].as<Constructor>();
      const std::string at = fmt::format("{}.constructors[{}]", root, i);
      if (ca->name != cb->name || ca->inputs.size() != cb->inputs.size()) {
        return {false, at, fmt::format("{} with {} fields", ca->name, ca->inputs.size()),
                fmt::format("{} with {} fields", cb->name, cb->inputs.size())};
      }
      for (size_t j = 0; j < ca->inputs.size(); ++j) {
        EqualResult r =
            comparer.compare_type(ca->inputs[j], cb->inputs[j], fmt::format("{}.inputs[{}]", at, j));
        if (!r.equal) return r;
      }
    }
    comparer.unbind_type_vars();
  }
  for (const TypeData &tb : b.types()) {
    const std::string name = tb.header.as<GlobalTypeVar>()->name;
    if (!a.find_type(name)) return {false, "type " + name, "<missing>", "type " + name + " {...}"};
  }
  // 2. The same global functions, by name, compared pairwise.
  for (const auto &[name, fa] : a.functions()) {
    const Expr *fb = b.find_function(name);
    if (!fb) return {false, "@" + name, "def @" + name + "(...)", "<missing>"};
    EqualResult r = comparer.compare(fa, *fb, "@" + name);
    if (!r.equal) return r;
  }
  for (const auto &[name, fb] : b.functions()) {
    if (!a.find_function(name)) return {false, "@" + name, "<missing>", "def @" + name + "(...)"};
  }
  return {};
}

size_t structural_hash(const Expr &e, bool map_free_vars) { return Hasher(map_free_vars).hash(e); }

size_t structural_hash(const Type &t) { return Hasher(true).type_hash(t); }

}  // namespace grove::relay
