// grove's LSTM and GRU against PyTorch's nn.LSTM / nn.GRU themselves: the fixtures of tests/fixtures
// were written by experiments/fixtures/make_sequence_fixtures.py (seeded weights under docs/MODELS.md's
// names, the sequences, and PyTorch's last hidden state of each). Every element must agree to 1e-4
// relative (plus 1e-6 absolute, for elements near zero).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backends/cpu/CompiledModel.h"
#include "datasets/DagReader.h"
#include "frontend/dsl/Frontend.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tests/reference/Reference.h"

namespace grove {
namespace {

std::string fixture(const std::string &name) {
  return std::string(GROVE_SOURCE_DIR) + "/tests/fixtures/" + name;
}

void expect_matches_pytorch(const Tensor &got, const Tensor &torch, const std::string &what) {
  ASSERT_EQ(got.shape, torch.shape) << what;
  int reported = 0;
  for (int64_t i = 0; i < torch.size(); ++i) {
    double e = torch.data[i], g = got.data[i];
    if (std::abs(g - e) > 1e-4 * std::abs(e) + 1e-6 && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", PyTorch has " << e;
  }
}

class MatchesPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(MatchesPyTorch, LastHiddenStateOfEverySequence) {
  const std::string model = GetParam();
  Weights weights = read_safetensors(fixture(model + ".safetensors"));
  auto sequences = read_sequences(fixture("sequences.txt"), nullptr);
  Tensor torch = read_npy(fixture(model + "_expected.npy"));
  ASSERT_EQ(torch.shape[0], static_cast<int64_t>(sequences.size()));

  ilir::Program program = dsl::parse_model_file(fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, model));
  cpu::CompiledModel compiled = cpu::CompiledModel::compile(program, weights, {});
  for (int64_t batch : {0, 1, 3}) {
    expect_matches_pytorch(compiled.run_sequences(sequences, {.batch = batch}), torch,
                           fmt::format("{} batch {}", model, batch));
  }
}

TEST_P(MatchesPyTorch, ReferenceAgreesToo) {
  // The reference of tests/reference, which the other sequence tests trust, is PyTorch's model.
  const std::string model = GetParam();
  Weights weights = read_safetensors(fixture(model + ".safetensors"));
  auto sequences = read_sequences(fixture("sequences.txt"), nullptr);
  Tensor torch = read_npy(fixture(model + "_expected.npy"));
  Tensor ref(torch.shape);
  int64_t H = torch.shape[1];
  for (size_t s = 0; s < sequences.size(); ++s) {
    Tensor h = model == "lstm" ? reference::reference_lstm(weights, sequences[s])
                               : reference::reference_gru(weights, sequences[s]);
    std::copy(h.data.begin(), h.data.end(), ref.data.begin() + s * H);
  }
  expect_matches_pytorch(ref, torch, model + " reference");
}

INSTANTIATE_TEST_SUITE_P(Sequences, MatchesPyTorch, ::testing::Values("lstm", "gru"),
                         [](const auto &info) { return info.param; });

}  // namespace
}  // namespace grove
