// Tests of the reference gradients (ReferenceGradients.h): for each of the five tree models, the
// hand-derived backward against central finite differences of the float64 loss
// L = Σ_nodes Σ_j d_rows[node, j] · h[node, j], over random trees, a deep chain, a tree numbered root
// first and a tree that leaves vocabulary rows unused; the sparse embedding gradient; the forward's
// node states against the existing per-node references (Reference.h); and ReferenceGradientModel.
//
// Finite differences: step 1e-6 in double, central; an analytic entry a and its difference f agree
// when |a - f| <= 1e-6 · max(|a|, |f|) + 1e-8 (the absolute part covers entries that are zero or
// nearly so, where the difference's rounding, ~1e-16 · |L| / 1e-6, dominates).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/Generators.h"
#include "support/Error.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceGradients.h"

namespace grove::reference {
namespace {

using ::testing::HasSubstr;

constexpr double kStep = 1e-6;
constexpr double kRelTol = 1e-6;
constexpr double kAbsTol = 1e-8;
constexpr int64_t kV = 7;

struct Sizes {
  int64_t H, D;
};

Sizes sizes_for(ModelKind model) {
  switch (model) {
    case ModelKind::TreeFC:
      return {4, 4};  // D = H
    case ModelKind::MVRNN:
      return {3, 3};  // D = H
    case ModelKind::TreeGRU:
      return {5, 4};
    case ModelKind::TreeLSTM:
      return {3, 4};
    default:
      return {4, 4};  // ChildSumTreeLSTM
  }
}

bool binary(ModelKind model) { return model != ModelKind::ChildSumTreeLSTM; }

// A tree from per-node tokens and child lists.
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

// `tree` renumbered new id = n - 1 - old: a post-order tree comes out root first.
Tree reversed_numbering(const Tree &tree) {
  const int32_t n = tree.size();
  std::vector<int32_t> token(n);
  std::vector<std::vector<int32_t>> children(n);
  for (int32_t i = 0; i < n; ++i) {
    token[n - 1 - i] = tree.token[i];
    for (int32_t k = 0; k < tree.num_children(i); ++k)
      children[n - 1 - i].push_back(n - 1 - tree.child(i, k));
  }
  return make_tree(std::move(token), children, n - 1 - tree.root);
}

// Leaf tokens mapped into {1, 3, 5}: rows 0, 2, 4 and 6 of a 7-row vocabulary are never read.
Tree odd_tokens_only(Tree tree) {
  for (int32_t &t : tree.token) {
    if (t >= 0) t = 2 * (t % 3) + 1;
  }
  return tree;
}

// The subtree hanging from `node`, in post-order (walked with an explicit stack).
Tree subtree(const Tree &tree, int32_t node) {
  std::vector<int32_t> order;
  std::vector<std::pair<int32_t, int32_t>> stack = {{node, 0}};
  while (!stack.empty()) {
    auto &[v, next] = stack.back();
    if (next == tree.num_children(v)) {
      order.push_back(v);
      stack.pop_back();
    } else {
      const int32_t child = tree.child(v, next++);
      stack.emplace_back(child, 0);
    }
  }
  std::vector<int32_t> new_id(tree.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) new_id[order[i]] = static_cast<int32_t>(i);
  std::vector<int32_t> token;
  std::vector<std::vector<int32_t>> children;
  for (int32_t v : order) {
    token.push_back(tree.token[v]);
    children.emplace_back();
    for (int32_t k = 0; k < tree.num_children(v); ++k) children.back().push_back(new_id[tree.child(v, k)]);
  }
  return make_tree(std::move(token), children, static_cast<int32_t>(order.size()) - 1);
}

// The small trees every model is checked on.
std::vector<Tree> small_trees(ModelKind model) {
  std::vector<Tree> trees;
  trees.push_back(random_binary_tree(11, 5, kV));
  trees.push_back(perfect_binary_tree(2, kV, 3));
  trees.push_back(binary_chain(12, kV, 5));  // 23 nodes, 11 deep
  trees.push_back(reversed_numbering(random_binary_tree(13, 6, kV)));
  trees.push_back(odd_tokens_only(random_binary_tree(17, 7, kV)));
  trees.push_back(random_binary_tree(19, 1, kV));  // a single leaf
  if (!binary(model)) {
    trees.push_back(random_tree(23, 10, 3, kV));
    trees.push_back(unary_chain(9, kV, 7));
    trees.push_back(reversed_numbering(random_tree(29, 8, 4, kV)));
  }
  return trees;
}

std::vector<double> random_d_rows(int64_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<double> d(count);
  for (double &x : d) x = static_cast<double>(engine() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  return d;
}

// d_rows rounded to float, so the float API and the double one see the same values.
std::vector<double> float_valued(std::vector<double> d) {
  for (double &x : d) x = static_cast<float>(x);
  return d;
}

struct Mismatch {
  std::string param;
  int64_t index;
  double analytic, numeric;
};

bool close(double a, double f) {
  return std::abs(a - f) <= kRelTol * std::max(std::abs(a), std::abs(f)) + kAbsTol;
}

// Central differences of the loss for the entries of every parameter that `pick(name, size)` lists
// (all of them by default), compared with `analytic`. Returns the entries that disagree.
std::vector<Mismatch> finite_difference_mismatches(
    ModelKind model, const Weights64 &weights, std::span<const Tree> trees, std::span<const double> d_rows,
    const Weights64 &analytic,
    const std::function<std::vector<int64_t>(const std::string &, int64_t)> &pick = {}) {
  std::vector<Mismatch> mismatches;
  Weights64 w = weights;
  for (auto &[name, tensor] : w) {
    std::vector<int64_t> indices;
    if (pick) {
      indices = pick(name, tensor.size());
    } else {
      for (int64_t k = 0; k < tensor.size(); ++k) indices.push_back(k);
    }
    for (int64_t k : indices) {
      const double saved = tensor.data[k];
      tensor.data[k] = saved + kStep;
      const double plus = reference_loss64(model, w, trees, d_rows);
      tensor.data[k] = saved - kStep;
      const double minus = reference_loss64(model, w, trees, d_rows);
      tensor.data[k] = saved;
      const double numeric = (plus - minus) / (2.0 * kStep);
      const double a = analytic.at(name).data[k];
      if (!close(a, numeric)) mismatches.push_back({name, k, a, numeric});
    }
  }
  return mismatches;
}

std::string describe(const std::vector<Mismatch> &mismatches) {
  std::string out;
  for (size_t i = 0; i < mismatches.size() && i < 10; ++i) {
    const Mismatch &m = mismatches[i];
    std::ostringstream line;
    line << std::setprecision(12) << m.param << "[" << m.index << "]: analytic " << m.analytic << ", numeric "
         << m.numeric << ", difference " << m.analytic - m.numeric << "\n";
    out += line.str();
  }
  if (mismatches.size() > 10) out += std::to_string(mismatches.size() - 10) + " more\n";
  return out;
}

double max_abs(const Weights64 &grads) {
  double m = 0.0;
  for (const auto &[name, t] : grads) {
    for (double x : t.data) m = std::max(m, std::abs(x));
  }
  return m;
}

class ReferenceGradientsTest : public ::testing::TestWithParam<ModelKind> {
 protected:
  ModelKind model() const { return GetParam(); }
  Weights weights(uint64_t seed = 42) const {
    const Sizes s = sizes_for(model());
    return random_model_weights(model(), s.H, s.D, kV, seed);
  }
  int64_t H() const { return sizes_for(model()).H; }
  int64_t D() const { return sizes_for(model()).D; }
};

// Every parameter's analytic gradient equals central differences, on each small tree alone and on
// all of them as one batch.
TEST_P(ReferenceGradientsTest, MatchesFiniteDifferences) {
  const Weights64 w = to_weights64(weights());
  const std::vector<Tree> trees = small_trees(model());
  for (size_t t = 0; t <= trees.size(); ++t) {
    const std::span<const Tree> batch =
        t < trees.size() ? std::span<const Tree>(&trees[t], 1) : std::span<const Tree>(trees);
    SCOPED_TRACE(t < trees.size() ? "tree " + std::to_string(t) : std::string("the whole batch"));
    const std::vector<double> d = random_d_rows(total_nodes(batch) * H(), 100 + t);
    const Weights64 analytic = reference_gradients64(model(), w, batch, d);
    const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, batch, d, analytic);
    EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " entries disagree:\n" << describe(mismatches);
    EXPECT_GT(max_abs(analytic), 1e-3);  // the check compared something
  }
}

// A different weight draw and d_rows on the root alone (the classic loss on the root output).
TEST_P(ReferenceGradientsTest, MatchesFiniteDifferencesOfTheRootAlone) {
  const Weights64 w = to_weights64(weights(7));
  const std::vector<Tree> trees = {random_binary_tree(31, 8, kV)};
  std::vector<double> d(total_nodes(trees) * H(), 0.0);
  for (int64_t j = 0; j < H(); ++j) d[trees[0].root * H() + j] = 1.0 - 0.5 * static_cast<double>(j);
  const Weights64 analytic = reference_gradients64(model(), w, trees, d);
  const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, trees, d, analytic);
  EXPECT_TRUE(mismatches.empty()) << describe(mismatches);
}

// A 10,000-deep chain: no recursion on the C stack, the root state is the reference's, and a few
// entries of every parameter match central differences. d_rows is nonzero on the root, the deepest
// internal node, its two leaves and a node halfway, so the loss stays small and its differences
// exact enough.
TEST_P(ReferenceGradientsTest, DeepChain) {
  const Weights w32 = weights(3);
  const Weights64 w = to_weights64(w32);
  const Tree chain = binary(model()) ? binary_chain(10001, kV, 9) : unary_chain(10001, kV, 9);
  const std::vector<Tree> trees = {chain};
  std::vector<double> d(total_nodes(trees) * H(), 0.0);
  // The deepest internal node is the first internal node in post-order; the node halfway up too.
  std::vector<int32_t> internal;
  for (int32_t n = 0; n < chain.size(); ++n) {
    if (chain.num_children(n) > 0) internal.push_back(n);
  }
  ASSERT_GE(internal.size(), 10000u);
  std::vector<int32_t> marked = {chain.root, internal.front(), internal[internal.size() / 2]};
  for (int32_t k = 0; k < chain.num_children(internal.front()); ++k)
    marked.push_back(chain.child(internal.front(), k));
  std::mt19937_64 engine(5);
  for (int32_t n : marked) {
    for (int64_t j = 0; j < H(); ++j) d[n * H() + j] = static_cast<double>(engine() % 1000) / 500.0 - 1.0;
  }
  NodeStates64 states;
  const Weights64 analytic = reference_gradients64(model(), w, trees, d, &states);
  const Tensor root = reference_tree(model(), w32, chain);
  for (int64_t j = 0; j < H(); ++j) EXPECT_NEAR(states.rows[chain.root * H() + j], root.data[j], 1e-6);
  const std::vector<Mismatch> mismatches =
      finite_difference_mismatches(model(), w, trees, d, analytic, [](const std::string &, int64_t size) {
        return std::vector<int64_t>{0, size / 2, size - 1};
      });
  EXPECT_TRUE(mismatches.empty()) << describe(mismatches);
}

// The float API: the embedding's gradient lists exactly the rows the leaves read, ascending; the
// rows no leaf reads have exactly zero gradient (and are absent); every gradient is the double one
// rounded.
TEST_P(ReferenceGradientsTest, SparseEmbeddingGradient) {
  const Weights w32 = weights();
  const std::vector<Tree> trees = {odd_tokens_only(random_binary_tree(41, 9, kV)),
                                   odd_tokens_only(binary_chain(6, kV, 2))};
  std::set<int32_t> read;
  for (const Tree &tree : trees) {
    for (int32_t n = 0; n < tree.size(); ++n) {
      if (tree.num_children(n) == 0) read.insert(tree.token[n]);
    }
  }
  ASSERT_FALSE(read.count(0) || read.count(2) || read.count(4) || read.count(6));
  const std::vector<double> d = float_valued(random_d_rows(total_nodes(trees) * H(), 9));
  const std::vector<float> d32(d.begin(), d.end());
  const ReferenceBackward back = reference_backward(model(), w32, trees, d32);
  EXPECT_EQ(back.gradients.embedding_rows, std::vector<int32_t>(read.begin(), read.end()));
  ASSERT_EQ(back.gradients.embedding_grad.shape,
            (std::vector<int64_t>{static_cast<int64_t>(read.size()), D()}));

  NodeStates64 states;
  const Weights64 g64 = reference_gradients64(model(), to_weights64(w32), trees, d, &states);
  const Tensor64 &d_emb = g64.at("emb");
  for (int32_t row : {0, 2, 4, 6}) {
    for (int64_t j = 0; j < D(); ++j) EXPECT_EQ(d_emb.data[row * D() + j], 0.0) << "row " << row;
  }
  for (size_t r = 0; r < back.gradients.embedding_rows.size(); ++r) {
    for (int64_t j = 0; j < D(); ++j)
      EXPECT_EQ(back.gradients.embedding_grad.data[r * D() + j],
                static_cast<float>(d_emb.data[back.gradients.embedding_rows[r] * D() + j]));
  }
  // The dense part: every other parameter, as the double gradient rounded.
  const std::vector<ParamSpec> specs = model_params(model(), H(), D(), kV);
  EXPECT_EQ(back.gradients.dense.size(), specs.size() - 1);
  EXPECT_FALSE(back.gradients.dense.count("emb"));
  for (const ParamSpec &spec : specs) {
    if (spec.name == "emb") continue;
    ASSERT_TRUE(back.gradients.dense.count(spec.name)) << spec.name;
    const Tensor &g = back.gradients.dense.at(spec.name);
    EXPECT_EQ(g.shape, spec.shape) << spec.name;
    for (int64_t k = 0; k < g.size(); ++k)
      EXPECT_EQ(g.data[k], static_cast<float>(g64.at(spec.name).data[k]));
  }
  // The states: tree by tree, rounded.
  EXPECT_EQ(back.states.tree_offset,
            (std::vector<int64_t>{0, trees[0].size(), trees[0].size() + trees[1].size()}));
  EXPECT_EQ(back.states.width, H());
  ASSERT_EQ(back.states.rows.size(), states.rows.size());
  for (size_t k = 0; k < states.rows.size(); ++k)
    EXPECT_EQ(back.states.rows[k], static_cast<float>(states.rows[k]));
}

// The forward's states: at each tree's root the existing reference's output, and at every other node
// the reference's output of the subtree hanging from it.
TEST_P(ReferenceGradientsTest, NodeStatesAreTheReferenceOutputs) {
  const Weights w32 = weights();
  const std::vector<Tree> trees = small_trees(model());
  const training::NodeStates states = reference_node_states(model(), w32, trees);
  ASSERT_EQ(states.width, H());
  ASSERT_EQ(states.tree_offset.size(), trees.size() + 1);
  ASSERT_EQ(states.nodes(), total_nodes(trees));
  const Tensor roots = reference_roots(model(), w32, trees);
  for (size_t t = 0; t < trees.size(); ++t) {
    const int64_t base = states.tree_offset[t];
    for (int64_t j = 0; j < H(); ++j)
      EXPECT_NEAR(states.rows[(base + trees[t].root) * H() + j], roots.data[t * H() + j], 1e-6)
          << "tree " << t << " root";
    for (int32_t n = 0; n < trees[t].size(); ++n) {
      const Tensor sub = reference_tree(model(), w32, subtree(trees[t], n));
      for (int64_t j = 0; j < H(); ++j)
        EXPECT_NEAR(states.rows[(base + n) * H() + j], sub.data[j], 1e-6) << "tree " << t << " node " << n;
    }
  }
}

// The checker itself can fail: an analytic gradient off by 1e-4 in one entry is caught, and so is a
// backward of the wrong loss (d_rows scaled by 1.001).
TEST_P(ReferenceGradientsTest, TheCheckCatchesAWrongGradient) {
  const Weights64 w = to_weights64(weights());
  const std::vector<Tree> trees = {random_binary_tree(5, 4, kV)};
  const std::vector<double> d = random_d_rows(total_nodes(trees) * H(), 1);
  Weights64 analytic = reference_gradients64(model(), w, trees, d);
  for (auto &[name, t] : analytic) {
    Weights64 planted = analytic;
    planted.at(name).data[t.size() / 2] += 1e-4;
    const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, trees, d, planted);
    if (name == "W_f" && model() == ModelKind::ChildSumTreeLSTM) {
      // W_f multiplies x, which is zero wherever a node has children: its gradient is exactly zero.
      EXPECT_EQ(max_abs(Weights64{{name, t}}), 0.0);
    }
    ASSERT_EQ(mismatches.size(), 1u) << name;
    EXPECT_EQ(mismatches[0].param, name);
  }
  std::vector<double> scaled = d;
  for (double &x : scaled) x *= 1.001;
  const Weights64 wrong = reference_gradients64(model(), w, trees, scaled);
  EXPECT_FALSE(finite_difference_mismatches(model(), w, trees, d, wrong).empty());
}

// ReferenceGradientModel: the interface over the functions above.
TEST_P(ReferenceGradientsTest, GradientModel) {
  ReferenceGradientModel gm(model(), H(), D(), kV);
  const std::vector<ParamSpec> specs = model_params(model(), H(), D(), kV);
  ASSERT_EQ(gm.params().size(), specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    EXPECT_EQ(gm.params()[k].name, specs[k].name);
    EXPECT_EQ(gm.params()[k].shape, specs[k].shape);
  }
  EXPECT_EQ(gm.embedding(), "emb");
  const std::vector<Tree> trees = small_trees(model());
  EXPECT_THROW(gm.forward(trees), InternalError);  // no weights yet

  const Weights w32 = weights();
  gm.set_weights(w32);
  EXPECT_THROW(gm.backward({}), InternalError);  // no forward yet
  const training::NodeStates &states = gm.forward(trees);
  const training::NodeStates expected = reference_node_states(model(), w32, trees);
  EXPECT_EQ(states.tree_offset, expected.tree_offset);
  EXPECT_EQ(states.rows, expected.rows);

  const std::vector<double> d = float_valued(random_d_rows(total_nodes(trees) * H(), 3));
  const std::vector<float> d32(d.begin(), d.end());
  // Weights set after the forward do not change its backward.
  gm.set_weights(weights(99));
  const training::Gradients g = gm.backward(d32);
  const ReferenceBackward want = reference_backward(model(), w32, trees, d32);
  EXPECT_EQ(g.embedding_rows, want.gradients.embedding_rows);
  EXPECT_EQ(g.embedding_grad.data, want.gradients.embedding_grad.data);
  ASSERT_EQ(g.dense.size(), want.gradients.dense.size());
  for (const auto &[name, t] : want.gradients.dense) EXPECT_EQ(g.dense.at(name).data, t.data) << name;
  EXPECT_THROW(gm.backward(std::span<const float>(d32).first(d32.size() - 1)), InternalError);

  // Trees the model cannot take, and weights that do not fit, are UserErrors naming the problem.
  Tree bad_token = random_binary_tree(3, 3, kV);
  bad_token.token[0] = static_cast<int32_t>(kV);
  try {
    gm.forward(std::vector<Tree>{bad_token});
    ADD_FAILURE() << "no error for token " << kV;
  } catch (const UserError &e) {
    EXPECT_THAT(e.what(), HasSubstr("token 7"));
  }
  if (binary(model())) {
    const Tree ternary = make_tree({0, 1, 2, -1}, {{}, {}, {}, {0, 1, 2}}, 3);
    try {
      gm.forward(std::vector<Tree>{ternary});
      ADD_FAILURE() << "no error for a node of three children";
    } catch (const UserError &e) {
      EXPECT_THAT(e.what(), HasSubstr("3 children"));
    }
  }
  Weights misshapen = w32;
  misshapen.at("emb") = Tensor({kV + 1, D()});
  try {
    gm.set_weights(misshapen);
    ADD_FAILURE() << "no error for a misshapen emb";
  } catch (const UserError &e) {
    EXPECT_THAT(e.what(), HasSubstr("'emb'"));
  }
  Weights extra = w32;
  extra.emplace("bogus", Tensor({1}));
  EXPECT_THROW(gm.set_weights(extra), UserError);
}

INSTANTIATE_TEST_SUITE_P(TreeModels, ReferenceGradientsTest,
                         ::testing::Values(ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM,
                                           ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN),
                         [](const ::testing::TestParamInfo<ModelKind> &info) {
                           return model_name(info.param);
                         });

// TreeFC with H = 1, worked out by hand: leaves a = E[0], b = E[1] under one root,
// h = tanh(W0 a + W1 b + b0); L = d_a a + d_b b + d_h h.
TEST(ReferenceGradientsByHand, TreeFCOneUnit) {
  Weights w;
  w["emb"] = Tensor({2, 1});
  w["emb"].data = {0.5f, -0.25f};
  w["W"] = Tensor({1, 2});
  w["W"].data = {0.75f, -1.5f};
  w["b"] = Tensor({1});
  w["b"].data = {0.125f};
  const Tree tree = make_tree({0, 1, -1}, {{}, {}, {0, 1}}, 2);
  const double a = 0.5, b = -0.25, h = std::tanh(0.75 * a - 1.5 * b + 0.125), dh = 1.0 - h * h;
  const double d_a = 0.25, d_b = -0.5, d_h = 2.0;
  const std::vector<float> d = {0.25f, -0.5f, 2.0f};
  const ReferenceBackward back = reference_backward(ModelKind::TreeFC, w, std::vector<Tree>{tree}, d);
  EXPECT_NEAR(back.states.rows[2], h, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("W").data[0], d_h * dh * a, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("W").data[1], d_h * dh * b, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("b").data[0], d_h * dh, 1e-7);
  ASSERT_EQ(back.gradients.embedding_rows, (std::vector<int32_t>{0, 1}));
  EXPECT_NEAR(back.gradients.embedding_grad.data[0], d_a + d_h * dh * 0.75, 1e-7);
  EXPECT_NEAR(back.gradients.embedding_grad.data[1], d_b + d_h * dh * -1.5, 1e-7);
}

// Wrong inputs to the free functions are InternalErrors (a bug in the caller).
TEST(ReferenceGradientsErrors, BadInputs) {
  const Weights w = random_model_weights(ModelKind::TreeLSTM, 3, 4, kV, 1);
  const std::vector<Tree> trees = {random_binary_tree(1, 3, kV)};
  const std::vector<float> short_d(3);
  EXPECT_THROW(reference_backward(ModelKind::TreeLSTM, w, trees, short_d), InternalError);
  EXPECT_THROW(reference_node_states(ModelKind::TreeGRU, w, trees), InternalError);  // TreeLSTM's weights
  EXPECT_THROW(reference_node_states(ModelKind::DAGRNN, w, trees), InternalError);
  EXPECT_THROW(ReferenceGradientModel(ModelKind::LSTM, 3, 4, kV), UserError);
}

}  // namespace
}  // namespace grove::reference
