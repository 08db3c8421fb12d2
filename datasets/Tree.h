#pragma once
// One input tree as the readers and generators produce it, before the inspector linearizes it.

#include <cstdint>
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

}  // namespace grove
