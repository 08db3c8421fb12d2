// End-to-end correctness of grove's models: each model file of models/ is parsed, compiled for the
// CPU with random weights and run on batches of trees; every root output must match the
// independent reference of tests/reference (docs/MODELS.md's equations in double precision).
//
// Tolerance, per element: |grove - reference| <= 1e-4 * |reference| + 1e-5. grove computes in
// float32 and the reference in double, so this leaves room for float rounding over SST-depth trees
// (height up to 28) and nothing more.
//
// Every model x input set x hidden size x batch size is its own named test, e.g.
// `TreeLSTM/MatchesReference.Run/SstTest_H64_Batch7`; TreeLSTM also at the benchmark's sizes
// (H = 256, 512) on a few SST trees. A second suite checks that the batch size changes the
// results by float rounding only (CompiledModel::run promises that).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Tree.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/IR.h"
#include "support/Tensor.h"
#include "tests/reference/Reference.h"

namespace grove {
namespace {

using reference::ModelKind;

constexpr double kRelativeTolerance = 1e-4;
constexpr double kAbsoluteTolerance = 1e-5;
constexpr int32_t kSyntheticVocab = 50;  // V for generated trees
constexpr size_t kSstTrees = 300;        // the first trees of the SST test split
constexpr int32_t kDeepChainNodes = 100'000;

// --- Inputs -------------------------------------------------------------------------------------

enum class Input {
  RandomBinaryTrees,   // random shapes, 1..40 leaves (a single-leaf tree included)
  PerfectBinaryTrees,  // heights 0..7
  BinaryChains,        // caterpillars up to 400 leaves deep
  SstTest,             // the first kSstTrees trees of the SST test split, real vocabulary
  RandomTrees,         // any arity (1..5 children), for the child-sum model
  UnaryChains,         // one-child chains, for the child-sum model
};

std::string input_name(Input input) {
  switch (input) {
    case Input::RandomBinaryTrees:
      return "RandomBinaryTrees";
    case Input::PerfectBinaryTrees:
      return "PerfectBinaryTrees";
    case Input::BinaryChains:
      return "BinaryChains";
    case Input::SstTest:
      return "SstTest";
    case Input::RandomTrees:
      return "RandomTrees";
    case Input::UnaryChains:
      return "UnaryChains";
  }
  return "?";
}

const Vocab &sst_vocab() {
  static const Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  return vocab;
}

int64_t vocab_size(Input input) { return input == Input::SstTest ? sst_vocab().size() : kSyntheticVocab; }

std::vector<Tree> make_trees(Input input) {
  std::vector<Tree> trees;
  switch (input) {
    case Input::RandomBinaryTrees:
      for (int32_t i = 0; i < 40; ++i)
        trees.push_back(random_binary_tree(100 + i, 1 + (i * 7) % 40, kSyntheticVocab));
      break;
    case Input::PerfectBinaryTrees:
      for (int32_t height = 0; height <= 7; ++height)
        trees.push_back(perfect_binary_tree(height, kSyntheticVocab, height));
      break;
    case Input::BinaryChains:
      for (int32_t leaves : {2, 3, 17, 400}) trees.push_back(binary_chain(leaves, kSyntheticVocab, leaves));
      break;
    case Input::SstTest: {
      trees = read_ptb_trees(GROVE_SST_DIR "/test.txt", &sst_vocab());
      if (trees.size() > kSstTrees) trees.resize(kSstTrees);
      break;
    }
    case Input::RandomTrees:
      for (int32_t i = 0; i < 40; ++i)
        trees.push_back(random_tree(200 + i, 1 + (i * 11) % 60, 5, kSyntheticVocab));
      break;
    case Input::UnaryChains:
      for (int32_t nodes : {1, 2, 5, 30}) trees.push_back(unary_chain(nodes, kSyntheticVocab, nodes));
      break;
  }
  return trees;
}

const std::vector<Tree> &trees_for(Input input) {
  static std::map<Input, std::vector<Tree>> cache;
  auto it = cache.find(input);
  if (it == cache.end()) it = cache.emplace(input, make_trees(input)).first;
  return it->second;
}

// --- Models -------------------------------------------------------------------------------------

// Random weights and the compiled model for one (model, H, V), built once per test process.
struct Fixture {
  Weights weights;
  cpu::CompiledModel compiled;
};

const Fixture &fixture_for(ModelKind model, int64_t H, int64_t V) {
  static std::map<std::tuple<ModelKind, int64_t, int64_t>, Fixture> cache;
  const auto key = std::make_tuple(model, H, V);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Weights weights = reference::random_model_weights(model, H, H, V, 1000 + static_cast<uint64_t>(H));
    const std::string path =
        fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model));
    const ilir::Program program = dsl::parse_model_file(path);
    cpu::CompiledModel compiled = cpu::CompiledModel::compile(program, weights, {});
    it = cache.emplace(key, Fixture{std::move(weights), std::move(compiled)}).first;
  }
  return it->second;
}

struct Case {
  ModelKind model;
  Input input;
  int64_t H;
  int64_t batch;  // 0 = all trees in one call
};

std::string case_name(const Case &c) {
  return fmt::format("{}_H{}_{}", input_name(c.input), c.H,
                     c.batch == 0 ? "BatchAll" : fmt::format("Batch{}", c.batch));
}

// gtest prints a failing test's parameter with this.
void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " " << case_name(c);
}

// Every (input, H, batch) of one model. Each test compiles its model (about a second of JIT), so
// the larger H runs only on the inputs with the most varied shapes.
std::vector<Case> cases(ModelKind model, const std::vector<Input> &inputs, int64_t small_H, int64_t large_H) {
  std::vector<Case> out;
  for (Input input : inputs) {
    const bool varied =
        input == Input::RandomBinaryTrees || input == Input::RandomTrees || input == Input::SstTest;
    for (int64_t H : {small_H, large_H}) {
      if (H == large_H && !varied) continue;
      for (int64_t batch : {1, 7, 0}) out.push_back({model, input, H, batch});
    }
  }
  return out;
}

const std::vector<Input> kBinaryInputs = {Input::RandomBinaryTrees, Input::PerfectBinaryTrees,
                                          Input::BinaryChains, Input::SstTest};
const std::vector<Input> kAnyArityInputs = {Input::RandomTrees, Input::UnaryChains, Input::RandomBinaryTrees,
                                            Input::SstTest};

// Expects every element of `got` within the tolerance of `want`; names the tree and element of the
// first few that are not.
void expect_close(const Tensor &got, const Tensor &want) {
  ASSERT_EQ(got.shape, want.shape);
  const int64_t width = want.shape.size() > 1 ? want.size() / want.shape[0] : 1;
  int failures = 0;
  for (int64_t k = 0; k < want.size(); ++k) {
    const double g = got.data[k], w = want.data[k];
    if (std::abs(g - w) <= kRelativeTolerance * std::abs(w) + kAbsoluteTolerance) continue;  // false on NaN
    ADD_FAILURE() << fmt::format("tree {} element {}: grove {:.9g}, reference {:.9g} (difference {:.3g})",
                                 k / width, k % width, g, w, g - w);
    if (++failures == 10) {
      ADD_FAILURE() << "stopping after 10 mismatches";
      return;
    }
  }
}

class MatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(MatchesReference, Run) {
  const Case &c = GetParam();
  const std::vector<Tree> &trees = trees_for(c.input);
  const Fixture &f = fixture_for(c.model, c.H, vocab_size(c.input));
  cpu::RunStats stats;
  const Tensor got = f.compiled.run(trees, {.batch = c.batch}, &stats);
  const Tensor want = reference::reference_roots(c.model, f.weights, trees);
  expect_close(got, want);

  int64_t nodes = 0;
  for (const Tree &tree : trees) nodes += tree.size();
  const int64_t n = static_cast<int64_t>(trees.size());
  EXPECT_EQ(stats.trees, n);
  EXPECT_EQ(stats.nodes, nodes);
  EXPECT_EQ(stats.calls, c.batch == 0 ? 1 : (n + c.batch - 1) / c.batch) << "calls of the compiled code";
}

std::string case_param_name(const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); }

INSTANTIATE_TEST_SUITE_P(TreeFC, MatchesReference,
                         ::testing::ValuesIn(cases(ModelKind::TreeFC, kBinaryInputs, 16, 64)),
                         case_param_name);
INSTANTIATE_TEST_SUITE_P(TreeGRU, MatchesReference,
                         ::testing::ValuesIn(cases(ModelKind::TreeGRU, kBinaryInputs, 16, 64)),
                         case_param_name);
INSTANTIATE_TEST_SUITE_P(TreeLSTM, MatchesReference,
                         ::testing::ValuesIn(cases(ModelKind::TreeLSTM, kBinaryInputs, 16, 64)),
                         case_param_name);
INSTANTIATE_TEST_SUITE_P(ChildSumTreeLSTM, MatchesReference,
                         ::testing::ValuesIn(cases(ModelKind::ChildSumTreeLSTM, kAnyArityInputs, 16, 64)),
                         case_param_name);
// MV-RNN holds an H x H matrix per node, hence its smaller sizes.
INSTANTIATE_TEST_SUITE_P(MVRNN, MatchesReference,
                         ::testing::ValuesIn(cases(ModelKind::MVRNN, kBinaryInputs, 8, 16)), case_param_name);

// --- Any hidden size ---------------------------------------------------------------------------

// Sizes that are not multiples of the vector width or of a panel run their level GEMMs with a
// partial last panel and epilogues split inside panels (plan::Gemm): H = 1 and 7 (one partial
// panel), 100, 150 (the TreeLSTM paper's), 200 and 300, every concatenation boundary (H, 2H) inside
// a panel. Random trees in calls of 7 (every node-block remainder) against the reference.
struct SizeCase {
  ModelKind model;
  int64_t H;
};

void PrintTo(const SizeCase &c, std::ostream *os) { *os << reference::model_name(c.model) << " H=" << c.H; }

class AnyHiddenSizeMatchesReference : public ::testing::TestWithParam<SizeCase> {};

TEST_P(AnyHiddenSizeMatchesReference, RandomTrees) {
  const SizeCase &c = GetParam();
  const Input input = c.model == ModelKind::ChildSumTreeLSTM ? Input::RandomTrees : Input::RandomBinaryTrees;
  const std::vector<Tree> &all = trees_for(input);
  const std::vector<Tree> trees(all.begin(), all.begin() + std::min<size_t>(all.size(), 20));
  const Fixture &f = fixture_for(c.model, c.H, vocab_size(input));
  expect_close(f.compiled.run(trees, {.batch = 7}), reference::reference_roots(c.model, f.weights, trees));
}

std::vector<SizeCase> size_cases() {
  std::vector<SizeCase> out;
  for (ModelKind model :
       {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM})
    for (int64_t H : {1, 7, 100, 150, 200, 300}) out.push_back({model, H});
  for (int64_t H : {1, 7, 20, 30}) out.push_back({ModelKind::MVRNN, H});  // H x H per node
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryTreeModel, AnyHiddenSizeMatchesReference, ::testing::ValuesIn(size_cases()),
                         [](const ::testing::TestParamInfo<SizeCase> &info) {
                           return fmt::format("{}_H{}", reference::model_name(info.param.model),
                                              info.param.H);
                         });

// --- Deep inputs ---------------------------------------------------------------------------------

// A chain as deep as the trees grove must take without recursing per node: each model at its small
// H on one deep chain (a caterpillar for the binary models, a one-child chain for child-sum).
class DeepChainMatchesReference : public ::testing::TestWithParam<ModelKind> {};

TEST_P(DeepChainMatchesReference, Run) {
  const ModelKind model = GetParam();
  const int64_t H = model == ModelKind::MVRNN ? 8 : 16;
  const std::vector<Tree> trees = {model == ModelKind::ChildSumTreeLSTM
                                       ? unary_chain(kDeepChainNodes, kSyntheticVocab, 1)
                                       : binary_chain(kDeepChainNodes / 2, kSyntheticVocab, 1)};
  const Fixture &f = fixture_for(model, H, kSyntheticVocab);
  expect_close(f.compiled.run(trees, {.batch = 0}), reference::reference_roots(model, f.weights, trees));
}

std::string model_param_name(const ::testing::TestParamInfo<ModelKind> &info) {
  return reference::model_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTreeModels, DeepChainMatchesReference,
                         ::testing::Values(ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM,
                                           ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN),
                         model_param_name);

// --- The benchmark's sizes ----------------------------------------------------------------------

// `make bench` times TreeLSTM at H = D = 256 and 512 on SST in batches of 10 (experiments/bench.py);
// the numbers behind those timings are checked here, on the first 12 SST test trees (calls of 10
// and 2), with the same tolerance: products over 2H = 1024 terms still round well inside it.
constexpr size_t kBenchmarkTrees = 12;

class BenchmarkSizeMatchesReference : public ::testing::TestWithParam<int64_t> {};

TEST_P(BenchmarkSizeMatchesReference, TreeLstmOnSst) {
  const int64_t H = GetParam();
  const std::vector<Tree> &sst = trees_for(Input::SstTest);
  ASSERT_GE(sst.size(), kBenchmarkTrees);
  const std::vector<Tree> trees(sst.begin(), sst.begin() + kBenchmarkTrees);
  const Fixture &f = fixture_for(ModelKind::TreeLSTM, H, vocab_size(Input::SstTest));
  expect_close(f.compiled.run(trees, {.batch = 10}),
               reference::reference_roots(ModelKind::TreeLSTM, f.weights, trees));
}

INSTANTIATE_TEST_SUITE_P(TreeLSTM, BenchmarkSizeMatchesReference, ::testing::Values(256, 512),
                         [](const ::testing::TestParamInfo<int64_t> &info) {
                           return fmt::format("H{}", info.param);
                         });

// --- The batch size changes nothing -------------------------------------------------------------

struct BatchCase {
  ModelKind model;
  Input input;
};

void PrintTo(const BatchCase &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " " << input_name(c.input);
}

class SameForEveryBatchSize : public ::testing::TestWithParam<BatchCase> {};

TEST_P(SameForEveryBatchSize, Run) {
  const BatchCase &c = GetParam();
  const int64_t H = c.model == ModelKind::MVRNN ? 8 : 16;
  const std::vector<Tree> &trees = trees_for(c.input);
  const Fixture &f = fixture_for(c.model, H, vocab_size(c.input));
  const Tensor all = f.compiled.run(trees, {.batch = 0});
  for (int64_t batch : {1, 2, 7, 64}) {
    const Tensor some = f.compiled.run(trees, {.batch = batch});
    ASSERT_EQ(some.shape, all.shape) << "batch " << batch;
    for (int64_t k = 0; k < all.size(); ++k) {
      // The same up to float rounding: a level's last, partial block of nodes runs in a micro-kernel
      // of its own size, which LLVM may schedule (and contract into FMAs) differently; the
      // difference is a few ulps, far inside the 1e-4 of the reference comparison.
      ASSERT_LE(std::fabs(some.data[k] - all.data[k]), 1e-6f * std::fabs(all.data[k]) + 1e-7f)
          << fmt::format("batch {}: tree {} element {} differs from one call: {} vs {}", batch, k / H, k % H,
                         some.data[k], all.data[k]);
    }
  }
}

std::vector<BatchCase> batch_cases(ModelKind model, const std::vector<Input> &inputs) {
  std::vector<BatchCase> out;
  for (Input input : inputs) out.push_back({model, input});
  return out;
}

std::string batch_param_name(const ::testing::TestParamInfo<BatchCase> &info) {
  return input_name(info.param.input);
}

INSTANTIATE_TEST_SUITE_P(TreeFC, SameForEveryBatchSize,
                         ::testing::ValuesIn(batch_cases(ModelKind::TreeFC, kBinaryInputs)),
                         batch_param_name);
INSTANTIATE_TEST_SUITE_P(TreeGRU, SameForEveryBatchSize,
                         ::testing::ValuesIn(batch_cases(ModelKind::TreeGRU, kBinaryInputs)),
                         batch_param_name);
INSTANTIATE_TEST_SUITE_P(TreeLSTM, SameForEveryBatchSize,
                         ::testing::ValuesIn(batch_cases(ModelKind::TreeLSTM, kBinaryInputs)),
                         batch_param_name);
INSTANTIATE_TEST_SUITE_P(ChildSumTreeLSTM, SameForEveryBatchSize,
                         ::testing::ValuesIn(batch_cases(ModelKind::ChildSumTreeLSTM, kAnyArityInputs)),
                         batch_param_name);
INSTANTIATE_TEST_SUITE_P(MVRNN, SameForEveryBatchSize,
                         ::testing::ValuesIn(batch_cases(ModelKind::MVRNN, kBinaryInputs)), batch_param_name);

}  // namespace
}  // namespace grove
