// `grove run|bench --target cuda` and DeviceModel through the fake CUDA driver (FakeDriver.cpp):
// the device path end to end without a GPU — NVRTC's cubin loaded, the weights and inspector arrays
// copied to "device" memory, the launches (cooperative, plain, or captured into a CUDA graph and
// replayed) run by the kernels' host build. Outputs equal the CPU run's to float rounding
// (|cuda - cpu| <= 1e-5 * |cpu| + 1e-6 per element); each failure of the device (no driver, no
// device, a grid too large to be co-resident, out of memory, no cooperative launch) exits 1 with
// its message, writes no output and leaves an existing output file as it was.
//
// Cost: one host build per kernel source (HostEmulation's cache, kept for the process) and one
// NVRTC compile per `grove` run.

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "backends/cuda/Driver.h"
#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/BindWeights.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/backends/cuda/CudaTestUtil.h"
#include "tests/tools/CliRunner.h"

namespace grove {
namespace {

using namespace testing;

const std::string kGrove = GROVE_BINARY;
const std::string kSst = std::string(GROVE_SOURCE_DIR) + "/datasets/sst";
constexpr int64_t kH = 16, kD = 8, kSstVocab = 21702;

// The kernels `grove run --cuda OPTIONS` emits for `model` with `weights` (the same plan and
// options, so the same source text).
cuda::CudaSource cuda_source(ModelKind model, const Weights &weights, const std::string &options) {
  ilir::Program program = cuda_test_program(model);
  std::map<std::string, int64_t> sizes = bind_weights(program, weights, "the test's weights");
  return cuda::emit_cuda(cuda::plan_for_cuda(program, sizes, ""),
                         cuda::parse_cuda_options(options, "--cuda"));
}

// Their host build, once per process.
std::string host_kernels(ModelKind model, const Weights &weights, const std::string &options) {
  static std::map<std::string, std::shared_ptr<const cuda::HostKernels>> built;
  const cuda::CudaSource source = cuda_source(model, weights, options);
  std::shared_ptr<const cuda::HostKernels> &k = built[source.text];
  if (!k) k = cuda::HostKernels::build(source);
  return k->library_path();
}

// The fake driver's environment for a command line: the driver, the kernels' host build, `extra`.
std::string fake_env(const std::string &kernels, const std::string &extra = "") {
  return "GROVE_CUDA_DRIVER=" + std::string(GROVE_FAKE_CUDA) + " GROVE_FAKE_CUDA_KERNELS=" + kernels + " " +
         extra + " ";
}

void expect_close(const Tensor &gpu, const Tensor &cpu) {
  ASSERT_EQ(gpu.shape, cpu.shape);
  for (size_t k = 0; k < cpu.data.size(); ++k)
    ASSERT_LE(std::abs(gpu.data[k] - cpu.data[k]), 1e-5 * std::abs(cpu.data[k]) + 1e-6) << "element " << k;
}

class CudaRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!cuda::nvrtc_available(&why)) return;
    dir_ = new TempDir;
    // This process's driver (DeviceModelReplaysTheGraphOfARepeatedShape), before any use of it.
    setenv("GROVE_CUDA_DRIVER", GROVE_FAKE_CUDA, 1);
    // A few SST test trees (the words through SST's vocabulary) and TreeLSTM at small sizes.
    std::ifstream sst(kSst + "/test.txt");
    std::ofstream trees(dir_->file("trees.txt"));
    std::string line;
    for (int i = 0; i < 6 && std::getline(sst, line); ++i) trees << line << "\n";
    trees.close();
    treelstm_ = new Weights(reference::random_model_weights(ModelKind::TreeLSTM, kH, kD, kSstVocab, 5));
    write_safetensors(dir_->file("treelstm.safetensors"), *treelstm_);
    gru_ = new Weights(cuda_test_weights(ModelKind::GRU, kH, kD));
    write_safetensors(dir_->file("gru.safetensors"), *gru_);
    std::ofstream sequences(dir_->file("sequences.txt"));
    for (const std::vector<int32_t> &s : cuda_test_sequences()) {
      for (size_t i = 0; i < s.size(); ++i) sequences << (i ? " " : "") << s[i];
      sequences << "\n";
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete treelstm_;
    delete gru_;
    dir_ = nullptr;
  }
  void SetUp() override {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;
  }

  static std::string treelstm_run(const std::string &out) {
    return kGrove + " run " + model_path("treelstm") + " --weights " + dir_->file("treelstm.safetensors") +
           " --trees " + dir_->file("trees.txt") + " --vocab " + kSst + "/vocab.txt --out " + out;
  }
  static std::string gru_run(const std::string &out) {
    return kGrove + " run " + model_path("gru") + " --weights " + dir_->file("gru.safetensors") +
           " --sequences " + dir_->file("sequences.txt") + " --out " + out;
  }
  // The CPU run's output, once per command.
  static const Tensor &cpu_output(const std::string &name, const std::string &command) {
    static std::map<std::string, Tensor> outputs;
    auto it = outputs.find(name);
    if (it != outputs.end()) return it->second;
    const std::string out = dir_->file(name + ".cpu.npy");
    CliResult r = run_shell(command + " " + out);
    EXPECT_EQ(r.status, 0) << r.output;
    return outputs[name] = read_npy(out);
  }

  static TempDir *dir_;
  static Weights *treelstm_, *gru_;
};

TempDir *CudaRun::dir_ = nullptr;
Weights *CudaRun::treelstm_ = nullptr;
Weights *CudaRun::gru_ = nullptr;

struct Form {
  const char *name, *options;
};
constexpr Form kForms[] = {{"persistent", ""},
                           {"per_level_graph", "form=per_level"},
                           {"per_level_no_graph", "form=per_level,graph=off"}};

TEST_F(CudaRun, TreeLstmOnSstTreesEqualsTheCpuRunInEveryForm) {
  const Tensor &cpu = cpu_output("treelstm", treelstm_run(""));
  ASSERT_EQ(cpu.shape, (std::vector<int64_t>{6, kH}));
  for (const Form &f : kForms) {
    SCOPED_TRACE(f.name);
    const std::string out = dir_->file(std::string("treelstm.") + f.name + ".npy");
    const std::string kernels = host_kernels(ModelKind::TreeLSTM, *treelstm_, f.options);
    // --batch 4: two calls of different shapes, so per level two graphs.
    CliResult r = run_shell(fake_env(kernels) + treelstm_run(out) + " --target cuda --batch 4 --cuda '" +
                            f.options + "'");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "");
    expect_close(read_npy(out), cpu);
  }
}

TEST_F(CudaRun, GruOnSequencesEqualsTheCpuRunInBothForms) {
  const Tensor &cpu = cpu_output("gru", gru_run(""));
  for (const Form &f : {kForms[0], kForms[1]}) {
    SCOPED_TRACE(f.name);
    const std::string out = dir_->file(std::string("gru.") + f.name + ".npy");
    const std::string kernels = host_kernels(ModelKind::GRU, *gru_, f.options);
    CliResult r =
        run_shell(fake_env(kernels) + gru_run(out) + " --target cuda --stats --cuda '" + f.options + "'");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("target    cuda (form="), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("on NVIDIA H200 (grove fake driver) (sm_90, 132 multiprocessors)"),
              std::string::npos)
        << r.output;
    expect_close(read_npy(out), cpu);
  }
}

TEST_F(CudaRun, OptionsThatDoNotApplyGetANote) {
  const std::string out = dir_->file("notes.npy");
  const std::string kernels = host_kernels(ModelKind::GRU, *gru_, "");
  CliResult r = run_shell(fake_env(kernels) + gru_run(out) + " --target cuda --threads 3 --cuda graph=off");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(
      r.output,
      "grove: note: --threads 3 does not apply to --target cuda: the grid is set by --cuda "
      "blocks=N,threads=N\n"
      "grove: note: graph=off does not apply to the persistent form: its call is one cooperative launch "
      "(graphs replay the per-level form's launches)\n");
  CliResult cpu = run_shell(gru_run(dir_->file("notes.cpu.npy")) + " --cuda form=per_level");
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  // A substring: under AddressSanitizer, its warning on Halide's runtime shares the stream.
  EXPECT_THAT(cpu.output,
              ::testing::HasSubstr("grove: note: --cuda form=per_level applies only with --target cuda: the "
                                   "CPU's kernels ignore it\n"));
}

TEST_F(CudaRun, BenchPrintsItsTableWithTheTargetAndTheGpu) {
  const std::string kernels = host_kernels(ModelKind::TreeLSTM, *treelstm_, "form=per_level");
  const std::string log = dir_->file("bench.log");
  CliResult r = run_shell(fake_env(kernels, "GROVE_FAKE_CUDA_LOG=" + log) + kGrove + " bench " +
                          model_path("treelstm") + " --weights " + dir_->file("treelstm.safetensors") +
                          " --trees " + dir_->file("trees.txt") + " --vocab " + kSst +
                          "/vocab.txt --batch 3 --repeat 2 --quiet --target cuda --cuda form=per_level");
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<std::string> starts = {
      "model     TreeLSTM from ",
      "trees     6 from ",
      "target    cuda (form=per_level,barrier=counter,blocks=4,threads=32,"
      "shared_limit=49152,graph=on) on NVIDIA H200 (grove fake driver) (sm_90, "
      "132 multiprocessors)\n",
      "schedule  ",
      "precision fp32\n",
      "compile   ",
      "inspector ",
      "time      ",
      "rate      "};
  size_t at = 0;
  for (const std::string &s : starts) {
    ASSERT_EQ(r.output.compare(at, s.size(), s), 0) << "expected '" << s << "' at " << at << " in\n"
                                                    << r.output;
    at = r.output.find('\n', at) + 1;
  }
  EXPECT_EQ(at, r.output.size()) << r.output;
  EXPECT_NE(r.output.find("2 call(s) of up to 3"), std::string::npos) << r.output;
  // Three passes of two calls: each call's shape captured once, then replayed.
  std::string events = read_bytes(log);
  size_t captures = 0, launches = 0;
  for (size_t p = 0; (p = events.find("cuStreamEndCapture", p)) != std::string::npos; ++p) captures++;
  for (size_t p = 0; (p = events.find("cuGraphLaunch", p)) != std::string::npos; ++p) launches++;
  EXPECT_LE(captures, 2u) << events;
  EXPECT_EQ(launches, 6u) << events;
  EXPECT_EQ(events.find("cuLaunchKernel"), std::string::npos) << events;
}

// A failing run: exit 1, `message` exactly, no output written and an existing one untouched.
void expect_refused(const std::string &command, const std::string &out, const std::string &message) {
  write_bytes(out, "an earlier output");
  CliResult r = run_shell(command);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output, "grove: error: " + message + "\n");
  EXPECT_EQ(read_bytes(out), "an earlier output");
  for (const auto &entry : std::filesystem::directory_iterator(std::filesystem::path(out).parent_path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(CudaRun, ADriverThatIsNotThereIsNamed) {
  const std::string out = dir_->file("refused.npy");
  expect_refused(
      "GROVE_CUDA_DRIVER=/nonexistent/libcuda.so " + gru_run(out) + " --target cuda", out,
      "--target cuda: no CUDA driver: /nonexistent/libcuda.so (named by $GROVE_CUDA_DRIVER) could not "
      "be loaded (/nonexistent/libcuda.so: cannot open shared object file: No such file or "
      "directory); `grove dump --stage cuda` writes the kernels without a GPU");
}

TEST_F(CudaRun, NoLibcudaIsSaidSo) {
  if (void *libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(libcuda);
    GTEST_SKIP() << "a CUDA driver is installed";
  }
  const std::string out = dir_->file("refused.npy");
  expect_refused(
      "env -u GROVE_CUDA_DRIVER " + gru_run(out) + " --target cuda", out,
      "--target cuda: no CUDA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot open "
      "shared object file: No such file or directory); `grove dump --stage cuda` writes the kernels "
      "without a GPU");
}

TEST_F(CudaRun, DeviceFailuresExitWithTheirMessage) {
  const std::string out = dir_->file("refused.npy");
  const std::string kernels = host_kernels(ModelKind::GRU, *gru_, "");
  expect_refused(fake_env(kernels, "GROVE_FAKE_CUDA_DEVICES=0") + gru_run(out) + " --target cuda", out,
                 "no CUDA device: the driver reports 0 devices");
  expect_refused(
      fake_env(kernels, "GROVE_FAKE_CUDA_BLOCKS_PER_SM=1 GROVE_FAKE_CUDA_SMS=2") + gru_run(out) +
          " --target cuda",
      out,
      fmt::format("the persistent kernel grove_persistent needs 4 co-resident blocks, but device 0 "
                  "holds only 2 (1 per multiprocessor x 2 multiprocessors at 32 threads and {} bytes "
                  "of shared memory): emit it for a smaller grid",
                  cuda_source(ModelKind::GRU, *gru_, "").shared_bytes));
  expect_refused(fake_env(kernels, "GROVE_FAKE_CUDA_MEMORY=4096") + gru_run(out) + " --target cuda", out,
                 "the CUDA driver failed in cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  expect_refused(fake_env(kernels, "GROVE_FAKE_CUDA_COOPERATIVE=0") + gru_run(out) + " --target cuda", out,
                 "CUDA device 0 cannot launch cooperative kernels, which the persistent form needs");
  // Out of memory in bench too: nothing printed but the error.
  CliResult r = run_shell(fake_env(kernels, "GROVE_FAKE_CUDA_MEMORY=4096") + kGrove + " bench " +
                          model_path("gru") + " --weights " + dir_->file("gru.safetensors") +
                          " --sequences " + dir_->file("sequences.txt") + " --batch 2 --quiet --target cuda");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "grove: error: the CUDA driver failed in cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)\n");
}

TEST_F(CudaRun, TuneStaysOnTheCpu) {
  CliResult r = run_shell(fake_env("/nonexistent") + kGrove + " tune " + model_path("gru") + " --weights " +
                          dir_->file("gru.safetensors") + " --sequences " + dir_->file("sequences.txt") +
                          " --batch 2 --quiet --target cuda --cache " + dir_->file("cache.json"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.output,
      "grove: error: --target cuda: grove tune searches CPU schedules only (the CUDA driver is present: "
      "NVIDIA H200 (grove fake driver)); time a CUDA grid with `grove bench --target cuda --cuda "
      "blocks=N,threads=N`\n");
  EXPECT_FALSE(std::filesystem::exists(dir_->file("cache.json")));
}

// DeviceModel in this process through the fake ($GROVE_CUDA_DRIVER, set for the suite): per level with
// graphs, a second call of the same shape replays the graph captured by the first; another shape captures its
// own; graph=off and the persistent form capture nothing. Every call equals the emulation's.
TEST_F(CudaRun, DeviceModelReplaysTheGraphOfARepeatedShape) {
  std::string why;
  ASSERT_TRUE(cuda::driver_available(&why)) << why;
  void *fake = dlopen(GROVE_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  auto counts = reinterpret_cast<void (*)(int *, int *, long long *)>(dlsym(fake, "grove_fake_cuda_counts"));
  ASSERT_NE(counts, nullptr);
  auto captures = [&] {
    int c = 0, g = 0;
    counts(&c, &g, nullptr);
    return std::pair{c, g};
  };

  // The SST-sized TreeLSTM of the runs above (their host builds serve here too).
  const ModelKind m = ModelKind::TreeLSTM;
  const Weights &weights = *treelstm_;
  const ilir::Program program = cuda_test_program(m);
  const plan::LevelPlan plan =
      cuda::plan_for_cuda(program, bind_weights(program, weights, "the weights"), "");
  const std::vector<Tree> trees = cuda_test_trees(m);
  // Four random trees; the perfect tree of height 3 (another level count and node count).
  const std::span<const Tree> first(trees.data(), 4), second(trees.data() + 8, 1);
  for (const char *options : {"form=per_level", "form=per_level,graph=off", ""}) {
    SCOPED_TRACE(options);
    const cuda::CudaOptions o = cuda::parse_cuda_options(options, "--cuda");
    cuda::EmulatedModel emulated(plan, o);
    emulated.bind(weights);
    setenv("GROVE_FAKE_CUDA_KERNELS", host_kernels(m, weights, options).c_str(), 1);
    cuda::DeviceModel model(plan, o);
    model.bind(weights);
    const auto before = captures();
    expect_close(model.run(first), emulated.run(first));
    expect_close(model.run(first), emulated.run(first));
    const auto repeated = captures();
    expect_close(model.run(second), emulated.run(second));
    const auto after = captures();
    if (o.form == cuda::Form::PerLevel && o.graph) {
      EXPECT_EQ(repeated.first - before.first, 1) << "the second call of a shape captured again";
      EXPECT_EQ(repeated.second - before.second, 2);
      EXPECT_EQ(after.first - repeated.first, 1) << "a new shape replayed another's graph";
    } else {
      EXPECT_EQ(after, before);
    }
    // The batched run as `grove run` calls it: calls of 3 trees, stats added.
    RunStats stats;
    expect_close(model.run(trees, {.batch = 3}, &stats), emulated.run(trees));
    EXPECT_EQ(stats.calls, int64_t((trees.size() + 2) / 3));
    EXPECT_EQ(stats.trees, int64_t(trees.size()));
  }
  long long in_use = -1;
  counts(nullptr, nullptr, &in_use);
  EXPECT_EQ(in_use, 0) << "the models freed what they allocated";
}

}  // namespace
}  // namespace grove
