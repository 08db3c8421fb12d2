// The CUDA kernels compiled by NVRTC, with no GPU, at the benchmark's sizes (H = D = 256; MV-RNN,
// which holds an H x H matrix per node, H = 64) and an H200's grid (132 blocks x 256 threads, up to
// 227 KB of weights in shared memory): every model of models/ in both forms and with both grid
// barriers (and a few schedules) compiles to a cubin for sm_90 with no error and no spill in
// ptxas's report; each kernel's registers, shared memory and co-resident blocks on an H200
// (cuda_occupancy.h, the driver's occupancy calculator as a header, with the H200's limits) are
// pinned in h200_kernel_figures.txt, and the persistent kernel's grid fits the co-resident blocks.
// Every persistent kernel also compiles for sm_75 (Turing, the oldest CUDA 13 targets), and to PTX for
// compute_75. Skipped, saying why, where NVRTC cannot be loaded.
//
// To regenerate the figures after a deliberate change: GROVE_UPDATE_GOLDEN=1 test_cuda_nvrtc.

#include <cuda_occupancy.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "backends/cuda/Nvrtc.h"
#include "support/Error.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

#define SKIP_WITHOUT_NVRTC()                                                             \
  do {                                                                                   \
    std::string why;                                                                     \
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why; \
  } while (0)

constexpr int kH200Multiprocessors = 132;
constexpr int64_t kH200SharedOptin = 232448;  // 227 KB per block with the opt-in

struct Case {
  ModelKind model;
  std::string schedule;
  cuda::CudaOptions options;
};

int64_t hidden_size(ModelKind m) { return m == ModelKind::MVRNN ? 64 : 256; }

cuda::CudaSource source_of(const Case &c) {
  const int64_t H = hidden_size(c.model);
  plan::LevelPlan plan =
      cuda::plan_for_cuda(cuda_test_program(c.model), cuda_test_sizes(c.model, H, H), c.schedule);
  return cuda::emit_cuda(plan, c.options);
}

std::string case_name(const Case &c) {
  return fmt::format("{}_{}_{}", reference::model_name(c.model),
                     c.schedule.empty() ? "default" : sweep_case_name(0, c.schedule).substr(3),
                     cuda_options_name(c.options));
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const cuda::CudaOptions per_level{
      .form = cuda::Form::PerLevel, .blocks = kH200Multiprocessors, .threads = 256};
  cuda::CudaOptions counter = per_level, grid_sync = per_level;
  counter.form = grid_sync.form = cuda::Form::Persistent;
  counter.shared_limit = grid_sync.shared_limit = kH200SharedOptin;
  grid_sync.barrier = cuda::GridBarrier::CooperativeGroups;
  for (ModelKind m : {ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
                      ModelKind::MVRNN, ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU})
    for (const cuda::CudaOptions &o : {per_level, counter, grid_sync}) out.push_back({m, "", o});
  out.push_back({ModelKind::TreeLSTM, "specialize=off", counter});
  out.push_back({ModelKind::TreeLSTM, "epilogue=on", counter});
  out.push_back({ModelKind::LSTM, "epilogue=on", grid_sync});
  return out;
}

class NvrtcCompiles : public ::testing::TestWithParam<Case> {};

TEST_P(NvrtcCompiles, ForSm90WithoutSpills) {
  SKIP_WITHOUT_NVRTC();
  const Case &c = GetParam();
  const cuda::CudaSource src = source_of(c);
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

INSTANTIATE_TEST_SUITE_P(EveryModel, NvrtcCompiles, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); });

// Blocks of `k` (launched with `threads` threads and `dynamic_shared` bytes) that fit on one H200
// multiprocessor: 64K registers, 2048 threads, 228 KB of shared memory per SM, 1 KB reserved per block.
int h200_blocks_per_sm(const cuda::KernelResources &k, int threads, int64_t dynamic_shared) {
  cudaOccDeviceProp props;
  props.computeMajor = 9;
  props.computeMinor = 0;
  props.maxThreadsPerBlock = 1024;
  props.maxThreadsPerMultiprocessor = 2048;
  props.regsPerBlock = 65536;
  props.regsPerMultiprocessor = 65536;
  props.warpSize = 32;
  props.sharedMemPerBlock = 49152;
  props.sharedMemPerMultiprocessor = 233472;
  props.numSms = kH200Multiprocessors;
  props.sharedMemPerBlockOptin = size_t(kH200SharedOptin);
  props.reservedSharedMemPerBlock = 1024;
  cudaOccFuncAttributes attributes;
  attributes.maxThreadsPerBlock = threads;
  attributes.numRegs = k.registers;
  attributes.sharedSizeBytes = size_t(k.static_shared_bytes);
  attributes.shmemLimitConfig = dynamic_shared > 49152 ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
  attributes.maxDynamicSharedSizeBytes = size_t(dynamic_shared);
  cudaOccDeviceState state;
  cudaOccResult result;
  EXPECT_EQ(cudaOccMaxActiveBlocksPerMultiprocessor(&result, &props, &attributes, &state, threads,
                                                    size_t(dynamic_shared)),
            CUDA_OCC_SUCCESS);
  return result.activeBlocksPerMultiprocessor;
}

TEST(KernelFigures, OnAnH200MatchTheGolden) {
  SKIP_WITHOUT_NVRTC();
  std::ostringstream table;
  table << "# The kernels' figures at the sizes and grid of test_cuda_nvrtc.cpp, NVRTC "
        << cuda::nvrtc_version()
        << " for sm_90: registers, spilled bytes, shared memory (static + dynamic),\n"
        << "# blocks per multiprocessor and co-resident blocks on an H200 (132 SMs). Regenerate with\n"
        << "# GROVE_UPDATE_GOLDEN=1 test_cuda_nvrtc --gtest_filter=KernelFigures.*\n";
  for (const Case &c : cases()) {
    const cuda::CudaSource src = source_of(c);
    const cuda::NvrtcOutput &out = cuda::compile_with_nvrtc(src, "sm_90", reference::model_name(c.model));
    for (const cuda::KernelResources &k : out.kernels) {
      const bool persistent = k.kernel == "grove_persistent";
      const int64_t dynamic = persistent ? src.shared_bytes : 0;
      const int per_sm = h200_blocks_per_sm(k, c.options.threads, dynamic);
      const int resident = per_sm * kH200Multiprocessors;
      table << fmt::format(
          "{} {}: {} registers, {} spilled, {} + {} B shared, {} blocks/SM, {} co-resident\n", case_name(c),
          k.kernel, k.registers, k.spill_stores + k.spill_loads, k.static_shared_bytes, dynamic, per_sm,
          resident);
      if (persistent)
        EXPECT_GE(resident, c.options.blocks)
            << case_name(c) << ": a cooperative launch of " << c.options.blocks << " blocks would fail";
    }
  }
  const std::string golden = std::string(GROVE_SOURCE_DIR) + "/tests/backends/cuda/h200_kernel_figures.txt";
  const char *update = std::getenv("GROVE_UPDATE_GOLDEN");
  if (update && *update) {
    std::ofstream(golden) << table.str();
    GTEST_SKIP() << "wrote " << golden;
  }
  std::ifstream in(golden);
  std::stringstream want;
  want << in.rdbuf();
  // Registers are NVRTC's choice: a newer NVRTC may differ without anything being wrong.
  const std::string version_line = table.str().substr(0, table.str().find('\n'));
  if (want.str().rfind(version_line, 0) != 0)
    GTEST_SKIP() << "the figures were pinned with another NVRTC; this one is " << cuda::nvrtc_version()
                 << ":\n"
                 << table.str();
  EXPECT_EQ(table.str(), want.str()) << "regenerate with GROVE_UPDATE_GOLDEN=1 if the change is deliberate";
}

// The oldest architecture CUDA 13 compiles for (Turing, sm_75): every model's persistent kernel with
// the cooperative-groups barrier, as a cubin, without spills.
class NvrtcCompilesForSm75 : public ::testing::TestWithParam<ModelKind> {};

TEST_P(NvrtcCompilesForSm75, WithoutSpills) {
  SKIP_WITHOUT_NVRTC();
  const Case c{
      GetParam(), "", {.form = cuda::Form::Persistent, .barrier = cuda::GridBarrier::CooperativeGroups}};
  const cuda::NvrtcOutput &out =
      cuda::compile_with_nvrtc(source_of(c), "sm_75", reference::model_name(c.model));
  ASSERT_EQ(out.kernels.size(), 1u) << out.log;
  EXPECT_EQ(out.kernels[0].spill_stores + out.kernels[0].spill_loads, 0) << out.log;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, NvrtcCompilesForSm75,
                         ::testing::Values(ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM,
                                           ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN, ModelKind::DAGRNN,
                                           ModelKind::LSTM, ModelKind::GRU),
                         [](const ::testing::TestParamInfo<ModelKind> &info) {
                           return reference::model_name(info.param);
                         });

TEST(Nvrtc, PtxForAnOlderArchitecture) {
  SKIP_WITHOUT_NVRTC();
  const cuda::CudaSource src = source_of({ModelKind::TreeLSTM, "", {.form = cuda::Form::Persistent}});
  const cuda::NvrtcOutput &out = cuda::compile_with_nvrtc(src, "compute_75", "TreeLSTM");
  EXPECT_FALSE(out.is_cubin);
  EXPECT_NE(out.image.find(".entry grove_persistent"), std::string::npos);
  // The counter barrier's release add and acquire load, as cooperative groups' grid.sync() uses.
  EXPECT_NE(out.image.find("atom.add.release.gpu"), std::string::npos);
  EXPECT_NE(out.image.find("ld.acquire.gpu"), std::string::npos);
}

TEST(Nvrtc, RejectsAnUnknownArchitecture) {
  const cuda::CudaSource src = source_of({ModelKind::TreeFC, "", {}});
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
