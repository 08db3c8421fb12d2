// Ahead-of-time compilation (backends/cpu/Aot.h, `grove compile`) and opening what it writes
// (backends/runtime/CompiledLibrary.h): a model compiled to lib<name>.so / lib<name>.a must compute
// what the JIT (cpu::CompiledModel) computes for the same model, weights and schedule — TreeLSTM over
// SST trees, from several threads at once, with embedded weights and under a schedule with a
// parallel region and recursive unrolling; the DAG-RNN over grids and the LSTM over sequences; the
// static library linked into a C program built here; and every way of opening one that must fail.
//
// Tolerance, per element: |aot - jit| <= 1e-6 * |jit| + 1e-7. Both are the same Halide module
// compiled by the same LLVM for the same target, so they agree to the last bit in practice; the
// margin only allows a different instruction selection between the JIT and the object file.

#include <dlfcn.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/Aot.h"
#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/CompiledLibrary.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/DagReader.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "lowering/cpu/HostTarget.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"
#include "tests/tools/CliRunner.h"

// Extra flags for the C program (the sanitizers, when the tests are built with them).
#ifndef GROVE_TEST_C_FLAGS
#define GROVE_TEST_C_FLAGS ""
#endif

namespace grove {
namespace {

namespace fs = std::filesystem;
using grove::testing::user_error_of;
using ::testing::HasSubstr;

constexpr int kTrees = 40;  // SST test trees run per check

// One scratch directory for the whole run (the compiled libraries are shared by the tests).
const testing::TempDir &scratch() {
  static testing::TempDir dir;
  return dir;
}

ilir::Program model(const std::string &stem) {
  return dsl::parse_model_file(fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, stem));
}

const Vocab &sst_vocab() {
  static Vocab vocab = Vocab::load(std::string(GROVE_SST_DIR) + "/vocab.txt");
  return vocab;
}

const std::vector<Tree> &sst_trees() {
  static std::vector<Tree> trees = [] {
    std::vector<Tree> all = read_ptb_trees(std::string(GROVE_SST_DIR) + "/test.txt", &sst_vocab());
    all.resize(kTrees);
    return all;
  }();
  return trees;
}

// TreeLSTM at small sizes over the SST vocabulary, seeded random weights as `grove init-weights`
// writes them, and their file.
std::map<std::string, int64_t> treelstm_sizes() { return {{"H", 12}, {"D", 10}, {"V", sst_vocab().size()}}; }

const Weights &treelstm_weights() {
  static Weights w = grove::random_weights(model("treelstm"), treelstm_sizes(), 5);
  return w;
}

const std::string &treelstm_weights_file() {
  static std::string path = [] {
    std::string p = scratch().file("treelstm.safetensors");
    write_safetensors(p, treelstm_weights());
    return p;
  }();
  return path;
}

void expect_close(const Tensor &aot, const Tensor &jit, const std::string &what) {
  ASSERT_EQ(aot.shape, jit.shape) << what;
  int reported = 0;
  for (int64_t i = 0; i < jit.size(); ++i) {
    double j = jit.data[i], a = aot.data[i];
    if (!(std::abs(a - j) <= 1e-6 * std::abs(j) + 1e-7) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", the JIT gives " << j;
  }
}

// Compiles `stem` into its own directory under the scratch directory.
cpu::AotResult compile(const std::string &stem, const std::map<std::string, int64_t> &sizes,
                       const std::string &dir, const std::string &schedule = "",
                       const std::string &embed_file = "", const Weights *embed = nullptr) {
  cpu::CompileOptions options;
  options.schedule = schedule;
  cpu::AotOptions aot;
  aot.out_dir = scratch().file(dir);
  aot.embed_weights_file = embed_file;
  aot.embed_weights = embed;
  return cpu::compile_library(model(stem), sizes, options, aot);
}

const cpu::AotResult &treelstm_library() {
  static cpu::AotResult r = compile("treelstm", treelstm_sizes(), "treelstm");
  return r;
}

const cpu::CompiledModel &treelstm_jit() {
  static cpu::CompiledModel m = cpu::CompiledModel::compile(model("treelstm"), treelstm_weights(), {});
  return m;
}

TEST(Aot, WritesTheLibrariesAndTheHeader) {
  const cpu::AotResult &r = treelstm_library();
  EXPECT_EQ(r.name, "treelstm");
  const fs::path dir = scratch().file("treelstm");
  EXPECT_EQ(r.shared_library, (dir / "libtreelstm.so").string());
  EXPECT_EQ(r.static_library, (dir / "libtreelstm.a").string());
  EXPECT_EQ(r.header, (dir / "treelstm.h").string());
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  // No temporary left behind.
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("libtreelstm.so", "libtreelstm.a", "treelstm.h"));
  std::string header = testing::read_bytes(r.header);
  EXPECT_THAT(header, HasSubstr("const grove_compiled_model *treelstm_grove_model(void);"));
  EXPECT_THAT(header, HasSubstr("#include <grove/grove.h>"));
  EXPECT_THAT(header, HasSubstr("U_iou [36, 24]"));
}

TEST(Aot, SharedLibraryRunsTreesAsTheJit) {
  CompiledLibrary library = open_compiled_library(treelstm_library().shared_library);
  ASSERT_NE(library.handle, nullptr);
  EXPECT_FALSE(library.executor->bound());
  EXPECT_EQ(library.executor->abi().model, "TreeLSTM");
  library.executor->bind(read_safetensors(treelstm_weights_file()), treelstm_weights_file());
  for (int64_t batch : {0, 7}) {
    Tensor aot = library.executor->run(sst_trees(), {.batch = batch});
    expect_close(aot, treelstm_jit().run(sst_trees(), {.batch = batch}), fmt::format("batch {}", batch));
    EXPECT_EQ(aot.shape, (std::vector<int64_t>{kTrees, 12}));
  }
}

TEST(Aot, SharedLibraryRunsFromSeveralThreads) {
  CompiledLibrary library = open_compiled_library(treelstm_library().shared_library);
  library.executor->bind(treelstm_weights(), "treelstm weights");
  const Tensor expected = treelstm_jit().run(sst_trees(), {});
  // Each thread runs every tree, in calls of a different batch size, a few times over.
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 3; repeat++)
        results[t] = library.executor->run(sst_trees(), {.batch = 1 + 5 * t});
    });
  for (std::thread &t : threads) t.join();
  for (int t = 0; t < 4; t++) expect_close(results[t], expected, fmt::format("thread {}", t));
}

TEST(Aot, OpeningTwiceAndClosingKeepsWorking) {
  const Tensor expected = treelstm_jit().run(sst_trees(), {});
  for (int round = 0; round < 3; round++) {
    CompiledLibrary a = open_compiled_library(treelstm_library().shared_library);
    CompiledLibrary b = open_compiled_library(treelstm_library().shared_library);
    a.executor->bind(treelstm_weights(), "w");
    b.executor->bind(treelstm_weights(), "w");
    expect_close(a.executor->run(sst_trees(), {}), expected, "a");
    expect_close(b.executor->run(sst_trees(), {}), expected, "b");
  }
}

TEST(Aot, EmbeddedWeightsFromAFile) {
  cpu::AotResult r = compile("treelstm", treelstm_sizes(), "embedded", "", treelstm_weights_file());
  CompiledLibrary library = open_compiled_library(r.shared_library);
  ASSERT_TRUE(library.executor->bound());
  expect_close(library.executor->run(sst_trees(), {}), treelstm_jit().run(sst_trees(), {}), "embedded");
  EXPECT_THAT(testing::read_bytes(r.header), HasSubstr("The weights are embedded"));
}

// precision=bf16: the library carries an AMX variant, a vdpbf16ps one and an fp32 one, and opens the
// one cpuid chooses: the kernels the JIT chooses on this CPU (skipped, saying why, where this CPU has
// no bf16 kernel).
TEST(Aot, Bf16LibraryRunsAsTheJit) {
  const lowering::Bf16Support s = lowering::bf16_support(lowering::host_target());
  if (s.kernel == GemmKernel::Fma)
    GTEST_SKIP() << "precision=bf16 has no kernel on this machine (" << s.why_not << "): skipped";
  const std::string schedule = "precision=bf16";
  cpu::AotResult r = compile("treelstm", treelstm_sizes(), "bf16", schedule);
  EXPECT_TRUE(r.notes.empty());
  CompiledLibrary library = open_compiled_library(r.shared_library);
  ASSERT_FALSE(library.executor->abi().packed.empty());
  EXPECT_EQ(library.executor->abi().packed[0].element, PackedElement::BF16);
  EXPECT_EQ(library.executor->abi().gemm_kernel, s.kernel);
  library.executor->bind(treelstm_weights(), "w");
  cpu::CompileOptions options;
  options.schedule = schedule;
  cpu::CompiledModel jit = cpu::CompiledModel::compile(model("treelstm"), treelstm_weights(), options);
  expect_close(library.executor->run(sst_trees(), {.batch = 5}), jit.run(sst_trees(), {.batch = 5}), "bf16");
  // The library's fp32 variant (what a CPU without AVX512-BF16, or with AMX refused, opens), forced.
  ::setenv("GROVE_LIBRARY_VARIANT", "fp32", 1);
  CompiledLibrary fallback = open_compiled_library(r.shared_library);
  ::unsetenv("GROVE_LIBRARY_VARIANT");
  ASSERT_FALSE(fallback.executor->abi().packed.empty());
  EXPECT_EQ(fallback.executor->abi().packed[0].element, PackedElement::F32);
  EXPECT_THAT(fallback.executor->abi().schedule, HasSubstr("precision=fp32"));
  EXPECT_EQ(fallback.executor->abi().gemm_kernel, GemmKernel::Fma);
  fallback.executor->bind(treelstm_weights(), "w");
  expect_close(fallback.executor->run(sst_trees(), {.batch = 5}),
               treelstm_jit().run(sst_trees(), {.batch = 5}), "the fp32 variant");
}

// A parallel region of 2 threads with recursive unrolling: the generated code calls the thread
// team's barrier, which the library takes from libgrove_runtime.so.
TEST(Aot, ScheduleWithUnrolledRegion) {
  const std::string schedule = "threads=2,unroll=2";
  cpu::AotResult r = compile("treelstm", treelstm_sizes(), "unrolled", schedule);
  CompiledLibrary library = open_compiled_library(r.shared_library);
  EXPECT_EQ(library.executor->abi().unroll, 2);
  EXPECT_EQ(library.executor->abi().unroll_team, 2);
  library.executor->bind(treelstm_weights(), "w");
  cpu::CompileOptions options;
  options.schedule = schedule;
  cpu::CompiledModel jit = cpu::CompiledModel::compile(model("treelstm"), treelstm_weights(), options);
  std::vector<std::thread> threads;
  std::vector<Tensor> results(3);
  for (int t = 0; t < 3; t++)
    threads.emplace_back([&, t] { results[t] = library.executor->run(sst_trees(), {.batch = 4 + t}); });
  for (std::thread &t : threads) t.join();
  const Tensor expected = jit.run(sst_trees(), {});
  for (int t = 0; t < 3; t++) expect_close(results[t], expected, fmt::format("unrolled, thread {}", t));
  expect_close(expected, treelstm_jit().run(sst_trees(), {}), "unrolled against the default schedule");
}

TEST(Aot, DagModelOverGrids) {
  const std::map<std::string, int64_t> sizes{{"H", 8}, {"D", 6}, {"V", 20}};
  const Weights weights = grove::random_weights(model("dagrnn"), sizes, 11);
  cpu::AotResult r = compile("dagrnn", sizes, "dagrnn");
  CompiledLibrary library = open_compiled_library(r.shared_library);
  library.executor->bind(weights, "dagrnn weights");
  std::vector<Dag> grids;
  for (int32_t rows : {1, 3, 5})
    for (int32_t cols : {2, 4}) {
      std::vector<int32_t> tokens;
      for (int32_t i = 0; i < rows * cols; i++) tokens.push_back((i * 7 + rows) % 20);
      grids.push_back(grid_dag(rows, cols, tokens, Sweep::SouthEast));
    }
  cpu::CompiledModel jit = cpu::CompiledModel::compile(model("dagrnn"), weights, {});
  RunOptions all{.batch = 0, .outputs = DagOutputs::AllNodes};
  expect_close(library.executor->run_dags(grids, {}), jit.run_dags(grids, {}), "grid sinks");
  expect_close(library.executor->run_dags(grids, all), jit.run_dags(grids, all), "every cell");
}

// In-memory weights embedded (AotOptions::embed_weights), and a sequence model.
TEST(Aot, SequenceModelWithEmbeddedWeightsFromMemory) {
  const std::map<std::string, int64_t> sizes{{"H", 8}, {"D", 5}, {"V", 30}};
  const Weights weights = grove::random_weights(model("lstm"), sizes, 13);
  cpu::AotResult r = compile("lstm", sizes, "lstm", "", "", &weights);
  CompiledLibrary library = open_compiled_library(r.shared_library);
  ASSERT_TRUE(library.executor->bound());
  std::vector<std::vector<int32_t>> sequences{{1}, {2, 3, 4}, {29, 0, 5, 6, 7, 8, 9}, {10, 11}};
  cpu::CompiledModel jit = cpu::CompiledModel::compile(model("lstm"), weights, {});
  expect_close(library.executor->run_sequences(sequences, {}), jit.run_sequences(sequences, {}), "sequences");
}

// The static library and the header, linked into a C program with libgrove_runtime.so: it opens the
// model through the C API, binds the weights file and prints each root state.
TEST(Aot, StaticLibraryInACProgram) {
  const char *cc_env = std::getenv("CC");
  const std::string cc = cc_env && *cc_env ? cc_env : "cc";
  if (testing::run_shell(cc + " --version").status != 0)
    GTEST_SKIP() << "no C compiler (" << cc << ") to build the C program with";
  const cpu::AotResult &r = treelstm_library();
  const std::vector<Tree> trees(sst_trees().begin(), sst_trees().begin() + 6);
  // The trees as grove_trees' global arrays.
  std::string node_begin = "0", child_begin, children, tokens;
  int64_t offset = 0, child_offset = 0;
  for (const Tree &t : trees) {
    for (int32_t n = 0; n < t.size(); n++) {
      child_begin += fmt::format("{}, ", child_offset + t.child_begin[n]);
      tokens += fmt::format("{}, ", t.token[n]);
    }
    for (int32_t c : t.children) children += fmt::format("{}, ", offset + c);
    offset += t.size();
    child_offset += int64_t(t.children.size());
    node_begin += fmt::format(", {}", offset);
  }
  child_begin += fmt::format("{}", child_offset);
  const std::string source = fmt::format(R"(#include <stdio.h>
#include <stdlib.h>
#include "treelstm.h"

static const int64_t node_begin[] = {{{0}}};
static const int64_t child_begin[] = {{{1}}};
static const int32_t children[] = {{{2}}};
static const int32_t token[] = {{{3}}};

int main(int argc, char **argv) {{
  grove_model *model;
  grove_trees trees = {{{4}, node_begin, NULL, child_begin, children, token}};
  grove_model_info info;
  float *out;
  int64_t rows, i;
  if (grove_model_open_compiled(treelstm_grove_model(), &model) != GROVE_OK ||
      grove_model_bind_weights_file(model, argv[1]) != GROVE_OK ||
      grove_model_get_info(model, &info) != GROVE_OK) {{
    fprintf(stderr, "%s\n", grove_last_error());
    return 1;
  }}
  out = malloc(sizeof(float) * {4} * info.output_elements);
  if (grove_model_run_trees(model, &trees, NULL, out, {4} * info.output_elements, &rows) != GROVE_OK) {{
    fprintf(stderr, "%s\n", grove_last_error());
    return 1;
  }}
  for (i = 0; i < rows * info.output_elements; i++) printf("%.9g\n", out[i]);
  free(out);
  grove_model_free(model);
  return argc == 2 ? 0 : 1;
}}
)",
                                         node_begin, child_begin, children, tokens, trees.size());
  const std::string c_file = scratch().file("static_main.c"), exe = scratch().file("static_main");
  {
    std::ofstream out(c_file);
    out << source;
  }
  const std::string build = fmt::format(
      "{} " GROVE_TEST_C_FLAGS
      " -std=c99 -Wall -Werror -I{} -I{} {} {} -L{} -lgrove_runtime -Wl,-rpath,{} -lpthread -ldl -lm -o {}",
      cc, fs::path(r.header).parent_path().string(), GROVE_SOURCE_INCLUDE_DIR, c_file, r.static_library,
      GROVE_BUILD_RUNTIME_DIR, GROVE_BUILD_RUNTIME_DIR, exe);
  testing::CliResult built = testing::run_shell(build);
  ASSERT_EQ(built.status, 0) << build << "\n" << built.output;
  testing::CliResult ran = testing::run_shell(exe + " " + treelstm_weights_file());
  ASSERT_EQ(ran.status, 0) << ran.output;
  Tensor printed({int64_t(trees.size()), 12});
  std::istringstream in(ran.output);
  for (float &x : printed.data) ASSERT_TRUE(in >> x) << ran.output;
  expect_close(printed, treelstm_jit().run(trees, {}), "the C program's output");
}

// `grove compile` with embedded weights and --threads, then `grove run` over the library it wrote.
TEST(Aot, GroveCompileAndRunCommands) {
  const std::string dir = scratch().file("cli");
  testing::CliResult r = testing::run_grove(
      fmt::format("compile {}/models/treelstm.grove --weights {} --embed-weights --name tl --threads 2 -o {}",
                  GROVE_SOURCE_DIR, treelstm_weights_file(), dir));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir + "/libtl.so"));
  CompiledLibrary library = open_compiled_library(dir + "/libtl.so");
  EXPECT_EQ(library.executor->abi().threads, 2);
  const Tensor expected = treelstm_jit().run(sst_trees(), {});
  expect_close(library.executor->run(sst_trees(), {}), expected, "grove compile");

  // The first kTrees trees of the SST test set, as `grove run` reads them.
  const std::string trees = scratch().file("trees.txt"), out = scratch().file("cli-out.npy");
  {
    std::ifstream in(std::string(GROVE_SST_DIR) + "/test.txt");
    std::ofstream o(trees);
    std::string line;
    for (int i = 0; i < kTrees && std::getline(in, line); i++) o << line << "\n";
  }
  r = testing::run_grove(fmt::format("run {}/libtl.so --trees {} --vocab {}/vocab.txt --batch 9 --out {}",
                                     dir, trees, GROVE_SST_DIR, out));
  ASSERT_EQ(r.status, 0) << r.output;
  expect_close(read_npy(out), expected, "grove run on the library");
  r = testing::run_grove(
      fmt::format("run {}/libtl.so --trees {} --schedule batch=off --out {}", dir, trees, out));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              HasSubstr(fmt::format("run: {}/libtl.so is a compiled library: its target and schedule "
                                    "were fixed by `grove compile`",
                                    dir)));
}

// A target other than the host's: SSE4.1 only, which every x86-64 machine grove runs on has.
TEST(Aot, ExplicitTarget) {
#ifndef __x86_64__
  GTEST_SKIP() << "the x86-64-linux-sse41 target needs an x86-64 host";
#endif
  cpu::CompileOptions options;
  options.target = "x86-64-linux-sse41";
  cpu::AotOptions aot;
  aot.out_dir = scratch().file("sse41");
  cpu::AotResult r = cpu::compile_library(model("treelstm"), treelstm_sizes(), options, aot);
  CompiledLibrary library = open_compiled_library(r.shared_library);
  EXPECT_EQ(library.executor->abi().target, "x86-64-linux-sse41");
  library.executor->bind(treelstm_weights(), "w");
  expect_close(library.executor->run(sst_trees(), {}), treelstm_jit().run(sst_trees(), {}), "sse41");
}

// ---- Errors ------------------------------------------------------------------------------------

TEST(AotErrors, MissingLibrary) {
  const std::string path = scratch().file("no-such-lib.so");
  EXPECT_EQ(user_error_of([&] { open_compiled_library(path); }),
            fmt::format("cannot open compiled model {}: no such file", path));
}

TEST(AotErrors, NotASharedLibrary) {
  const std::string path = scratch().file("not-a-library.so");
  testing::write_bytes(path, "this is text");
  EXPECT_THAT(user_error_of([&] { open_compiled_library(path); }),
              HasSubstr(fmt::format("cannot load compiled model {}: ", path)));
}

TEST(AotErrors, SharedLibraryThatIsNotGroves) {
  // libgrove_runtime.so itself: a shared library without a model descriptor.
  const std::string path = std::string(GROVE_BUILD_RUNTIME_DIR) + "/libgrove_runtime.so";
  EXPECT_EQ(
      user_error_of([&] { open_compiled_library(path); }),
      fmt::format("{} is not a model compiled by `grove compile`: it defines no grove_compiled_model_entry",
                  path));
}

TEST(AotErrors, WrongAbiVersion) {
  CompiledLibrary good = open_compiled_library(treelstm_library().shared_library);
  using EntryFn = const grove_compiled_model *(*)();
  // The real descriptor with its version changed.
  void *handle = good.handle.get();
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, "grove_compiled_model_entry"));
  ASSERT_NE(entry, nullptr);
  grove_compiled_model wrong = *entry();
  wrong.abi_version = kModelAbiVersion + 1;
  EXPECT_EQ(
      user_error_of([&] { open_compiled_model(wrong, "libtreelstm.so"); }),
      fmt::format("libtreelstm.so: the compiled model was written for grove ABI version {}; this runtime "
                  "reads version {}: recompile it with this grove's `grove compile`",
                  kModelAbiVersion + 1, kModelAbiVersion));
  grove_compiled_model no_json = *entry();
  no_json.abi_json = "{\"grove_abi\": 1";
  EXPECT_THAT(user_error_of([&] { open_compiled_model(no_json, "libtreelstm.so"); }),
              HasSubstr("libtreelstm.so: the compiled model's description is"));
}

TEST(AotErrors, WrongWeightShapeNamesTheTensor) {
  CompiledLibrary library = open_compiled_library(treelstm_library().shared_library);
  Weights weights = treelstm_weights();
  weights.at("U_f") = Tensor({24, 23});
  EXPECT_EQ(user_error_of([&] { library.executor->bind(weights, "w.safetensors"); }),
            "w.safetensors: tensor 'U_f' has shape [24, 23] but the model expects shape [24, 24]");
}

TEST(AotErrors, EmbeddedWeightsOfOtherSizes) {
  const std::map<std::string, int64_t> sizes{{"H", 6}, {"D", 10}, {"V", sst_vocab().size()}};
  EXPECT_EQ(user_error_of([&] { compile("treelstm", sizes, "other-sizes", "", treelstm_weights_file()); }),
            fmt::format("{}: the weights give H = 12, but the library is compiled with H = 6",
                        treelstm_weights_file()));
}

TEST(AotErrors, BadNameAndOutDir) {
  cpu::AotOptions aot;
  aot.out_dir = scratch().file("bad-name");
  aot.name = "3d-model";
  EXPECT_EQ(user_error_of([&] { cpu::compile_library(model("treelstm"), treelstm_sizes(), {}, aot); }),
            "--name '3d-model' is not a C identifier: the library's symbols are named after it (letters, "
            "digits and _, not starting with a digit)");
  aot.name = "";
  aot.out_dir = treelstm_weights_file();
  EXPECT_EQ(user_error_of([&] { cpu::compile_library(model("treelstm"), treelstm_sizes(), {}, aot); }),
            fmt::format("-o {}: exists and is not a directory", treelstm_weights_file()));
}

TEST(AotErrors, NoRuntimeAndTwoWeights) {
  cpu::AotOptions aot;
  aot.out_dir = scratch().file("no-runtime");
  aot.runtime_dir = scratch().file("no-such-dir");
  EXPECT_EQ(user_error_of([&] { cpu::compile_library(model("treelstm"), treelstm_sizes(), {}, aot); }),
            fmt::format("cannot find libgrove_runtime.so, which compiled libraries link: looked in {}; build "
                        "the grove_runtime_shared target or install grove",
                        aot.runtime_dir));
  aot.runtime_dir = "";
  aot.embed_weights_file = treelstm_weights_file();
  aot.embed_weights = &treelstm_weights();
  EXPECT_EQ(user_error_of([&] { cpu::compile_library(model("treelstm"), treelstm_sizes(), {}, aot); }),
            "embed either a weights file or weights in memory, not both");
}

// A compile that fails at the C compiler leaves the files of an earlier compile as they were.
TEST(AotErrors, NoCompilerLeavesTheDirectoryUntouched) {
  const std::string dir = scratch().file("untouched");
  cpu::AotResult first = compile("treelstm", treelstm_sizes(), "untouched");
  const std::string before = testing::read_bytes(first.shared_library);
  const char *old = std::getenv("CC");
  const std::string saved = old ? old : "";
  setenv("CC", "/nonexistent/grove-no-cc", 1);
  std::string message = user_error_of([&] { compile("treelstm", treelstm_sizes(), "untouched"); });
  if (old)
    setenv("CC", saved.c_str(), 1);
  else
    unsetenv("CC");
  EXPECT_THAT(message, HasSubstr("`grove compile` could not build the model's descriptor: "
                                 "`/nonexistent/grove-no-cc "));
  EXPECT_THAT(message, HasSubstr("(no such program: install a C toolchain, or name it in $CC)"));
  EXPECT_EQ(testing::read_bytes(first.shared_library), before);
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("libtreelstm.so", "libtreelstm.a", "treelstm.h"));
}

TEST(AotErrors, CompileCommandNeedsWeightsToEmbed) {
  testing::CliResult r =
      testing::run_grove(fmt::format("compile {}/models/treelstm.grove --sizes H=4,D=4,V=10 "
                                     "--embed-weights -o {}",
                                     GROVE_SOURCE_DIR, scratch().file("cli-embed")));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("grove: error: compile: --embed-weights needs --weights FILE"));
  r = testing::run_grove(
      fmt::format("compile {}/models/treelstm.grove -o {}", GROVE_SOURCE_DIR, scratch().file("cli-none")));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("compile: give exactly one of --weights FILE (the sizes come from it) and "
                                  "--sizes H=...,V=..."));
}

}  // namespace
}  // namespace grove
