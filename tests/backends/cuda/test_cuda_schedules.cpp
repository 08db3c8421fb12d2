// The CUDA kernels under other schedules, sizes and grids, run on the CPU (Simt.h) against the
// independent references: leaf specialization off (one code that branches per node), epilogue
// fusion, weights in global memory (persist=off, or a shared limit of 0), no gate fusion, no GEMMs,
// no hoisting, batch=off (still run by level), odd sizes (no GEMM, slices of other widths), and
// grids of 1, 3 and 8 blocks. Tolerance: CudaTestUtil.h.

#include <gtest/gtest.h>

#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

struct Case {
  ModelKind model;
  int64_t H;
  std::string schedule;
  cuda::CudaOptions options;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " H=" << c.H << " --schedule '" << c.schedule << "' "
      << cuda_options_name(c.options) << " shared limit " << c.options.shared_limit;
}

class EmulatedSchedules : public ::testing::TestWithParam<Case> {};

TEST_P(EmulatedSchedules, MatchTheReference) {
  const Case &c = GetParam();
  const int64_t D = 12;
  expect_matches_reference(cuda_emulated_outputs(c.model, c.H, D, c.schedule, c.options),
                           cuda_reference_outputs(c.model, c.H, D));
}

const cuda::CudaOptions kPersistent{.form = cuda::Form::Persistent};
const cuda::CudaOptions kPerLevel{.form = cuda::Form::PerLevel};
const cuda::CudaOptions kGridSync{.form = cuda::Form::Persistent,
                                  .barrier = cuda::GridBarrier::CooperativeGroups};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char *s :
       {"specialize=off", "epilogue=on", "persist=off", "fuse=off", "gemm=off", "hoist=off", "batch=off"})
    out.push_back({ModelKind::TreeLSTM, 32, s, kPersistent});
  out.push_back({ModelKind::TreeLSTM, 32, "specialize=off", kPerLevel});
  out.push_back({ModelKind::TreeLSTM, 32, "epilogue=on", kPerLevel});
  out.push_back({ModelKind::LSTM, 32, "epilogue=on", kPersistent});
  out.push_back({ModelKind::LSTM, 32, "epilogue=on", kPerLevel});
  out.push_back({ModelKind::GRU, 32, "", kGridSync});
  out.push_back({ModelKind::DAGRNN, 32, "specialize=off", kPersistent});
  out.push_back({ModelKind::ChildSumTreeLSTM, 32, "hoist=off", kPersistent});
  out.push_back({ModelKind::ChildSumTreeLSTM, 32, "epilogue=on", kPerLevel});
  // Odd sizes: no GEMMs fit the panels; slices of 4 rows (20) and of 4 of 12.
  out.push_back({ModelKind::TreeGRU, 20, "", kPersistent});
  out.push_back({ModelKind::TreeGRU, 20, "", kPerLevel});
  out.push_back({ModelKind::LSTM, 20, "", kPersistent});
  out.push_back({ModelKind::MVRNN, 12, "", kPersistent});
  out.push_back({ModelKind::TreeFC, 24, "", kGridSync});
  // Sizes whose GEMMs end in a partial panel (36 rows of panels of 32: 108 gate rows).
  out.push_back({ModelKind::TreeLSTM, 36, "", kPersistent});
  out.push_back({ModelKind::LSTM, 36, "", kPerLevel});
  // Other grids, and weights left in global memory.
  cuda::CudaOptions one = kPersistent, three = kPersistent, eight = kGridSync, global = kPersistent;
  one.blocks = 1;
  three.blocks = 3;
  three.threads = 16;
  eight.blocks = 8;
  global.shared_limit = 0;
  out.push_back({ModelKind::TreeLSTM, 32, "", one});
  out.push_back({ModelKind::TreeLSTM, 32, "", three});
  out.push_back({ModelKind::TreeLSTM, 32, "", eight});
  out.push_back({ModelKind::TreeLSTM, 32, "", global});
  out.push_back({ModelKind::MVRNN, 16, "", three});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Schedules, EmulatedSchedules, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           const Case &c = info.param;
                           return fmt::format("{}_{}_{}{}", reference::model_name(c.model),
                                              sweep_case_name(c.H, c.schedule), cuda_options_name(c.options),
                                              c.options.shared_limit == 0 ? "_GlobalWeights" : "");
                         });

}  // namespace
}  // namespace grove
