// The GPU check kit (experiments/gpu) on the CPU: grove_gpu_prepare --quick writes a kit (TreeLSTM,
// the DAG-RNN and LSTM, each per level and persistent with both barriers), and every case runs here
// as run_kit would run it on a GPU — the same kit.txt, files, argument order and launches — with
// the kernels built against Simt.h instead of NVRTC and the driver, and its output compared with
// the reference rows the kit carries.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "backends/cuda/HostEmulation.h"
#include "experiments/gpu/Kit.h"

namespace grove {
namespace {

TEST(GpuKit, EveryCheckedCaseMatchesOnTheCpu) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("grove-gpu-kit-" + std::to_string(::getpid()));
  ASSERT_EQ(std::system((std::string(GROVE_GPU_PREPARE) + " " + dir.string() + " --quick").c_str()), 0);
  const std::vector<grove_kit::Case> cases = grove_kit::read_kit(dir.string());
  ASSERT_EQ(cases.size(), 9u);
  for (const grove_kit::Case &c : cases) {
    SCOPED_TRACE(c.name);
    cuda::CudaSource src;
    std::ifstream in(dir / c.source);
    std::stringstream text;
    text << in.rdbuf();
    src.text = text.str();
    std::set<std::string> seen;
    for (const grove_kit::Launch &l : c.launches)
      if (seen.insert(l.kernel).second) src.kernels.push_back(l.kernel);
    auto kernels = cuda::HostKernels::build(src);

    std::vector<std::vector<uint32_t>> memory(c.args.size());
    std::vector<void *> pointers(c.args.size());
    std::vector<int> ints(c.args.size(), 0);
    std::vector<void *> argv(c.args.size());
    int level_arg = -1;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const grove_kit::Arg &a = c.args[i];
      if (a.kind == "int" || a.kind == "level") {
        ints[i] = a.value;
        argv[i] = &ints[i];
        if (a.kind == "level") level_arg = int(i);
      } else {
        memory[i] = grove_kit::initial_words(dir.string(), a);
        pointers[i] = memory[i].data();
        argv[i] = &pointers[i];
      }
    }
    for (const grove_kit::Launch &l : c.launches) {
      if (level_arg >= 0) ints[level_arg] = l.level;
      kernels->launch(l.kernel, argv.data(), unsigned(c.blocks), unsigned(c.threads), size_t(c.shared_bytes));
    }
    ASSERT_FALSE(c.expected.empty());
    std::vector<float> state(memory[c.output_arg].size());
    std::memcpy(state.data(), memory[c.output_arg].data(), state.size() * 4);
    EXPECT_EQ(grove_kit::compare_output(dir.string(), c, state), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace grove
