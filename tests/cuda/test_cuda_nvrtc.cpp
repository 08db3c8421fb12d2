// The CUDA kernels compiled by NVRTC, with no GPU: every model of models/ in both forms and with
// both grid barriers (and a few schedules) compiles to a cubin for sm_90 with no error and no spill
// in ptxas's report, and to PTX for an older architecture (compute_75). Skipped, saying why, where
// NVRTC cannot be loaded.

#include <gtest/gtest.h>

#include "backends/cuda/Nvrtc.h"
#include "ilir/Error.h"
#include "tests/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

#define SKIP_WITHOUT_NVRTC()                                                             \
  do {                                                                                   \
    std::string why;                                                                     \
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why; \
  } while (0)

struct Case {
  ModelKind model;
  std::string schedule;
  cuda::CudaOptions options;
};

cuda::CudaSource source_of(const Case &c, int64_t H) {
  plan::LevelPlan plan =
      cuda::plan_for_cuda(cuda_test_program(c.model), cuda_test_sizes(c.model, H, 64), c.schedule);
  return cuda::emit_cuda(plan, c.options);
}

class NvrtcCompiles : public ::testing::TestWithParam<Case> {};

TEST_P(NvrtcCompiles, ForSm90WithoutSpills) {
  SKIP_WITHOUT_NVRTC();
  const Case &c = GetParam();
  const cuda::CudaSource src = source_of(c, c.model == ModelKind::MVRNN ? 32 : 128);
  const cuda::NvrtcOutput &out = cuda::compile_with_nvrtc(src, "sm_90", reference::model_name(c.model));
  EXPECT_TRUE(out.is_cubin);
  EXPECT_GT(out.image.size(), 1000u);
  ASSERT_EQ(out.kernels.size(), src.kernels.size()) << out.log;
  for (const cuda::KernelResources &k : out.kernels) {
    SCOPED_TRACE(k.kernel);
    EXPECT_GT(k.registers, 0) << out.log;
    EXPECT_LE(k.registers, 255);
    EXPECT_EQ(k.spill_stores, 0) << out.log;
    EXPECT_EQ(k.spill_loads, 0) << out.log;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const cuda::CudaOptions per_level{.form = cuda::Form::PerLevel, .blocks = 32, .threads = 128};
  const cuda::CudaOptions counter{.form = cuda::Form::Persistent, .blocks = 32, .threads = 128};
  cuda::CudaOptions grid_sync = counter;
  grid_sync.barrier = cuda::GridBarrier::CooperativeGroups;
  for (ModelKind m : {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
                      ModelKind::MVRNN, ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU})
    for (const cuda::CudaOptions &o : {per_level, counter, grid_sync}) out.push_back({m, "", o});
  out.push_back({ModelKind::TreeLSTM, "specialize=off", counter});
  out.push_back({ModelKind::TreeLSTM, "epilogue=on", counter});
  out.push_back({ModelKind::LSTM, "epilogue=on", grid_sync});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, NvrtcCompiles, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return fmt::format("{}_{}_{}", reference::model_name(info.param.model),
                                              info.param.schedule.empty()
                                                  ? "default"
                                                  : sweep_case_name(0, info.param.schedule).substr(3),
                                              cuda_options_name(info.param.options));
                         });

TEST(Nvrtc, PtxForAnOlderArchitecture) {
  SKIP_WITHOUT_NVRTC();
  const cuda::CudaSource src = source_of({ModelKind::TreeLSTM, "", {.form = cuda::Form::Persistent}}, 64);
  const cuda::NvrtcOutput &out = cuda::compile_with_nvrtc(src, "compute_75", "TreeLSTM");
  EXPECT_FALSE(out.is_cubin);
  EXPECT_NE(out.image.find(".entry grove_persistent"), std::string::npos);
  // The counter barrier's release add and acquire load, as cooperative groups' grid.sync() uses.
  EXPECT_NE(out.image.find("atom.add.release.gpu"), std::string::npos);
  EXPECT_NE(out.image.find("ld.acquire.gpu"), std::string::npos);
}

TEST(Nvrtc, RejectsAnUnknownArchitecture) {
  const cuda::CudaSource src = source_of({ModelKind::TreeFC, "", {}}, 16);
  try {
    cuda::compile_with_nvrtc(src, "volta", "TreeFC");
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_STREQ(e.what(),
                 "unknown GPU architecture 'volta': use sm_XX (a cubin) or compute_XX (PTX), e.g. sm_90");
  }
}

TEST(Nvrtc, ReadsPtxasReports) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'grove_leaf_p1' for 'sm_90'\n"
      "ptxas info    : Function properties for grove_leaf_p1\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'grove_internal_p1' for 'sm_90'\n"
      "ptxas info    : Used 17 registers\n";
  std::vector<cuda::KernelResources> k = cuda::parse_ptxas_report(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].kernel, "grove_leaf_p1");
  EXPECT_EQ(k[0].registers, 40);
  EXPECT_EQ(k[0].stack_bytes, 8);
  EXPECT_EQ(k[0].spill_stores, 4);
  EXPECT_EQ(k[0].spill_loads, 12);
  EXPECT_EQ(k[0].static_shared_bytes, 1024);
  EXPECT_EQ(k[1].kernel, "grove_internal_p1");
  EXPECT_EQ(k[1].registers, 17);
}

}  // namespace
}  // namespace grove
