// The CUDA kernels run on the CPU (Simt.h) against grove's CPU back end (the Halide JIT) on the same
// inputs and weights, for every model of models/ and both forms: both are float32, so they agree
// to float rounding — |cuda - cpu| <= 1e-5 * |cpu| + 1e-6 per element (issue 22's criterion; the
// summation orders differ: the CPU's GEMM micro-kernels block and may contract into FMAs).

#include <gtest/gtest.h>

#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/RandomWeights.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

struct Case {
  ModelKind model;
  cuda::Form form;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << (c.form == cuda::Form::Persistent ? " persistent" : " per level");
}

class AgreesWithTheCpuBackEnd : public ::testing::TestWithParam<Case> {};

TEST_P(AgreesWithTheCpuBackEnd, ToFloatRounding) {
  const Case &c = GetParam();
  const int64_t H = c.model == ModelKind::MVRNN ? 8 : 32, D = 16;
  const Tensor gpu = cuda_emulated_outputs(c.model, H, D, "", {.form = c.form});
  // The CPU back end's outputs, once per model (a JIT compile each).
  static std::map<ModelKind, Tensor> cpu_outputs;
  if (!cpu_outputs.count(c.model)) {
    cpu::CompiledModel model =
        cpu::CompiledModel::compile(cuda_test_program(c.model), cuda_test_weights(c.model, H, D), {});
    cpu_outputs[c.model] = is_dag(c.model)        ? model.run_dags(cuda_test_dags(), {})
                           : is_sequence(c.model) ? model.run_sequences(cuda_test_sequences(), {})
                                                  : model.run(cuda_test_trees(c.model), {});
  }
  const Tensor &host = cpu_outputs.at(c.model);
  ASSERT_EQ(gpu.shape, host.shape);
  int failures = 0;
  for (int64_t k = 0; k < host.size() && failures < 10; ++k) {
    const double g = gpu.data[k], h = host.data[k];
    if (std::abs(g - h) <= 1e-5 * std::abs(h) + 1e-6) continue;  // false on NaN
    ADD_FAILURE() << fmt::format("row {} element {}: CUDA {:.9g}, CPU {:.9g}", k / H, k % H, g, h);
    ++failures;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (ModelKind m : {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
                      ModelKind::MVRNN, ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU})
    for (cuda::Form f : {cuda::Form::PerLevel, cuda::Form::Persistent}) out.push_back({m, f});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, AgreesWithTheCpuBackEnd, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return reference::model_name(info.param.model) +
                                  (info.param.form == cuda::Form::Persistent ? "_Persistent" : "_PerLevel");
                         });

// A model of none of models/'s shapes: a 7-row gate GEMM (one partial panel, no multiple of the
// slice, owned unit by unit, not by hidden slice) whose output a second GEMM reads whole.
TEST(AgreesWithTheCpuBackEnd, GemmOfAnyRowCount) {
  const char *text = R"(model OddRows
structure binary_tree
param emb [V, H]
param W [H, 2H]
param P [7, 2H]
param Q [H, 7]
state h [H]
leaf { h = emb[token] }
internal {
  s = [h[left]; h[right]]
  g = tanh(P @ s)
  h = tanh(W @ s + Q @ g)
}
output h
)";
  const ilir::Program program = dsl::parse_model(text, "odd_rows.grove");
  const std::map<std::string, int64_t> sizes = {{"H", 16}, {"V", kCudaVocab}};
  const Weights weights = random_weights(program, sizes, 9);
  const std::vector<Tree> trees = cuda_test_trees(ModelKind::TreeLSTM);
  const Tensor host = cpu::CompiledModel::compile(program, weights, {}).run(trees, {});
  for (cuda::Form form : {cuda::Form::PerLevel, cuda::Form::Persistent}) {
    cuda::EmulatedModel model(cuda::plan_for_cuda(program, sizes, ""), {.form = form});
    ASSERT_NE(model.source().text.find("if (i0 >= 7) continue;"), std::string::npos) << model.source().text;
    model.bind(weights);
    const Tensor gpu = model.run(trees);
    ASSERT_EQ(gpu.shape, host.shape);
    for (int64_t k = 0; k < host.size(); ++k)
      ASSERT_LE(std::abs(gpu.data[k] - host.data[k]), 1e-5 * std::abs(host.data[k]) + 1e-6)
          << "element " << k;
  }
}

}  // namespace
}  // namespace grove
