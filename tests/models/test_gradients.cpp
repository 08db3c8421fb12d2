// The compiled backward pass (plan/Differentiate.h, backends/cpu/TrainableModel.h) against the
// independent reference gradients of tests/reference/ReferenceGradients.h (hand-derived, double).
//
// For each model grove differentiates, at several sizes and schedules, over random and real (SST)
// trees — the deepest SST test tree included — with a random d(loss)/d(h) at every node:
//   * every node's forward state equals the reference's (|g − r| ≤ 1e-4·|r| + 1e-5, as test_models);
//   * every parameter's gradient: max |g − g_ref| ≤ kGradTolerance · max |g_ref| over the tensor
//     (fp32 against double, summed over up to thousands of nodes);
//   * the embedding's gradient has exactly the rows the leaves read, ascending, and those equal the
//     reference's rows within the same bound.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/TrainableModel.h"
#include "datasets/DagReader.h"
#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "tests/dag/DagTestInputs.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceDagGradients.h"
#include "tests/reference/ReferenceGradients.h"

namespace grove {
namespace {

using reference::ModelKind;

constexpr double kGradTolerance = 1e-5;

const Vocab &sst_vocab() {
  static const Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  return vocab;
}

// The first `count` SST test trees, and the deepest of the split.
std::vector<Tree> sst_trees(size_t count) {
  static const std::vector<Tree> all = read_ptb_trees(GROVE_SST_DIR "/test.txt", &sst_vocab());
  std::vector<Tree> trees(all.begin(), all.begin() + std::min(count, all.size()));
  auto height = [](const Tree &t) {
    // Trees are in post-order: a node's height follows from its children's.
    std::vector<int32_t> h(size_t(t.size()), 0);
    for (int32_t n = 0; n < t.size(); n++)
      for (int32_t k = 0; k < t.num_children(n); k++)
        h[size_t(n)] = std::max(h[size_t(n)], h[size_t(t.child(n, k))] + 1);
    return h[size_t(t.root)];
  };
  trees.push_back(*std::max_element(all.begin(), all.end(),
                                    [&](const Tree &a, const Tree &b) { return height(a) < height(b); }));
  return trees;
}

std::vector<Tree> random_trees(ModelKind model, int32_t vocab) {
  std::vector<Tree> trees;
  if (model == ModelKind::ChildSumTreeLSTM) {
    // Any arity: 1 to 5 children, a unary chain, a single leaf.
    for (uint64_t s = 0; s < 12; s++) trees.push_back(random_tree(s + 1, int32_t(1 + s * 5), 5, vocab));
    trees.push_back(unary_chain(40, vocab, 3));
    trees.push_back(random_binary_tree(9, 17, vocab));
    return trees;
  }
  for (uint64_t s = 0; s < 12; s++) trees.push_back(random_binary_tree(s + 1, int32_t(1 + s * 3), vocab));
  trees.push_back(perfect_binary_tree(5, vocab, 7));
  trees.push_back(binary_chain(60, vocab, 3));
  return trees;
}

std::vector<float> random_rows(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v) x = u(rng);
  return v;
}

double max_abs(const std::vector<float> &v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

void expect_close(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double scale = max_abs(want);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); i++) {
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (d > worst) worst = d, at = i;
  }
  EXPECT_LE(worst, kGradTolerance * scale + 1e-30)
      << what << ": element " << at << " is " << got[at] << ", the reference " << want[at] << " (max |ref| "
      << scale << ")";
}

// The model file of `model`, compiled for training under `schedule`.
std::unique_ptr<cpu::TrainableModel> compile_model(ModelKind model, const Weights &weights,
                                                   const std::string &schedule) {
  ilir::Program program = dsl::parse_model_file(
      fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model)));
  cpu::CompileOptions options;
  options.schedule = schedule;
  return cpu::TrainableModel::compile(program, weights, options);
}

// Every node's state, as test_models holds the forward to the reference.
void expect_states(const training::NodeStates &got, const std::vector<int64_t> &offsets,
                   const std::vector<float> &want) {
  ASSERT_EQ(got.tree_offset, offsets);
  ASSERT_EQ(got.rows.size(), want.size());
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_NEAR(got.rows[i], want[i], 1e-4 * std::fabs(want[i]) + 1e-5) << "state " << i;
}

// Every parameter's gradient and the embedding's rows.
void expect_gradients(const training::Gradients &g, const training::Gradients &want,
                      const std::string &when = "") {
  for (const auto &[name, w] : want.dense) {
    auto it = g.dense.find(name);
    ASSERT_NE(it, g.dense.end()) << "no gradient of " << name;
    EXPECT_EQ(it->second.shape, w.shape) << name;
    expect_close(it->second.data, w.data, name + when);
  }
  EXPECT_EQ(g.dense.size(), want.dense.size());
  EXPECT_EQ(g.embedding_rows, want.embedding_rows);
  EXPECT_EQ(g.embedding_grad.shape, want.embedding_grad.shape);
  expect_close(g.embedding_grad.data, want.embedding_grad.data, "embedding rows" + when);
}

struct Case {
  ModelKind model;
  int64_t H, D;
  std::string schedule;
  bool sst;
};

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  const Case &c = info.param;
  std::string s =
      fmt::format("{}_H{}_D{}_{}", reference::model_name(c.model), c.H, c.D, c.sst ? "Sst" : "Random");
  std::string sched = c.schedule.empty() ? "default" : c.schedule;
  for (char &ch : sched)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + sched;
}

class Gradients : public ::testing::TestWithParam<Case> {};

TEST_P(Gradients, MatchReference) {
  const Case &c = GetParam();
  const int64_t V = c.sst ? sst_vocab().size() : 40;
  const std::vector<Tree> trees = c.sst ? sst_trees(24) : random_trees(c.model, int32_t(V));
  Weights weights = reference::random_model_weights(c.model, c.H, c.D, V, 11);
  std::unique_ptr<cpu::TrainableModel> model = compile_model(c.model, weights, c.schedule);
  const training::NodeStates &states = model->forward(trees);
  std::vector<float> d_rows = random_rows(states.nodes() * states.width, 5);
  reference::ReferenceBackward ref = reference::reference_backward(c.model, weights, trees, d_rows);
  expect_states(states, ref.states.tree_offset, ref.states.rows);
  training::Gradients first = model->backward(d_rows);
  expect_gradients(first, ref.gradients);

  // A second forward and backward over other trees reuses nothing of the first: its gradients come
  // back through recycle() filled with NaN, and the next backward clears and refills their buffers.
  for (auto &[name, t] : first.dense) std::fill(t.data.begin(), t.data.end(), std::nanf(""));
  std::fill(first.embedding_grad.data.begin(), first.embedding_grad.data.end(), std::nanf(""));
  model->recycle(std::move(first));
  std::vector<Tree> few(trees.begin(), trees.begin() + 3);
  const training::NodeStates &again = model->forward(few);
  std::vector<float> d2 = random_rows(again.nodes() * again.width, 9);
  reference::ReferenceBackward ref2 = reference::reference_backward(c.model, weights, few, d2);
  expect_gradients(model->backward(d2), ref2.gradients, " (again)");
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (ModelKind m : {ModelKind::TreeLSTM, ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::ChildSumTreeLSTM,
                      ModelKind::MVRNN}) {
    const bool square = m == ModelKind::TreeFC || m == ModelKind::MVRNN;
    out.push_back({m, 8, square ? 8 : 6, "", false});
    // MV-RNN's emb_mat is [V, H, H]: SST's 21,702 words at H = 8.
    if (m == ModelKind::MVRNN)
      out.push_back({m, 8, 8, "", true});
    else
      out.push_back({m, 150, square ? 150 : 300, "", true});
    out.push_back({m, 16, 16, "batch=off", false});
    out.push_back({m, 16, 16, "region=off,threads=1", false});
    out.push_back({m, 12, 12, "fuse=off,gemm=off", false});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, Gradients, ::testing::ValuesIn(cases()), case_name);

// DAG-RNN over image grids (cells read by two successors) and random DAGs (empty slots); LSTM and
// GRU over sequences (chains), a length-1 one included.
struct DagCase {
  ModelKind model;
  int64_t H, D;
  std::string schedule;
};

std::string dag_case_name(const ::testing::TestParamInfo<DagCase> &info) {
  std::string sched = info.param.schedule.empty() ? "default" : info.param.schedule;
  for (char &ch : sched)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return fmt::format("{}_H{}_D{}_{}", reference::model_name(info.param.model), info.param.H, info.param.D,
                     sched);
}

class DagGradients : public ::testing::TestWithParam<DagCase> {};

TEST_P(DagGradients, MatchReference) {
  const DagCase &c = GetParam();
  const int32_t V = 30;
  std::vector<Dag> dags;
  if (c.model == ModelKind::DAGRNN) {
    std::mt19937_64 rng(3);
    auto tokens = [&](int32_t n) {
      std::vector<int32_t> t(static_cast<size_t>(n));
      for (int32_t &x : t) x = int32_t(rng() % uint64_t(V));
      return t;
    };
    dags.push_back(grid_dag(4, 5, tokens(20), Sweep::SouthEast));
    dags.push_back(grid_dag(3, 3, tokens(9), Sweep::NorthWest));
    dags.push_back(grid_dag(1, 1, tokens(1), Sweep::SouthWest));
    for (uint64_t seed = 1; seed <= 4; seed++)
      dags.push_back(grove::testing::random_dag(seed, int32_t(5 + 7 * seed), V));
  } else {
    for (uint64_t seed = 1; seed <= 6; seed++)
      dags.push_back(chain_dag(grove::testing::random_sequence(seed, int32_t(1 + 6 * (seed - 1)), V)));
  }
  Weights weights = reference::random_model_weights(c.model, c.H, c.D, V, 13);
  std::unique_ptr<cpu::TrainableModel> model = compile_model(c.model, weights, c.schedule);
  const training::NodeStates &states = model->forward_dags(dags);
  std::vector<float> d_rows = random_rows(states.nodes() * states.width, 7);
  reference::ReferenceDagBackward ref = reference::reference_dag_backward(c.model, weights, dags, d_rows);
  expect_states(states, ref.dag_offset, ref.rows);
  expect_gradients(model->backward(d_rows), ref.gradients);
}

std::vector<DagCase> dag_cases() {
  std::vector<DagCase> out;
  for (ModelKind m : {ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU}) {
    out.push_back({m, 8, 6, ""});
    out.push_back({m, 40, 24, ""});
    out.push_back({m, 16, 12, "batch=off"});
    out.push_back({m, 16, 12, "hoist=off,fuse=off"});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, DagGradients, ::testing::ValuesIn(dag_cases()), dag_case_name);

TEST(Gradients, TreesAndDagsGoToTheirOwnModels) {
  Weights tw = reference::random_model_weights(ModelKind::TreeLSTM, 4, 4, 10, 1);
  auto tree_model = cpu::TrainableModel::compile(
      dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/treelstm.grove"), tw, {});
  std::vector<Dag> dags{chain_dag({1, 2})};
  EXPECT_THROW(tree_model->forward_dags(dags), UserError);
  Weights lw = reference::random_model_weights(ModelKind::LSTM, 4, 4, 10, 1);
  auto lstm = cpu::TrainableModel::compile(
      dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/lstm.grove"), lw, {});
  std::vector<Tree> trees{random_binary_tree(1, 3, 10)};
  EXPECT_THROW(lstm->forward(trees), UserError);
}

}  // namespace
}  // namespace grove
