#include "backends/runtime/Inspector.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "datasets/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;

namespace {

// Per-node state of the walk in check_and_measure.
enum : uint8_t { kUnseen = 0, kOnPath = 1, kDone = 2 };

// The walk's buffers, reused from tree to tree.
struct Walk {
  std::vector<uint8_t> state;
  std::vector<int32_t> parent;
  std::vector<std::pair<int32_t, int32_t>> stack;  // (node, index of its next child)
};

std::string describe_arity(const ArityRule &arity) {
  if (arity.min_children == arity.max_children) return std::to_string(arity.min_children);
  return fmt::format("{} to {}", arity.min_children, arity.max_children);
}

// Checks the CSR arrays of `tree` are consistent, so that indexing them is safe.
void check_shape(const Tree &tree, int64_t number) {
  int32_t n = tree.size();
  if (n == 0) user_error(msg::kTreeEmpty, number);
  if (tree.child_begin.size() != static_cast<size_t>(n) + 1) {
    user_error(msg::kTreeMalformed, number,
               fmt::format("child_begin has {} entries; expected {} (one more than the {} nodes)",
                           tree.child_begin.size(), n + 1, n));
  }
  if (tree.child_begin[0] != 0) {
    user_error(msg::kTreeMalformed, number,
               fmt::format("child_begin[0] is {}; expected 0", tree.child_begin[0]));
  }
  for (int32_t v = 0; v < n; ++v) {
    if (tree.child_begin[v + 1] < tree.child_begin[v]) {
      user_error(msg::kTreeMalformed, number,
                 fmt::format("child_begin[{}] = {} is less than child_begin[{}] = {}", v + 1,
                             tree.child_begin[v + 1], v, tree.child_begin[v]));
    }
  }
  if (static_cast<size_t>(tree.child_begin[n]) != tree.children.size()) {
    user_error(msg::kTreeMalformed, number,
               fmt::format("child_begin[{}] = {} but there are {} child entries", n, tree.child_begin[n],
                           tree.children.size()));
  }
  if (tree.root < 0 || tree.root >= n) user_error(msg::kTreeRootOutOfRange, number, tree.root, n);
}

// Checks a node's arity and token once the walk has finished it.
void check_node(const Tree &tree, int64_t number, int32_t node, const InspectorOptions &options) {
  int32_t arity = tree.num_children(node);
  int32_t token = tree.token[node];
  if (arity == 0) {
    if (token < 0) user_error(msg::kTreeNegativeToken, number, node, token);
    if (options.vocab_size >= 0 && token >= options.vocab_size) {
      user_error(msg::kTreeTokenRange, number, node, token, options.vocab_size);
    }
    return;
  }
  if (arity < options.arity.min_children || arity > options.arity.max_children) {
    user_error(msg::kTreeArity, number, node, arity, describe_arity(options.arity));
  }
  if (token != -1) user_error(msg::kTreeInternalToken, number, node, token);
}

// Steps 1 and 2 for one tree: walks it from the root with an explicit stack, checking every node
// is reached exactly once and is well formed, and writes the nodes in post-order to `post_order`
// and each node's height to `height` (both indexed from the tree's first node in the batch).
void check_and_measure(const Tree &tree, int64_t number, const InspectorOptions &options, Walk &walk,
                       int32_t *post_order, int32_t *height) {
  int32_t n = tree.size();
  std::vector<uint8_t> &state = walk.state;
  std::vector<int32_t> &parent = walk.parent;
  auto &stack = walk.stack;
  state.assign(n, kUnseen);
  parent.assign(n, -1);
  int32_t done = 0;
  state[tree.root] = kOnPath;
  stack.emplace_back(tree.root, 0);
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    if (next < tree.num_children(node)) {
      int32_t child = tree.child(node, next++);
      if (child < 0 || child >= n) user_error(msg::kTreeChildOutOfRange, number, node, child, n);
      if (state[child] == kOnPath) {
        if (child == node) user_error(msg::kTreeSelfLoop, number, node);
        user_error(msg::kTreeCycle, number, child, node);
      }
      if (state[child] == kDone) {
        // The root has no parent; reaching it again means a cycle, and it is on the path then.
        if (parent[child] == node) user_error(msg::kTreeRepeatedChild, number, child, node);
        user_error(msg::kTreeShared, number, child, parent[child], node);
      }
      state[child] = kOnPath;
      parent[child] = node;
      stack.emplace_back(child, 0);
      continue;
    }
    int32_t v = node;
    stack.pop_back();
    check_node(tree, number, v, options);
    int32_t h = 0;
    for (int32_t k = 0; k < tree.num_children(v); ++k) h = std::max(h, height[tree.child(v, k)] + 1);
    height[v] = h;
    state[v] = kDone;
    post_order[done++] = v;
  }
  if (done < n) {
    auto unreached = std::find(state.begin(), state.end(), kUnseen) - state.begin();
    user_error(msg::kTreeUnreachable, number, unreached, tree.root);
  }
}

}  // namespace

LinearizedBatch linearize(std::span<const Tree> trees, const InspectorOptions &options) {
  GROVE_CHECK(options.arity.min_children >= 1 && options.arity.max_children >= options.arity.min_children,
              "bad arity rule [{}, {}]", options.arity.min_children, options.arity.max_children);
  LinearizedBatch batch;
  // Each tree's nodes occupy [offset[t], offset[t+1]) of the batch-wide arrays below, in original ids.
  std::vector<int64_t> offset(trees.size() + 1, 0);
  for (size_t t = 0; t < trees.size(); ++t) offset[t + 1] = offset[t] + trees[t].size();
  if (offset.back() > std::numeric_limits<int32_t>::max()) {
    user_error(msg::kBatchTooLarge, offset.back(), std::numeric_limits<int32_t>::max());
  }
  auto num_nodes = static_cast<int32_t>(offset.back());

  // Steps 1 and 2: check each tree; post-order and heights.
  std::vector<int32_t> post_order(num_nodes);
  std::vector<int32_t> height(num_nodes);
  int32_t max_height = -1;
  Walk walk;
  for (size_t t = 0; t < trees.size(); ++t) {
    int64_t number = options.first_tree_number + static_cast<int64_t>(t);
    check_shape(trees[t], number);
    check_and_measure(trees[t], number, options, walk, &post_order[offset[t]], &height[offset[t]]);
    max_height = std::max(max_height, height[offset[t] + trees[t].root]);
  }

  // Step 3: counting sort by height, stable in (tree, post-order) order.
  batch.num_nodes = num_nodes;
  batch.num_levels = max_height + 1;
  batch.level_begin.assign(batch.num_levels + 1, 0);
  for (int32_t h : height) ++batch.level_begin[h + 1];
  for (int32_t l = 0; l < batch.num_levels; ++l) batch.level_begin[l + 1] += batch.level_begin[l];
  batch.num_leaves = batch.num_levels > 0 ? batch.level_begin[1] : 0;
  std::vector<int32_t> next_id(batch.level_begin.begin(), batch.level_begin.end() - 1);
  std::vector<int32_t> new_id(num_nodes);                      // by batch-wide original index
  std::vector<std::pair<int32_t, int32_t>> origin(num_nodes);  // by new id: (tree, original node)
  for (size_t t = 0; t < trees.size(); ++t) {
    for (int64_t i = offset[t]; i < offset[t + 1]; ++i) {
      int32_t node = post_order[i];
      int32_t id = next_id[height[offset[t] + node]]++;
      new_id[offset[t] + node] = id;
      origin[id] = {static_cast<int32_t>(t), node};
    }
  }

  // Step 4: CSR children, tokens and roots in the new numbering.
  batch.child_begin.reserve(num_nodes + 1);
  batch.child_begin.push_back(0);
  batch.children.reserve(num_nodes - trees.size());
  batch.token.resize(num_nodes);
  for (int32_t id = 0; id < num_nodes; ++id) {
    auto [t, node] = origin[id];
    const Tree &tree = trees[t];
    int32_t arity = tree.num_children(node);
    batch.max_children = std::max(batch.max_children, arity);
    for (int32_t k = 0; k < arity; ++k) batch.children.push_back(new_id[offset[t] + tree.child(node, k)]);
    batch.child_begin.push_back(static_cast<int32_t>(batch.children.size()));
    batch.token[id] = tree.token[node];
  }
  batch.roots.reserve(trees.size());
  for (size_t t = 0; t < trees.size(); ++t) batch.roots.push_back(new_id[offset[t] + trees[t].root]);
  if (options.keep_ids) batch.id_of_row = std::move(new_id);
  return batch;
}

}  // namespace grove
