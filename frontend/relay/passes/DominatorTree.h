#pragma once
// The indexed forward dataflow graph of a function and its post-dominator tree: what operator
// fusion (FuseOps) reads, after TVM's IndexedForwardGraph and DominatorTree. Assumes checked types;
// nodes are in post-DFS order (producers before consumers), so the graph is a DAG.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"

namespace grove::relay {

// The dataflow fragment of an expression. Its nodes are the calls, tuples, projections, variables,
// constants and the boundaries (let, if, match, ref nodes) reachable from it; Ops, Constructors,
// GlobalVars and Functions are not nodes, and Primitive or Compiler functions are not entered. An
// edge goes from a producer to a consumer and carries the pattern under which the consumer reads
// it (the consumer op's pattern; Broadcast becomes ElemWise where the argument's shape is the
// result's). A node whose value escapes the dataflow (a function body or parameter, a let's
// variable, value or body, an if's or match's parts, a tuple field that is not a tensor) is
// `extern_ref`: nothing may fuse across it.
struct IndexedForwardGraph {
  struct Edge {
    int node;  // the consumer's index
    OpPattern pattern;
  };
  struct Node {
    Expr ref;
    bool extern_ref = false;
    OpPattern pattern = OpPattern::Opaque;
    std::vector<Edge> outputs;
  };
  std::vector<Node> nodes;  // post-DFS order: every producer before its consumers
  std::unordered_map<const ExprNode *, int> index_of;

  // The index of `e`'s node, or -1 when `e` is not a node of the graph.
  int find(const Expr &e) const {
    auto it = index_of.find(e.get());
    return it == index_of.end() ? -1 : it->second;
  }
};

// Builds the graph of `root` (usually a Function). Iterative.
IndexedForwardGraph build_forward_graph(const Expr &root);

// The post-dominator tree of a forward graph, computed in one pass in reverse topological order:
// a node's immediate post-dominator is the least common ancestor, in the tree built so far, of its
// consumers. `pattern` is the most general edge or node pattern met on the way from the node to its
// post-dominator. Extern nodes, and nodes whose consumers meet nowhere, have no parent (-1).
struct PostDominatorTree {
  struct Node {
    int parent = -1;  // graph index of the immediate post-dominator
    int depth = 1;
    OpPattern pattern = OpPattern::Opaque;
  };
  std::vector<Node> nodes;  // by graph index
};

PostDominatorTree post_dominator_tree(const IndexedForwardGraph &graph);

}  // namespace grove::relay
