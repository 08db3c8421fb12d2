// The CUDA back end's user errors that need no GPU, each with its message: a host build that fails
// (with the compiler's output) or has no compiler, an NVRTC compile that fails (with its log), and
// an emulated model run without weights, with a missing weight, or on the wrong kind of input.

#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cuda/Nvrtc.h"
#include "support/Error.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "no error";
}

bool starts_with(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }

cuda::CudaSource broken_source() {
  cuda::CudaSource src;
  src.text = "extern \"C\" __global__ void grove_persistent() { this is not C++; }\n";
  src.kernels = {"grove_persistent"};
  return src;
}

TEST(CudaErrors, HostBuildFailureShowsTheCompilerOutput) {
  const std::string e = error_of([] { cuda::HostKernels::build(broken_source()); });
  EXPECT_TRUE(starts_with(e, "the CUDA emulation could not build the kernels: `")) << e;
  EXPECT_NE(e.find("failed (exit status 1):\n"), std::string::npos) << e;
  EXPECT_NE(e.find("error"), std::string::npos) << e;  // the compiler's own message follows
}

TEST(CudaErrors, NoHostCompiler) {
  const char *old = std::getenv("CXX");
  const std::string saved = old ? old : "";
  ::setenv("CXX", "/nonexistent/grove-no-compiler", 1);
  cuda::CudaSource src = broken_source();
  src.text += "// another source, not cached\n";
  const std::string e = error_of([&] { cuda::HostKernels::build(src); });
  if (old)
    ::setenv("CXX", saved.c_str(), 1);
  else
    ::unsetenv("CXX");
  EXPECT_NE(e.find("failed (no such C++ compiler: install one, or name it in $CXX)"), std::string::npos) << e;
}

TEST(CudaErrors, NvrtcFailureShowsTheLog) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;
  const std::string e = error_of([] { cuda::compile_with_nvrtc(broken_source(), "sm_90", "Broken"); });
  EXPECT_TRUE(
      starts_with(e, "NVRTC could not compile the kernels of Broken for sm_90: NVRTC_ERROR_COMPILATION\n"))
      << e;
  EXPECT_NE(e.find("grove_kernels.cu"), std::string::npos) << e;  // the log names the source
}

class EmulatedModelErrors : public ::testing::Test {
 protected:
  static cuda::EmulatedModel &treefc() {
    static cuda::EmulatedModel model(cuda::plan_for_cuda(cuda_test_program(ModelKind::TreeFC),
                                                         cuda_test_sizes(ModelKind::TreeFC, 8, 8), ""),
                                     {});
    return model;
  }
};

TEST_F(EmulatedModelErrors, RunWithoutWeights) {
  EXPECT_EQ(error_of([] { treefc().run(cuda_test_trees(ModelKind::TreeFC)); }),
            "the CUDA kernels of TreeFC have no weights bound");
}

TEST_F(EmulatedModelErrors, MissingWeight) {
  Weights w = cuda_test_weights(ModelKind::TreeFC, 8, 8);
  w.erase("b");
  EXPECT_EQ(error_of([&] { treefc().bind(w); }), "the CUDA kernels of TreeFC need the weight b [8]");
}

TEST_F(EmulatedModelErrors, WrongInputs) {
  EXPECT_EQ(error_of([] { treefc().run_dags(cuda_test_dags()); }),
            "the CUDA kernels of TreeFC (binary_tree) take trees, not DAGs");
  cuda::EmulatedModel lstm(
      cuda::plan_for_cuda(cuda_test_program(ModelKind::LSTM), cuda_test_sizes(ModelKind::LSTM, 8, 8), ""),
      {});
  EXPECT_EQ(error_of([&] { lstm.run(cuda_test_trees(ModelKind::TreeFC)); }),
            "the CUDA kernels of LSTM (sequence) take DAGs or sequences, not trees");
}

}  // namespace
}  // namespace grove
