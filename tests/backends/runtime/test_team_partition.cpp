// partition_for_team (TeamPartition.h): on random trees of every arity, for several team sizes and
// unroll factors, the renumbered batch is the same forest, each level's thread ranges tile the
// level, and every node whose parent is in the same block of levels belongs to its parent's thread.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "backends/runtime/Inspector.h"
#include "backends/runtime/TeamPartition.h"
#include "datasets/Generators.h"

namespace grove {
namespace {

constexpr int32_t kVocab = 50;

std::vector<Tree> forest() {
  std::vector<Tree> trees;
  for (int32_t i = 0; i < 30; i++)
    trees.push_back(random_tree(900 + i, 1 + (i * 17) % 70, 1 + i % 5, kVocab));
  trees.push_back(perfect_binary_tree(6, kVocab, 3));
  trees.push_back(unary_chain(40, kVocab, 4));
  return trees;
}

// A tree read back from the batch, from `root`, as a bracketed string of tokens.
std::string shape(const LinearizedBatch &b, int32_t root) {
  std::string out;
  std::vector<std::pair<int32_t, int32_t>> stack{{root, b.child_begin[root]}};
  out += "(";
  if (b.child_begin[root] == b.child_begin[root + 1]) out += std::to_string(b.token[root]);
  while (!stack.empty()) {
    auto &[v, next] = stack.back();
    if (next < b.child_begin[v + 1]) {
      int32_t c = b.children[next++];
      EXPECT_LT(c, v) << "a child's id is not smaller than its parent's";
      out += "(";
      if (b.child_begin[c] == b.child_begin[c + 1]) out += std::to_string(b.token[c]);
      stack.emplace_back(c, b.child_begin[c]);
    } else {
      out += ")";
      stack.pop_back();
    }
  }
  return out;
}

class TeamPartition : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(TeamPartition, SameForestOwnedBySubtreesOfEachBlock) {
  auto [threads, unroll] = GetParam();
  std::vector<Tree> trees = forest();
  InspectorOptions options;
  options.arity = {1, 5};
  const LinearizedBatch before = linearize(trees, options);
  LinearizedBatch after = before;
  partition_for_team(after, threads, unroll);

  ASSERT_EQ(after.level_begin, before.level_begin);
  ASSERT_EQ(after.roots.size(), before.roots.size());
  for (size_t t = 0; t < before.roots.size(); t++)
    EXPECT_EQ(shape(after, after.roots[t]), shape(before, before.roots[t])) << "tree " << t;

  // Thread ranges tile each level; record each node's thread and level.
  ASSERT_EQ(after.team_begin.size(), size_t(after.num_levels) * (threads + 1));
  std::vector<int> owner(after.num_nodes, -1), level(after.num_nodes, -1);
  for (int32_t l = 0; l < after.num_levels; l++) {
    const int32_t *range = &after.team_begin[size_t(l) * (threads + 1)];
    EXPECT_EQ(range[0], after.level_begin[l]);
    EXPECT_EQ(range[threads], after.level_begin[l + 1]);
    for (int t = 0; t < threads; t++) {
      ASSERT_LE(range[t], range[t + 1]);
      for (int32_t v = range[t]; v < range[t + 1]; v++) owner[v] = t, level[v] = l;
    }
  }
  for (int32_t p = 0; p < after.num_nodes; p++)
    for (int32_t k = after.child_begin[p]; k < after.child_begin[p + 1]; k++) {
      int32_t c = after.children[k];
      if (level[c] / unroll != level[p] / unroll) continue;
      EXPECT_EQ(owner[c], owner[p]) << "node " << c << " (level " << level[c] << ") and its parent " << p
                                    << " (level " << level[p] << ") are in one block but on two threads";
    }
}

TEST_P(TeamPartition, BalancesTheLeaves) {
  // A batch of many small trees: each thread gets a share of the leaf level close to 1/threads.
  auto [threads, unroll] = GetParam();
  std::vector<Tree> trees;
  for (int32_t i = 0; i < 200; i++) trees.push_back(random_binary_tree(i, 1 + i % 9, kVocab));
  InspectorOptions options;
  LinearizedBatch batch = linearize(trees, options);
  partition_for_team(batch, threads, unroll);
  for (int t = 0; t < threads; t++) {
    int32_t share = batch.team_begin[t + 1] - batch.team_begin[t];
    EXPECT_NEAR(double(share) / batch.num_leaves, 1.0 / threads, 0.1) << "thread " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Teams, TeamPartition,
                         ::testing::Values(std::make_tuple(1, 2), std::make_tuple(2, 1),
                                           std::make_tuple(2, 2), std::make_tuple(2, 3),
                                           std::make_tuple(3, 2), std::make_tuple(4, 5)));

}  // namespace
}  // namespace grove
