// Sanity tests of the reference models themselves: tiny cases worked out by hand (H = 1 or 2, the
// equations of docs/MODELS.md written out as scalar formulas), equivalences between models, structure
// handling (any node numbering, deep chains) and the weight generator.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/Error.h"
#include "tests/reference/Reference.h"

namespace grove::reference {
namespace {

using ::testing::HasSubstr;

constexpr double kTolerance = 1e-6;  // the references round their double results to float

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Tensor tensor(std::vector<int64_t> shape, std::vector<float> data) {
  Tensor t(std::move(shape));
  EXPECT_EQ(t.size(), static_cast<int64_t>(data.size()));
  t.data = std::move(data);
  return t;
}

// A tree from per-node tokens (-1 for internal nodes) and child lists.
Tree make_tree(std::vector<int32_t> token, const std::vector<std::vector<int32_t>> &children, int32_t root) {
  Tree tree;
  tree.token = std::move(token);
  tree.root = root;
  tree.child_begin.push_back(0);
  for (const auto &kids : children) {
    tree.children.insert(tree.children.end(), kids.begin(), kids.end());
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
  }
  return tree;
}

// ((t0 t1) t2) in post-order: leaves 0, 1, inner 2, leaf 3, root 4.
Tree left_leaning_tree(int32_t t0, int32_t t1, int32_t t2) {
  return make_tree({t0, t1, -1, t2, -1}, {{}, {}, {0, 1}, {}, {2, 3}}, 4);
}

// The same tree numbered root first (pre-order): root 0, inner 1, leaves 2, 3, leaf 4.
Tree left_leaning_tree_preorder(int32_t t0, int32_t t1, int32_t t2) {
  return make_tree({-1, -1, t0, t1, t2}, {{1, 4}, {2, 3}, {}, {}, {}}, 0);
}

// A random binary tree with `leaves` leaves, built bottom-up by merging random neighbours.
Tree random_binary(std::mt19937_64 &engine, int32_t leaves, int32_t vocab) {
  std::vector<int32_t> token;
  std::vector<std::vector<int32_t>> children;
  std::vector<int32_t> frontier;
  for (int32_t i = 0; i < leaves; ++i) {
    frontier.push_back(static_cast<int32_t>(token.size()));
    token.push_back(static_cast<int32_t>(engine() % vocab));
    children.emplace_back();
  }
  while (frontier.size() > 1) {
    const size_t k = engine() % (frontier.size() - 1);
    const int32_t node = static_cast<int32_t>(token.size());
    token.push_back(-1);
    children.push_back({frontier[k], frontier[k + 1]});
    frontier[k] = node;
    frontier.erase(frontier.begin() + static_cast<int64_t>(k) + 1);
  }
  return make_tree(std::move(token), children, frontier[0]);
}

std::string internal_error_message(const std::function<void()> &f) {
  try {
    f();
  } catch (const InternalError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InternalError";
  return "";
}

// --- TreeFC -------------------------------------------------------------------------------------

Weights treefc_h1() {
  return {{"emb", tensor({3, 1}, {0.5f, -1.0f, 2.0f})},
          {"W", tensor({1, 2}, {0.3f, -0.7f})},
          {"b", tensor({1}, {0.1f})}};
}

TEST(ReferenceTreeFC, ThreeNodeTreeByHand) {
  const Tree tree = make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2);
  const Tensor h = reference_treefc(treefc_h1(), tree);
  ASSERT_EQ(h.shape, (std::vector<int64_t>{1}));
  EXPECT_NEAR(h.data[0], std::tanh(0.3 * 0.5 - 0.7 * -1.0 + 0.1), kTolerance);
}

TEST(ReferenceTreeFC, TwoLevelsFeedTheInnerStateUp) {
  const Tensor h = reference_treefc(treefc_h1(), left_leaning_tree(0, 1, 2));
  const double inner = std::tanh(0.3 * 0.5 - 0.7 * -1.0 + 0.1);
  EXPECT_NEAR(h.data[0], std::tanh(0.3 * inner - 0.7 * 2.0 + 0.1), kTolerance);
}

TEST(ReferenceTreeFC, WeightLayoutIsOutByInOverLeftThenRight) {
  // H = 2: W is [2, 4], applied to [h_l; h_r].
  const Weights w = {{"emb", tensor({2, 2}, {1.0f, 2.0f, -3.0f, 0.5f})},
                     {"W", tensor({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, -0.5f, 0.6f, -0.7f, 0.8f})},
                     {"b", tensor({2}, {0.05f, -0.05f})}};
  const Tensor h = reference_treefc(w, make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2));
  EXPECT_NEAR(h.data[0], std::tanh(0.1 * 1 + 0.2 * 2 + 0.3 * -3 + 0.4 * 0.5 + 0.05), kTolerance);
  EXPECT_NEAR(h.data[1], std::tanh(-0.5 * 1 + 0.6 * 2 - 0.7 * -3 + 0.8 * 0.5 - 0.05), kTolerance);
}

TEST(ReferenceTreeFC, SingleLeafTreeIsItsEmbedding) {
  const Tensor h = reference_treefc(treefc_h1(), make_tree({2}, {{}}, 0));
  EXPECT_FLOAT_EQ(h.data[0], 2.0f);
}

// --- TreeGRU ------------------------------------------------------------------------------------

TEST(ReferenceTreeGRU, ThreeNodeTreeByHand) {
  const Weights w = {
      {"emb", tensor({2, 1}, {0.8f, -0.4f})}, {"W_x", tensor({1, 1}, {1.5f})},
      {"b_x", tensor({1}, {0.1f})},           {"U_z", tensor({1, 2}, {0.3f, -0.2f})},
      {"b_z", tensor({1}, {0.05f})},          {"U_r", tensor({2, 2}, {0.4f, 0.1f, -0.6f, 0.9f})},
      {"b_r", tensor({2}, {0.0f, 0.2f})},     {"U_h", tensor({1, 2}, {0.7f, -0.5f})},
      {"b_h", tensor({1}, {-0.1f})}};
  const Tensor h = reference_treegru(w, make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2));
  const double hl = std::tanh(1.5 * 0.8 + 0.1), hr = std::tanh(1.5 * -0.4 + 0.1);
  const double z = sig(0.3 * hl - 0.2 * hr + 0.05);
  const double r_l = sig(0.4 * hl + 0.1 * hr), r_r = sig(-0.6 * hl + 0.9 * hr + 0.2);
  const double g = std::tanh(0.7 * r_l * hl - 0.5 * r_r * hr - 0.1);
  EXPECT_NEAR(h.data[0], z * (hl + hr) / 2 + (1 - z) * g, kTolerance);
}

// --- TreeLSTM -----------------------------------------------------------------------------------

Weights treelstm_h1() {
  return {{"emb", tensor({2, 1}, {0.9f, -0.6f})},
          {"W_iou", tensor({3, 1}, {0.5f, -0.4f, 1.2f})},
          {"U_iou", tensor({3, 2}, {0.3f, 0.2f, -0.1f, 0.6f, 0.8f, -0.7f})},
          {"b_iou", tensor({3}, {0.1f, -0.2f, 0.05f})},
          {"U_f", tensor({2, 2}, {0.25f, -0.35f, 0.45f, 0.15f})},
          {"b_f", tensor({1}, {0.3f})}};
}

TEST(ReferenceTreeLSTM, ThreeNodeTreeByHand) {
  const Tensor h = reference_treelstm(treelstm_h1(), make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2));
  auto leaf = [](double x, double *c) {
    const double i = sig(0.5 * x + 0.1), o = sig(-0.4 * x - 0.2), u = std::tanh(1.2 * x + 0.05);
    *c = i * u;
    return o * std::tanh(*c);
  };
  double cl, cr;
  const double hl = leaf(0.9, &cl), hr = leaf(-0.6, &cr);
  const double i = sig(0.3 * hl + 0.2 * hr + 0.1), o = sig(-0.1 * hl + 0.6 * hr - 0.2),
               u = std::tanh(0.8 * hl - 0.7 * hr + 0.05);
  const double f_l = sig(0.25 * hl - 0.35 * hr + 0.3), f_r = sig(0.45 * hl + 0.15 * hr + 0.3);
  const double c = i * u + f_l * cl + f_r * cr;
  EXPECT_NEAR(h.data[0], o * std::tanh(c), kTolerance);
}

// The binary TreeLSTM is a child-sum TreeLSTM on binary trees when U_iou = [U; U] side by side
// (t = h_l + h_r) and U_f = diag(U, U). The child-sum W_f never matters here: leaves have no child to
// forget and internal nodes have x = 0.
TEST(ReferenceChildSumTreeLSTM, EqualsBinaryTreeLSTMWithTiedWeightsOnBinaryTrees) {
  const int64_t H = 4, D = 3, V = 7;
  const Weights cs = random_model_weights(ModelKind::ChildSumTreeLSTM, H, D, V, 11);
  Weights bin = random_model_weights(ModelKind::TreeLSTM, H, D, V, 12);
  bin["emb"] = cs.at("emb");
  bin["W_iou"] = cs.at("W_iou");
  bin["b_iou"] = cs.at("b_iou");
  bin["b_f"] = cs.at("b_f");
  Tensor &U_iou = bin["U_iou"], &U_f = bin["U_f"];
  std::fill(U_f.data.begin(), U_f.data.end(), 0.0f);
  for (int64_t r = 0; r < 3 * H; ++r) {
    for (int64_t k = 0; k < H; ++k) {
      const float u = cs.at("U_iou").data[r * H + k];
      U_iou.data[r * 2 * H + k] = u;
      U_iou.data[r * 2 * H + H + k] = u;
    }
  }
  for (int64_t r = 0; r < H; ++r) {
    for (int64_t k = 0; k < H; ++k) {
      U_f.data[r * 2 * H + k] = cs.at("U_f").data[r * H + k];
      U_f.data[(H + r) * 2 * H + H + k] = cs.at("U_f").data[r * H + k];
    }
  }
  std::mt19937_64 engine(5);
  for (int32_t leaves : {1, 2, 3, 8, 21}) {
    const Tree tree = random_binary(engine, leaves, V);
    const Tensor a = reference_childsum_treelstm(cs, tree), b = reference_treelstm(bin, tree);
    for (int64_t j = 0; j < H; ++j) EXPECT_NEAR(a.data[j], b.data[j], kTolerance) << leaves << " leaves";
  }
}

TEST(ReferenceChildSumTreeLSTM, ThreeChildrenAndAUnaryNodeByHand) {
  // H = D = 1; internal nodes have x = 0, so W_f and W_iou act on leaves only.
  const Weights w = {{"emb", tensor({3, 1}, {0.7f, -0.3f, 1.1f})},
                     {"W_iou", tensor({3, 1}, {0.4f, -0.5f, 0.9f})},
                     {"U_iou", tensor({3, 1}, {0.6f, 0.2f, -0.8f})},
                     {"b_iou", tensor({3}, {0.1f, 0.0f, -0.1f})},
                     {"W_f", tensor({1, 1}, {0.35f})},
                     {"U_f", tensor({1, 1}, {-0.45f})},
                     {"b_f", tensor({1}, {0.2f})}};
  // Nodes: 0 leaf (token 0), 1 leaf (token 1), 2 unary over 1, 3 leaf (token 2), root 4 over 0, 2, 3.
  const Tree tree = make_tree({0, 1, -1, 2, -1}, {{}, {}, {1}, {}, {0, 2, 3}}, 4);
  struct HC {
    double h, c;
  };
  auto leaf = [](double x) {
    const double i = sig(0.4 * x + 0.1), o = sig(-0.5 * x), u = std::tanh(0.9 * x - 0.1);
    return HC{o * std::tanh(i * u), i * u};
  };
  auto internal = [](const std::vector<HC> &kids) {  // x = 0
    double t = 0;
    for (const HC &k : kids) t += k.h;
    const double i = sig(0.6 * t + 0.1), o = sig(0.2 * t), u = std::tanh(-0.8 * t - 0.1);
    double c = i * u;
    for (const HC &k : kids) c += sig(-0.45 * k.h + 0.2) * k.c;
    return HC{o * std::tanh(c), c};
  };
  const HC n0 = leaf(0.7), n1 = leaf(-0.3), n3 = leaf(1.1);
  const HC n2 = internal({n1});
  const HC root = internal({n0, n2, n3});
  EXPECT_NEAR(reference_childsum_treelstm(w, tree).data[0], root.h, kTolerance);
}

// --- MV-RNN -------------------------------------------------------------------------------------

TEST(ReferenceMVRNN, TwoLevelTreeByHandWithNonCommutingMatrices) {
  // H = 2. Matrices are row-major [[m00, m01], [m10, m11]].
  const std::vector<float> e = {1.0f, 0.0f, 0.0f, 1.0f, 0.5f, -0.5f};                   // emb [3, 2]
  const std::vector<float> m = {1, 2, 0, 1, /**/ 0, 1, -1, 0, /**/ 0.5f, 0, 0.25f, 2};  // emb_mat [3, 2, 2]
  const std::vector<float> W = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f};     // [2, 4]
  const std::vector<float> W_M = {0.2f, 0.1f, -0.3f, 0.5f, 0.4f, -0.6f, 0.7f, 0.05f};   // [2, 4]
  const std::vector<float> bias = {0.01f, -0.02f};
  const Weights w = {{"emb", tensor({3, 2}, e)},
                     {"emb_mat", tensor({3, 2, 2}, m)},
                     {"W", tensor({2, 4}, W)},
                     {"bias", tensor({2}, bias)},
                     {"W_M", tensor({2, 4}, W_M)}};
  using V2 = std::array<double, 2>;
  using M2 = std::array<double, 4>;
  auto mv = [](const M2 &M, const V2 &v) { return V2{M[0] * v[0] + M[1] * v[1], M[2] * v[0] + M[3] * v[1]}; };
  auto combine = [&](const V2 &a, const M2 &A, const V2 &b, const M2 &B, V2 *p, M2 *P) {
    const V2 Ba = mv(B, a), Ab = mv(A, b);
    const std::array<double, 4> s = {Ba[0], Ba[1], Ab[0], Ab[1]};
    for (int i = 0; i < 2; ++i) {
      double acc = bias[i];
      for (int k = 0; k < 4; ++k) acc += W[i * 4 + k] * s[k];
      (*p)[i] = std::tanh(acc);
      for (int j = 0; j < 2; ++j) {  // W_M [A; B]
        (*P)[i * 2 + j] = W_M[i * 4 + 0] * A[0 * 2 + j] + W_M[i * 4 + 1] * A[1 * 2 + j] +
                          W_M[i * 4 + 2] * B[0 * 2 + j] + W_M[i * 4 + 3] * B[1 * 2 + j];
      }
    }
  };
  auto vec = [&](int w) { return V2{e[w * 2], e[w * 2 + 1]}; };
  auto mat = [&](int w) { return M2{m[w * 4], m[w * 4 + 1], m[w * 4 + 2], m[w * 4 + 3]}; };
  V2 p_inner, p_root;
  M2 P_inner, P_root;
  combine(vec(0), mat(0), vec(1), mat(1), &p_inner, &P_inner);
  combine(p_inner, P_inner, vec(2), mat(2), &p_root, &P_root);
  const Tensor out = reference_mvrnn(w, left_leaning_tree(0, 1, 2));
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2}));
  EXPECT_NEAR(out.data[0], p_root[0], kTolerance);
  EXPECT_NEAR(out.data[1], p_root[1], kTolerance);
  // Swapping the roles of A and B must matter for this test to mean anything.
  const Tensor swapped = reference_mvrnn(w, left_leaning_tree(1, 0, 2));
  EXPECT_GT(std::abs(swapped.data[0] - out.data[0]) + std::abs(swapped.data[1] - out.data[1]), 1e-3);
}

// --- All tree models ----------------------------------------------------------------------------

const ModelKind kTreeModels[] = {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM,
                                 ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN};

TEST(ReferenceTrees, NodeNumberingDoesNotChangeTheResult) {
  for (ModelKind model : kTreeModels) {
    const Weights w = random_model_weights(model, 3, 3, 5, 21);
    const Tensor a = reference_tree(model, w, left_leaning_tree(1, 4, 2));
    const Tensor b = reference_tree(model, w, left_leaning_tree_preorder(1, 4, 2));
    EXPECT_EQ(a.data, b.data) << model_name(model);
  }
}

TEST(ReferenceTrees, RootsStackOneRowPerTreeInInputOrder) {
  std::mt19937_64 engine(3);
  std::vector<Tree> trees;
  for (int32_t leaves : {5, 1, 12, 2}) trees.push_back(random_binary(engine, leaves, 9));
  for (ModelKind model : kTreeModels) {
    const Weights w = random_model_weights(model, 4, 4, 9, 8);
    const Tensor roots = reference_roots(model, w, trees);
    ASSERT_EQ(roots.shape, (std::vector<int64_t>{4, 4})) << model_name(model);
    for (size_t t = 0; t < trees.size(); ++t) {
      const Tensor one = reference_tree(model, w, trees[t]);
      EXPECT_EQ(std::vector<float>(roots.data.begin() + t * 4, roots.data.begin() + (t + 1) * 4), one.data)
          << model_name(model) << " tree " << t;
    }
  }
}

TEST(ReferenceTrees, MillionNodeChainNeedsNoRecursion) {
  // A left-leaning chain: node 2k+1 is the leaf and node 2k+2 joins it to the chain so far.
  const int32_t joins = 500'000;
  std::vector<int32_t> token = {0};
  std::vector<std::vector<int32_t>> children = {{}};
  for (int32_t k = 0; k < joins; ++k) {
    token.push_back(k % 3);
    children.emplace_back();
    token.push_back(-1);
    children.push_back({2 * k, 2 * k + 1});
  }
  const Tree chain = make_tree(std::move(token), children, 2 * joins);
  ASSERT_EQ(chain.size(), 1'000'001);
  const Tensor h = reference_treefc(random_model_weights(ModelKind::TreeFC, 2, 2, 3, 1), chain);
  for (float x : h.data) EXPECT_TRUE(std::isfinite(x));
}

// --- DAG-RNN and sequences ----------------------------------------------------------------------

Weights dagrnn_h1() {
  return {{"emb", tensor({2, 1}, {0.6f, -0.9f})},
          {"U", tensor({1, 1}, {1.3f})},
          {"W_0", tensor({1, 1}, {0.7f})},
          {"W_1", tensor({1, 1}, {-0.4f})},
          {"b", tensor({1}, {0.05f})}};
}

TEST(ReferenceDAGRNN, DiamondByHandWithOrderedPredecessors) {
  // 3 → {1 (slot 0), 2 (slot 1)} → 0; listed so that predecessors come after their successors.
  Dag dag;
  dag.token = {1, 0, 1, 0};
  dag.preds = {{{1, 2}}, {{3, -1}}, {{-1, 3}}, {{-1, -1}}};
  const double h3 = std::tanh(1.3 * 0.6 + 0.05);
  const double h1 = std::tanh(1.3 * 0.6 + 0.7 * h3 + 0.05);
  const double h2 = std::tanh(1.3 * -0.9 - 0.4 * h3 + 0.05);
  const double h0 = std::tanh(1.3 * -0.9 + 0.7 * h1 - 0.4 * h2 + 0.05);
  const Tensor out = reference_dagrnn(dagrnn_h1(), dag);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{1, 1}));
  EXPECT_NEAR(out.data[0], h0, kTolerance);
}

TEST(ReferenceDAGRNN, EverySinkInNodeOrder) {
  Dag dag;
  dag.token = {0, 1, 1};
  dag.preds = {{{-1, -1}}, {{0, -1}}, {{-1, -1}}};  // sinks: 1, 2
  const Tensor out = reference_dagrnn(dagrnn_h1(), dag);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_NEAR(out.data[0], std::tanh(1.3 * -0.9 + 0.7 * std::tanh(1.3 * 0.6 + 0.05) + 0.05), kTolerance);
  EXPECT_NEAR(out.data[1], std::tanh(1.3 * -0.9 + 0.05), kTolerance);
}

TEST(ReferenceDAGRNN, CycleIsReported) {
  Dag dag;
  dag.token = {0, 0};
  dag.preds = {{{1, -1}}, {{0, -1}}};
  EXPECT_THAT(internal_error_message([&] { reference_dagrnn(dagrnn_h1(), dag); }),
              HasSubstr("the DAG has a cycle: only 0 of its 2 nodes"));
}

TEST(ReferenceLSTM, TwoStepsByHandInPyTorchGateOrder) {
  // H = D = 1; rows i, f, g, o.
  const Weights w = {{"emb", tensor({2, 1}, {0.5f, -1.0f})},
                     {"W_ih", tensor({4, 1}, {0.3f, -0.6f, 0.9f, 0.2f})},
                     {"W_hh", tensor({4, 1}, {0.4f, 0.1f, -0.7f, 0.8f})},
                     {"b_ih", tensor({4}, {0.1f, 0.2f, 0.0f, -0.1f})},
                     {"b_hh", tensor({4}, {0.0f, 0.3f, 0.05f, 0.1f})}};
  double h = 0, c = 0;
  for (double x : {0.5, -1.0}) {
    const double i = sig(0.3 * x + 0.1 + 0.4 * h), f = sig(-0.6 * x + 0.2 + 0.1 * h + 0.3),
                 g = std::tanh(0.9 * x - 0.7 * h + 0.05), o = sig(0.2 * x - 0.1 + 0.8 * h + 0.1);
    c = f * c + i * g;
    h = o * std::tanh(c);
  }
  const std::vector<int32_t> tokens = {0, 1};
  EXPECT_NEAR(reference_lstm(w, tokens).data[0], h, kTolerance);
  EXPECT_EQ(reference_lstm(w, {}).data, std::vector<float>{0.0f});
}

TEST(ReferenceGRU, TwoStepsByHandInPyTorchGateOrder) {
  // H = D = 1; rows r, z, n; the reset gate multiplies W_hn h + b_hn.
  const Weights w = {{"emb", tensor({2, 1}, {0.5f, -1.0f})},
                     {"W_ih", tensor({3, 1}, {0.3f, -0.6f, 0.9f})},
                     {"W_hh", tensor({3, 1}, {0.4f, 0.1f, -0.7f})},
                     {"b_ih", tensor({3}, {0.1f, 0.2f, 0.0f})},
                     {"b_hh", tensor({3}, {0.0f, 0.3f, 0.05f})}};
  double h = 0;
  for (double x : {0.5, -1.0}) {
    const double r = sig(0.3 * x + 0.1 + 0.4 * h), z = sig(-0.6 * x + 0.2 + 0.1 * h + 0.3);
    const double n = std::tanh(0.9 * x + r * (-0.7 * h + 0.05));
    h = (1 - z) * n + z * h;
  }
  const std::vector<int32_t> tokens = {0, 1};
  EXPECT_NEAR(reference_gru(w, tokens).data[0], h, kTolerance);
}

// --- Weights ------------------------------------------------------------------------------------

const ModelKind kAllModels[] = {
    ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
    ModelKind::MVRNN,  ModelKind::DAGRNN,  ModelKind::LSTM,     ModelKind::GRU};

TEST(ReferenceWeights, RandomWeightsHaveExactlyTheModelsNamesAndShapes) {
  for (ModelKind model : kAllModels) {
    const std::vector<ParamSpec> specs = model_params(model, 6, 6, 11);
    const Weights w = random_model_weights(model, 6, 6, 11, 1);
    ASSERT_EQ(w.size(), specs.size()) << model_name(model);
    for (const ParamSpec &spec : specs) {
      ASSERT_TRUE(w.count(spec.name)) << model_name(model) << " " << spec.name;
      EXPECT_EQ(w.at(spec.name).shape, spec.shape) << model_name(model) << " " << spec.name;
    }
  }
  EXPECT_EQ(model_params(ModelKind::TreeLSTM, 4, 3, 9)[2].shape, (std::vector<int64_t>{12, 8}));  // U_iou
  EXPECT_EQ(model_params(ModelKind::TreeGRU, 4, 3, 9)[5].shape, (std::vector<int64_t>{8, 8}));    // U_r
}

TEST(ReferenceWeights, RandomWeightsAreDeterministicAndScaledByFanIn) {
  const Weights a = random_model_weights(ModelKind::TreeLSTM, 16, 8, 30, 42);
  const Weights b = random_model_weights(ModelKind::TreeLSTM, 16, 8, 30, 42);
  const Weights c = random_model_weights(ModelKind::TreeLSTM, 16, 8, 30, 43);
  for (const auto &[name, t] : a) {
    EXPECT_EQ(t.data, b.at(name).data) << name;
    EXPECT_NE(t.data, c.at(name).data) << name;
    const double bound = name == "emb" ? 1.0 : t.shape.size() == 1 ? 0.1 : 1.0 / std::sqrt(t.shape.back());
    double largest = 0;
    for (float x : t.data) largest = std::max(largest, std::abs(static_cast<double>(x)));
    EXPECT_LE(largest, bound) << name;
    EXPECT_GT(largest, 0.8 * bound) << name << " should use most of its range";
  }
}

TEST(ReferenceWeights, WordMatricesAreNearIdentity) {
  const Tensor m = random_model_weights(ModelKind::MVRNN, 4, 4, 3, 2).at("emb_mat");
  for (int64_t w = 0; w < 3; ++w) {
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        EXPECT_NEAR(m.data[(w * 4 + i) * 4 + j], i == j ? 1.0 : 0.0, 0.5) << w << " " << i << " " << j;
      }
    }
  }
}

// --- Misuse is caught ---------------------------------------------------------------------------

TEST(ReferenceChecks, MissingMisshapenAndExtraTensorsAreNamed) {
  const Tree tree = make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2);
  Weights missing = treefc_h1();
  missing.erase("b");
  EXPECT_THAT(internal_error_message([&] { reference_treefc(missing, tree); }),
              HasSubstr("the weights have no tensor 'b'"));
  Weights misshapen = treefc_h1();
  misshapen["W"] = tensor({1, 3}, {1, 2, 3});
  EXPECT_THAT(internal_error_message([&] { reference_treefc(misshapen, tree); }),
              HasSubstr("TreeFC tensor 'W' has shape [1, 3], expected [1, 2]"));
  Weights extra = treefc_h1();
  extra["U"] = tensor({1}, {0});
  EXPECT_THAT(internal_error_message([&] { reference_treefc(extra, tree); }),
              HasSubstr("TreeFC takes 3 tensors, the weights have 4"));
}

TEST(ReferenceChecks, BadTreesAreNamed) {
  EXPECT_THAT(internal_error_message([&] {
                reference_treefc(treefc_h1(), make_tree({0, 3, -1}, {{}, {}, {0, 1}}, 2));
              }),
              HasSubstr("leaf 1 has token 3, expected one in [0, 3)"));
  EXPECT_THAT(internal_error_message([&] {
                reference_treefc(treefc_h1(), make_tree({0, -1}, {{}, {0}}, 1));
              }),
              HasSubstr("node 1 has 1 children; a binary-tree model needs 0 or 2"));
  EXPECT_THAT(internal_error_message([&] {
                reference_treefc(treefc_h1(), make_tree({0, -1}, {{}, {0, 0}}, 1));
              }),
              HasSubstr("node 0 is reached twice from the root"));
  EXPECT_THAT(internal_error_message([&] {
                reference_treefc(treefc_h1(), make_tree({0, 1, -1, 2}, {{}, {}, {0, 1}, {}}, 2));
              }),
              HasSubstr("only 3 of the tree's 4 nodes hang from root 2"));
}

}  // namespace
}  // namespace grove::reference
