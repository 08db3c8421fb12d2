// The inspector: linearized batches against a reference computed here, and their invariants, on
// hand-made, generated and SST trees, including million-node chains.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "backends/runtime/Inspector.h"
#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"

namespace grove {
namespace {

using ::testing::ElementsAre;

InspectorOptions binary_options(int64_t vocab_size = -1) {
  InspectorOptions options;
  options.arity = {2, 2};
  options.vocab_size = vocab_size;
  return options;
}

InspectorOptions any_arity_options(int32_t max_children) {
  InspectorOptions options;
  options.arity = {1, max_children};
  return options;
}

// Checks the invariants of a linearized batch on its own: levels are contiguous with the leaves
// first, a node's level is 1 + the highest level among its children, every child id is smaller
// than its parent's, leaves have tokens and internal nodes -1, and the counts add up.
void check_invariants(const LinearizedBatch &batch, size_t num_trees) {
  int32_t n = batch.num_nodes;
  ASSERT_EQ(batch.level_begin.size(), static_cast<size_t>(batch.num_levels) + 1);
  ASSERT_EQ(batch.child_begin.size(), static_cast<size_t>(n) + 1);
  ASSERT_EQ(batch.token.size(), static_cast<size_t>(n));
  ASSERT_EQ(batch.roots.size(), num_trees);
  EXPECT_EQ(batch.level_begin.front(), 0);
  EXPECT_EQ(batch.level_begin.back(), n);
  EXPECT_EQ(batch.child_begin.front(), 0);
  EXPECT_EQ(static_cast<size_t>(batch.child_begin.back()), batch.children.size());
  EXPECT_EQ(batch.children.size(), static_cast<size_t>(n) - num_trees);
  if (n > 0) {
    EXPECT_EQ(batch.num_leaves, batch.level_begin[1]);
  }
  std::vector<int32_t> level(n);
  for (int32_t l = 0; l < batch.num_levels; ++l) {
    ASSERT_LT(batch.level_begin[l], batch.level_begin[l + 1]) << "level " << l << " is empty";
    for (int32_t v = batch.level_begin[l]; v < batch.level_begin[l + 1]; ++v) level[v] = l;
  }
  int32_t max_children = 0;
  std::vector<int32_t> parents(n, 0);
  for (int32_t v = 0; v < n; ++v) {
    int32_t arity = batch.child_begin[v + 1] - batch.child_begin[v];
    ASSERT_GE(arity, 0);
    max_children = std::max(max_children, arity);
    if (arity == 0) {
      ASSERT_EQ(level[v], 0) << v;
      ASSERT_GE(batch.token[v], 0) << v;
      continue;
    }
    ASSERT_EQ(batch.token[v], -1) << v;
    int32_t highest = -1;
    for (int32_t k = batch.child_begin[v]; k < batch.child_begin[v + 1]; ++k) {
      int32_t child = batch.children[k];
      ASSERT_GE(child, 0);
      ASSERT_LT(child, v) << "a child's id is smaller than its parent's";
      ASSERT_LT(level[child], level[v]);
      highest = std::max(highest, level[child]);
      ++parents[child];
    }
    ASSERT_EQ(level[v], highest + 1) << v;
  }
  EXPECT_EQ(batch.max_children, max_children);
  for (int32_t root : batch.roots) ++parents[root];
  for (int32_t v = 0; v < n; ++v)
    ASSERT_EQ(parents[v], 1) << "node " << v << " has one parent or is one root";
}

// The reference linearization of trees numbered in post-order: heights by a loop over the ids,
// then a stable sort by height over (tree, id). Checks `batch` equals it node for node.
void check_against_reference(const LinearizedBatch &batch, const std::vector<Tree> &trees) {
  struct Node {
    int32_t tree, id, height;
  };
  std::vector<Node> nodes;
  std::vector<std::vector<int32_t>> height(trees.size());
  for (size_t t = 0; t < trees.size(); ++t) {
    const Tree &tree = trees[t];
    height[t].assign(tree.size(), 0);
    for (int32_t v = 0; v < tree.size(); ++v) {
      for (int32_t k = 0; k < tree.num_children(v); ++k) {
        height[t][v] = std::max(height[t][v], height[t][tree.child(v, k)] + 1);
      }
      nodes.push_back({static_cast<int32_t>(t), v, height[t][v]});
    }
  }
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const Node &a, const Node &b) { return a.height < b.height; });
  std::vector<std::vector<int32_t>> new_id(trees.size());
  for (size_t t = 0; t < trees.size(); ++t) new_id[t].resize(trees[t].size());
  for (size_t i = 0; i < nodes.size(); ++i) new_id[nodes[i].tree][nodes[i].id] = static_cast<int32_t>(i);

  ASSERT_EQ(batch.num_nodes, static_cast<int32_t>(nodes.size()));
  int32_t max_height = nodes.empty() ? -1 : nodes.back().height;
  ASSERT_EQ(batch.num_levels, max_height + 1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    const Tree &tree = trees[node.tree];
    ASSERT_EQ(batch.token[i], tree.token[node.id]) << "tokens are preserved";
    ASSERT_GE(static_cast<int32_t>(i), batch.level_begin[node.height]);
    ASSERT_LT(static_cast<int32_t>(i), batch.level_begin[node.height + 1]);
    ASSERT_EQ(batch.child_begin[i + 1] - batch.child_begin[i], tree.num_children(node.id));
    for (int32_t k = 0; k < tree.num_children(node.id); ++k) {
      ASSERT_EQ(batch.children[batch.child_begin[i] + k], new_id[node.tree][tree.child(node.id, k)]);
    }
  }
  for (size_t t = 0; t < trees.size(); ++t)
    EXPECT_EQ(batch.roots[t], new_id[t][trees[t].root]) << "tree " << t;
}

TEST(Inspector, HandWrittenBatch) {
  Vocab vocab = Vocab::parse("It\n's\ngood\n", "v.txt");
  std::vector<Tree> trees = {parse_ptb_tree("(3 (2 It) (4 (2 's) (4 good)))", &vocab, "t.txt", 1),
                             parse_ptb_tree("(1 7)", nullptr, "t.txt", 2)};
  LinearizedBatch batch = linearize(trees, binary_options(10));
  // Level 0: It 's good 7; level 1: ('s good); level 2: the first root.
  EXPECT_EQ(batch.num_nodes, 6);
  EXPECT_EQ(batch.num_leaves, 4);
  EXPECT_EQ(batch.num_levels, 3);
  EXPECT_EQ(batch.max_children, 2);
  EXPECT_THAT(batch.level_begin, ElementsAre(0, 4, 5, 6));
  EXPECT_THAT(batch.child_begin, ElementsAre(0, 0, 0, 0, 0, 2, 4));
  EXPECT_THAT(batch.children, ElementsAre(1, 2, 0, 4));
  EXPECT_THAT(batch.token, ElementsAre(0, 1, 2, 7, -1, -1));
  EXPECT_THAT(batch.roots, ElementsAre(5, 3));
}

TEST(Inspector, EmptyBatch) {
  LinearizedBatch batch = linearize({}, binary_options());
  EXPECT_EQ(batch.num_nodes, 0);
  EXPECT_EQ(batch.num_leaves, 0);
  EXPECT_EQ(batch.num_levels, 0);
  EXPECT_EQ(batch.max_children, 0);
  EXPECT_THAT(batch.level_begin, ElementsAre(0));
  EXPECT_THAT(batch.child_begin, ElementsAre(0));
  EXPECT_TRUE(batch.children.empty());
  EXPECT_TRUE(batch.token.empty());
  EXPECT_TRUE(batch.roots.empty());
}

TEST(Inspector, BatchOfLeaves) {
  std::vector<Tree> trees = {unary_chain(1, 10, 1), unary_chain(1, 10, 2), unary_chain(1, 10, 3)};
  LinearizedBatch batch = linearize(trees, binary_options(10));
  EXPECT_EQ(batch.num_levels, 1);
  EXPECT_EQ(batch.num_leaves, 3);
  EXPECT_EQ(batch.max_children, 0);
  EXPECT_THAT(batch.roots, ElementsAre(0, 1, 2));
  EXPECT_THAT(batch.token, ElementsAre(trees[0].token[0], trees[1].token[0], trees[2].token[0]));
}

TEST(Inspector, RandomBinaryTrees) {
  std::vector<Tree> trees;
  for (uint64_t seed = 0; seed < 50; ++seed)
    trees.push_back(random_binary_tree(seed, 1 + seed * 7 % 60, 100));
  LinearizedBatch batch = linearize(trees, binary_options(100));
  check_invariants(batch, trees.size());
  check_against_reference(batch, trees);
}

TEST(Inspector, MixedArityTrees) {
  std::vector<Tree> trees;
  for (uint64_t seed = 0; seed < 30; ++seed) trees.push_back(random_tree(seed, 1 + seed * 13 % 200, 5, 40));
  trees.push_back(perfect_binary_tree(6, 40));
  trees.push_back(unary_chain(30, 40));
  trees.push_back(binary_chain(17, 40));
  LinearizedBatch batch = linearize(trees, any_arity_options(5));
  check_invariants(batch, trees.size());
  check_against_reference(batch, trees);
  EXPECT_EQ(batch.max_children, 5);
}

TEST(Inspector, AnyNumberingGivesThePostOrderResult) {
  // Renumber each tree's nodes at random; ties within a level follow each tree's post-order walk,
  // so the batch is the same as for the post-order numbering.
  std::mt19937_64 rng(11);
  std::vector<Tree> trees, shuffled;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Tree tree = random_tree(seed, 50 + seed, 3, 1000);
    std::vector<int32_t> perm(tree.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> old_of(tree.size());
    for (int32_t v = 0; v < tree.size(); ++v) old_of[perm[v]] = v;
    Tree renamed;
    renamed.child_begin.push_back(0);
    for (int32_t u = 0; u < tree.size(); ++u) {
      int32_t v = old_of[u];
      renamed.token.push_back(tree.token[v]);
      for (int32_t k = 0; k < tree.num_children(v); ++k) renamed.children.push_back(perm[tree.child(v, k)]);
      renamed.child_begin.push_back(static_cast<int32_t>(renamed.children.size()));
    }
    renamed.root = perm[tree.root];
    trees.push_back(std::move(tree));
    shuffled.push_back(std::move(renamed));
  }
  LinearizedBatch expected = linearize(trees, any_arity_options(3));
  LinearizedBatch batch = linearize(shuffled, any_arity_options(3));
  check_invariants(batch, shuffled.size());
  EXPECT_EQ(batch.level_begin, expected.level_begin);
  EXPECT_EQ(batch.child_begin, expected.child_begin);
  EXPECT_EQ(batch.children, expected.children);
  EXPECT_EQ(batch.token, expected.token);
  EXPECT_EQ(batch.roots, expected.roots);
}

TEST(Inspector, SstTestSplit) {
  Vocab vocab = Vocab::load(std::string(GROVE_SST_DIR) + "/vocab.txt");
  std::vector<Tree> trees = read_ptb_trees(std::string(GROVE_SST_DIR) + "/test.txt", &vocab);
  LinearizedBatch batch = linearize(trees, binary_options(vocab.size()));
  check_invariants(batch, trees.size());
  check_against_reference(batch, trees);
  // The README's statistics for test.txt: the highest tree has height 28.
  EXPECT_EQ(batch.num_nodes, 82600);
  EXPECT_EQ(batch.num_leaves, 42405);
  EXPECT_EQ(batch.num_levels, 29);
  EXPECT_EQ(batch.max_children, 2);
}

TEST(Inspector, BinaryChainOfAMillionNodes) {
  std::vector<Tree> trees = {binary_chain(500000, 21702, 1)};
  LinearizedBatch batch = linearize(trees, binary_options(21702));
  check_invariants(batch, 1);
  check_against_reference(batch, trees);
  EXPECT_EQ(batch.num_nodes, 999999);
  EXPECT_EQ(batch.num_leaves, 500000);
  EXPECT_EQ(batch.num_levels, 500000);
  EXPECT_EQ(batch.roots[0], 999998);
}

TEST(Inspector, UnaryChainOfAMillionNodes) {
  std::vector<Tree> trees = {unary_chain(1000000, 3, 1), random_binary_tree(2, 10, 3)};
  LinearizedBatch batch = linearize(trees, any_arity_options(2));
  check_invariants(batch, 2);
  check_against_reference(batch, trees);
  EXPECT_EQ(batch.num_levels, 1000000);
  EXPECT_EQ(batch.num_leaves, 11);
  EXPECT_EQ(batch.roots[0], 1000000 + 19 - 1) << "the chain's root is the last node";
}

}  // namespace
}  // namespace grove
