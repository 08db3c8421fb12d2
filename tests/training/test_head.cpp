// The classifier head's loss and gradients: a case computed by hand, every gradient against central
// finite differences (with and without dropout, all nodes and roots only), and the dropout mask.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "datasets/PTBReader.h"
#include "tests/UserError.h"
#include "training/Head.h"

namespace grove::training {
namespace {

// One tree (3 (1 a) (2 b)) of ids: nodes 0, 1 leaves, 2 the root.
Tree three_node_tree() { return parse_ptb_tree("(0 (0 0) (0 1))", nullptr, "t", 1); }

NodeStates states_of(std::vector<int64_t> offsets, std::vector<float> rows, int64_t width) {
  NodeStates s;
  s.width = width;
  s.tree_offset = std::move(offsets);
  s.rows = std::move(rows);
  return s;
}

TEST(Head, OneNodeByHand) {
  // W = [[1, 0], [0, 1], [1, 1]], b = 0, h = [1, 2], label 2: z = [1, 2, 3].
  Weights head;
  head[kHeadWeight] = Tensor({3, 2});
  head[kHeadWeight].data = {1, 0, 0, 1, 1, 1};
  head[kHeadBias] = Tensor({3});
  Tree leaf = parse_ptb_tree("(0 0)", nullptr, "t", 1);
  NodeStates states = states_of({0, 1}, {1, 2}, 2);
  std::vector<std::vector<int32_t>> labels = {{2}};
  HeadResult r = head_loss(states, std::span(&leaf, 1), labels, head, {}, 1);
  // p = softmax(1, 2, 3) = (0.0900306, 0.2447285, 0.6652410); loss = −log p2.
  const double p0 = 0.09003057317038046, p1 = 0.24472847105479764, p2 = 0.6652409557748219;
  EXPECT_NEAR(r.loss, -std::log(p2), 1e-12);
  EXPECT_EQ(r.labelled, 1);
  ASSERT_EQ(r.d_rows.size(), 2u);
  // dh = Wᵀ (p − e2) = (p0 + p2 − 1, p1 + p2 − 1).
  EXPECT_NEAR(r.d_rows[0], p0 + p2 - 1, 1e-7);
  EXPECT_NEAR(r.d_rows[1], p1 + p2 - 1, 1e-7);
  // dW = (p − e2) hᵀ, db = p − e2.
  const std::vector<double> dz = {p0, p1, p2 - 1};
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(r.d_bias.data[c], dz[c], 1e-7);
    EXPECT_NEAR(r.d_weight.data[c * 2 + 0], dz[c] * 1, 1e-7);
    EXPECT_NEAR(r.d_weight.data[c * 2 + 1], dz[c] * 2, 1e-7);
  }
  // Predictions: the largest logit, class 2.
  EXPECT_EQ(head_predict(states, head), std::vector<int32_t>{2});
}

TEST(Head, MeanOverLabelledNodesAndUnlabelledSkipped) {
  Weights head = init_head(4, 5, 3);
  std::vector<Tree> trees = {three_node_tree(), three_node_tree()};
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> rows(6 * 4);
  for (float &v : rows) v = u(gen);
  NodeStates states = states_of({0, 3, 6}, rows, 4);
  std::vector<std::vector<int32_t>> labels = {{0, 1, 2}, {3, -1, 4}};
  HeadResult all = head_loss(states, trees, labels, head, {}, 1);
  EXPECT_EQ(all.labelled, 5);
  // The mean of the five nodes' losses, each computed alone.
  double sum = 0;
  for (int t = 0; t < 2; ++t) {
    for (int n = 0; n < 3; ++n) {
      if (labels[t][n] < 0) continue;
      Tree leaf = parse_ptb_tree("(0 0)", nullptr, "t", 1);
      NodeStates one = states_of(
          {0, 1}, std::vector<float>(rows.begin() + (t * 3 + n) * 4, rows.begin() + (t * 3 + n + 1) * 4), 4);
      std::vector<std::vector<int32_t>> l = {{labels[t][n]}};
      sum += head_loss(one, std::span(&leaf, 1), l, head, {}, 1).loss;
    }
  }
  EXPECT_NEAR(all.loss, sum / 5, 1e-12);
  // The unlabelled node's row gets no gradient.
  for (int k = 0; k < 4; ++k) EXPECT_EQ(all.d_rows[(3 + 1) * 4 + k], 0.0f);

  // Averaged over the trees instead: the same sum over 2, gradients scaled by 5 / 2.
  HeadResult per_tree = head_loss(states, trees, labels, head, {LossNodes::All, 0.0, 1, Average::Trees}, 1);
  EXPECT_NEAR(per_tree.loss, sum / 2, 1e-12);
  EXPECT_NEAR(per_tree.sum, sum, 1e-12);
  for (size_t i = 0; i < all.d_rows.size(); ++i) EXPECT_NEAR(per_tree.d_rows[i], all.d_rows[i] * 2.5f, 1e-6);
  EXPECT_NEAR(per_tree.d_bias.data[0], all.d_bias.data[0] * 2.5f, 1e-6);

  HeadResult roots = head_loss(states, trees, labels, head, {LossNodes::Root, 0.0, 1}, 1);
  EXPECT_EQ(roots.labelled, 2);
  for (int row : {0, 1, 3, 4})
    for (int k = 0; k < 4; ++k) EXPECT_EQ(roots.d_rows[row * 4 + k], 0.0f) << "row " << row;
}

TEST(Head, NoLabelledNodes) {
  Weights head = init_head(2, 3, 1);
  Tree tree = three_node_tree();
  NodeStates states = states_of({0, 3}, std::vector<float>(6, 0.5f), 2);
  std::vector<std::vector<int32_t>> labels = {{-1, -1, -1}};
  HeadResult r = head_loss(states, std::span(&tree, 1), labels, head, {}, 1);
  EXPECT_EQ(r.loss, 0.0);
  EXPECT_EQ(r.labelled, 0);
  for (float v : r.d_weight.data) EXPECT_EQ(v, 0.0f);
}

// Central differences of the loss in every input (rows, head.weight, head.bias).
void check_finite_differences(const HeadOptions &options) {
  const int64_t width = 3, classes = 5;
  Weights head = init_head(width, classes, 7);
  std::vector<Tree> trees = {three_node_tree(), parse_ptb_tree("(0 4)", nullptr, "t", 1)};
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> rows(4 * width);
  for (float &v : rows) v = u(gen);
  NodeStates states = states_of({0, 3, 4}, rows, width);
  std::vector<std::vector<int32_t>> labels = {{4, 0, 2}, {1}};
  const uint64_t step = 3;
  HeadResult r = head_loss(states, trees, labels, head, options, step);
  auto loss = [&] { return head_loss(states, trees, labels, head, options, step).loss; };
  const float eps = 1e-3f;
  auto check = [&](float &x, double analytic, const std::string &what) {
    const float saved = x;
    x = saved + eps;
    const double up = loss();
    x = saved - eps;
    const double down = loss();
    x = saved;
    const double numeric =
        (up - down) / (static_cast<double>(saved + eps) - static_cast<double>(saved - eps));
    EXPECT_NEAR(analytic, numeric, 1e-5) << what;
  };
  for (size_t i = 0; i < states.rows.size(); ++i)
    check(states.rows[i], r.d_rows[i], "row " + std::to_string(i));
  for (size_t i = 0; i < head[kHeadWeight].data.size(); ++i)
    check(head[kHeadWeight].data[i], r.d_weight.data[i], "weight " + std::to_string(i));
  for (size_t i = 0; i < head[kHeadBias].data.size(); ++i)
    check(head[kHeadBias].data[i], r.d_bias.data[i], "bias " + std::to_string(i));
}

TEST(Head, GradientsMatchFiniteDifferences) { check_finite_differences({}); }
TEST(Head, GradientsMatchFiniteDifferencesRootsOnly) { check_finite_differences({LossNodes::Root, 0.0, 1}); }
TEST(Head, GradientsMatchFiniteDifferencesWithDropout) { check_finite_differences({LossNodes::All, 0.5, 9}); }
TEST(Head, GradientsMatchFiniteDifferencesAveragedOverTrees) {
  check_finite_differences({LossNodes::All, 0.5, 9, Average::Trees});
}

// The rows' work split among threads gives the same bits as one thread: a batch of many trees (more
// rows than one chunk), with dropout, on 1, 2 and 5 threads.
TEST(Head, SameBitsOnAnyNumberOfThreads) {
  const int64_t width = 37, classes = 5;
  Weights head = init_head(width, classes, 11);
  std::vector<Tree> trees;
  std::vector<std::vector<int32_t>> labels;
  std::vector<int64_t> offsets{0};
  for (int t = 0; t < 120; ++t) {
    trees.push_back(three_node_tree());
    labels.push_back({t % 5, (t + 1) % 5, t % 3 == 0 ? -1 : (t + 2) % 5});
    offsets.push_back(offsets.back() + 3);
  }
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> rows(size_t(offsets.back() * width));
  for (float &v : rows) v = u(gen);
  NodeStates states = states_of(offsets, rows, width);
  HeadOptions options{LossNodes::All, 0.3, 4, Average::Nodes, 1};
  const HeadResult one = head_loss(states, trees, labels, head, options, 6);
  ASSERT_GT(one.labelled, 64);
  for (int threads : {2, 5}) {
    options.threads = threads;
    const HeadResult r = head_loss(states, trees, labels, head, options, 6);
    EXPECT_EQ(r.sum, one.sum) << threads;
    EXPECT_EQ(r.d_rows, one.d_rows) << threads;
    EXPECT_EQ(r.d_weight.data, one.d_weight.data) << threads;
    EXPECT_EQ(r.d_bias.data, one.d_bias.data) << threads;
  }
}

TEST(Head, DropoutMaskIsReproducibleAndHasItsRate) {
  int64_t kept = 0;
  const int64_t n = 200000;
  for (int64_t i = 0; i < n; ++i) kept += dropout_keeps(1, 2, i / 100, i % 100, 0.3);
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.005);
  // A pure function of its key: the same arguments, the same answer; another step, another mask.
  int64_t same = 0, differs = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same += dropout_keeps(4, 9, i, 3, 0.5) == dropout_keeps(4, 9, i, 3, 0.5);
    differs += dropout_keeps(4, 9, i, 3, 0.5) != dropout_keeps(4, 10, i, 3, 0.5);
  }
  EXPECT_EQ(same, 1000);
  EXPECT_GT(differs, 400);
  EXPECT_TRUE(dropout_keeps(1, 1, 1, 1, 0.0));
}

TEST(Head, DropoutScalesKeptElements) {
  // With W = I-like rows the logits show the dropped input: kept elements are scaled by 1/(1 − p).
  const int64_t width = 64;
  Weights head = init_head(width, 2, 1);
  Tree leaf = parse_ptb_tree("(0 0)", nullptr, "t", 1);
  NodeStates states = states_of({0, 1}, std::vector<float>(width, 1.0f), width);
  std::vector<std::vector<int32_t>> labels = {{1}};
  HeadResult r = head_loss(states, std::span(&leaf, 1), labels, head, {LossNodes::All, 0.25, 5}, 7);
  // d_weight[c][k] = dz[c] · x[k], and x[k] is 0 or 1 / 0.75.
  const float dz0 = r.d_bias.data[0];
  for (int64_t k = 0; k < width; ++k) {
    const bool keep = dropout_keeps(5, 7, 0, k, 0.25);
    EXPECT_FLOAT_EQ(r.d_weight.data[k], keep ? dz0 / 0.75f : 0.0f) << k;
    if (!keep) {
      EXPECT_EQ(r.d_rows[k], 0.0f);
    }
  }
}

TEST(Head, CheckHead) {
  Weights head = init_head(4, 5, 1);
  EXPECT_EQ(check_head(head, 4, "h"), 5);
  EXPECT_EQ(
      grove::testing::user_error_of([&] { check_head(head, 3, "h"); }),
      "h: the classifier head has head.weight [5, 4] and head.bias [5]; expected [C, 3] and [C] with C >= 2");
  head.erase(kHeadBias);
  EXPECT_EQ(grove::testing::user_error_of([&] { check_head(head, 4, "h"); }),
            "h: the classifier head is incomplete: expected 'head.weight' [C, 4] and 'head.bias' [C]");
}

}  // namespace
}  // namespace grove::training
