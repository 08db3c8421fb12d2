// End-to-end correctness of the DAG and sequence models: models/dagrnn.grove over random DAGs and
// image grids (every sweep direction), models/lstm.grove and models/gru.grove over batches of
// sequences of different lengths, each against the independent references of tests/reference
// (docs/MODELS.md's equations in double precision), with several batch sizes and schedules.
//
// Tolerance, per element: |grove - reference| <= 1e-4 * |reference| + 1e-5 (float32 against double).

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/DagReader.h"
#include "frontend/dsl/Frontend.h"
#include "tests/UserError.h"
#include "tests/dag/DagTestInputs.h"
#include "tests/reference/Reference.h"

namespace grove {
namespace {

using reference::ModelKind;

constexpr int32_t kVocab = 40;
constexpr int64_t kH = 24, kD = 20;

void expect_close(const Tensor &grove, const Tensor &expected, const std::string &what) {
  ASSERT_EQ(grove.shape, expected.shape) << what;
  int reported = 0;
  for (int64_t i = 0; i < expected.size(); ++i) {
    double e = expected.data[i], g = grove.data[i];
    if (std::abs(g - e) > 1e-4 * std::abs(e) + 1e-5 && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << e;
  }
}

// Compiled models, shared by the tests: (model, schedule) -> model.
const cpu::CompiledModel &compiled(ModelKind kind, const std::string &schedule) {
  static std::map<std::pair<ModelKind, std::string>, std::unique_ptr<cpu::CompiledModel>> cache;
  auto &slot = cache[{kind, schedule}];
  if (!slot) {
    ilir::Program program = dsl::parse_model_file(
        fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(kind)));
    cpu::CompileOptions options;
    options.schedule = schedule;
    slot = std::make_unique<cpu::CompiledModel>(cpu::CompiledModel::compile(
        program, reference::random_model_weights(kind, kH, kD, kVocab, 7), options));
  }
  return *slot;
}

const Weights &weights(ModelKind kind) {
  static std::map<ModelKind, Weights> cache;
  auto it = cache.find(kind);
  if (it == cache.end())
    it = cache.emplace(kind, reference::random_model_weights(kind, kH, kD, kVocab, 7)).first;
  return it->second;
}

// The references' sink rows of all DAGs, concatenated.
Tensor reference_sinks(std::span<const Dag> dags) {
  Tensor out({0, kH});
  for (const Dag &dag : dags) {
    Tensor sinks = reference::reference_dagrnn(weights(ModelKind::DAGRNN), testing::to_reference(dag));
    out.data.insert(out.data.end(), sinks.data.begin(), sinks.data.end());
    out.shape[0] += sinks.shape[0];
  }
  return out;
}

// The schedules every input runs under: the default (level-batched, leaf level specialized), one
// node at a time, and batched without specialization or GEMM kernels.
const char *const kSchedules[] = {"", "batch=off", "specialize=off,gemm=off"};
const int64_t kBatches[] = {1, 3, 0};

std::vector<Dag> random_dags() {
  std::vector<Dag> dags;
  for (int32_t n : {1, 2, 5, 17, 60, 3, 200, 9}) dags.push_back(testing::random_dag(1000 + n, n, kVocab));
  return dags;
}

std::vector<Dag> grids(Sweep sweep) {
  std::vector<Dag> out;
  std::mt19937_64 rng(5);
  for (auto [rows, cols] : {std::pair{1, 1}, {1, 7}, {6, 1}, {3, 4}, {8, 8}, {5, 13}}) {
    std::vector<int32_t> tokens(rows * cols);
    for (int32_t &t : tokens) t = static_cast<int32_t>(rng() % kVocab);
    out.push_back(grid_dag(rows, cols, tokens, sweep));
  }
  return out;
}

class DagRnn : public ::testing::TestWithParam<std::tuple<const char *, int64_t>> {};

TEST_P(DagRnn, RandomDagsMatchReference) {
  auto [schedule, batch] = GetParam();
  std::vector<Dag> dags = random_dags();
  Tensor got = compiled(ModelKind::DAGRNN, schedule).run_dags(dags, {.batch = batch});
  expect_close(got, reference_sinks(dags), "random DAGs");
}

TEST_P(DagRnn, GridsMatchReferenceInEverySweep) {
  auto [schedule, batch] = GetParam();
  for (Sweep sweep : {Sweep::SouthEast, Sweep::SouthWest, Sweep::NorthEast, Sweep::NorthWest}) {
    std::vector<Dag> dags = grids(sweep);
    Tensor got = compiled(ModelKind::DAGRNN, schedule).run_dags(dags, {.batch = batch});
    // A grid has one sink, the corner its sweep runs towards.
    EXPECT_EQ(got.shape[0], static_cast<int64_t>(dags.size()));
    expect_close(got, reference_sinks(dags), fmt::format("grids, sweep {}", to_string(sweep)));
  }
}

INSTANTIATE_TEST_SUITE_P(SchedulesAndBatches, DagRnn,
                         ::testing::Combine(::testing::ValuesIn(kSchedules), ::testing::ValuesIn(kBatches)),
                         [](const auto &info) {
                           std::string s = std::get<0>(info.param);
                           for (char &c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return fmt::format("{}_Batch{}", s.empty() ? "default" : s,
                                              std::get<1>(info.param));
                         });

TEST(DagRnnOutputs, AllNodesGivesEveryNodeInNodeOrder) {
  // A DAG's every node is the sink of the sub-DAG of its ancestors, which the reference computes.
  Dag dag = testing::random_dag(77, 30, kVocab);
  Tensor all =
      compiled(ModelKind::DAGRNN, "").run_dags(std::span(&dag, 1), {.outputs = DagOutputs::AllNodes});
  ASSERT_EQ(all.shape, (std::vector<int64_t>{30, kH}));
  Tensor sinks = compiled(ModelKind::DAGRNN, "").run_dags(std::span(&dag, 1), {});
  Tensor expected = reference_sinks(std::span(&dag, 1));
  expect_close(sinks, expected, "sinks");
  // Each sink's row of the all-nodes output is its sink row.
  std::vector<bool> has_successor(30, false);
  for (int32_t p : dag.preds)
    if (p >= 0) has_successor[p] = true;
  int64_t row = 0;
  for (int32_t v = 0; v < 30; ++v) {
    if (has_successor[v]) continue;
    for (int64_t j = 0; j < kH; ++j) EXPECT_EQ(all.data[v * kH + j], sinks.data[row * kH + j]);
    ++row;
  }
}

// --- Sequences ----------------------------------------------------------------------------------

std::vector<std::vector<int32_t>> random_sequences() {
  std::vector<std::vector<int32_t>> sequences;
  int seed = 0;
  for (int32_t length : {1, 7, 2, 33, 120, 5, 1, 64})
    sequences.push_back(testing::random_sequence(++seed, length, kVocab));
  return sequences;
}

Tensor reference_last(ModelKind kind, const std::vector<std::vector<int32_t>> &sequences) {
  Tensor out({static_cast<int64_t>(sequences.size()), kH});
  for (size_t s = 0; s < sequences.size(); ++s) {
    Tensor h = kind == ModelKind::LSTM ? reference::reference_lstm(weights(kind), sequences[s])
                                       : reference::reference_gru(weights(kind), sequences[s]);
    std::copy(h.data.begin(), h.data.end(), out.data.begin() + s * kH);
  }
  return out;
}

class SequenceModel : public ::testing::TestWithParam<std::tuple<ModelKind, const char *, int64_t>> {};

TEST_P(SequenceModel, BatchedSequencesOfDifferentLengthsMatchReference) {
  auto [kind, schedule, batch] = GetParam();
  auto sequences = random_sequences();
  Tensor got = compiled(kind, schedule).run_sequences(sequences, {.batch = batch});
  expect_close(got, reference_last(kind, sequences), reference::model_name(kind));
}

INSTANTIATE_TEST_SUITE_P(SchedulesAndBatches, SequenceModel,
                         ::testing::Combine(::testing::Values(ModelKind::LSTM, ModelKind::GRU),
                                            ::testing::ValuesIn(kSchedules), ::testing::ValuesIn(kBatches)),
                         [](const auto &info) {
                           std::string s = std::get<1>(info.param);
                           for (char &c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return fmt::format("{}_{}_Batch{}", reference::model_name(std::get<0>(info.param)),
                                              s.empty() ? "default" : s, std::get<2>(info.param));
                         });

// Hidden and input sizes that are no multiple of a vector or a panel (the level GEMMs' partial last
// panel and split epilogues, plan::Gemm): each DAG and sequence model against its reference.
TEST(AnyHiddenSize, DagAndSequenceModelsMatchTheirReferences) {
  for (int64_t H : {1, 7, 100, 150}) {
    const int64_t D = H == 1 ? 3 : H - 3;
    for (ModelKind kind : {ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU}) {
      SCOPED_TRACE(fmt::format("{} H={} D={}", reference::model_name(kind), H, D));
      ilir::Program program = dsl::parse_model_file(
          fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(kind)));
      Weights w = reference::random_model_weights(kind, H, D, kVocab, 11);
      cpu::CompiledModel model = cpu::CompiledModel::compile(program, w, {});
      Tensor want({0, H});
      Tensor got;
      if (kind == ModelKind::DAGRNN) {
        std::vector<Dag> dags = random_dags();
        dags.resize(5);
        got = model.run_dags(dags, {.batch = 3});
        for (const Dag &dag : dags) {
          Tensor sinks = reference::reference_dagrnn(w, testing::to_reference(dag));
          want.data.insert(want.data.end(), sinks.data.begin(), sinks.data.end());
          want.shape[0] += sinks.shape[0];
        }
      } else {
        auto sequences = random_sequences();
        got = model.run_sequences(sequences, {.batch = 3});
        for (const auto &tokens : sequences) {
          Tensor h = kind == ModelKind::LSTM ? reference::reference_lstm(w, tokens)
                                             : reference::reference_gru(w, tokens);
          want.data.insert(want.data.end(), h.data.begin(), h.data.end());
          want.shape[0] += 1;
        }
      }
      expect_close(got, want, reference::model_name(kind));
    }
  }
}

TEST(SequenceModel, LongSequenceRunsWithoutRecursion) {
  // 200,000 tokens: one level per token, nothing on the C stack per token.
  std::vector<std::vector<int32_t>> sequences = {testing::random_sequence(9, 200'000, kVocab), {3}};
  Tensor got = compiled(ModelKind::GRU, "").run_sequences(sequences, {});
  expect_close(got, reference_last(ModelKind::GRU, sequences), "long GRU sequence");
}

TEST(SequenceModel, DagModelOverSequencesReadsZerosInItsSecondSlot) {
  // A sequence is a chain DAG with one slot; the DAG-RNN's pred1 is then always the zero node.
  auto sequences = random_sequences();
  Tensor got = compiled(ModelKind::DAGRNN, "").run_sequences(sequences, {});
  std::vector<Dag> chains;
  for (const auto &s : sequences) chains.push_back(chain_dag(s));
  expect_close(got, reference_sinks(chains), "DAG-RNN over chains");
}

TEST(WrongInputKind, TreesForADagModelAndDagsForATreeModel) {
  EXPECT_THAT(
      testing::user_error_of([] { compiled(ModelKind::LSTM, "").run(std::vector<Tree>{}, {}); }),
      ::testing::HasSubstr("model LSTM has 'structure sequence': it runs over DAGs, grids or sequences "
                           "(--dags, --grids, --sequences), not trees"));
  ilir::Program treefc = dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/treefc.grove");
  cpu::CompiledModel tree_model = cpu::CompiledModel::compile(
      treefc, reference::random_model_weights(ModelKind::TreeFC, 8, 8, kVocab, 1), {});
  Dag dag = testing::random_dag(1, 3, kVocab);
  EXPECT_THAT(
      testing::user_error_of([&] { tree_model.run_dags(std::span(&dag, 1), {.noun = "grid"}); }),
      ::testing::HasSubstr("model TreeFC has 'structure binary_tree': it runs over trees (--trees), not "
                           "grids"));
  EXPECT_THAT(
      testing::user_error_of([&] { tree_model.run_sequences(std::vector<std::vector<int32_t>>{{1}}, {}); }),
      ::testing::HasSubstr("not sequences"));
}

}  // namespace
}  // namespace grove
