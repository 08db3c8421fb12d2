// The kernels on a real GPU, against the independent references: TreeLSTM and the DAG-RNN in both
// forms and with both barriers, on the CPU emulation's inputs, at a grid the device holds. Skipped,
// saying why, without a driver or a device (the machines grove is built and tested on have none).

#include <gtest/gtest.h>

#include "backends/cuda/Driver.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

struct DeviceCase {
  ModelKind model;
  cuda::CudaOptions options;
};

void PrintTo(const DeviceCase &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " " << cuda_options_name(c.options);
}

class OnTheDevice : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(OnTheDevice, MatchesTheReference) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  const DeviceCase &c = GetParam();
  const int64_t H = 64, D = 32;
  plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(c.model), cuda_test_sizes(c.model, H, D), "");
  cuda::DeviceModel device(plan, c.options);
  device.bind(cuda_test_weights(c.model, H, D));
  Tensor got = is_dag(c.model) ? device.run_dags(cuda_test_dags()) : device.run(cuda_test_trees(c.model));
  expect_matches_reference(got, cuda_reference_outputs(c.model, H, D));
}

std::vector<DeviceCase> cases() {
  const cuda::CudaOptions per_level{.form = cuda::Form::PerLevel, .blocks = 16, .threads = 128};
  cuda::CudaOptions counter = per_level, grid_sync = per_level;
  counter.form = grid_sync.form = cuda::Form::Persistent;
  grid_sync.barrier = cuda::GridBarrier::CooperativeGroups;
  std::vector<DeviceCase> out;
  for (ModelKind m : {ModelKind::TreeLSTM, ModelKind::DAGRNN})
    for (const cuda::CudaOptions &o : {per_level, counter, grid_sync}) out.push_back({m, o});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, OnTheDevice, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<DeviceCase> &info) {
                           return reference::model_name(info.param.model) + "_" +
                                  cuda_options_name(info.param.options);
                         });

}  // namespace
}  // namespace grove
