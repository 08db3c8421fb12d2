#include "datasets/Generators.h"

#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "datasets/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;

namespace {

constexpr int32_t kMaxNodes = std::numeric_limits<int32_t>::max();

void check_at_least(const char *generator, const char *argument, int64_t value, int64_t minimum) {
  if (value < minimum) user_error(msg::kGenTooSmall, generator, argument, minimum, value);
}

void check_at_most(const char *generator, const char *argument, int64_t value, int64_t maximum) {
  if (value > maximum) user_error(msg::kGenTooLarge, generator, argument, maximum, value);
}

// Gives every leaf a uniform token in [0, vocab_size), in node order.
void assign_tokens(Tree &tree, std::mt19937_64 &rng, int32_t vocab_size) {
  std::uniform_int_distribution<int32_t> token(0, vocab_size - 1);
  for (int32_t node = 0; node < tree.size(); ++node) {
    tree.token[node] = tree.num_children(node) == 0 ? token(rng) : -1;
  }
}

// Renumbers a tree given by child lists over any ids (CSR: the children of node v are
// children[child_begin[v] .. child_begin[v+1])) into post-order from `root`, with an explicit stack.
Tree to_post_order(const std::vector<int32_t> &child_begin, const std::vector<int32_t> &children,
                   int32_t root) {
  auto n = static_cast<int32_t>(child_begin.size() - 1);
  std::vector<int32_t> order;  // old ids in post-order
  order.reserve(n);
  std::vector<std::pair<int32_t, int32_t>> stack{{root, child_begin[root]}};  // (node, next child slot)
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    if (next < child_begin[node + 1]) {
      int32_t child = children[next++];
      stack.emplace_back(child, child_begin[child]);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  GROVE_CHECK(static_cast<int32_t>(order.size()) == n, "generated tree reaches {} of its {} nodes",
              order.size(), n);
  std::vector<int32_t> new_id(n);
  for (int32_t i = 0; i < n; ++i) new_id[order[i]] = i;
  Tree tree;
  tree.token.assign(n, -1);
  tree.child_begin.reserve(n + 1);
  tree.child_begin.push_back(0);
  tree.children.reserve(children.size());
  for (int32_t old : order) {
    for (int32_t k = child_begin[old]; k < child_begin[old + 1]; ++k)
      tree.children.push_back(new_id[children[k]]);
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
  }
  tree.root = n - 1;
  return tree;
}

// The positions 0..n-1 of a row, of which some are removed; finds the k-th remaining one in
// O(log n) (a Fenwick tree over "still there" flags).
class Row {
 public:
  explicit Row(int32_t n) : counts_(n + 1, 0) {
    for (int32_t i = 1; i <= n; ++i) {
      counts_[i] += 1;
      int32_t up = i + (i & -i);
      if (up <= n) counts_[up] += counts_[i];
    }
    for (top_bit_ = 1; top_bit_ * 2 <= n; top_bit_ *= 2) {
    }
  }

  void remove(int32_t position) {
    for (int32_t i = position + 1; i < static_cast<int32_t>(counts_.size()); i += i & -i) counts_[i] -= 1;
  }

  // The position of the remaining element with k remaining elements before it.
  int32_t kth(int32_t k) const {
    int32_t position = 0;
    for (int32_t step = top_bit_; step > 0; step /= 2) {
      int32_t next = position + step;
      if (next < static_cast<int32_t>(counts_.size()) && counts_[next] <= k) {
        position = next;
        k -= counts_[next];
      }
    }
    return position;
  }

 private:
  std::vector<int32_t> counts_;
  int32_t top_bit_ = 1;
};

}  // namespace

Tree random_binary_tree(uint64_t seed, int32_t num_leaves, int32_t vocab_size) {
  check_at_least("random_binary_tree", "num_leaves", num_leaves, 1);
  check_at_most("random_binary_tree", "num_leaves", num_leaves, kMaxNodes / 2 + 1);
  check_at_least("random_binary_tree", "vocab_size", vocab_size, 1);
  std::mt19937_64 rng(seed);
  // Leaves are nodes 0..n-1 and the k-th merge creates node n+k, so the CSR grows in id order.
  int32_t n = num_leaves;
  std::vector<int32_t> child_begin(n + 1, 0);
  std::vector<int32_t> children;
  children.reserve(2 * static_cast<size_t>(n - 1));
  std::vector<int32_t> subtree(n);  // the root of the subtree at each position of the row
  for (int32_t i = 0; i < n; ++i) subtree[i] = i;
  Row row(n);
  for (int32_t remaining = n; remaining > 1; --remaining) {
    int32_t k = std::uniform_int_distribution<int32_t>(0, remaining - 2)(rng);
    int32_t left = row.kth(k), right = row.kth(k + 1);
    children.push_back(subtree[left]);
    children.push_back(subtree[right]);
    child_begin.push_back(static_cast<int32_t>(children.size()));
    subtree[left] = static_cast<int32_t>(child_begin.size()) - 2;
    row.remove(right);
  }
  Tree tree = to_post_order(child_begin, children, static_cast<int32_t>(child_begin.size()) - 2);
  assign_tokens(tree, rng, vocab_size);
  return tree;
}

Tree perfect_binary_tree(int32_t height, int32_t vocab_size, uint64_t seed) {
  check_at_least("perfect_binary_tree", "height", height, 0);
  check_at_most("perfect_binary_tree", "height", height, 30);
  check_at_least("perfect_binary_tree", "vocab_size", vocab_size, 1);
  // Heap numbering: node v has children 2v+1 and 2v+2; nodes below 2^height - 1 are internal.
  auto n = static_cast<int32_t>((int64_t{1} << (height + 1)) - 1);
  int32_t num_internal = n / 2;
  std::vector<int32_t> child_begin(n + 1);
  std::vector<int32_t> children;
  children.reserve(n - 1);
  for (int32_t v = 0; v < n; ++v) {
    child_begin[v] = static_cast<int32_t>(children.size());
    if (v < num_internal) {
      children.push_back(2 * v + 1);
      children.push_back(2 * v + 2);
    }
  }
  child_begin[n] = static_cast<int32_t>(children.size());
  Tree tree = to_post_order(child_begin, children, 0);
  std::mt19937_64 rng(seed);
  assign_tokens(tree, rng, vocab_size);
  return tree;
}

Tree binary_chain(int32_t num_leaves, int32_t vocab_size, uint64_t seed) {
  check_at_least("binary_chain", "num_leaves", num_leaves, 1);
  check_at_most("binary_chain", "num_leaves", num_leaves, kMaxNodes / 2 + 1);
  check_at_least("binary_chain", "vocab_size", vocab_size, 1);
  // Post-order: leaf 0, then for every further leaf: the leaf (id 2j-1), its parent (id 2j).
  int32_t n = 2 * num_leaves - 1;
  Tree tree;
  tree.token.assign(n, -1);
  tree.child_begin.reserve(n + 1);
  tree.children.reserve(n - 1);
  tree.child_begin.assign(2, 0);
  for (int32_t j = 1; j < num_leaves; ++j) {
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));  // the leaf 2j-1
    tree.children.push_back(2 * j - 2);
    tree.children.push_back(2 * j - 1);
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));  // its parent 2j
  }
  tree.root = n - 1;
  std::mt19937_64 rng(seed);
  assign_tokens(tree, rng, vocab_size);
  return tree;
}

Tree unary_chain(int32_t num_nodes, int32_t vocab_size, uint64_t seed) {
  check_at_least("unary_chain", "num_nodes", num_nodes, 1);
  check_at_least("unary_chain", "vocab_size", vocab_size, 1);
  Tree tree;
  tree.token.assign(num_nodes, -1);
  tree.child_begin.reserve(num_nodes + 1);
  tree.child_begin.assign(2, 0);
  tree.children.reserve(num_nodes - 1);
  for (int32_t v = 1; v < num_nodes; ++v) {
    tree.children.push_back(v - 1);
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
  }
  tree.root = num_nodes - 1;
  std::mt19937_64 rng(seed);
  assign_tokens(tree, rng, vocab_size);
  return tree;
}

Tree random_tree(uint64_t seed, int32_t num_nodes, int32_t max_children, int32_t vocab_size) {
  check_at_least("random_tree", "num_nodes", num_nodes, 1);
  check_at_least("random_tree", "max_children", max_children, 1);
  check_at_least("random_tree", "vocab_size", vocab_size, 1);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> parent(num_nodes, -1);
  std::vector<int32_t> num_children(num_nodes, 0);
  std::vector<int32_t> open{0};  // nodes that can take another child, in any order
  for (int32_t v = 1; v < num_nodes; ++v) {
    auto slot = std::uniform_int_distribution<size_t>(0, open.size() - 1)(rng);
    int32_t p = open[slot];
    parent[v] = p;
    if (++num_children[p] == max_children) {
      open[slot] = open.back();
      open.pop_back();
    }
    open.push_back(v);
  }
  // Child lists in CSR, each in the order the children were attached.
  std::vector<int32_t> child_begin(num_nodes + 1, 0);
  for (int32_t v = 0; v < num_nodes; ++v) child_begin[v + 1] = child_begin[v] + num_children[v];
  std::vector<int32_t> fill(child_begin.begin(), child_begin.end() - 1);
  std::vector<int32_t> children(num_nodes - 1);
  for (int32_t v = 1; v < num_nodes; ++v) children[fill[parent[v]]++] = v;
  Tree tree = to_post_order(child_begin, children, 0);
  assign_tokens(tree, rng, vocab_size);
  return tree;
}

}  // namespace grove
