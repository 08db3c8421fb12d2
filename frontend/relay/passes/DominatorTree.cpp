#include "frontend/relay/passes/DominatorTree.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "frontend/relay/Visitor.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// Functions fusion must not look into: already fused kernels and functions for an external
// compiler (TVM skips the latter when building the graph and the former when rewriting; skipping
// both here gives the same groups, since nothing outside can fuse through them).
bool is_opaque_function(const Expr &e) {
  const auto *fn = e.as<Function>();
  return fn && (fn->has_attr(attr::kPrimitive) || fn->has_attr(attr::kCompiler));
}

const TensorType *tensor_type_of(const Expr &e) {
  GROVE_CHECK(e->checked_type.defined(), "operator fusion needs checked types ({} has none)",
              to_string(e->kind));
  return e->checked_type.as<TensorType>();
}

// A scalar constant of a type the code generator can inline fuses like an elementwise op; any other
// constant is opaque (it stays outside every group and becomes a parameter).
OpPattern constant_pattern(const Constant &c) {
  DType t = c.data.dtype();
  bool simple = t == DType::Int32 || t == DType::Int64 || t == DType::Float32 || t == DType::Float64 ||
                t == DType::Bool;
  return c.data.ndim() == 0 && simple ? OpPattern::ElemWise : OpPattern::Opaque;
}

class GraphBuilder {
 public:
  IndexedForwardGraph build(const Expr &root) {
    // 1. Visit every node once, children (in evaluation order) before parents, with an explicit
    //    stack; the order of completion is TVM's post-DFS order.
    std::vector<std::pair<Expr, bool>> stack{{root, false}};
    std::vector<Expr> children;
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (done_.count(e.get())) continue;
      if (expanded) {
        done_.insert(e.get());
        add(e);
        continue;
      }
      stack.emplace_back(e, true);
      if (is_opaque_function(e)) continue;
      children.clear();
      for_each_child(e, [&](const Expr &c) { children.push_back(c); });
      for (auto it = children.rbegin(); it != children.rend(); ++it)
        if (!done_.count(it->get())) stack.emplace_back(*it, false);
    }
    // 2. The root's value leaves the graph.
    mark_extern(root);
    return std::move(graph_);
  }

 private:
  IndexedForwardGraph graph_;
  std::unordered_set<const ExprNode *> done_;

  int new_node(const Expr &e, OpPattern pattern) {
    int index = static_cast<int>(graph_.nodes.size());
    IndexedForwardGraph::Node node;
    node.ref = e;
    node.pattern = pattern;
    graph_.nodes.push_back(std::move(node));
    graph_.index_of.emplace(e.get(), index);
    return index;
  }
  void edge(const Expr &producer, int consumer, OpPattern pattern) {
    int p = graph_.find(producer);
    if (p >= 0) graph_.nodes[p].outputs.push_back({consumer, pattern});
  }
  void mark_extern(const Expr &e) {
    int p = graph_.find(e);
    if (p >= 0) graph_.nodes[p].extern_ref = true;
  }

  // Adds `e`'s node (its children have theirs already) and the edges from its children.
  void add(const Expr &e) {
    switch (e->kind) {
      case ExprKind::Constant:
        new_node(e, constant_pattern(*e.as<Constant>()));
        return;
      case ExprKind::Var:
        new_node(e, OpPattern::Opaque);
        return;
      case ExprKind::Call: {
        const auto *call = e.as<Call>();
        const auto *op = call->op.as<Op>();
        OpPattern pattern = op ? op->def->pattern : OpPattern::Opaque;
        int n = new_node(e, pattern);
        // A computed callee (a closure) is an input that fusion must not absorb.
        mark_extern(call->op);
        const TensorType *result = tensor_type_of(e);
        for (const Expr &arg : call->args) {
          OpPattern edge_pattern = pattern;
          // Broadcasting an argument to a result of its own shape is elementwise.
          const TensorType *arg_type = tensor_type_of(arg);
          if (edge_pattern == OpPattern::Broadcast && arg_type && result && arg_type->shape == result->shape)
            edge_pattern = OpPattern::ElemWise;
          edge(arg, n, edge_pattern);
        }
        return;
      }
      case ExprKind::Tuple: {
        int n = new_node(e, OpPattern::Tuple);
        for (const Expr &field : e.as<Tuple>()->fields) {
          if (tensor_type_of(field))
            edge(field, n, OpPattern::Injective);
          else
            mark_extern(field);
        }
        return;
      }
      case ExprKind::TupleGetItem: {
        const auto *get = e.as<TupleGetItem>();
        GROVE_CHECK(get->tuple->checked_type.defined(), "operator fusion needs checked types");
        const auto *tuple_type = get->tuple->checked_type.as<TupleType>();
        GROVE_CHECK(tuple_type, "a projection of a value that is not a tuple");
        // Fused kernels take tensors and tuples of tensors only: a projection of any other tuple
        // is a boundary.
        bool all_tensors = std::all_of(tuple_type->fields.begin(), tuple_type->fields.end(),
                                       [](const Type &t) { return t.as<TensorType>() != nullptr; });
        if (!all_tensors) {
          new_node(e, OpPattern::Opaque);
          mark_extern(get->tuple);
        } else {
          int n = new_node(e, OpPattern::Injective);
          edge(get->tuple, n, OpPattern::Injective);
        }
        return;
      }
      case ExprKind::Function: {
        // Not a node: its parameters and body are the edges of a separate dataflow region.
        const auto *fn = e.as<Function>();
        if (is_opaque_function(e)) return;
        for (const Expr &p : fn->params) mark_extern(p);
        mark_extern(fn->body);
        return;
      }
      case ExprKind::Let:
      case ExprKind::If:
      case ExprKind::Match:
      case ExprKind::RefCreate:
      case ExprKind::RefRead:
      case ExprKind::RefWrite:
        // Control flow, bindings and effects are boundaries: every child's value escapes.
        new_node(e, OpPattern::Opaque);
        for_each_child(e, [&](const Expr &c) { mark_extern(c); });
        return;
      case ExprKind::GlobalVar:
      case ExprKind::Op:
      case ExprKind::Constructor:
        return;
    }
    GROVE_CHECK(false, "unknown Relay expression kind");
  }
};

// The least common ancestor of two tree nodes, folding into `pattern` the pattern of every node
// left on the way (each node's pattern summarizes its path to its parent).
int least_common_ancestor(const std::vector<PostDominatorTree::Node> &tree, int lhs, int rhs,
                          OpPattern *pattern) {
  auto combine = [&](int n) { *pattern = std::max(*pattern, tree[n].pattern); };
  while (lhs != rhs) {
    if (lhs < 0 || rhs < 0) return -1;
    if (tree[lhs].depth < tree[rhs].depth) {
      combine(rhs);
      rhs = tree[rhs].parent;
    } else if (tree[rhs].depth < tree[lhs].depth) {
      combine(lhs);
      lhs = tree[lhs].parent;
    } else {
      combine(lhs);
      combine(rhs);
      lhs = tree[lhs].parent;
      rhs = tree[rhs].parent;
    }
  }
  return lhs;
}

}  // namespace

IndexedForwardGraph build_forward_graph(const Expr &root) { return GraphBuilder().build(root); }

// 1. Visit nodes consumers-first (reverse post-DFS order), so every consumer is in the tree.
// 2. An extern node has no post-dominator: its value leaves the dataflow region.
// 3. Otherwise the immediate post-dominator is the LCA of the consumers; the node's pattern is the
//    most general of its edge patterns and of the patterns on the tree paths up to the LCA.
PostDominatorTree post_dominator_tree(const IndexedForwardGraph &graph) {
  PostDominatorTree tree;
  tree.nodes.resize(graph.nodes.size());
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const auto &gnode = graph.nodes[i];
    auto &tnode = tree.nodes[i];
    if (gnode.extern_ref || gnode.outputs.empty()) {
      tnode.parent = -1;
      tnode.depth = 1;
      tnode.pattern = gnode.extern_ref ? OpPattern::Opaque : OpPattern::ElemWise;
      continue;
    }
    OpPattern pattern = OpPattern::ElemWise;
    int parent = gnode.outputs[0].node;
    pattern = std::max(pattern, gnode.outputs[0].pattern);
    for (size_t k = 1; k < gnode.outputs.size(); ++k) {
      parent = least_common_ancestor(tree.nodes, parent, gnode.outputs[k].node, &pattern);
      pattern = std::max(pattern, gnode.outputs[k].pattern);
    }
    tnode.parent = parent;
    tnode.depth = parent >= 0 ? tree.nodes[parent].depth + 1 : 1;
    tnode.pattern = pattern;
  }
  return tree;
}

}  // namespace grove::relay
