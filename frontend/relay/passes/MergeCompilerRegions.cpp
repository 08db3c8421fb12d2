#include "frontend/relay/passes/MergeCompilerRegions.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/byoc/Regions.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

constexpr const char *kDefaultTarget = "default";

// Where an expression is evaluated: the function body, an If branch or a Match clause it lies in
// (a tree of scopes). A node shared in graph form lies in the innermost scope enclosing all its
// uses, which is where the interpreter first needs it. A region lies in the innermost scope
// enclosing its begins and ends: where its call will be evaluated once it is outlined.
class Scopes {
 public:
  // Assigns a scope to every non-leaf node of `root`; `order` lists them children first.
  Scopes(const Expr &root, const std::vector<Expr> &order) {
    scopes_.push_back({-1, 0});
    scope_of_[root.get()] = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Expr &n = *it;
      if (is_region_leaf(n)) continue;
      const int s = scope_of_.at(n.get());
      std::vector<Expr> ops = operands(n);
      for (size_t i = 0; i < ops.size(); ++i) {
        if (is_region_leaf(ops[i])) continue;
        int cs = s;
        if (opens_scope(n, i)) {
          scopes_.push_back({s, scopes_[s].depth + 1});
          cs = static_cast<int>(scopes_.size()) - 1;
        }
        auto [slot, fresh] = scope_of_.emplace(ops[i].get(), cs);
        if (!fresh) slot->second = common(slot->second, cs);
      }
    }
  }

  int of(const Expr &e) const { return scope_of_.at(e.get()); }

  // The innermost scope enclosing both.
  int common(int a, int b) const {
    while (scopes_[a].depth > scopes_[b].depth) a = scopes_[a].parent;
    while (scopes_[b].depth > scopes_[a].depth) b = scopes_[b].parent;
    while (a != b) a = scopes_[a].parent, b = scopes_[b].parent;
    return a;
  }

 private:
  struct Scope {
    int parent, depth;
  };

  std::vector<Scope> scopes_;
  std::unordered_map<const ExprNode *, int> scope_of_;
};

// A dependency edge into a unit: from which unit, and whether every connection it stands for is a
// compiler_begin applied directly to a compiler_end (a pair a merge removes).
struct Edge {
  int from;
  bool clean;
};

// The greedy merge over the dependency graph of one global function.
//
// Units: each region (units 0..R-1), each non-leaf expression outside every region, and each let- or
// match-bound variable (a value reaching a region through a variable is a dependency a merge cannot
// remove). Edges run from the unit of an operand to the unit of its user.
//
// 1. Visit the regions in topological order (producers before consumers). A region R of a target other
//    than "default" looks at its parent groups; a parent P may join it when P is a region group of
//    the same target, in the same scope (see Scopes: merging a region inside a branch with one
//    outside would evaluate the branch's ops whichever branch is taken), and every edge P -> R is
//    a begin(end) pair.
// 2. Such a P joins only if no path P -> X -> ... -> R passes through another unit X, or the merged
//    region would both feed and consume X: a cycle. With one parent group that is impossible;
//    otherwise collect the strict ancestors of all of R's parent groups (a backward walk) and skip
//    every candidate among them. Merging one candidate opens no new path for another: such a path
//    would run through the first candidate's ancestors, which the walk already covered.
// 3. Joined groups are union-find sets; the joined parent's incoming edges move to R.
class RegionMerger {
 public:
  RegionMerger(const Expr &fn, const RegionSet &regions) : regions_(regions) {
    std::vector<Expr> order;
    post_order_visit(fn, [&](const Expr &e) { order.push_back(e); });
    const int num_regions = static_cast<int>(regions.regions().size());
    num_units_ = num_regions;

    // Units.
    std::vector<std::pair<Expr, Expr>> bound;  // (variable, the expression it takes its value from)
    std::vector<size_t> first_pos(num_regions, order.size());  // where post order first meets a unit
    for (size_t i = 0; i < order.size(); ++i) {
      const Expr &n = order[i];
      if (const auto *let = n.as<Let>()) bound.emplace_back(let->var, let->value);
      if (const auto *m = n.as<Match>())
        for (const Clause &c : m->clauses)
          for (const Expr &v : pattern_vars(c.lhs)) bound.emplace_back(v, m->data);
      if (is_region_leaf(n)) continue;
      const int r = regions.region_of(n);
      if (r >= 0) {
        unit_of_[n.get()] = r;
        first_pos[r] = std::min(first_pos[r], i);
      } else {
        unit_of_[n.get()] = num_units_++;
        first_pos.push_back(i);
      }
    }
    for (const auto &[var, source] : bound) {
      unit_of_[var.get()] = num_units_++;
      first_pos.push_back(order.size());
    }

    // Edges.
    in_edges_.resize(num_units_);
    out_edges_.resize(num_units_);
    parent_.assign(num_units_, -1);
    for (const auto &[var, source] : bound) {
      // A let-bound closure takes no evaluation to create (and may call itself through the variable).
      if (source.as<Function>()) continue;
      if (auto it = unit_of_.find(source.get()); it != unit_of_.end())
        add_edge(it->second, unit_of_.at(var.get()), false);
    }
    for (const Expr &n : order) {
      if (is_region_leaf(n)) continue;
      const int u = unit_of_.at(n.get());
      for (const Expr &c : operands(n)) {
        auto it = unit_of_.find(c.get());
        if (it == unit_of_.end()) continue;  // a leaf: a parameter, a constant, an op, a global
        add_edge(it->second, u, is_compiler_begin(n) && is_compiler_end(c));
      }
    }

    topological_order(first_pos);

    // Scopes of the regions.
    Scopes scopes(fn, order);
    region_scope_.resize(num_regions);
    for (int r = 0; r < num_regions; ++r) {
      const AnnotatedRegion &region = regions.regions()[r];
      int s = scopes.of(region.ends.front());
      for (const auto *list : {&region.begins, &region.ends})
        for (const Expr &a : *list) s = scopes.common(s, scopes.of(a));
      region_scope_[r] = s;
    }
  }

  void merge() {
    const int num_regions = static_cast<int>(regions_.regions().size());
    for (int r : region_order_) {
      const int group = find(r);
      if (!mergeable(group)) continue;
      std::vector<Edge> parents = compact_parents(group);
      std::vector<int> candidates;
      for (const Edge &e : parents)
        if (e.clean && e.from < num_regions && mergeable(e.from) && target(e.from) == target(group) &&
            region_scope_[e.from] == region_scope_[group])
          candidates.push_back(e.from);
      if (candidates.empty()) continue;
      std::unordered_set<int> restricted;
      if (parents.size() > 1) restricted = strict_ancestors(parents);
      for (int p : candidates)
        if (!restricted.count(p)) join(p, group);
    }
    final_group_.resize(num_regions);
    for (int r = 0; r < num_regions; ++r) final_group_[r] = find(r);
  }

  // Whether a region's begin `b` and the end `e` it is applied to now lie in one region (after merge()).
  bool same_group(const Expr &b, const Expr &e) const {
    const int rb = regions_.region_of(b), re = regions_.region_of(e);
    return rb >= 0 && re >= 0 && final_group_[rb] == final_group_[re];
  }

 private:
  void add_edge(int from, int to, bool clean) {
    if (from == to) return;
    in_edges_[to].push_back({from, clean});
    out_edges_[from].push_back(to);
  }

  // The regions in an order where every region comes after the units it depends on (Kahn's
  // algorithm, ties broken by where post order first meets them); regions on a dependency cycle
  // (through a let-bound recursive closure) come last, in post order.
  void topological_order(const std::vector<size_t> &first_pos) {
    const int num_regions = static_cast<int>(regions_.regions().size());
    std::vector<size_t> waiting(num_units_);
    using Item = std::pair<size_t, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (int u = 0; u < num_units_; ++u) {
      waiting[u] = in_edges_[u].size();
      if (waiting[u] == 0) ready.push({first_pos[u], u});
    }
    std::vector<bool> placed(num_regions, false);
    while (!ready.empty()) {
      const int u = ready.top().second;
      ready.pop();
      if (u < num_regions) {
        region_order_.push_back(u);
        placed[u] = true;
      }
      for (int v : out_edges_[u])
        if (--waiting[v] == 0) ready.push({first_pos[v], v});
    }
    for (int r = 0; r < num_regions; ++r)
      if (!placed[r]) region_order_.push_back(r);
    out_edges_.clear();
  }

  int find(int u) {
    int root = u;
    while (parent_[root] >= 0) root = parent_[root];
    while (parent_[u] >= 0) {
      int next = parent_[u];
      parent_[u] = root;
      u = next;
    }
    return root;
  }

  const std::string &target(int region) const { return regions_.regions()[region].target; }
  bool mergeable(int region) const { return target(region) != kDefaultTarget; }

  // The group's incoming edges, one per parent group (clean when all of its edges are), without
  // edges from inside the group; stored back compacted so later visits stay cheap.
  std::vector<Edge> compact_parents(int group) {
    std::vector<Edge> out;
    std::unordered_map<int, size_t> index;
    for (const Edge &e : in_edges_[group]) {
      const int from = find(e.from);
      if (from == group) continue;
      auto [slot, fresh] = index.emplace(from, out.size());
      if (fresh)
        out.push_back({from, e.clean});
      else
        out[slot->second].clean = out[slot->second].clean && e.clean;
    }
    in_edges_[group] = out;
    return out;
  }

  // Groups with a path to one of `parents` (edges inside a group, left over from joins, are no path).
  std::unordered_set<int> strict_ancestors(const std::vector<Edge> &parents) {
    std::unordered_set<int> seen;
    std::vector<int> stack;
    auto push_parents = [&](int g) {
      for (const Edge &e : in_edges_[g])
        if (const int from = find(e.from); from != g) stack.push_back(from);
    };
    for (const Edge &p : parents) push_parents(p.from);
    while (!stack.empty()) {
      const int g = stack.back();
      stack.pop_back();
      if (seen.insert(g).second) push_parents(g);
    }
    return seen;
  }

  void join(int from, int into) {
    parent_[from] = into;
    std::vector<Edge> &a = in_edges_[into], &b = in_edges_[from];
    if (b.size() > a.size()) std::swap(a, b);
    a.insert(a.end(), b.begin(), b.end());
    b.clear();
    b.shrink_to_fit();
  }

  const RegionSet &regions_;
  int num_units_ = 0;
  std::unordered_map<const ExprNode *, int> unit_of_;
  std::vector<std::vector<Edge>> in_edges_;
  std::vector<std::vector<int>> out_edges_;  // until topological_order() is done
  std::vector<int> region_order_;
  std::vector<int> parent_;
  std::vector<int> region_scope_;
  std::vector<int> final_group_;  // per region, its group's root once merge() is done
};

// Removes each compiler_begin applied to a compiler_end of its own (merged) region.
class RemoveInnerAnnotations : public ExprMutator {
 public:
  explicit RemoveInnerAnnotations(const RegionMerger &merger) : merger_(merger) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (!is_compiler_begin(pre)) return post;
    const Expr &arg = pre.as<Call>()->args[0];
    if (!is_compiler_end(arg) || !merger_.same_group(pre, arg)) return post;
    return post.as<Call>()->args[0].as<Call>()->args[0];
  }

 private:
  const RegionMerger &merger_;
};

Expr merge_function(const Expr &fn) {
  RegionSet regions = RegionSet::find(fn, /*include_default=*/true);
  if (regions.regions().empty()) return fn;
  RegionMerger merger(fn, regions);
  merger.merge();
  return RemoveInnerAnnotations(merger).mutate(fn);
}

}  // namespace

Module merge_compiler_regions(const Module &m) {
  return map_functions(m, [](const std::string &, const Expr &fn) { return merge_function(fn); });
}

}  // namespace grove::relay
