#include "frontend/relay/passes/ToANormalForm.h"

#include <string>
#include <unordered_map>

#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

bool is_atom(const Expr &e) { return e.as<Var>() || e.as<GlobalVar>() || e.as<Op>() || e.as<Constructor>(); }

bool is_primitive(const Expr &e) {
  const auto *f = e.as<Function>();
  return f && f->has_attr(attr::kPrimitive);
}

// The dependency graph of one function body (after TVM's DependencyGraph): every non-atomic node,
// its parents (with the operand slot they use it in) and the order of events of a depth-first walk
// in evaluation order: a node's completion, and for a Let, the moment between its value and body.
struct Graph {
  struct Event {
    bool let_bind;  // true: between a Let's value and body; false: the node is complete
    int node;
  };
  std::vector<Expr> nodes;
  std::unordered_map<const ExprNode *, int> id;
  std::vector<std::vector<std::pair<int, size_t>>> parents;  // (parent, operand slot)
  std::vector<int> post_order;
  std::vector<Event> events;

  explicit Graph(const Expr &root) {
    struct Frame {
      int node;
      std::vector<Expr> ops;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    auto open = [&](const Expr &e) {
      int k = static_cast<int>(nodes.size());
      id.emplace(e.get(), k);
      nodes.push_back(e);
      parents.emplace_back();
      // A Primitive function is bound as it is: its body is not ours to normalize.
      stack.push_back(Frame{k, is_primitive(e) ? std::vector<Expr>{} : operands(e)});
    };
    open(root);
    while (!stack.empty()) {
      Frame &f = stack.back();
      if (f.next < f.ops.size()) {
        size_t slot = f.next++;
        int parent = f.node;
        if (slot == 1 && nodes[parent].as<Let>()) events.push_back({true, parent});
        Expr child = f.ops[slot];
        if (is_atom(child)) continue;
        auto it = id.find(child.get());
        if (it != id.end()) {
          parents[it->second].emplace_back(parent, slot);
          continue;
        }
        open(child);  // invalidates f
        parents.back().emplace_back(parent, slot);
        continue;
      }
      events.push_back({false, f.node});
      post_order.push_back(f.node);
      stack.pop_back();
    }
  }
};

struct Binding {
  Expr var, value;
  Span span;
};

struct Scope {
  int parent;
  int level;
  std::vector<Binding> bindings;
};

class Normalizer {
 public:
  explicit Normalizer(const Expr &function) : function_(function) {}

  Expr run() {
    const auto *f = function_.as<Function>();
    if (is_atom(f->body)) return function_;
    Graph g(f->body);
    assign_scopes(g);
    fill(g);
    Expr body = wrap(0, atom_of(g, f->body));
    return with_operands(function_, {body});
  }

 private:
  // 1. Scopes, parents before children (reverse post order): the root is in the function's scope; a
  //    node's scope is the lowest common ancestor of the scopes its uses are in, where a use in a
  //    scoped slot (a Function body, an If branch, a Match clause) is in that slot's own child scope
  //    of the parent's scope. A Let opens no scope: its bindings are flattened into the enclosing one.
  void assign_scopes(const Graph &g) {
    scopes_.push_back(Scope{-1, 0, {}});
    scope_of_.assign(g.nodes.size(), -1);
    for (auto it = g.post_order.rbegin(); it != g.post_order.rend(); ++it) {
      int k = *it;
      int s = -1;
      if (g.parents[k].empty()) s = 0;  // the root
      for (const auto &[p, slot] : g.parents[k]) {
        int use = opens_scope(g.nodes[p], slot) ? child_scope_.at(key(p, slot)) : scope_of_[p];
        s = s < 0 ? use : lca(s, use);
      }
      scope_of_[k] = s;
      if (is_primitive(g.nodes[k])) continue;
      size_t n = operands(g.nodes[k]).size();
      for (size_t slot = 0; slot < n; ++slot) {
        if (!opens_scope(g.nodes[k], slot)) continue;
        child_scope_[key(k, slot)] = static_cast<int>(scopes_.size());
        scopes_.push_back(Scope{s, scopes_[s].level + 1, {}});
      }
    }
  }

  // 2. Bindings, in the walk's order (evaluation order): each completed node, rebuilt from the atoms
  //    of its operands (a scoped operand wrapped in its scope's lets), is bound in its scope, to the
  //    Let's own variable when it is a Let's value used nowhere else, else to a fresh variable. A Let
  //    binds nothing itself: its value is the Let's variable, its result is its body's atom.
  void fill(const Graph &g) {
    std::vector<bool> owned(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const auto *l = g.nodes[k].as<Let>();
      if (!l || is_atom(l->value) || l->value.as<Let>()) continue;
      int v = g.id.at(l->value.get());
      const auto &ps = g.parents[v];
      if (ps.size() == 1 && ps[0].first == static_cast<int>(k) && ps[0].second == 0) owned[v] = true;
    }
    atom_.assign(g.nodes.size(), Expr());
    for (const Graph::Event &ev : g.events) {
      const Expr &e = g.nodes[ev.node];
      if (ev.let_bind) {
        const auto *l = e.as<Let>();
        if (is_atom(l->value) || !owned[g.id.at(l->value.get())])
          scopes_[scope_of_[ev.node]].bindings.push_back({l->var, atom_of(g, l->value), e->span});
        continue;
      }
      if (const auto *l = e.as<Let>()) {
        atom_[ev.node] = atom_of(g, l->body);
        continue;
      }
      Expr now = e;
      if (!is_primitive(e)) {
        std::vector<Expr> ops = operands(e);
        for (size_t slot = 0; slot < ops.size(); ++slot) {
          ops[slot] = atom_of(g, ops[slot]);
          if (opens_scope(e, slot)) ops[slot] = wrap(child_scope_.at(key(ev.node, slot)), ops[slot]);
        }
        now = with_operands(e, ops);
      }
      Expr var;
      Span span = e->span;
      if (owned[ev.node]) {
        const auto &[p, slot] = g.parents[ev.node][0];
        var = g.nodes[p].as<Let>()->var;
        span = g.nodes[p]->span;
      } else {
        var = Var::make("x" + std::to_string(fresh_++), Type(), e->span);
      }
      scopes_[scope_of_[ev.node]].bindings.push_back({var, now, span});
      atom_[ev.node] = var;
    }
  }

  Expr atom_of(const Graph &g, const Expr &e) const {
    if (is_atom(e)) return e;
    const Expr &a = atom_[g.id.at(e.get())];
    GROVE_CHECK(a.defined(), "an operand used before it was bound");
    return a;
  }

  // `body` under the lets of scope `s`.
  Expr wrap(int s, Expr body) {
    std::vector<Binding> &bs = scopes_[s].bindings;
    for (auto it = bs.rbegin(); it != bs.rend(); ++it) body = Let::make(it->var, it->value, body, it->span);
    bs.clear();
    return body;
  }

  int lca(int a, int b) const {
    while (a != b) {
      if (scopes_[a].level >= scopes_[b].level)
        a = scopes_[a].parent;
      else
        b = scopes_[b].parent;
    }
    return a;
  }

  static uint64_t key(int node, size_t slot) { return (static_cast<uint64_t>(node) << 32) | slot; }

  Expr function_;
  std::vector<Scope> scopes_;
  std::vector<int> scope_of_;
  std::unordered_map<uint64_t, int> child_scope_;
  std::vector<Expr> atom_;
  int fresh_ = 0;
};

}  // namespace

Module to_a_normal_form(const Module &module) {
  return map_functions(module, [](const std::string &, const Expr &fn) {
    const auto *f = fn.as<Function>();
    if (f->has_attr(attr::kPrimitive) || f->has_attr(attr::kCompiler)) return fn;
    return Normalizer(fn).run();
  });
}

}  // namespace grove::relay
