#pragma once
// One input tree as the readers and generators produce it, before the inspector linearizes it.

#include <cstdint>
#include <span>
#include <vector>

namespace grove {

// Nodes are numbered 0..size()-1 in any order; the children of node i are
// children[child_begin[i] .. child_begin[i+1]), in order (left first). A leaf has no children and a
// token id >= 0; an internal node has token -1. Trees from the readers are in post-order (children
// before parents, root last), but the inspector accepts any numbering and checks it is a tree.
struct Tree {
  std::vector<int32_t> token;        // per node
  std::vector<int32_t> child_begin;  // size() + 1 entries
  std::vector<int32_t> children;
  int32_t root = 0;

  int32_t size() const { return static_cast<int32_t>(token.size()); }
  int32_t num_children(int32_t node) const { return child_begin[node + 1] - child_begin[node]; }
  int32_t child(int32_t node, int32_t k) const { return children[child_begin[node] + k]; }
};

// The tree whose node i has parent parent[i] (an id in [0, size), or -1 for the root) and token
// token[i]; a node's children are in increasing id order. The caller has checked every parent id;
// the root is the first node without a parent (0 if none). Cycles, further roots, arity and tokens
// are the inspector's to report. Counting sort: count children per node, prefix-sum the counts
// into child_begin, then place each node in its parent's list in id order.
inline Tree tree_from_parents(std::span<const int32_t> parent, std::vector<int32_t> token) {
  const int32_t n = static_cast<int32_t>(parent.size());
  Tree tree;
  tree.token = std::move(token);
  tree.child_begin.assign(n + 1, 0);
  tree.root = -1;
  for (int32_t i = 0; i < n; ++i) {
    if (parent[i] >= 0)
      ++tree.child_begin[parent[i] + 1];
    else if (tree.root < 0)
      tree.root = i;
  }
  if (tree.root < 0) tree.root = 0;
  for (int32_t i = 0; i < n; ++i) tree.child_begin[i + 1] += tree.child_begin[i];
  tree.children.resize(tree.child_begin[n]);
  std::vector<int32_t> next(tree.child_begin.begin(), tree.child_begin.end() - 1);
  for (int32_t i = 0; i < n; ++i)
    if (parent[i] >= 0) tree.children[next[parent[i]]++] = i;
  return tree;
}

}  // namespace grove
