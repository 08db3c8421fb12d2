// Property: a schedule never changes the numbers a model computes, for the DAG and sequence models
// too. models/dagrnn.grove (over random DAGs and image grids), models/lstm.grove and models/gru.grove
// (over sequences of different lengths) are compiled under every schedule of the sweep
// (tests/scheduling/ScheduleSweep.h; recursive unrolling is for trees only) and their outputs compared with
// the independent references (tests/reference), within the sweep's tolerance 1e-4·|x| + 1e-5 (float32 against
// double).
//
// H = 32 lets the level GEMMs and the LSTM's fused gate GEMMs (epilogue=on) run as micro-kernels;
// H = 20 is the odd size (remainder paths, no micro-kernels). Inputs run in calls of 3 and all at
// once, from one compilation.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/DagReader.h"
#include "frontend/dsl/Frontend.h"
#include "tests/dag/DagTestInputs.h"
#include "tests/reference/Reference.h"
#include "tests/scheduling/ScheduleSweep.h"

namespace grove {
namespace {

using reference::ModelKind;

constexpr int32_t kVocab = 40;
constexpr int64_t kD = 24;

// DAGs of every shape the generator makes (sources, sinks, an empty slot 0 before a filled slot 1,
// both slots one node) and grids swept towards the south-east and the north-west.
std::vector<Dag> dags() {
  std::vector<Dag> out;
  for (int32_t n : {1, 2, 5, 17, 60, 3, 90, 9}) out.push_back(testing::random_dag(2000 + n, n, kVocab));
  std::mt19937_64 rng(11);
  for (auto [rows, cols, sweep] : {std::tuple{3, 4, Sweep::SouthEast}, {6, 5, Sweep::NorthWest}}) {
    std::vector<int32_t> tokens(rows * cols);
    for (int32_t &t : tokens) t = static_cast<int32_t>(rng() % kVocab);
    out.push_back(grid_dag(rows, cols, tokens, sweep));
  }
  return out;
}

std::vector<std::vector<int32_t>> sequences() {
  std::vector<std::vector<int32_t>> out;
  int seed = 100;
  for (int32_t length : {1, 7, 2, 33, 60, 5, 1, 16})
    out.push_back(testing::random_sequence(++seed, length, kVocab));
  return out;
}

Weights weights(ModelKind model, int64_t H) {
  return reference::random_model_weights(model, H, kD, kVocab, 7);
}

// The reference's outputs: every DAG's sinks, or every sequence's last state, in input order.
Tensor reference_outputs(ModelKind model, int64_t H) {
  const Weights w = weights(model, H);
  Tensor out({0, H});
  auto append = [&](const Tensor &rows) {
    out.data.insert(out.data.end(), rows.data.begin(), rows.data.end());
    out.shape[0] += rows.size() / H;
  };
  if (model == ModelKind::DAGRNN)
    for (const Dag &dag : dags()) append(reference::reference_dagrnn(w, testing::to_reference(dag)));
  else
    for (const std::vector<int32_t> &s : sequences())
      append(model == ModelKind::LSTM ? reference::reference_lstm(w, s) : reference::reference_gru(w, s));
  return out;
}

struct Case {
  ModelKind model;
  int64_t H;
  std::string schedule;  // overrides over the default
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " H=" << c.H << " --schedule '" << c.schedule << "'";
}

class EverySchedule : public ::testing::TestWithParam<Case> {};

TEST_P(EverySchedule, MatchesTheReference) {
  const Case &c = GetParam();
  static std::map<std::tuple<ModelKind, int64_t>, Tensor> references;
  auto key = std::make_tuple(c.model, c.H);
  if (!references.count(key)) references[key] = reference_outputs(c.model, c.H);
  const Tensor &want = references[key];

  ilir::Program program = dsl::parse_model_file(
      fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(c.model)));
  cpu::CompileOptions options;
  options.schedule = c.schedule;
  cpu::CompiledModel compiled = cpu::CompiledModel::compile(program, weights(c.model, c.H), options);
  for (int64_t batch : {3, 0}) {
    SCOPED_TRACE(batch == 0 ? "all inputs in one call" : "inputs in calls of 3");
    Tensor got = c.model == ModelKind::DAGRNN ? compiled.run_dags(dags(), {.batch = batch})
                                              : compiled.run_sequences(sequences(), {.batch = batch});
    testing::expect_matches_reference(got, want);
  }
}

std::vector<Case> cases(ModelKind model) {
  std::vector<Case> out;
  for (const std::string &s : testing::kSweepSchedules) out.push_back({model, 32, s});
  if (model == ModelKind::LSTM)  // the one whose GEMM outputs epilogue fusion fuses
    for (const std::string &s : testing::kEpilogueSchedules) out.push_back({model, 32, s});
  for (const std::string &s : testing::kOddSizeSchedules) out.push_back({model, 20, s});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  return testing::sweep_case_name(info.param.H, info.param.schedule);
}

INSTANTIATE_TEST_SUITE_P(DAGRNN, EverySchedule, ::testing::ValuesIn(cases(ModelKind::DAGRNN)), case_name);
INSTANTIATE_TEST_SUITE_P(LSTM, EverySchedule, ::testing::ValuesIn(cases(ModelKind::LSTM)), case_name);
INSTANTIATE_TEST_SUITE_P(GRU, EverySchedule, ::testing::ValuesIn(cases(ModelKind::GRU)), case_name);

}  // namespace
}  // namespace grove
