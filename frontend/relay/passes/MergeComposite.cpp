#include "frontend/relay/passes/MergeComposite.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

using NodeSet = std::unordered_set<const ExprNode *>;

// Functions whose bodies merge_composite leaves alone: earlier matches (Composite) and regions
// already handed to a code generator (Compiler).
bool is_opaque_function(const Expr &e) {
  const auto *f = e.as<Function>();
  return f && (f->has_attr(attr::kComposite) || f->has_attr(attr::kPartitionedFromPattern) ||
               f->has_attr(attr::kCompiler));
}

// Names of module-wide things: never an input of a match, never owned by one.
bool is_global_leaf(const Expr &e) { return e.as<Op>() || e.as<GlobalVar>() || e.as<Constructor>(); }

// A match's root is a computation, not a name or a literal.
bool can_be_root(const Expr &e) {
  return !(e.as<Var>() || e.as<Constant>() || e.as<Function>() || is_global_leaf(e));
}

// The dataflow graph of a function body: every node reachable through operands (opaque functions
// are nodes but not entered), in post order (producers first), with each node's consumers.
struct Graph {
  std::vector<Expr> order;
  std::unordered_map<const ExprNode *, std::vector<const ExprNode *>> consumers;
};

Graph build_graph(const Expr &root) {
  Graph g;
  NodeSet seen;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = std::move(stack.back());
    stack.pop_back();
    if (expanded) {
      g.order.push_back(e);
      continue;
    }
    if (!seen.insert(e.get()).second) continue;
    stack.emplace_back(e, true);
    if (is_opaque_function(e)) continue;
    std::vector<Expr> ops = operands(e);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      g.consumers[it->get()].push_back(e.get());
      if (!seen.count(it->get())) stack.emplace_back(*it, false);
    }
  }
  return g;
}

// The pattern's nodes, each once, children before parents (TVM's order for a match's inputs).
void pattern_post_order(const DFPattern &p, std::unordered_set<const DFPatternNode *> &seen,
                        std::vector<const DFPatternNode *> &out) {
  if (!seen.insert(p.get()).second) return;
  for (const DFPattern &c : p->children) pattern_post_order(c, seen, out);
  out.push_back(p.get());
}

// What TVM's PartitionedFromPattern says of one node of a match.
std::string node_label(const Expr &e) {
  if (const auto *c = e.as<Call>()) {
    const auto *o = c->op.as<Op>();
    return o ? o->name + "_" : "Call_";
  }
  if (const auto *g = e.as<TupleGetItem>()) return fmt::format("TupleGetItem{}_", g->index);
  if (e.as<Tuple>()) return "Tuple_";
  if (e.as<Let>()) return "Let_";
  if (e.as<If>()) return "If_";
  if (e.as<Match>()) return "Match_";
  if (e.as<Function>()) return "Function";
  return "";
}

// The nodes of a match: everything reachable from the root without crossing an input, in post
// order (operands left to right). Function literals are not entered.
std::vector<Expr> match_region(const Expr &root, const NodeSet &inputs) {
  std::vector<Expr> out;
  NodeSet seen;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = std::move(stack.back());
    stack.pop_back();
    if (expanded) {
      out.push_back(e);
      continue;
    }
    if (!seen.insert(e.get()).second) continue;
    stack.emplace_back(e, true);
    if (e.as<Function>()) continue;
    std::vector<Expr> ops = operands(e);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if (!seen.count(it->get()) && !inputs.count(it->get())) stack.emplace_back(*it, false);
  }
  return out;
}

// Copies a match's region with its inputs replaced by the composite function's parameters.
class Extractor : public ExprMutator {
 public:
  explicit Extractor(std::unordered_map<const ExprNode *, Expr> params) : params_(std::move(params)) {}

 protected:
  bool descend(const Expr &e) override { return !params_.count(e.get()) && !e.as<Function>(); }
  Expr rewrite(const Expr &pre, const Expr &post) override {
    auto it = params_.find(pre.get());
    return it == params_.end() ? post : it->second;
  }

 private:
  std::unordered_map<const ExprNode *, Expr> params_;
};

struct Group {
  Expr function;           // the composite function
  std::vector<Expr> args;  // its inputs, in the original graph
  std::vector<Expr> region;
};

// One match turned into a composite function, or nullopt when it may not be taken.
//
// 1. Inputs: what the pattern's leaves (wildcards, vars, constants) matched, in the pattern's post
//    order, each expression once — except a constant matched by is_constant() (bound into the
//    function), what a dominator's parent or path matched (inside the group), operators and
//    globals, function literals, and variables bound by a matched let.
// 2. The region: what the root reaches without crossing an input.
// 3. Rejected when a region node other than the root (operators, constants, variables and
//    function literals aside) already belongs to another match, or has a consumer outside the
//    region: outlining it would compute it twice or swallow a value someone else reads. Also
//    rejected when the root is itself an input (a lone wildcard computes nothing), when an input
//    uses a variable the region binds, or when the pattern's check fails.
// 4. The function: one parameter per input (typed with the input's checked type), the region
//    copied over them, and any other free variable of the copy (one reached through a function
//    literal) added as a further parameter, so the function is closed.
std::optional<Group> make_group(const CompositePattern &cp, const DFPatternMatch &m, const Graph &graph,
                                const NodeSet &claimed, int number) {
  std::vector<const DFPatternNode *> pnodes;
  std::unordered_set<const DFPatternNode *> pseen;
  pattern_post_order(cp.pattern, pseen, pnodes);
  auto matches_of = [&](const DFPatternNode *p) -> const std::vector<Expr> * {
    auto it = m.matched.find(p);
    return it == m.matched.end() ? nullptr : &it->second;
  };

  NodeSet inside;  // matched by a dominator's parent or path, or a matched let's variable
  for (const DFPatternNode *p : pnodes) {
    if (p->kind == DFPatternKind::Dominator)
      for (size_t i = 0; i < 2; ++i)
        if (const auto *xs = matches_of(p->children[i].get()))
          for (const Expr &x : *xs) inside.insert(x.get());
    if (p->kind == DFPatternKind::Let)
      if (const auto *xs = matches_of(p))
        for (const Expr &x : *xs) inside.insert(x.as<Let>()->var.get());
  }
  Group group;
  NodeSet inputs;
  for (const DFPatternNode *p : pnodes) {
    if (!p->children.empty()) continue;
    const auto *xs = matches_of(p);
    if (!xs) continue;
    for (const Expr &x : *xs) {
      if (inside.count(x.get()) || is_global_leaf(x) || x.as<Function>()) continue;
      if (p->kind == DFPatternKind::Constant && x.as<Constant>()) continue;
      if (inputs.insert(x.get()).second) group.args.push_back(x);
    }
  }

  if (inputs.count(m.root.get())) return std::nullopt;  // a leaf pattern matched the root: nothing to outline
  group.region = match_region(m.root, inputs);
  NodeSet region_set, bound;
  for (const Expr &n : group.region) region_set.insert(n.get());
  for (const Expr &n : group.region) {
    if (const auto *l = n.as<Let>()) bound.insert(l->var.get());
    if (n.same_as(m.root) || n.as<Var>() || n.as<Constant>() || n.as<Function>() || is_global_leaf(n))
      continue;
    if (claimed.count(n.get())) return std::nullopt;
    auto it = graph.consumers.find(n.get());
    if (it != graph.consumers.end())
      for (const ExprNode *c : it->second)
        if (!region_set.count(c)) return std::nullopt;
  }
  if (!bound.empty())
    for (const Expr &a : group.args)
      for (const Expr &v : free_vars(a))
        if (bound.count(v.get())) return std::nullopt;
  if (cp.check && !cp.check(m)) return std::nullopt;

  std::vector<Expr> params;
  std::unordered_map<const ExprNode *, Expr> param_of;
  auto add_param = [&](Type type) {
    Expr p = Var::make(fmt::format("FunctionVar_{}_{}", number, params.size()), std::move(type));
    params.push_back(p);
    return p;
  };
  for (const Expr &a : group.args) param_of.emplace(a.get(), add_param(a->checked_type));
  Expr body = Extractor(param_of).mutate(m.root);
  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> closing;
  const size_t num_inputs = params.size();
  for (const Expr &v : free_vars(body)) {
    bool is_param = false;
    for (size_t i = 0; i < num_inputs; ++i) is_param = is_param || params[i].same_as(v);
    if (is_param) continue;
    const Type &t = v->checked_type.defined() ? v->checked_type : v.as<Var>()->type_annotation;
    closing.emplace(v, add_param(t));
    group.args.push_back(v);
  }
  if (!closing.empty()) body = substitute(body, closing);

  std::string label;
  for (const Expr &n : group.region) label += node_label(n);
  Attrs attrs = Attrs()
                    .with(attr::kComposite, AttrValue::of_string(cp.name))
                    .with(attr::kPartitionedFromPattern, AttrValue::of_string(label));
  group.function = Function::make(std::move(params), body, m.root->checked_type, {}, std::move(attrs));
  return group;
}

// Replaces each group's root by a call of its composite function on the (rewritten) inputs.
class Rewriter : public ExprMutator {
 public:
  explicit Rewriter(std::unordered_map<const ExprNode *, Group> groups) : groups_(std::move(groups)) {}

 protected:
  bool descend(const Expr &e) override { return !is_opaque_function(e); }
  Expr rewrite(const Expr &pre, const Expr &post) override {
    auto it = groups_.find(pre.get());
    if (it == groups_.end()) return post;
    std::vector<Expr> args;
    for (const Expr &a : it->second.args) {
      auto m = memo_.find(a);
      args.push_back(m == memo_.end() ? a : m->second);
    }
    return Call::make(it->second.function, std::move(args), {}, {}, pre->span);
  }

 private:
  std::unordered_map<const ExprNode *, Group> groups_;
};

// One pattern over one function body, after TVM's PatternGrouper and PatternPartitioner: nodes are
// tried consumers first (reverse post order), so a match takes the largest group reaching down from
// the latest node; a node inside a taken match is not tried again.
Expr merge_pattern(const CompositePattern &cp, const Expr &body) {
  Graph graph = build_graph(body);
  NodeSet claimed;
  std::unordered_map<const ExprNode *, Group> groups;
  int number = 0;
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    const Expr &e = *it;
    if (claimed.count(e.get()) || !can_be_root(e)) continue;
    std::optional<DFPatternMatch> m = match(cp.pattern, e);
    if (!m) continue;
    std::optional<Group> group = make_group(cp, *m, graph, claimed, number);
    if (!group) continue;
    ++number;
    for (const Expr &n : group->region)
      if (!(n.as<Var>() || n.as<Constant>() || n.as<Function>() || is_global_leaf(n)))
        claimed.insert(n.get());
    groups.emplace(e.get(), std::move(*group));
  }
  if (groups.empty()) return body;
  return Rewriter(std::move(groups)).mutate(body);
}

}  // namespace

Module merge_composite(const Module &m, const std::vector<CompositePattern> &patterns) {
  Module out = m;
  infer_types(out);
  for (const CompositePattern &cp : patterns) {
    GROVE_CHECK(cp.pattern != nullptr, "merge_composite: the pattern '{}' is null", cp.name);
    bool changed = false;
    out = map_functions(out, [&](const std::string &, const Expr &fn) {
      if (is_opaque_function(fn)) return fn;
      const auto *f = fn.as<Function>();
      Expr body = merge_pattern(cp, f->body);
      if (body.same_as(f->body)) return fn;
      changed = true;
      return Function::make(f->params, body, f->ret_type, f->type_params, f->attrs, fn->span);
    });
    // The next pattern's type constraints, and its composites' parameter types, read checked types.
    if (changed) infer_types(out);
  }
  return out;
}

}  // namespace grove::relay
