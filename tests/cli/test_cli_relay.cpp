// `grove relay` as a user runs it: check, opt, equal, run and ops, with their outputs, their
// user errors (message and exit status 1) and the rule that no input is ever overwritten.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "frontend/relay/NDArrayIO.h"
#include "tests/cli/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

TEST(CliRelay, CheckPrintsEveryBindingsType) {
  CliResult r = run_grove("relay check " + kModels + "mlp.relay");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ty=Tensor[(?, 32), float32]"));
  EXPECT_THAT(r.output, HasSubstr("nn.softmax"));
}

TEST(CliRelay, CheckReportsATypeErrorWithItsLocation) {
  TempDir dir;
  write_text(dir.file("bad.relay"), R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 3), float32]) {
  add(%x, %y)
}
)");
  CliResult r = run_grove("relay check " + dir.file("bad.relay"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad.relay:3:3"));
  EXPECT_THAT(r.output, HasSubstr("add"));
}

TEST(CliRelay, CheckReportsAParseErrorWithItsLocation) {
  TempDir dir;
  write_text(dir.file("bad.relay"),
             "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2, 3), float32]) {\n  add(%x, \n}\n");
  CliResult r = run_grove("relay check " + dir.file("bad.relay"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad.relay:4:1"));
  EXPECT_THAT(r.output, HasSubstr("expected"));
}

TEST(CliRelay, OptFusesIntoPrimitiveFunctions) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  CliResult r = run_grove("relay opt " + dir.file("add.relay") + " --passes fuse");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Primitive=1"));
}

TEST(CliRelay, OptWritesOutAtomicallyAndNeverOverAnInput) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  CliResult r =
      run_grove("relay opt " + dir.file("add.relay") + " --passes anf --out " + dir.file("add.relay"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("grove never overwrites its own inputs"));
  EXPECT_EQ(read_text(dir.file("add.relay")), kAddProgram);

  r = run_grove("relay opt " + dir.file("add.relay") + " --passes anf,graph --out " + dir.file("out.relay"));
  EXPECT_EQ(r.status, 0) << r.output;
  // The written module parses back and equals the input (anf then graph is the identity here).
  r = run_grove("relay equal " + dir.file("add.relay") + " " + dir.file("out.relay"));
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(CliRelay, OptRejectsAnUnknownPass) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  CliResult r = run_grove("relay opt " + dir.file("add.relay") + " --passes dce,speedup");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no pass named 'speedup'"));
  EXPECT_THAT(r.output, HasSubstr("dce, fold, cse, inline, anf, graph, fuse"));
}

TEST(CliRelay, EqualMapsVariablesAndShowsTheFirstDifference) {
  TempDir dir;
  write_text(dir.file("a.relay"), kAddProgram);
  std::string renamed = kAddProgram;
  for (auto [from, to] : {std::pair<std::string, std::string>{"%x", "%lhs"}, {"%y", "%rhs"}})
    for (size_t at; (at = renamed.find(from)) != std::string::npos;) renamed.replace(at, from.size(), to);
  write_text(dir.file("b.relay"), renamed);
  std::string different = kAddProgram;
  different.replace(different.find("2f"), 2, "3f");
  write_text(dir.file("c.relay"), different);

  CliResult r = run_grove("relay equal " + dir.file("a.relay") + " " + dir.file("b.relay"));
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_grove("relay equal " + dir.file("a.relay") + " " + dir.file("c.relay"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not equal"));
}

TEST(CliRelay, RunWritesTheResultOfTheMlp) {
  TempDir dir;
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/mlp.safetensors");
  std::string args;
  for (const char *name : {"x", "w1", "b1", "w2", "b2"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  CliResult r = run_grove("relay run " + kModels + "mlp.relay" + args + " --out " + dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  relay::NDArray out = relay::read_npy_array(dir.file("out.npy"));
  const relay::NDArray &expected = fixture.at("expected");
  ASSERT_EQ(out.shape(), expected.shape());
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out.data<float>()[i], expected.data<float>()[i],
                1e-5 + 1e-4 * std::fabs(expected.data<float>()[i]));
}

TEST(CliRelay, RunWithTheVmGivesTheMlpsResult) {
  TempDir dir;
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/mlp.safetensors");
  std::string args;
  for (const char *name : {"x", "w1", "b1", "w2", "b2"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  CliResult r =
      run_grove("relay run " + kModels + "mlp.relay" + args + " --executor vm --out " + dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  relay::NDArray out = relay::read_npy_array(dir.file("out.npy"));
  const relay::NDArray &expected = fixture.at("expected");
  ASSERT_EQ(out.shape(), expected.shape());
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out.data<float>()[i], expected.data<float>()[i],
                1e-5 + 1e-4 * std::fabs(expected.data<float>()[i]));
}

TEST(CliRelay, DumpVmPrintsTheBytecode) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  CliResult r = run_grove("relay dump " + dir.file("add.relay") + " --stage vm");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("@main: 0 captured, 2 params, 3 registers, 0 storage\n"
                                  "  0: InvokeKernel ($2) <- k0($0, $1)\n"
                                  "  1: Ret $2\n"
                                  "k0: add+multiply\n"));
  r = run_grove("relay dump " + dir.file("add.relay") + " --stage graph");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--stage vm"));
}

TEST(CliRelay, RunWritesATupleAsADirectoryOfArrays) {
  TempDir dir;
  write_text(dir.file("pair.relay"), R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  (negative(%x), (%x, 2i64))
}
)");
  relay::NDArray x(relay::DType::Float32, {2});
  x.data<float>()[0] = 1.5f;
  x.data<float>()[1] = -2.0f;
  relay::write_npy_array(dir.file("x.npy"), x);
  CliResult r = run_grove("relay run " + dir.file("pair.relay") + " --arg x=" + dir.file("x.npy") +
                          " --out " + dir.file("result"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(relay::read_npy_array(dir.file("result/0.npy")).data<float>()[0], -1.5f);
  EXPECT_EQ(relay::read_npy_array(dir.file("result/1.0.npy")).data<float>()[1], -2.0f);
  EXPECT_EQ(relay::read_npy_array(dir.file("result/1.1.npy")).data<int64_t>()[0], 2);
}

TEST(CliRelay, RunErrorsNameTheParameter) {
  TempDir dir;
  write_text(dir.file("add.relay"), kAddProgram);
  relay::write_npy_array(dir.file("x.npy"), relay::NDArray(relay::DType::Float32, {2, 3}));
  relay::write_npy_array(dir.file("y.npy"), relay::NDArray(relay::DType::Float32, {4}));
  CliResult r = run_grove("relay run " + dir.file("add.relay") + " --arg x=" + dir.file("x.npy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("parameter %y"));

  r = run_grove("relay run " + dir.file("add.relay") + " --arg x=" + dir.file("x.npy") +
                " --arg y=" + dir.file("y.npy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("%y"));
  EXPECT_THAT(r.output, Not(HasSubstr("bug in grove")));

  r = run_grove("relay run " + dir.file("add.relay") + " --arg z=" + dir.file("x.npy"));
  EXPECT_EQ(r.status, 1) << r.output;

  r = run_grove("relay run " + dir.file("add.relay") + " --executor jit");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--executor interp"));

  r = run_grove("relay run " + dir.file("add.relay") + " --arg x=" + dir.file("x.npy") +
                " --arg y=" + dir.file("y.npy") + " --out " + dir.file("x.npy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("grove never overwrites its own inputs"));
}

TEST(CliRelay, OpsListsTheOperatorTable) {
  CliResult r = run_grove("relay ops");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char *op : {"nn.conv2d", "nn.dense", "add", "strided_slice", "nn.batch_norm", "where"})
    EXPECT_THAT(r.output, HasSubstr(op));
}

}  // namespace
}  // namespace grove::testing
