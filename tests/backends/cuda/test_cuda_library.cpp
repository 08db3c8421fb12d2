// `grove compile --target cuda` and its libraries through the C API: the library embeds a cubin
// and PTX (sections .grove_cuda.sm_XX and .grove_cuda.compute_XX) and the ABI with the launch; a C
// program linked against libgrove_runtime alone (cuda_library_run.c) opens it with grove_model_open
// and runs it through the device runner over the fake CUDA driver (FakeDriver.cpp), whose roots
// equal `grove run` on the CPU (|cuda - cpu| <= 1e-5 * |cpu| + 1e-6 per element), persistent and per
// level, from the cubin or JIT-compiled PTX. Each failure (no driver, no device, a grid too large,
// out of memory, no image for the device, a corrupt image) is the C API's status and message and
// `grove run LIB`'s exit 1, with no output written; `grove compile --target cuda` with a bad --arch
// or an unwritable output writes nothing and keeps what was there.
//
// Cost: four `grove compile` runs (NVRTC), two host builds of the kernels (graph=off per level is
// the same runner's, which test_cuda_run covers through DeviceModel).

#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/CompiledLibrary.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"
#include "tests/backends/cuda/CudaTestUtil.h"
#include "tests/tools/CliRunner.h"

namespace grove {
namespace {

using namespace testing;
namespace fs = std::filesystem;

const std::string kGrove = GROVE_BINARY;
const std::string kRunner = GROVE_CUDA_LIBRARY_RUN;
constexpr int64_t kH = 16, kD = 8;

// A section of an ELF file: its offset and size in the file.
struct Section {
  size_t offset = 0, size = 0;
};
std::map<std::string, Section> sections(const std::string &bytes) {
  std::map<std::string, Section> out;
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(bytes.data());
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(bytes.data() + eh->e_shoff);
  const char *names = bytes.data() + sh[eh->e_shstrndx].sh_offset;
  for (unsigned i = 0; i < eh->e_shnum; ++i) out[names + sh[i].sh_name] = {sh[i].sh_offset, sh[i].sh_size};
  return out;
}

std::string ptb(const Tree &t, int32_t node) {
  if (t.num_children(node) == 0) return fmt::format("(0 {})", t.token[node]);
  std::string s = "(0";
  for (int32_t k = 0; k < t.num_children(node); ++k) s += " " + ptb(t, t.child(node, k));
  return s + ")";
}

class CudaLibrary : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!cuda::nvrtc_available(&why)) return;
    dir_ = new TempDir;
    weights_ = new Weights(cuda_test_weights(ModelKind::TreeLSTM, kH, kD));
    write_safetensors(dir_->file("w.safetensors"), *weights_);
    const std::vector<Tree> trees = cuda_test_trees(ModelKind::TreeLSTM);
    std::ofstream text(dir_->file("trees.txt")), csr(dir_->file("trees.csr"));
    for (const Tree &t : trees) {
      text << ptb(t, t.root) << "\n";
      csr << t.size();
      for (int32_t v : t.token) csr << " " << v;
      for (int32_t v : t.child_begin) csr << " " << v;
      for (int32_t v : t.children) csr << " " << v;
      csr << "\n";
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete weights_;
    dir_ = nullptr;
  }
  void SetUp() override {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;
  }

  // `grove compile --target cuda OPTIONS -o dir/NAME`, once per name; its shared library.
  static std::string library(const std::string &name, const std::string &options) {
    static std::map<std::string, std::string> built;
    auto it = built.find(name);
    if (it != built.end()) return it->second;
    CliResult r =
        run_shell(kGrove + " compile " + model_path("treelstm") + " --weights " +
                  dir_->file("w.safetensors") + " --target cuda " + options + " -o " + dir_->file(name));
    EXPECT_EQ(r.status, 0) << r.output;
    return built[name] = dir_->file(name + "/libtreelstm.so");
  }
  // The kernels' host build for --cuda `options`, once per process.
  static std::string kernels(const std::string &options) {
    static std::map<std::string, std::shared_ptr<const cuda::HostKernels>> built;
    ilir::Program program = cuda_test_program(ModelKind::TreeLSTM);
    const cuda::CudaSource source =
        cuda::emit_cuda(cuda::plan_for_cuda(program, bind_weights(program, *weights_, "w"), ""),
                        cuda::parse_cuda_options(options, "--cuda"));
    std::shared_ptr<const cuda::HostKernels> &k = built[source.text];
    if (!k) k = cuda::HostKernels::build(source);
    return k->library_path();
  }
  static std::string fake_env(const std::string &cuda_options, const std::string &extra = "") {
    return "GROVE_CUDA_DRIVER=" + std::string(GROVE_FAKE_CUDA) +
           " GROVE_FAKE_CUDA_KERNELS=" + kernels(cuda_options) + " " + extra + " ";
  }
  static const Tensor &cpu() {
    static Tensor out;
    if (out.shape.empty()) {
      CliResult r =
          run_shell(kGrove + " run " + model_path("treelstm") + " --weights " + dir_->file("w.safetensors") +
                    " --trees " + dir_->file("trees.txt") + " --out " + dir_->file("cpu.npy"));
      EXPECT_EQ(r.status, 0) << r.output;
      out = read_npy(dir_->file("cpu.npy"));
    }
    return out;
  }
  // The C program over `lib`: its output, and the rows it wrote (raw float32) when it succeeded.
  static CliResult run_c(const std::string &env, const std::string &lib, const std::string &out,
                         const std::string &batch = "0") {
    return run_shell(env + kRunner + " " + lib + " " + dir_->file("w.safetensors") + " " +
                     dir_->file("trees.csr") + " " + out + " " + batch);
  }
  static void expect_rows_equal_cpu(const std::string &out) {
    const Tensor &reference = cpu();
    const std::string bytes = read_bytes(out);
    ASSERT_EQ(bytes.size(), reference.data.size() * 4);
    std::vector<float> rows(reference.data.size());
    std::memcpy(rows.data(), bytes.data(), bytes.size());
    for (size_t k = 0; k < rows.size(); ++k)
      ASSERT_LE(std::abs(rows[k] - reference.data[k]), 1e-5 * std::abs(reference.data[k]) + 1e-6)
          << "element " << k;
  }

  static TempDir *dir_;
  static Weights *weights_;
};

TempDir *CudaLibrary::dir_ = nullptr;
Weights *CudaLibrary::weights_ = nullptr;

TEST_F(CudaLibrary, EmbedsTheCubinThePtxAndTheLaunchAndLinksNothing) {
  const std::string lib = library("persistent", "");
  const std::string bytes = read_bytes(lib);
  const std::map<std::string, Section> s = sections(bytes);
  ASSERT_TRUE(s.count(".grove_cuda.sm_90"));
  ASSERT_TRUE(s.count(".grove_cuda.compute_90"));
  const Section cubin = s.at(".grove_cuda.sm_90"), ptx = s.at(".grove_cuda.compute_90");
  EXPECT_EQ(bytes.compare(cubin.offset, 4,
                          "\x7f"
                          "ELF"),
            0)
      << "the cubin is an ELF image";
  const std::string text = bytes.substr(ptx.offset, ptx.size);
  EXPECT_NE(text.find(".target sm_90"), std::string::npos);
  EXPECT_NE(text.find(".entry grove_persistent("), std::string::npos);
  EXPECT_EQ(text.back(), '\0');
  // No grove library, no driver, no NVRTC: what it needs it gets from the process that opens it.
  CliResult needed = run_shell("readelf -d " + lib + " | grep NEEDED");
  EXPECT_EQ(needed.output.find("grove"), std::string::npos) << needed.output;
  EXPECT_EQ(needed.output.find("cuda"), std::string::npos) << needed.output;
  EXPECT_EQ(needed.output.find("nvrtc"), std::string::npos) << needed.output;
  // The description: target cuda, the launch, each image's size.
  void *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  auto entry =
      reinterpret_cast<const grove_compiled_model *(*)()>(dlsym(handle, "grove_compiled_model_entry"));
  ASSERT_NE(entry, nullptr);
  const grove_compiled_model *d = entry();
  EXPECT_EQ(d->entry, nullptr);
  ASSERT_EQ(d->num_cuda_images, 2);
  EXPECT_STREQ(d->cuda_images[0].arch, "sm_90");
  EXPECT_STREQ(d->cuda_images[1].arch, "compute_90");
  EXPECT_EQ(d->cuda_images[0].size, cubin.size);
  ModelAbi abi = model_abi_from_json(d->abi_json, lib);
  EXPECT_EQ(abi.target, "cuda");
  ASSERT_TRUE(abi.cuda);
  EXPECT_TRUE(abi.cuda->persistent);
  EXPECT_EQ(abi.cuda->blocks, 4);
  ASSERT_EQ(abi.cuda->images.size(), 2u);
  EXPECT_EQ(abi.cuda->images[1].size, ptx.size);
  dlclose(handle);
  EXPECT_TRUE(fs::exists(dir_->file("persistent/libtreelstm.a")));
  EXPECT_NE(read_bytes(dir_->file("persistent/treelstm.h")).find("treelstm_grove_model(void)"),
            std::string::npos);
}

TEST_F(CudaLibrary, RunsThroughTheCApiAsTheCpuRunsPersistentAndPerLevel) {
  for (const auto &[name, options] :
       std::vector<std::pair<std::string, std::string>>{{"persistent", ""},
                                                        {"per_level", "form=per_level"},
                                                        {"per_level_no_graph", "form=per_level,graph=off"}}) {
    SCOPED_TRACE(name);
    const std::string lib = library(name, options.empty() ? "" : "--cuda " + options);
    const std::string log = dir_->file(name + ".log"), out = dir_->file(name + ".bin");
    for (const char *batch : {"0", "4"}) {
      CliResult r = run_c(fake_env(options, "GROVE_FAKE_CUDA_LOG=" + log), lib, out, batch);
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_EQ(r.output, fmt::format("{} rows of {}\n", cpu().shape[0], kH));
      expect_rows_equal_cpu(out);
    }
    const std::string events = read_bytes(log);
    EXPECT_NE(events.find("cuModuleLoadData cubin"), std::string::npos) << events;
    if (name == "per_level") {
      EXPECT_NE(events.find("cuGraphLaunch"), std::string::npos) << events;
    }
  }
  // `grove run LIB` opens it as the C API does.
  CliResult r = run_shell(fake_env("") + kGrove + " run " + library("persistent", "") + " --weights " +
                          dir_->file("w.safetensors") + " --trees " + dir_->file("trees.txt") + " --out " +
                          dir_->file("run.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  const Tensor gpu = read_npy(dir_->file("run.npy"));
  ASSERT_EQ(gpu.shape, cpu().shape);
  for (size_t k = 0; k < gpu.data.size(); ++k)
    ASSERT_LE(std::abs(gpu.data[k] - cpu().data[k]), 1e-5 * std::abs(cpu().data[k]) + 1e-6);
}

TEST_F(CudaLibrary, ThePtxIsJitCompiledWhereNoCubinFitsTheDevice) {
  const std::string lib = library("sm_80", "--arch sm_80");
  const std::string log = dir_->file("sm_80.log"), out = dir_->file("sm_80.bin");
  CliResult r = run_c(fake_env("", "GROVE_FAKE_CUDA_LOG=" + log), lib, out);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_rows_equal_cpu(out);
  EXPECT_NE(read_bytes(log).find("cuModuleLoadData ptx"), std::string::npos);
}

// A failure through the C program: status 1, "STATUS: MESSAGE", no output file.
void expect_c_refused(const CliResult &r, const std::string &out, const std::string &message) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output, message + "\n");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CudaLibrary, DeviceFailuresAreTheCApisErrors) {
  const std::string lib = library("persistent", ""), out = dir_->file("refused.bin");
  fs::remove(out);
  expect_c_refused(
      run_c("GROVE_CUDA_DRIVER=/nonexistent/libcuda.so ", lib, out), out,
      "user error: no CUDA driver: /nonexistent/libcuda.so (named by $GROVE_CUDA_DRIVER) could not be "
      "loaded (/nonexistent/libcuda.so: cannot open shared object file: No such file or directory)");
  if (void *libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(libcuda);
  } else {
    expect_c_refused(
        run_c("env -u GROVE_CUDA_DRIVER ", lib, out), out,
        "user error: no CUDA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot open "
        "shared object file: No such file or directory)");
  }
  expect_c_refused(run_c(fake_env("", "GROVE_FAKE_CUDA_DEVICES=0"), lib, out), out,
                   "user error: no CUDA device: the driver reports 0 devices");
  ModelAbi abi;
  {
    void *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto entry =
        reinterpret_cast<const grove_compiled_model *(*)()>(dlsym(handle, "grove_compiled_model_entry"));
    abi = model_abi_from_json(entry()->abi_json, lib);
    dlclose(handle);
  }
  expect_c_refused(
      run_c(fake_env("", "GROVE_FAKE_CUDA_BLOCKS_PER_SM=1 GROVE_FAKE_CUDA_SMS=2"), lib, out), out,
      fmt::format("user error: the persistent kernel grove_persistent needs 4 co-resident blocks, but "
                  "device 0 holds only 2 (1 per multiprocessor x 2 multiprocessors at 32 threads and "
                  "{} bytes of shared memory): emit it for a smaller grid",
                  abi.cuda->shared_bytes));
  expect_c_refused(
      run_c(fake_env("", "GROVE_FAKE_CUDA_MEMORY=4096"), lib, out), out,
      "out of memory: the CUDA driver failed in cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  expect_c_refused(
      run_c(fake_env("", "GROVE_FAKE_CUDA_COOPERATIVE=0"), lib, out), out,
      "user error: CUDA device 0 cannot launch cooperative kernels, which the persistent form needs");
  // Kernels for another architecture and no PTX.
  const std::string sm80 = library("sm_80_only", "--arch sm_80 --no-ptx");
  expect_c_refused(
      run_c(fake_env(""), sm80, out), out,
      "user error: " + sm80 +
          ": no CUDA kernels for device 0 (NVIDIA H200 (grove fake driver), sm_90): the library holds "
          "sm_80 — a cubin runs on its own major architecture at the same or a later minor one, PTX on "
          "its architecture or later; recompile with `grove compile --target cuda --arch sm_90`");
  // A corrupt cubin section: one byte changed in a copy of the library.
  std::string bytes = read_bytes(lib);
  const Section cubin = sections(bytes).at(".grove_cuda.sm_90");
  bytes[cubin.offset + cubin.size / 2] ^= 0x5a;
  fs::create_directories(dir_->file("corrupt"));
  const std::string corrupt = dir_->file("corrupt/libtreelstm.so");
  write_bytes(corrupt, bytes);
  CliResult r = run_c(fake_env(""), corrupt, out);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("user error: " + corrupt + ": the embedded CUDA image sm_90 is corrupt: " +
                               std::to_string(cubin.size) + " bytes with checksum ",
                           0),
            0u)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
  // The same through `grove run LIB`: exit 1, the message, an existing output kept.
  const std::string npy = dir_->file("refused.npy");
  for (const auto &[env, message] : std::vector<std::pair<std::string, std::string>>{
           {fake_env("", "GROVE_FAKE_CUDA_MEMORY=4096"),
            "the CUDA driver failed in cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"},
           {"GROVE_CUDA_DRIVER=/nonexistent/libcuda.so ",
            "no CUDA driver: /nonexistent/libcuda.so (named by $GROVE_CUDA_DRIVER) could not be loaded "
            "(/nonexistent/libcuda.so: cannot open shared object file: No such file or directory)"}}) {
    write_bytes(npy, "an earlier output");
    CliResult cli = run_shell(env + kGrove + " run " + lib + " --weights " + dir_->file("w.safetensors") +
                              " --trees " + dir_->file("trees.txt") + " --out " + npy);
    EXPECT_EQ(cli.status, 1) << cli.output;
    EXPECT_EQ(cli.output, "grove: error: " + message + "\n");
    EXPECT_EQ(read_bytes(npy), "an earlier output");
  }
}

TEST_F(CudaLibrary, AFailedCompileWritesNothingAndKeepsWhatWasThere) {
  const std::string keep = dir_->file("keep");
  fs::create_directories(keep);
  write_bytes(keep + "/libtreelstm.so", "an earlier library");
  const std::string compile = kGrove + " compile " + model_path("treelstm") + " --weights " +
                              dir_->file("w.safetensors") + " --target cuda";
  CliResult r = run_shell(compile + " --arch sm_90,sm90 -o " + keep);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.output,
      "grove: error: --arch: 'sm90' is not a GPU architecture: use sm_XX (a cubin) or compute_XX (PTX), "
      "e.g. sm_90,sm_80\n");
  // An architecture NVRTC does not know: refused by NVRTC, after the kernels were emitted.
  r = run_shell(compile + " --arch sm_12 -o " + keep);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("NVRTC could not compile the kernels of TreeLSTM for sm_12"), std::string::npos)
      << r.output;
  EXPECT_EQ(read_bytes(keep + "/libtreelstm.so"), "an earlier library");
  std::vector<std::string> left;
  for (const auto &e : fs::directory_iterator(keep)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"libtreelstm.so"});
  // An output that cannot be a directory.
  write_bytes(dir_->file("a-file"), "a file");
  r = run_shell(compile + " -o " + dir_->file("a-file"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, "grove: error: -o " + dir_->file("a-file") + ": exists and is not a directory\n");
  r = run_shell(compile + " -o " + dir_->file("a-file/out"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, "grove: error: -o " + dir_->file("a-file/out") +
                          ": cannot create the output directory: Not a directory\n");
  EXPECT_EQ(read_bytes(dir_->file("a-file")), "a file");
  // --arch without --target cuda.
  r = run_shell(kGrove + " compile " + model_path("treelstm") + " --weights " + dir_->file("w.safetensors") +
                " --arch sm_90 -o " + keep);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "grove: error: compile: --arch and --no-ptx choose GPU architectures and apply only with "
            "--target cuda\n");
}

}  // namespace
}  // namespace grove
