// The command line's CUDA side as a user runs it: `grove dump --stage cuda|ptx` and its options, and
// `run`, `bench`, `tune` and `compile` with `--target cuda` — each error's message and exit status,
// and no output written.

#include <gtest/gtest.h>

#include <filesystem>

#include "backends/cuda/Driver.h"
#include "backends/cuda/Nvrtc.h"
#include "tests/tools/CliRunner.h"

namespace grove {
namespace {

using testing::model_path;
using testing::run_grove;

const std::string kSizes = " --sizes H=64,D=32,V=100";

std::string dump(const std::string &model, const std::string &args) {
  return "dump " + model_path(model) + " " + args;
}

TEST(DumpCuda, PrintsThePersistentKernelByDefault) {
  testing::CliResult r = run_grove(dump("treelstm", "--stage cuda" + kSizes));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind(
                "// grove: CUDA kernels of TreeLSTM (binary_tree), persistent form, counter grid barrier", 0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("grove_persistent("), std::string::npos);
}

TEST(DumpCuda, PrintsThePerLevelKernelsWithGridSync) {
  testing::CliResult r =
      run_grove(dump("gru", "--stage cuda" + kSizes + " --cuda form=per_level,blocks=8,threads=64"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("grove_internal_p1("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("__launch_bounds__(64)"), std::string::npos);
  EXPECT_EQ(r.output.find("grove_persistent("), std::string::npos);
}

TEST(DumpCuda, PtxThroughNvrtc) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;
  testing::CliResult r = run_grove(dump("treefc", "--stage ptx --sizes H=32,V=20 --cuda barrier=grid_sync"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(".target sm_90"), std::string::npos) << r.output.substr(0, 400);
  EXPECT_NE(r.output.find(".entry grove_persistent"), std::string::npos);
}

TEST(DumpCuda, PtxWithoutNvrtcSaysSo) {
  testing::CliResult r =
      testing::run_shell("GROVE_NVRTC=/nonexistent/libnvrtc.so " + std::string(GROVE_BINARY) + " " +
                         dump("treefc", "--stage ptx --sizes H=32,V=20"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.output,
      "grove: error: NVRTC could not be loaded (/nonexistent/libnvrtc.so: cannot open shared object file: No "
      "such file or directory): install the CUDA toolkit (libnvrtc.so.13), put its lib64 folder in "
      "LD_LIBRARY_PATH, or name the library in $GROVE_NVRTC\n");
}

struct ErrorCase {
  const char *name, *args, *message;
};

void PrintTo(const ErrorCase &c, std::ostream *os) { *os << "grove dump treelstm " << c.args; }

class CudaCliErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(CudaCliErrors, SayWhatIsWrong) {
  const ErrorCase &c = GetParam();
  testing::CliResult r = run_grove(dump("treelstm", c.args));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output, std::string("grove: error: ") + c.message + "\n");
}

INSTANTIATE_TEST_SUITE_P(
    Dump, CudaCliErrors,
    ::testing::Values(ErrorCase{"UnboundSize", "--stage cuda --sizes H=64,D=32",
                                "--sizes: model TreeLSTM needs a value for size variable 'V'"},
                      ErrorCase{"UnknownOption", "--stage cuda --sizes H=64,D=32,V=9 --cuda grid=4",
                                "--cuda: 'grid=4' is not a CUDA option: use form=per_level|persistent, "
                                "barrier=counter|grid_sync, "
                                "blocks=N, threads=N, shared_limit=BYTES, graph=on|off"},
                      ErrorCase{"BadGraph",
                                "--stage cuda --sizes H=64,D=32,V=9 --cuda form=per_level,graph=yes",
                                "--cuda: graph=yes is not on or off"},
                      ErrorCase{"BadNumber", "--stage cuda --sizes H=64,D=32,V=9 --cuda threads=2048",
                                "--cuda: threads=2048 is not a number in [1, 1024]"},
                      ErrorCase{"BadForm", "--stage cuda --sizes H=64,D=32,V=9 --cuda form=fused",
                                "unknown CUDA kernel form 'fused': use per_level or persistent"},
                      ErrorCase{"BadBarrier", "--stage cuda --sizes H=64,D=32,V=9 --cuda barrier=spin",
                                "unknown grid barrier 'spin': use counter or grid_sync"},
                      ErrorCase{"BadArch", "--stage ptx --sizes H=64,D=32,V=9 --arch volta",
                                "unknown GPU architecture 'volta'"
                                ": use sm_XX (a cubin) or compute_XX (PTX), e.g. sm_90"}),
    [](const ::testing::TestParamInfo<ErrorCase> &info) { return std::string(info.param.name); });

class TargetCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::driver_available())
      GTEST_SKIP() << "a CUDA driver is installed: these check the refusal without one";
    dir_ = std::filesystem::temp_directory_path() / ("grove-cuda-cli-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    write_safetensors((dir_ / "w.safetensors").string(), testing::treefc_weights(4, 3));
    std::ofstream((dir_ / "t.txt").string()) << "(1 (0 1) (0 2))\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

constexpr char kNoDriver[] =
    "grove: error: --target cuda: no CUDA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot "
    "open "
    "shared object file: No such file or directory); `grove dump --stage cuda` writes the kernels without a "
    "GPU\n";

TEST_F(TargetCuda, RunSaysThereIsNoDriverAndWritesNothing) {
  const std::string out = (dir_ / "out.npy").string();
  testing::CliResult r = run_grove("run " + model_path("treefc") + " --target cuda --weights " +
                                   (dir_ / "w.safetensors").string() + " --trees " +
                                   (dir_ / "t.txt").string() + " --out " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, kNoDriver);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(TargetCuda, BenchSaysThereIsNoDriver) {
  testing::CliResult r = run_grove("bench " + model_path("treefc") + " --target cuda --weights " +
                                   (dir_ / "w.safetensors").string() + " --trees " +
                                   (dir_ / "t.txt").string() + " --batch 1 --quiet");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, kNoDriver);
}

TEST_F(TargetCuda, TuneSaysThereIsNoDriver) {
  testing::CliResult r =
      run_grove("tune " + model_path("treefc") + " --target cuda --weights " +
                (dir_ / "w.safetensors").string() + " --trees " + (dir_ / "t.txt").string() +
                " --batch 1 --quiet --cache " + (dir_ / "cache.json").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, kNoDriver);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cache.json"));
}

// `grove compile --target cuda` writes libraries (test_cuda_library); a bad --arch is refused before
// anything is read or written, toolkit or not.
TEST_F(TargetCuda, CompileRefusesABadArchBeforeWritingAnything) {
  const std::string out = (dir_ / "lib").string();
  testing::CliResult r =
      run_grove("compile " + model_path("treefc") + " --target cuda --sizes H=4,V=3 --arch sm90 -o " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.output,
      "grove: error: --arch: 'sm90' is not a GPU architecture: use sm_XX (a cubin) or compute_XX (PTX), "
      "e.g. sm_90,sm_80\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace grove
