// The CUDA kernels of every model of models/, run on the CPU (Simt.h) in both forms and with both
// grid barriers, against the independent references (tests/reference) on small trees, DAGs and
// sequences, under the default GPU schedule. Tolerance: CudaTestUtil.h.

#include <gtest/gtest.h>

#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

struct Case {
  ModelKind model;
  cuda::CudaOptions options;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " " << cuda_options_name(c.options);
}

class EmulatedKernels : public ::testing::TestWithParam<Case> {};

TEST_P(EmulatedKernels, MatchTheReference) {
  const Case &c = GetParam();
  const int64_t H = c.model == ModelKind::MVRNN ? 8 : 16, D = 12;
  expect_matches_reference(cuda_emulated_outputs(c.model, H, D, "", c.options),
                           cuda_reference_outputs(c.model, H, D));
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (ModelKind m : {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
                      ModelKind::MVRNN, ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU}) {
    out.push_back({m, {.form = cuda::Form::PerLevel}});
    out.push_back({m, {.form = cuda::Form::Persistent, .barrier = cuda::GridBarrier::Counter}});
    out.push_back({m, {.form = cuda::Form::Persistent, .barrier = cuda::GridBarrier::CooperativeGroups}});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, EmulatedKernels, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return reference::model_name(info.param.model) + "_" +
                                  cuda_options_name(info.param.options);
                         });

}  // namespace
}  // namespace grove
