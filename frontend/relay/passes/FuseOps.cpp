#include "frontend/relay/passes/FuseOps.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/DominatorTree.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

bool is_opaque_function(const Expr &e) {
  const auto *fn = e.as<Function>();
  return fn && (fn->has_attr(attr::kPrimitive) || fn->has_attr(attr::kCompiler));
}

// A group of nodes, as a union-find set over graph indices (group i starts as node i alone).
struct Group {
  int parent = -1;      // union-find parent; -1 at a set's root
  OpPattern pattern;    // the node's pattern; at a root, the group's (its anchor's, once it has one)
  int root_node;        // the graph node whose value the group returns
  bool anchor = false;  // the group holds an OutEWiseFusable op (at most one per group)
  size_t num_nodes = 1;
};

// Groups the nodes of a forward graph, as TVM's GraphPartitioner (opt level 2, no argument limit).
//
// 1. Every node starts as its own group. A node may join the group of its immediate post-dominator
//    (the closest node every path from it goes through), taking along every node on the paths
//    between them; a diamond whose branches rejoin thus fuses into one group.
// 2. It joins only if the fused group would have at most max_depth nodes (counted as TVM does:
//    the dominator's group plus the node counts of the groups met on the way).
// 3. Phase 0: an OutEWiseFusable op (conv2d, dense) joins its post-dominator when the edges up to it
//    are elementwise and every group on the way, the dominator's included, is at most Broadcast.
//    Phases 0 and 1: an ElemWise/Broadcast node joins when the path's pattern is at most Injective
//    or CommReduce, every intermediate group is at most Injective and the dominator's group is
//    neither Opaque nor a tuple (reductions absorb their elementwise inputs; a conv2d group its
//    epilogue).
//    Phase 1: Injective nodes and tuples join when every group up to the dominator is at most
//    Injective (so conv2d groups finish first). Phase 2: injective nodes join an intermediate tuple
//    that was itself fused into injective consumers.
// 4. Opaque nodes, extern nodes (whose value leaves the dataflow region) and nodes without a
//    post-dominator never join anything.
class GraphPartitioner {
 public:
  GraphPartitioner(const IndexedForwardGraph &graph, size_t max_depth)
      : graph_(graph), max_depth_(max_depth), visited_(graph.nodes.size(), 0) {}

  void partition() {
    groups_.resize(graph_.nodes.size());
    for (size_t i = 0; i < groups_.size(); ++i) {
      groups_[i].pattern = graph_.nodes[i].pattern;
      groups_[i].root_node = static_cast<int>(i);
      groups_[i].anchor = groups_[i].pattern == OpPattern::OutEWiseFusable;
    }
    PostDominatorTree tree = post_dominator_tree(graph_);
    for (int phase = 0; phase < 3; ++phase) run_fuse(tree, phase);
  }

  int find_root(int g) {
    int root = g;
    while (groups_[root].parent >= 0) root = groups_[root].parent;
    while (groups_[g].parent >= 0) {  // path compression
      int next = groups_[g].parent;
      groups_[g].parent = root;
      g = next;
    }
    return root;
  }
  const Group &group(int g) const { return groups_[g]; }

 private:
  const IndexedForwardGraph &graph_;
  size_t max_depth_;
  std::vector<Group> groups_;
  // Depth-first walks mark nodes with the current epoch instead of clearing a set.
  std::vector<uint32_t> visited_;
  uint32_t epoch_ = 0;

  bool visit(int n) {
    if (visited_[n] == epoch_) return false;
    visited_[n] = epoch_;
    return true;
  }

  // Whether every node on the paths from src (excluded) to sink satisfies fcond(pattern of its
  // group, is it the sink). sink post-dominates src.
  template <typename F>
  bool check_path(int src, int sink, F fcond) {
    GROVE_CHECK(!graph_.nodes[src].extern_ref && src != sink, "fusion path from an extern node");
    ++epoch_;
    std::vector<int> stack;
    for (const auto &e : graph_.nodes[src].outputs) stack.push_back(e.node);
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (!visit(n)) continue;
      if (!fcond(groups_[find_root(n)].pattern, n == sink)) return false;
      if (n == sink) continue;
      for (const auto &e : graph_.nodes[n].outputs) stack.push_back(e.node);
    }
    return true;
  }

  static OpPattern combine(OpPattern lhs, OpPattern rhs) {
    GROVE_CHECK(lhs <= OpPattern::Broadcast || rhs <= OpPattern::Broadcast,
                "operator fusion merged two complex groups ({} and {})", to_string(lhs), to_string(rhs));
    return std::max(lhs, rhs);
  }

  void merge_from_to(int child, int parent) {
    child = find_root(child);
    parent = find_root(parent);
    if (child == parent) return;
    groups_[parent].num_nodes += groups_[child].num_nodes;
    groups_[child].parent = parent;
    if (groups_[child].anchor) {
      GROVE_CHECK(!groups_[parent].anchor, "a fused group with two anchor ops");
      groups_[parent].anchor = true;
      groups_[parent].pattern = combine(groups_[child].pattern, groups_[parent].pattern);
    }
  }

  // Merges src and every node on its paths to sink (excluded) into sink's group.
  void commit_fuse(int src, int sink) {
    GROVE_CHECK(src != sink, "fusing a node into itself");
    ++epoch_;
    std::vector<int> stack{src};
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (n == sink || !visit(n)) continue;
      merge_from_to(n, sink);
      for (const auto &e : graph_.nodes[n].outputs) stack.push_back(e.node);
    }
  }

  // The size of dom_parent's group once child and the nodes between them join it. Like TVM, it
  // adds each node's own group count (a node already in a bigger group counts that group), which
  // can over-count but never under-counts.
  size_t count_fused_nodes_with_new_child(int child, int dom_parent) {
    ++epoch_;
    size_t sum = groups_[find_root(dom_parent)].num_nodes;
    std::vector<int> stack{child};
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (n == dom_parent || !visit(n)) continue;
      sum += groups_[n].num_nodes;
      for (const auto &e : graph_.nodes[n].outputs) stack.push_back(e.node);
    }
    return sum;
  }

  void run_fuse(const PostDominatorTree &tree, int phase) {
    for (size_t i = 0; i < groups_.size(); ++i) {
      int nid = static_cast<int>(i);
      const auto &dom = tree.nodes[nid];
      // The node's own group record: its pattern is the node's, or its anchor's if an
      // OutEWiseFusable op has joined the group this node heads.
      const Group &node_group = groups_[nid];
      if (node_group.pattern == OpPattern::Opaque) continue;
      if (dom.parent < 0) continue;
      GROVE_CHECK(!graph_.nodes[nid].extern_ref, "an extern node with a post-dominator");
      int dom_parent = dom.parent;
      if (count_fused_nodes_with_new_child(nid, dom_parent) > max_depth_) continue;

      if (phase == 2) {
        // Fuse injective ops into intermediate tuples that joined injective consumers.
        if (node_group.pattern > OpPattern::Injective) continue;
        const Group &parent_group = groups_[dom_parent];
        const Group &parent_root = groups_[find_root(dom_parent)];
        // A tuple that heads its group stays a plain tuple: its fields are not fused into it.
        if (parent_root.pattern == OpPattern::Tuple) continue;
        if (parent_group.pattern == OpPattern::Tuple && parent_root.pattern <= OpPattern::Injective) {
          // The check keeps two intermediate tuples from fusing.
          if (check_path(nid, dom_parent, [](OpPattern kind, bool) { return kind <= OpPattern::Injective; }))
            commit_fuse(nid, dom_parent);
        }
        continue;
      }

      if (find_root(nid) == find_root(dom_parent)) continue;
      if (groups_[dom_parent].pattern == OpPattern::Tuple) continue;  // tuples join later, not now
      if (node_group.pattern == OpPattern::OutEWiseFusable) {
        if (phase != 0) continue;
        if (dom.pattern == OpPattern::ElemWise) {
          if (check_path(nid, dom_parent, [](OpPattern kind, bool) { return kind <= OpPattern::Broadcast; }))
            commit_fuse(nid, dom_parent);
        }
      } else if (node_group.pattern <= OpPattern::Broadcast) {
        if (dom.pattern <= OpPattern::Injective || dom.pattern == OpPattern::CommReduce) {
          auto fcond = [](OpPattern kind, bool is_sink) {
            // Injective ops on parallel branches may join an elementwise group; the sink may
            // already hold a conv2d or a reduction.
            if (!is_sink) return kind <= OpPattern::Injective;
            return kind <= OpPattern::Injective || kind == OpPattern::CommReduce ||
                   kind == OpPattern::OutEWiseFusable;
          };
          if (check_path(nid, dom_parent, fcond)) commit_fuse(nid, dom_parent);
        }
      } else if (node_group.pattern == OpPattern::Injective || node_group.pattern == OpPattern::Tuple) {
        if (phase != 1) continue;
        if (check_path(nid, dom_parent, [](OpPattern kind, bool) { return kind <= OpPattern::Injective; }))
          commit_fuse(nid, dom_parent);
      } else {
        GROVE_CHECK(node_group.pattern == OpPattern::CommReduce, "unexpected pattern {}",
                    to_string(node_group.pattern));
      }
    }
  }
};

// Rewrites one function once its graph is partitioned: each group's nodes are rebuilt over fresh
// parameters `%p0, %p1, ...` (one per distinct input, in order of first use), and the group's root
// becomes a call of `fn (params, Primitive=1) -> R { nodes }` with the inputs as arguments. Scalar
// constants that joined a group are inlined; other constants are inputs. A tuple that heads its
// group stays a tuple, and a projection that heads a group of its own stays a projection.
class FuseMutator : public ExprMutator {
 public:
  FuseMutator(const IndexedForwardGraph &graph, GraphPartitioner &partition)
      : graph_(graph), partition_(partition) {}

 protected:
  bool descend(const Expr &e) override { return !is_opaque_function(e); }

  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (const auto *call = pre.as<Call>()) {
      if (!call->op.as<Op>()) return post;
      int group = group_of(pre);
      GROVE_CHECK(group >= 0, "an op call outside the fusion graph");
      std::vector<Expr> args = new_arguments(call->args, post.as<Call>()->args, group);
      Expr new_call = Call::make(call->op, std::move(args), call->attrs, call->type_args, call->span);
      info_[group].has_call = true;
      if (is_root(pre, group)) return make_function(group, pre, new_call);
      return new_call;
    }
    if (const auto *tuple = pre.as<Tuple>()) {
      int group = group_of(pre);
      if (group < 0 || is_root(pre, group)) return post;
      return Tuple::make(new_arguments(tuple->fields, post.as<Tuple>()->fields, group), tuple->span);
    }
    if (const auto *get = pre.as<TupleGetItem>()) {
      int group = group_of(pre);
      if (group < 0) return post;
      bool same_group = group_of(get->tuple) == group;
      if (is_root(pre, group) && !same_group) return post;  // a projection of another group's value
      Expr tuple = new_arguments({get->tuple}, {post.as<TupleGetItem>()->tuple}, group)[0];
      Expr new_get = TupleGetItem::make(tuple, get->index, get->span);
      if (is_root(pre, group)) return make_function(group, pre, new_get);
      return new_get;
    }
    return post;
  }

 private:
  struct GroupInfo {
    std::vector<Expr> params;     // %p0, %p1, ...
    std::vector<Expr> arguments;  // what the group's call passes for each
    std::unordered_map<const ExprNode *, size_t> param_of;
    bool has_call = false;
  };
  const IndexedForwardGraph &graph_;
  GraphPartitioner &partition_;
  std::unordered_map<int, GroupInfo> info_;

  // The root group of `e`'s node, or -1 when `e` is not a graph node.
  int group_of(const Expr &e) {
    int n = graph_.find(e);
    return n < 0 ? -1 : partition_.find_root(n);
  }
  bool is_root(const Expr &e, int group) const { return partition_.group(group).root_node == graph_.find(e); }

  // The arguments of a node of `group`: a rewritten argument from the same group is used as is;
  // one from elsewhere becomes (or reuses) a parameter of the group.
  std::vector<Expr> new_arguments(const std::vector<Expr> &pre_args, const std::vector<Expr> &post_args,
                                  int group) {
    std::vector<Expr> out;
    out.reserve(pre_args.size());
    for (size_t i = 0; i < pre_args.size(); ++i) {
      if (group_of(pre_args[i]) == group) {
        out.push_back(post_args[i]);
        continue;
      }
      GroupInfo &info = info_[group];
      auto [it, inserted] = info.param_of.emplace(post_args[i].get(), info.params.size());
      if (inserted) {
        GROVE_CHECK(pre_args[i]->checked_type.defined(), "operator fusion needs checked types");
        info.params.push_back(Var::make("p" + std::to_string(info.params.size()), pre_args[i]->checked_type));
        info.arguments.push_back(post_args[i]);
      }
      out.push_back(info.params[it->second]);
    }
    return out;
  }

  Expr make_function(int group, const Expr &root, const Expr &body) {
    const GroupInfo &info = info_[group];
    // TVM marks a group without any call (a projection of a tuple of inputs) Primitive=0.
    Attrs attrs = Attrs().with(attr::kPrimitive, AttrValue::of_int(info.has_call ? 1 : 0));
    Expr fn = Function::make(info.params, body, root->checked_type, {}, attrs, root->span);
    return Call::make(fn, info.arguments, {}, {}, root->span);
  }
};

Expr fuse_function(const Expr &fn, int max_depth) {
  IndexedForwardGraph graph = build_forward_graph(fn);
  GraphPartitioner partition(graph, static_cast<size_t>(max_depth));
  partition.partition();
  return FuseMutator(graph, partition).mutate(fn);
}

// Whether every expression fusion reads a type from has one (what infer_types guarantees).
bool has_checked_types(const Module &m) {
  bool typed = true;
  for (const auto &[name, fn] : m.functions()) {
    post_order_visit(fn, [&](const Expr &e) {
      switch (e->kind) {
        case ExprKind::Op:
        case ExprKind::Constructor:
        case ExprKind::GlobalVar:
          return;
        default:
          if (!e->checked_type.defined()) typed = false;
      }
    });
    if (!typed) return false;
  }
  return true;
}

}  // namespace

Module fuse_ops(const Module &m, int max_depth) {
  GROVE_CHECK(max_depth >= 1, "fuse_ops: max_depth must be positive (got {})", max_depth);
  // Fused functions take typed parameters, and the pattern of a broadcast edge depends on shapes.
  if (!has_checked_types(m)) infer_types(m);
  Module out = m;
  for (const auto &[name, fn] : m.functions()) {
    if (is_opaque_function(fn)) continue;
    out.add_function(name, fuse_function(fn, max_depth));
  }
  return out;
}

}  // namespace grove::relay
