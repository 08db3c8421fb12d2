// The synthetic tree generators: exact shapes, post-order numbering, tokens, determinism.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "datasets/Generators.h"

namespace grove {
namespace {

using ::testing::ElementsAre;

// Checks `tree` is one tree numbered in post-order: consistent CSR arrays, root last, every node
// but the root the child of exactly one node, and every subtree a contiguous id range that ends at
// its root, with the children's ranges in order. Leaves carry tokens in [0, vocab_size), internal
// nodes -1. Returns each node's height.
std::vector<int32_t> check_post_order(const Tree &tree, int32_t vocab_size) {
  int32_t n = tree.size();
  std::vector<int32_t> height(n, 0);
  EXPECT_GE(n, 1);
  EXPECT_EQ(tree.child_begin.size(), static_cast<size_t>(n) + 1);
  EXPECT_EQ(tree.child_begin.front(), 0);
  EXPECT_EQ(static_cast<size_t>(tree.child_begin.back()), tree.children.size());
  EXPECT_EQ(tree.root, n - 1);
  EXPECT_EQ(tree.children.size(), static_cast<size_t>(n) - 1) << "a tree has one edge per non-root node";
  std::vector<int32_t> first(n);  // the smallest id in each subtree
  for (int32_t v = 0; v < n; ++v) {
    int32_t arity = tree.num_children(v);
    if (arity == 0) {
      first[v] = v;
      EXPECT_GE(tree.token[v], 0) << v;
      EXPECT_LT(tree.token[v], vocab_size) << v;
      continue;
    }
    EXPECT_EQ(tree.token[v], -1) << v;
    EXPECT_EQ(tree.child(v, arity - 1), v - 1) << "the last child's subtree ends right before its parent";
    for (int32_t k = arity - 1; k > 0; --k) {
      EXPECT_EQ(tree.child(v, k - 1), first[tree.child(v, k)] - 1) << "children's subtrees are adjacent";
    }
    first[v] = first[tree.child(v, 0)];
    for (int32_t k = 0; k < arity; ++k) height[v] = std::max(height[v], height[tree.child(v, k)] + 1);
  }
  EXPECT_EQ(first[n - 1], 0) << "the root's subtree is the whole tree";
  return height;
}

int32_t count_leaves(const Tree &tree) {
  int32_t leaves = 0;
  for (int32_t v = 0; v < tree.size(); ++v) leaves += tree.num_children(v) == 0;
  return leaves;
}

TEST(Generators, RandomBinaryTree) {
  std::set<std::vector<int32_t>> shapes;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Tree tree = random_binary_tree(seed, 40, 100);
    ASSERT_EQ(tree.size(), 79);
    check_post_order(tree, 100);
    EXPECT_EQ(count_leaves(tree), 40);
    for (int32_t v = 0; v < tree.size(); ++v) {
      if (tree.num_children(v) > 0) {
        EXPECT_EQ(tree.num_children(v), 2);
      }
    }
    shapes.insert(tree.children);
  }
  EXPECT_GT(shapes.size(), 15u) << "different seeds give different shapes";
}

TEST(Generators, RandomBinaryTreeIsDeterministic) {
  Tree a = random_binary_tree(7, 1000, 50), b = random_binary_tree(7, 1000, 50);
  EXPECT_EQ(a.token, b.token);
  EXPECT_EQ(a.children, b.children);
  Tree c = random_binary_tree(8, 1000, 50);
  EXPECT_NE(a.children, c.children);
}

TEST(Generators, RandomBinaryTreeSizes) {
  Tree one = random_binary_tree(1, 1, 10);
  EXPECT_EQ(one.size(), 1);
  check_post_order(one, 10);
  Tree two = random_binary_tree(1, 2, 10);
  EXPECT_THAT(two.children, ElementsAre(0, 1));
  Tree big = random_binary_tree(3, 200000, 21702);
  EXPECT_EQ(big.size(), 399999);
  std::vector<int32_t> height = check_post_order(big, 21702);
  // Random merges give a height far below the 199,999 of a chain.
  EXPECT_LT(height.back(), 2000);
}

TEST(Generators, TokensCoverTheVocabulary) {
  Tree tree = random_binary_tree(5, 4000, 8);
  std::vector<int32_t> count(8, 0);
  for (int32_t v = 0; v < tree.size(); ++v) {
    if (tree.token[v] >= 0) ++count[tree.token[v]];
  }
  // 4000 uniform draws over 8 tokens: each expected 500 times.
  for (int32_t c : count) {
    EXPECT_GT(c, 400);
    EXPECT_LT(c, 600);
  }
}

TEST(Generators, PerfectBinaryTree) {
  Tree leaf = perfect_binary_tree(0, 10);
  EXPECT_EQ(leaf.size(), 1);
  check_post_order(leaf, 10);
  Tree three = perfect_binary_tree(1, 10);
  EXPECT_THAT(three.child_begin, ElementsAre(0, 0, 0, 2));
  EXPECT_THAT(three.children, ElementsAre(0, 1));
  Tree tree = perfect_binary_tree(10, 30, 4);
  ASSERT_EQ(tree.size(), 2047);
  std::vector<int32_t> height = check_post_order(tree, 30);
  EXPECT_EQ(count_leaves(tree), 1024);
  for (int32_t v = 0; v < tree.size(); ++v) {
    if (tree.num_children(v) == 0) continue;
    ASSERT_EQ(tree.num_children(v), 2);
    // Perfect: both subtrees have the same height.
    EXPECT_EQ(height[tree.child(v, 0)], height[tree.child(v, 1)]);
  }
  EXPECT_EQ(height.back(), 10);
  EXPECT_EQ(perfect_binary_tree(10, 30, 4).token, tree.token);
}

TEST(Generators, BinaryChain) {
  Tree small = binary_chain(3, 10);
  EXPECT_THAT(small.child_begin, ElementsAre(0, 0, 0, 2, 2, 4));
  EXPECT_THAT(small.children, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(binary_chain(1, 10).size(), 1);

  Tree tree = binary_chain(500000, 21702, 9);
  ASSERT_EQ(tree.size(), 999999);
  std::vector<int32_t> height = check_post_order(tree, 21702);
  EXPECT_EQ(count_leaves(tree), 500000);
  EXPECT_EQ(height.back(), 499999);
  EXPECT_EQ(tree.child(tree.root, 0), 999996);
  EXPECT_EQ(tree.child(tree.root, 1), 999997);
}

TEST(Generators, UnaryChain) {
  Tree tree = unary_chain(1000000, 5, 2);
  ASSERT_EQ(tree.size(), 1000000);
  std::vector<int32_t> height = check_post_order(tree, 5);
  EXPECT_EQ(count_leaves(tree), 1);
  for (int32_t v = 1; v < tree.size(); ++v) ASSERT_EQ(tree.num_children(v), 1);
  EXPECT_EQ(height.back(), 999999);
  EXPECT_EQ(unary_chain(1, 5).size(), 1);
}

TEST(Generators, RandomTree) {
  int32_t widest = 0;
  bool has_unary = false;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Tree tree = random_tree(seed, 1000, 4, 77);
    ASSERT_EQ(tree.size(), 1000);
    check_post_order(tree, 77);
    for (int32_t v = 0; v < tree.size(); ++v) {
      EXPECT_LE(tree.num_children(v), 4);
      widest = std::max(widest, tree.num_children(v));
      has_unary = has_unary || tree.num_children(v) == 1;
    }
  }
  EXPECT_EQ(widest, 4);
  EXPECT_TRUE(has_unary);

  Tree a = random_tree(3, 5000, 3, 10), b = random_tree(3, 5000, 3, 10);
  EXPECT_EQ(a.children, b.children);
  EXPECT_EQ(a.token, b.token);
  EXPECT_NE(random_tree(4, 5000, 3, 10).children, a.children);

  // max_children 1 can only give a chain.
  Tree chain = random_tree(1, 100, 1, 10);
  for (int32_t v = 1; v < chain.size(); ++v) EXPECT_EQ(chain.child(v, 0), v - 1);
  EXPECT_EQ(random_tree(1, 1, 3, 10).size(), 1);
}

}  // namespace
}  // namespace grove
