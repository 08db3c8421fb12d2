#pragma once
// The inspector: linearizes a batch of trees into the arrays the compiled code reads.
//
// Algorithm (O(nodes), iterative — nothing recurses on the C stack per node):
//   1. Check each tree: child ids in range, every node reached from the root exactly once (no
//      sharing, no cycle, no unreachable node), arity accepted by the model, leaves have tokens
//      in [0, vocab_size).
//   2. Compute each node's height (leaf 0, else 1 + max over children) in post-order, with an
//      explicit stack.
//   3. Counting sort by height: new ids give each height one contiguous range across the whole
//      batch, leaves (height 0) first; ties keep (tree, original post-order) order.
//   4. Build the CSR child arrays, tokens and roots in the new numbering.

#include <cstdint>
#include <span>
#include <vector>

#include "datasets/Tree.h"

namespace grove {

struct LinearizedBatch {
  int32_t num_nodes = 0;
  int32_t num_leaves = 0;  // = level_begin[1]
  int32_t num_levels = 0;  // heights 0 .. num_levels-1
  int32_t max_children = 0;
  std::vector<int32_t> level_begin;  // num_levels + 1 entries; level l is [level_begin[l], level_begin[l+1])
  std::vector<int32_t> child_begin;  // num_nodes + 1
  std::vector<int32_t> children;     // new ids; every child id is smaller than its parent's
  std::vector<int32_t> token;        // per node; -1 for internal nodes
  std::vector<int32_t> roots;        // per input tree, in input order
  // DAGs and sequences (DagInspector.h): an empty predecessor slot holds `zero_node` = num_nodes, a
  // node that is never computed: the executor gives every state buffer one extra row there, all
  // zeros; -1 for trees, which have no empty slots. For DAGs `roots` holds the output nodes.
  int32_t zero_node = -1;
  // With recursive unrolling (TeamPartition.h): thread t's nodes of level l are
  // [team_begin[l * (T + 1) + t], team_begin[l * (T + 1) + t + 1]); empty otherwise.
  std::vector<int32_t> team_begin;
  // With InspectorOptions::keep_ids: the new id of every input node, tree by tree, each tree's nodes
  // in its own numbering (row tree_offset + node); empty otherwise.
  std::vector<int32_t> id_of_row;
};

struct ArityRule {
  int32_t min_children = 1;  // of an internal node
  int32_t max_children = 2;
};

struct InspectorOptions {
  ArityRule arity;
  int64_t vocab_size = -1;        // tokens must be < vocab_size; -1: unchecked
  int64_t first_tree_number = 1;  // how errors number the trees (line numbers of the input file)
  bool keep_ids = false;          // fill LinearizedBatch::id_of_row (training reads every node)
};

LinearizedBatch linearize(std::span<const Tree> trees, const InspectorOptions &options);

}  // namespace grove
