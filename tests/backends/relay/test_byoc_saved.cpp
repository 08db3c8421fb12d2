// Saved programs (backends/relay/byoc/SavedProgram.h, `grove relay build`): a module partitioned for
// ccompiler (and dnnl) is built to a directory, loaded with the C compiler made unavailable
// (CC=/nonexistent: the saved .so must serve), and run on the VM against the unpartitioned module
// on the interpreter (to 1e-5: dense and softmax run on Halide or oneDNN, which may order sums
// differently); a function with `?` in its input types is left to run time; a manifest that does not
// match the module (an unknown symbol, other shapes, a missing or corrupt artifact, an unknown code
// generator, a changed function) is a UserError naming the directory, the entry and the problem;
// building over an input or over a directory grove did not write is refused, leaving it intact.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/relay/VMRunner.h"
#include "backends/relay/byoc/SavedProgram.h"
#include "backends/relay/vm/VM.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "support/Error.h"
#include "tests/relay/CodegenTestUtil.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using testing::random_array;
using testing::ScopedEnv;
using testing::user_error_of;

// A fresh directory for one test, removed with its contents after.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "grove-saved-test-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string operator/(const std::string &name) const { return (path_ / name).string(); }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

json read_manifest(const std::string &dir) { return json::parse(read_text(dir + "/manifest.json")); }
void write_manifest(const std::string &dir, const json &m) { write_text(dir + "/manifest.json", m.dump(2)); }

// dense+bias_add+relu (dnnl's composite), then an elementwise tail with a bound constant of 6
// elements (written to module.meta.safetensors) that ccompiler claims, then softmax (grove's own).
Module mlp_module() {
  Module m = parse_module(R"(
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(6, 8), float32], %b: Tensor[(6), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = multiply(%2, 0.5f);
  %4 = subtract(%3, meta[relay.Constant][0]);
  %5 = erf(%4);
  (nn.softmax(%5), %2)
}
)",
                          "mlp.relay", {random_array({6}, 20)});
  infer_types(m);
  return m;
}

std::vector<Value> mlp_args() {
  return {tensor_value(random_array({4, 8}, 21)), tensor_value(random_array({6, 8}, 22)),
          tensor_value(random_array({6}, 23))};
}

constexpr const char *kCSymbol = "tvmgen_default_ccompiler_main_0";

// `program` on the VM with its saved kernels equals `m` on the interpreter.
::testing::AssertionResult runs_like(SavedProgram &program, const Module &m, const std::vector<Value> &args) {
  Value got = make_vm(program.module, program.kernels)->run_main(args);
  Value want = run_main(m, args);
  std::string why;
  if (testing::same_value(want, got, &why, 1e-5)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

TEST(SavedProgram, CCompilerKernelLoadsWithoutACCompiler) {
  ScratchDir scratch;
  const std::string dir = scratch / "prog";
  Module m = mlp_module();
  build_program(m, {"ccompiler"}, dir, {});
  EXPECT_TRUE(fs::is_regular_file(dir + "/module.relay"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/module.meta.safetensors"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/" + kCSymbol + ".so"));
  // Nothing is left beside it: the temporary sibling was renamed into place.
  EXPECT_EQ(std::distance(fs::directory_iterator(scratch.path()), fs::directory_iterator()), 1);

  json manifest = read_manifest(dir);
  EXPECT_EQ(manifest["format"], "grove-relay-program");
  EXPECT_EQ(manifest["format_version"], 1);
  EXPECT_EQ(manifest["targets"], json::array({"ccompiler"}));
  ASSERT_EQ(manifest["functions"].size(), 1u);
  const json &entry = manifest["functions"][0];
  EXPECT_EQ(entry["symbol"], kCSymbol);
  EXPECT_EQ(entry["codegen"], "ccompiler");
  EXPECT_EQ(entry["compiled"], "at build");
  EXPECT_EQ(entry["artifact"], std::string(kCSymbol) + ".so");
  EXPECT_EQ(entry["inputs"], json::parse(R"([{"dtype": "float32", "shape": [4, 6]}])"));

  ScopedEnv no_compiler("CC", "/nonexistent");
  SavedProgram program = load_program(dir);
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_EQ(program.kernels.at(kCSymbol).kernel->describe(), fmt::format("ccompiler: {} (4 ops)", kCSymbol));
  EXPECT_TRUE(runs_like(program, m, mlp_args()));
  // Without the saved kernel the VM would have to run the C compiler, and there is none.
  EXPECT_THAT(user_error_of([&] { make_vm(program.module)->run_main(mlp_args()); }),
              HasSubstr("no such C compiler"));
  // A second load from the same directory gets kernels of its own; both run.
  SavedProgram again = load_program(dir);
  EXPECT_TRUE(runs_like(again, m, mlp_args()));
  EXPECT_TRUE(runs_like(program, m, mlp_args()));
}

TEST(SavedProgram, DnnlIsRebuiltAtLoadAndCCompilerLoaded) {
  ScratchDir scratch;
  const std::string dir = scratch / "prog";
  Module m = mlp_module();
  build_program(m, {"ccompiler", "dnnl"}, dir, {});
  json manifest = read_manifest(dir);
  std::map<std::string, json> by_codegen;
  for (const json &entry : manifest["functions"]) by_codegen[entry["codegen"]] = entry;
  ASSERT_EQ(by_codegen.size(), 2u) << manifest.dump(2);
  EXPECT_EQ(by_codegen["dnnl"]["compiled"], "at load");
  EXPECT_TRUE(by_codegen["dnnl"]["artifact"].is_null());
  EXPECT_EQ(by_codegen["dnnl"]["inputs"].size(), 3u);
  EXPECT_EQ(by_codegen["ccompiler"]["compiled"], "at build");

  ScopedEnv no_compiler("CC", "/nonexistent");
  SavedProgram program = load_program(dir);
  EXPECT_EQ(program.kernels.size(), 2u);
  EXPECT_TRUE(runs_like(program, m, mlp_args()));
}

TEST(SavedProgram, UnknownShapesAreCompiledAtRunTime) {
  ScratchDir scratch;
  const std::string dir = scratch / "prog";
  Module m = parse_module(R"(
def @main(%x: Tensor[(?, 8), float32], %w: Tensor[(6, 8), float32]) {
  %0 = nn.dense(%x, %w);
  multiply(nn.relu(%0), 2f)
}
)",
                          "any.relay");
  infer_types(m);
  build_program(m, {"dnnl"}, dir, {});
  json manifest = read_manifest(dir);
  ASSERT_EQ(manifest["functions"].size(), 1u);
  EXPECT_EQ(manifest["functions"][0]["compiled"], "at run time");
  EXPECT_EQ(manifest["functions"][0]["inputs"][0]["shape"], json::parse(R"(["?", 8])"));
  SavedProgram program = load_program(dir);
  EXPECT_TRUE(program.kernels.empty());
  EXPECT_TRUE(
      runs_like(program, m, {tensor_value(random_array({3, 8}, 1)), tensor_value(random_array({6, 8}, 2))}));
}

// A built ccompiler program in a scratch directory, for the tests that spoil one part of it.
class SpoiledProgram : public ::testing::Test {
 protected:
  void SetUp() override { build_program(mlp_module(), {"ccompiler"}, dir, {}); }
  std::string load_error() {
    ScopedEnv no_compiler("CC", "/nonexistent");
    return user_error_of([&] { load_program(dir); });
  }
  ScratchDir scratch;
  const std::string dir = scratch / "prog";
  const std::string so = dir + "/" + kCSymbol + ".so";
};

TEST_F(SpoiledProgram, UnknownSymbolIsNamed) {
  json m = read_manifest(dir);
  m["functions"][0]["symbol"] = "nope";
  write_manifest(dir, m);
  const std::string error = load_error();
  EXPECT_THAT(error, HasSubstr(dir + "/manifest.json: entry 0 (nope)"));
  EXPECT_THAT(error, HasSubstr("module.relay has no external function with global_symbol \"nope\""));
}

TEST_F(SpoiledProgram, OtherShapesAreNamed) {
  json m = read_manifest(dir);
  m["functions"][0]["inputs"][0]["shape"] = json::array({5, 6});
  write_manifest(dir, m);
  const std::string error = load_error();
  EXPECT_THAT(error, HasSubstr(fmt::format("entry 0 ({})", kCSymbol)));
  EXPECT_THAT(error, HasSubstr("compiled for inputs (Tensor[(5, 6), float32]"));
  EXPECT_THAT(error, HasSubstr("takes (Tensor[(4, 6), float32]"));
}

TEST_F(SpoiledProgram, MissingArtifactIsNamed) {
  fs::remove(so);
  EXPECT_THAT(load_error(), HasSubstr("the artifact " + so + " is missing"));
}

TEST_F(SpoiledProgram, CorruptArtifactIsNamed) {
  std::string bytes = read_text(so);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_text(so, bytes);
  EXPECT_THAT(load_error(), HasSubstr("the artifact " + so + " is corrupt"));
}

// A file that passes the manifest's checks (they were updated with it) but is no library.
TEST_F(SpoiledProgram, ArtifactThatIsNoLibraryIsNamed) {
  write_text(so, "not a shared object");
  json m = read_manifest(dir);
  m["functions"][0]["artifact_bytes"] = 19;
  m["functions"][0]["artifact_fnv1a"] = "eeb2f27c3f492491";  // FNV-1a of the text above
  write_manifest(dir, m);
  const std::string error = load_error();
  EXPECT_THAT(error, HasSubstr(fmt::format("entry 0 ({})", kCSymbol)));
  EXPECT_THAT(error, HasSubstr("could not load " + so));
}

TEST_F(SpoiledProgram, UnknownCodegenIsNamed) {
  json m = read_manifest(dir);
  m["functions"][0]["codegen"] = "tensorrt";
  write_manifest(dir, m);
  EXPECT_THAT(load_error(), HasSubstr("no code generator is named 'tensorrt' (grove has: ccompiler, dnnl)"));
}

TEST_F(SpoiledProgram, ChangedFunctionIsNamed) {
  std::string text = read_text(dir + "/module.relay");
  const size_t at = text.find("erf(");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 3, "exp");
  write_text(dir + "/module.relay", text);
  EXPECT_THAT(load_error(), HasSubstr("is not the function this entry was compiled from"));
}

TEST_F(SpoiledProgram, ManifestErrorsAreNamed) {
  write_text(dir + "/manifest.json", "{ \"format\": ");
  EXPECT_THAT(load_error(), HasSubstr(dir + "/manifest.json: not valid JSON"));
  write_manifest(dir, json::parse(R"({"format": "grove-relay-program", "format_version": 1, "targets": [],
                                      "functions": []})"));
  EXPECT_THAT(load_error(),
              HasSubstr(fmt::format("@{} in module.relay (Compiler=\"ccompiler\") has no entry", kCSymbol)));
  fs::remove(dir + "/manifest.json");
  EXPECT_THAT(load_error(), HasSubstr(dir + " has no manifest.json"));
}

TEST(SavedProgram, BuildNeverWritesOverAnInputOrForeignDirectory) {
  ScratchDir scratch;
  const std::string input = scratch / "mlp.relay";
  write_text(input, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2), float32]) { add(%x, %x) }\n");
  Module m = parse_relay_file(input);
  infer_types(m);
  const std::vector<std::string> inputs{input, meta_path(input)};
  EXPECT_THAT(user_error_of([&] { build_program(m, {"ccompiler"}, input, inputs); }),
              HasSubstr("--out " + input + " would overwrite the input " + input));
  EXPECT_THAT(user_error_of([&] { build_program(m, {"ccompiler"}, scratch.path().string(), inputs); }),
              HasSubstr("would overwrite the input " + input));
  const std::string foreign = scratch / "mine";
  fs::create_directory(foreign);
  write_text(foreign + "/notes.txt", "keep me");
  EXPECT_THAT(user_error_of([&] { build_program(m, {"ccompiler"}, foreign, inputs); }),
              HasSubstr("exists and is not the output of grove relay build"));
  EXPECT_EQ(read_text(foreign + "/notes.txt"), "keep me");

  // A previous build's output is replaced whole.
  const std::string dir = scratch / "prog";
  build_program(m, {"ccompiler"}, dir, inputs);
  write_text(dir + "/stale.txt", "from before");
  build_program(m, {}, dir, inputs);
  EXPECT_FALSE(fs::exists(dir + "/stale.txt"));
  EXPECT_EQ(read_manifest(dir)["functions"].size(), 0u);
  // Only the input, the foreign directory and the program are left: no temporary siblings.
  EXPECT_EQ(std::distance(fs::directory_iterator(scratch.path()), fs::directory_iterator()), 3);
}

}  // namespace
}  // namespace grove::relay
