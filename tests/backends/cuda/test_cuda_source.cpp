// The CUDA emitter's decisions, read from its output without compiling it: where the grid barriers
// go (one per level where every read of the level's own rows stays in the reader's hidden slice),
// which kernels each form has and in what launch order, shared memory for the weights, the notes
// for schedule options the GPU mapping does not follow, and that the source is deterministic.

#include <gtest/gtest.h>

#include "support/Error.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

cuda::CudaSource emit(ModelKind m, const cuda::CudaOptions &o, const std::string &schedule = "",
                      int64_t H = 64) {
  return cuda::emit_cuda(cuda::plan_for_cuda(cuda_test_program(m), cuda_test_sizes(m, H, 32), schedule), o);
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CudaSource, GridBarriersPerLevel) {
  const std::map<ModelKind, int> expected = {{ModelKind::TreeFC, 1}, {ModelKind::TreeLSTM, 1},
                                             {ModelKind::DAGRNN, 1}, {ModelKind::LSTM, 1},
                                             {ModelKind::GRU, 1},    {ModelKind::TreeGRU, 2},
                                             {ModelKind::MVRNN, 2},  {ModelKind::ChildSumTreeLSTM, 3}};
  for (const auto &[m, barriers] : expected) {
    SCOPED_TRACE(reference::model_name(m));
    const cuda::CudaSource persistent = emit(m, {.form = cuda::Form::Persistent});
    EXPECT_EQ(persistent.grid_barriers_per_level, barriers);
    // In the level loop: the level's own barrier, then one per further phase.
    const std::string loop = persistent.text.substr(persistent.text.find("for (int level = 1;"));
    EXPECT_EQ(count(loop, "grid.sync();"), barriers);
    // Per level, one kernel per phase of the internal case.
    EXPECT_EQ(int(emit(m, {.form = cuda::Form::PerLevel}).internal.size()), barriers);
  }
}

TEST(CudaSource, PerLevelKernelsAndLaunchOrder) {
  const cuda::CudaSource src = emit(ModelKind::LSTM, {.form = cuda::Form::PerLevel});
  EXPECT_EQ(src.kernels,
            (std::vector<std::string>{"grove_hoisted_p1", "grove_leaf_p1", "grove_internal_p1"}));
  ASSERT_EQ(src.hoisted.size(), 1u);
  EXPECT_EQ(src.hoisted[0].kernel, "grove_hoisted_p1");
  EXPECT_TRUE(src.specialized);
  EXPECT_EQ(src.shared_bytes, 0);
  EXPECT_EQ(src.text.find("grid.sync()"), std::string::npos) << "a per-level kernel waits on the grid";
  EXPECT_FALSE(emit(ModelKind::TreeLSTM, {.form = cuda::Form::PerLevel}, "specialize=off").specialized);
}

TEST(CudaSource, WeightsInSharedMemoryWhenTheyFit) {
  // TreeLSTM at H = 64 over 4 blocks: each block's slice of U_iou [192, 128] and U_f [128, 128].
  const cuda::CudaSource fits = emit(ModelKind::TreeLSTM, {.form = cuda::Form::Persistent});
  EXPECT_EQ(fits.shared_bytes, (192 + 128) / 4 * 128 * 4);
  EXPECT_NE(fits.text.find("grove_smem[0 + e] = pk1["), std::string::npos);
  cuda::CudaOptions small{.form = cuda::Form::Persistent};
  small.shared_limit = fits.shared_bytes - 4;
  EXPECT_EQ(emit(ModelKind::TreeLSTM, small).shared_bytes, 0);
  EXPECT_EQ(emit(ModelKind::TreeLSTM, {.form = cuda::Form::Persistent}, "persist=off").shared_bytes, 0);
}

TEST(CudaSource, BarrierChoice) {
  const cuda::CudaSource counter = emit(ModelKind::TreeFC, {.barrier = cuda::GridBarrier::Counter});
  EXPECT_NE(counter.text.find("c.fetch_add(1u, cuda::memory_order_release);"), std::string::npos);
  EXPECT_EQ(counter.text.find("cooperative_groups"), std::string::npos);
  const cuda::CudaSource cg = emit(ModelKind::TreeFC, {.barrier = cuda::GridBarrier::CooperativeGroups});
  EXPECT_NE(cg.text.find("cooperative_groups::this_grid().sync();"), std::string::npos);
  EXPECT_EQ(cg.text.find("fetch_add"), std::string::npos);
}

TEST(CudaSource, ArgumentsFollowTheAbi) {
  const plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(ModelKind::TreeLSTM),
                                                   cuda_test_sizes(ModelKind::TreeLSTM, 64, 32), "");
  const cuda::CudaSource src = cuda::emit_cuda(plan, {});
  const size_t open = src.text.find("grove_persistent(") + 17, close = src.text.find(")", open);
  const std::string params = src.text.substr(open, close - open);
  // Each parameter's name: the text after its last space or '*'.
  std::vector<std::string> names;
  for (size_t begin = 0; begin < params.size();) {
    size_t end = params.find(", ", begin);
    if (end == std::string::npos) end = params.size();
    const std::string p = params.substr(begin, end - begin);
    names.push_back(p.substr(p.find_last_of(" *") + 1));
    begin = end + 2;
  }
  std::vector<std::string> want;
  for (const ModelAbi::Arg &a : plan.abi.args) want.push_back(a.name);
  want.push_back("grove_scratch");
  want.push_back("grove_barrier");
  EXPECT_EQ(names, want) << params;
}

TEST(CudaSource, IsDeterministic) {
  for (ModelKind m : {ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN}) {
    EXPECT_EQ(emit(m, {}).text, emit(m, {}).text);
    EXPECT_EQ(emit(m, {.form = cuda::Form::PerLevel}).text, emit(m, {.form = cuda::Form::PerLevel}).text);
  }
}

TEST(CudaSource, NotesForCpuOnlyOptions) {
  const cuda::CudaSource src = emit(ModelKind::TreeLSTM, {}, "batch=off,node_block=4,threads=2");
  EXPECT_EQ(src.notes,
            (std::vector<std::string>{
                "batch=off does not apply to the CUDA kernels: they run the nodes of one height level "
                "together",
                "threads does not apply to the CUDA kernels (a CPU loop shape; the grid is set by the "
                "CUDA options)",
                "node_block does not apply to the CUDA kernels (a CPU loop shape; the grid is set by "
                "the CUDA options)"}));
  EXPECT_TRUE(emit(ModelKind::TreeLSTM, {}, "epilogue=on").notes.empty());
}

TEST(CudaSource, Errors) {
  const plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(ModelKind::TreeFC),
                                                   cuda_test_sizes(ModelKind::TreeFC, 16, 16), "");
  try {
    cuda::emit_cuda(plan, {.blocks = 0});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_STREQ(e.what(), "the CUDA kernels need at least one block of at least one thread, got 0 x 32");
  }
  try {
    cuda::plan_for_cuda(cuda_test_program(ModelKind::TreeFC), {{"H", 16}}, "");
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_STREQ(
        e.what(),
        "the CUDA back end needs every size bound: V is not (give it with --sizes or a weights file)");
  }
  try {
    cuda::parse_cuda_options("blocks=4,threads", "--cuda");
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_STREQ(
        e.what(),
        "--cuda: 'threads' is not a CUDA option: use form=per_level|persistent, barrier=counter|grid_sync, "
        "blocks=N, threads=N, shared_limit=BYTES, graph=on|off");
  }
  EXPECT_EQ(cuda::to_string(cuda::parse_cuda_options("form=per_level,threads=64", "--cuda")),
            "form=per_level,barrier=counter,blocks=4,threads=64,shared_limit=49152,graph=on");
  EXPECT_EQ(cuda::to_string(cuda::parse_cuda_options("form=per_level,graph=off", "--cuda")),
            "form=per_level,barrier=counter,blocks=4,threads=32,shared_limit=49152,graph=off");
  // The persistent form takes no graph: none is written, and one given is noted by the emitter.
  EXPECT_EQ(cuda::to_string(cuda::parse_cuda_options("graph=off", "--cuda")),
            "form=persistent,barrier=counter,blocks=4,threads=32,shared_limit=49152");
}

}  // namespace
}  // namespace grove
