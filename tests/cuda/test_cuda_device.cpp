// The kernels on a real GPU, against the independent references: TreeLSTM and the DAG-RNN in both
// forms and with both barriers, on the CPU emulation's inputs, at a grid the device holds. Skipped,
// saying why, without a driver or a device (the machines grove is built and tested on have none).

#include <gtest/gtest.h>

#include "backends/cuda/Driver.h"
#include "tests/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

class OnTheDevice : public ::testing::TestWithParam<std::tuple<ModelKind, cuda::CudaOptions>> {};

TEST_P(OnTheDevice, MatchesTheReference) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  const auto &[model, options] = GetParam();
  const int64_t H = 64, D = 32;
  plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(model), cuda_test_sizes(model, H, D), "");
  cuda::DeviceModel device(plan, options);
  device.bind(cuda_test_weights(model, H, D));
  Tensor got = is_dag(model) ? device.run_dags(cuda_test_dags()) : device.run(cuda_test_trees(model));
  expect_matches_reference(got, cuda_reference_outputs(model, H, D));
}

const cuda::CudaOptions kPerLevel{.form = cuda::Form::PerLevel, .blocks = 16, .threads = 128};
const cuda::CudaOptions kCounter{.form = cuda::Form::Persistent, .blocks = 16, .threads = 128};
const cuda::CudaOptions kGridSync{.form = cuda::Form::Persistent,
                                  .barrier = cuda::GridBarrier::CooperativeGroups,
                                  .blocks = 16,
                                  .threads = 128};

INSTANTIATE_TEST_SUITE_P(Models, OnTheDevice,
                         ::testing::Combine(::testing::Values(ModelKind::TreeLSTM, ModelKind::DAGRNN),
                                            ::testing::Values(kPerLevel, kCounter, kGridSync)),
                         [](const auto &info) {
                           return reference::model_name(std::get<0>(info.param)) + "_" +
                                  cuda_options_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace grove
