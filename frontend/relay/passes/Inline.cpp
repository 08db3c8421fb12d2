#include "frontend/relay/passes/Inline.h"

#include <unordered_map>
#include <unordered_set>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"

namespace grove::relay {

namespace {

using ExprMap = std::unordered_map<Expr, Expr, ExprHash, ExprEqual>;

bool marked_inline(const Function *f) {
  const AttrValue *v = f->attrs.find(attr::kInline);
  if (!v) return false;
  return (v->kind == AttrValue::Kind::Int && v->i != 0) || (v->kind == AttrValue::Kind::Bool && v->b);
}

// Evaluating these has no effect and costs nothing, so they may be substituted for a parameter.
bool is_atomic(const Expr &e) {
  return e.as<Var>() || e.as<GlobalVar>() || e.as<Constant>() || e.as<Op>() || e.as<Constructor>();
}

// A copy of `e` in which each variable of `subst` is replaced and every other variable (all bound
// inside `e`) is a fresh one, so that the copy may sit next to the original.
class FreshCopy : public ExprMutator {
 public:
  explicit FreshCopy(ExprMap subst) : subst_(std::move(subst)) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    const auto *v = pre.as<Var>();
    if (!v) return post;
    auto it = subst_.find(pre);
    if (it != subst_.end()) return it->second;
    return Var::make(v->name_hint, v->type_annotation, v->span);
  }

 private:
  ExprMap subst_;
};

// The global call graph: callees[g] = the globals g's body refers to (defined ones only).
using CallGraph = std::unordered_map<std::string, std::vector<std::string>>;

bool reaches_itself(const CallGraph &graph, const std::string &start) {
  std::unordered_set<std::string> seen;
  std::vector<std::string> work = graph.at(start);
  while (!work.empty()) {
    std::string g = std::move(work.back());
    work.pop_back();
    if (g == start) return true;
    if (!seen.insert(g).second) continue;
    for (const std::string &c : graph.at(g)) work.push_back(c);
  }
  return false;
}

// Globals in DFS post order of the call graph: a callee that is not in a cycle with its caller comes
// before it.
std::vector<std::string> callees_first(const Module &module, const CallGraph &graph) {
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  for (const auto &[root, fn] : module.functions()) {
    if (!seen.insert(root).second) continue;
    std::vector<std::pair<std::string, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto &[g, next] = stack.back();
      const std::vector<std::string> &callees = graph.at(g);
      if (next < callees.size()) {
        const std::string &c = callees[next++];
        if (seen.insert(c).second) stack.emplace_back(c, 0);
        continue;
      }
      order.push_back(g);
      stack.pop_back();
    }
  }
  return order;
}

class Inliner : public ExprMutator {
 public:
  Inliner(const std::unordered_set<std::string> &inlinable, const std::unordered_map<std::string, Expr> &done)
      : inlinable_(inlinable), done_(done) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (const auto *c = post.as<Call>()) {
      const auto *g = c->op.as<GlobalVar>();
      if (g && inlinable_.count(g->name)) return expand(done_.at(g->name), c->args, post);
    }
    // A reference to an inlined global that is not called becomes a copy of its function.
    std::vector<Expr> ops = operands(post);
    bool changed = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (post.as<Call>() && i == 0) continue;  // a callee that is not inlinable stays
      const auto *g = ops[i].as<GlobalVar>();
      if (g && inlinable_.count(g->name)) {
        ops[i] = FreshCopy({}).mutate(done_.at(g->name));
        changed = true;
      }
    }
    return changed ? with_operands(post, ops) : post;
  }

 private:
  // The call `call` of `callee` (a Function, its own calls already inlined) with `args`:
  //   1. a Compiler= function stays a function, called as a literal;
  //   2. otherwise each parameter becomes its argument when that is atomic, else a fresh variable
  //      bound to the argument by a let, in parameter order (arguments are evaluated left to right
  //      before the body, as in the call);
  //   3. the body is copied with fresh variables and wrapped in those lets.
  Expr expand(const Expr &callee, const std::vector<Expr> &args, const Expr &call) {
    const auto *f = callee.as<Function>();
    if (f->attrs.has(attr::kCompiler) || f->params.size() != args.size()) {
      const auto *c = call.as<Call>();
      return Call::make(FreshCopy({}).mutate(callee), args, c->attrs, c->type_args, call->span);
    }
    ExprMap subst;
    std::vector<std::pair<Expr, Expr>> lets;
    for (size_t i = 0; i < args.size(); ++i) {
      if (is_atomic(args[i])) {
        subst[f->params[i]] = args[i];
      } else {
        const auto *p = f->params[i].as<Var>();
        Expr fresh = Var::make(p->name_hint, p->type_annotation, p->span);
        subst[f->params[i]] = fresh;
        lets.emplace_back(fresh, args[i]);
      }
    }
    Expr body = FreshCopy(std::move(subst)).mutate(f->body);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it)
      body = Let::make(it->first, it->second, body, call->span);
    return body;
  }

  const std::unordered_set<std::string> &inlinable_;
  const std::unordered_map<std::string, Expr> &done_;
};

}  // namespace

Module inline_globals(const Module &module) {
  // 1. The call graph, and the globals that may be inlined.
  CallGraph graph;
  for (const auto &[name, fn] : module.functions()) {
    std::vector<std::string> &callees = graph[name];
    for (const std::string &g : called_globals(fn))
      if (module.find_function(g)) callees.push_back(g);
  }
  std::unordered_set<std::string> inlinable, referenced;
  for (const auto &[name, fn] : module.functions()) {
    const auto *f = fn.as<Function>();
    // Inlining a polymorphic function would need its type arguments substituted in the copy.
    if (marked_inline(f) && f->type_params.empty() && !reaches_itself(graph, name)) inlinable.insert(name);
    for (const std::string &g : graph.at(name))
      if (g != name) referenced.insert(g);
  }
  // 2. Inline into every function, callees first, so each inlined body is already expanded.
  std::unordered_map<std::string, Expr> done;
  for (const std::string &name : callees_first(module, graph))
    done[name] = Inliner(inlinable, done).mutate(*module.find_function(name));
  // 3. Drop the inlined globals: nothing refers to them any more. One that nothing called is kept
  //    (an entry point), as TVM does.
  Module out;
  for (const TypeData &t : module.types()) out.add_type(t);
  for (const auto &[name, fn] : module.functions())
    if (name == "main" || !inlinable.count(name) || !referenced.count(name))
      out.add_function(name, done.at(name));
  return out;
}

}  // namespace grove::relay
