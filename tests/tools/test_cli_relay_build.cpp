// `grove relay build` as a user runs it: a program partitioned for ccompiler built to a directory
// runs with `grove relay run DIR` and `bench DIR` where no C compiler exists (CC=/nonexistent), with
// the hand-computed result; the MLP built for dnnl (a `?` batch: compiled at run time) gives the
// PyTorch fixture's result; a tampered manifest, --target with DIR and building over an input or a
// directory grove did not write are user errors (status 1) that name the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/relay/NDArrayIO.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(GROVE_SOURCE_DIR) + "/models/relay/";

void write_text(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr char kAddProgram[] = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) -> Tensor[(2, 3), float32] {
  %0 = add(%x, %y);
  multiply(%0, 2f)
}
)";

// x = [[1, 2, 3], [4, 5, 6]], y = [10, 20, 30]: 2 (x + y).
TEST(CliRelayBuild, SavedCCompilerProgramRunsWithoutACCompiler) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  CliResult built =
      run_grove("relay build " + dir.file("add.relay") + " --target ccompiler --out " + dir.file("prog"));
  ASSERT_EQ(built.status, 0) << built.output;
  EXPECT_THAT(read_text(dir.file("prog/manifest.json")), HasSubstr("\"compiled\": \"at build\""));
  relay::NDArray x(relay::DType::Float32, {2, 3}), y(relay::DType::Float32, {3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = float(i + 1);
  for (int i = 0; i < 3; ++i) y.data<float>()[i] = float(10 * (i + 1));
  relay::write_npy_array(dir.file("x.npy"), x);
  relay::write_npy_array(dir.file("y.npy"), y);
  const std::string args = " --arg x=" + dir.file("x.npy") + " --arg y=" + dir.file("y.npy");
  CliResult r = run_shell("CC=/nonexistent " + std::string(GROVE_BINARY) + " relay run " + dir.file("prog") +
                          args + " --out " + dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  relay::NDArray out = relay::read_npy_array(dir.file("out.npy"));
  ASSERT_EQ(out.shape(), (relay::Shape{2, 3}));
  const float expected[] = {22, 44, 66, 28, 50, 72};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.data<float>()[i], expected[i]) << i;

  CliResult bench = run_shell("CC=/nonexistent " + std::string(GROVE_BINARY) + " relay bench " +
                              dir.file("prog") + args + " --repeat 1");
  EXPECT_EQ(bench.status, 0) << bench.output;

  // Without the saved kernel the same run needs the C compiler.
  CliResult unsaved = run_shell("CC=/nonexistent " + std::string(GROVE_BINARY) + " relay run " +
                                dir.file("add.relay") + " --target ccompiler" + args);
  EXPECT_EQ(unsaved.status, 1);
  EXPECT_THAT(unsaved.output, HasSubstr("no such C compiler"));
}

TEST(CliRelayBuild, MlpForDnnlEqualsTheFixture) {
  TempDir dir;
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/mlp.safetensors");
  std::string args;
  for (const char *name : {"x", "w1", "b1", "w2", "b2"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  CliResult built = run_grove("relay build " + kModels + "mlp.relay --target dnnl --out " + dir.file("prog"));
  ASSERT_EQ(built.status, 0) << built.output;
  EXPECT_THAT(read_text(dir.file("prog/manifest.json")), HasSubstr("\"compiled\": \"at run time\""));
  CliResult r = run_grove("relay run " + dir.file("prog") + args + " --out " + dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  relay::NDArray result = relay::read_npy_array(dir.file("out.npy"));
  const relay::NDArray &expected = fixture.at("expected");
  ASSERT_EQ(result.shape(), expected.shape());
  for (int64_t i = 0; i < result.size(); ++i)
    EXPECT_NEAR(result.data<float>()[i], expected.data<float>()[i],
                1e-5 + 1e-4 * std::fabs(expected.data<float>()[i]));
}

TEST(CliRelayBuild, ReportsMistakes) {
  TempDir dir;
  const std::string input = dir.file("add.relay");
  write_text(input, kAddProgram);
  CliResult over_input = run_grove("relay build " + input + " --target ccompiler --out " + input);
  EXPECT_EQ(over_input.status, 1);
  EXPECT_THAT(over_input.output, HasSubstr("would overwrite the input " + input));
  EXPECT_EQ(read_text(input), kAddProgram);

  std::filesystem::create_directory(dir.file("mine"));
  write_text(dir.file("mine/notes.txt"), "keep me");
  CliResult foreign = run_grove("relay build " + input + " --out " + dir.file("mine"));
  EXPECT_EQ(foreign.status, 1);
  EXPECT_THAT(foreign.output, HasSubstr("is not the output of grove relay build"));
  EXPECT_EQ(read_text(dir.file("mine/notes.txt")), "keep me");

  ASSERT_EQ(run_grove("relay build " + input + " --target ccompiler --out " + dir.file("prog")).status, 0);
  CliResult target = run_grove("relay run " + dir.file("prog") + " --target dnnl");
  EXPECT_EQ(target.status, 1);
  EXPECT_THAT(target.output, HasSubstr("already partitioned"));

  std::filesystem::remove(dir.file("prog/tvmgen_default_ccompiler_main_0.so"));
  CliResult missing = run_grove("relay run " + dir.file("prog"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.output,
              HasSubstr(dir.file("prog") + "/manifest.json: entry 0 (tvmgen_default_ccompiler_main_0)"));
  EXPECT_THAT(missing.output, HasSubstr("tvmgen_default_ccompiler_main_0.so is missing"));
}

}  // namespace
}  // namespace grove::testing
