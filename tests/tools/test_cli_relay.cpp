// `grove relay` as a user runs it: check, opt, equal, run and ops, with their outputs, their
// user errors (message and exit status 1) and the rule that no input is ever overwritten.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/relay/Metadata.h"
#include "frontend/relay/NDArrayIO.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

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

// Both executors write the MLP's result, equal to PyTorch's.
TEST(CliRelay, RunWritesTheResultOfTheMlp) {
  TempDir dir;
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/mlp.safetensors");
  std::string args;
  for (const char *name : {"x", "w1", "b1", "w2", "b2"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  const relay::NDArray &expected = fixture.at("expected");
  for (const char *executor : {"interp", "vm"}) {
    SCOPED_TRACE(executor);
    const std::string out = dir.file(std::string("out_") + executor + ".npy");
    CliResult r =
        run_grove("relay run " + kModels + "mlp.relay" + args + " --executor " + executor + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    relay::NDArray result = relay::read_npy_array(out);
    ASSERT_EQ(result.shape(), expected.shape());
    for (int64_t i = 0; i < result.size(); ++i)
      EXPECT_NEAR(result.data<float>()[i], expected.data<float>()[i],
                  1e-5 + 1e-4 * std::fabs(expected.data<float>()[i]));
  }
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

// The TreeLSTM's weights from its fixture as --arg NAME=FILE.npy flags, and the fixture's expected
// root states (one row per tree of fixtures/treelstm_trees.txt).
std::string treelstm_weight_args(const TempDir &dir, relay::NDArray *expected) {
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/treelstm.safetensors");
  std::string args;
  for (const char *name : {"emb", "W_iou", "U_iou", "b_iou", "U_f", "b_f"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  *expected = fixture.at("expected");
  return args;
}

// Checks OUT/0.npy ... OUT/(count-1).npy, each [1, H], against the first `count` rows of `expected`.
void expect_rows(const std::string &out, const relay::NDArray &expected, int64_t count) {
  const int64_t h = expected.shape()[1];
  for (int64_t i = 0; i < count; ++i) {
    relay::NDArray row = relay::read_npy_array(out + "/" + std::to_string(i) + ".npy");
    ASSERT_EQ(row.shape(), (relay::Shape{1, h})) << i;
    for (int64_t j = 0; j < h; ++j) {
      float e = expected.data<float>()[i * h + j];
      EXPECT_NEAR(row.data<float>()[j], e, 1e-5 + 1e-4 * std::fabs(e)) << "tree " << i << ", column " << j;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(out + "/" + std::to_string(count) + ".npy"));
}

TEST(CliRelay, RunBindsTreesAndWritesAListOfTensorsAsADirectory) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  const std::string trees = " --trees " + kModels + "fixtures/treelstm_trees.txt";
  for (const char *executor : {"interp", "vm"}) {
    const std::string out = dir.file(std::string("out_") + executor);
    CliResult r = run_grove("relay run " + kModels + "treelstm.relay" + trees + args + " --executor " +
                            executor + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    expect_rows(out, expected, expected.shape()[0]);
  }
  // Without --out the list is printed.
  CliResult r = run_grove("relay run " + kModels + "treelstm.relay" + trees + args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Cons(Tensor[(1, 8), float32] ["));
}

// A module as TVM prints it, constants in a #[metadata] section: run as it is, and `opt --meta inline`
// writes the section back (without --out too); the sidecar form still needs --out.
TEST(CliRelay, ReadsAndWritesTvmsMetadataSection) {
  TempDir dir;
  relay::NDArray bias(relay::DType::Float32, {3});
  for (int i = 0; i < 3; ++i) bias.data<float>()[i] = 0.5f * float(i + 1);
  write_text(dir.file("printed.relay"),
             "#[version = \"0.0.5\"]\n"
             "def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {\n"
             "  add(%x, meta[relay.Constant][0])\n}\n\n#[metadata]\n" +
                 relay::write_tvm_metadata({bias}));
  relay::NDArray x(relay::DType::Float32, {3});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = float(i);
  relay::write_npy_array(dir.file("x.npy"), x);
  CliResult r = run_grove("relay run " + dir.file("printed.relay") + " --arg x=" + dir.file("x.npy") +
                          " --out " + dir.file("y.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  relay::NDArray y = relay::read_npy_array(dir.file("y.npy"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y.data<float>()[i], float(i) + 0.5f * float(i + 1));

  r = run_grove("relay opt " + dir.file("printed.relay") + " --passes fold --meta inline");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\n#[metadata]\n{"));
  EXPECT_THAT(r.output, HasSubstr(relay::encode_tvm_ndarray(bias)));
  r = run_grove("relay opt " + dir.file("printed.relay") + " --passes fold --meta inline --out " +
                dir.file("inline.relay"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("inline.meta.safetensors")));
  r = run_grove("relay opt " + dir.file("printed.relay") + " --passes fold");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("write it with --out FILE.relay"));
  r = run_grove("relay opt " + dir.file("printed.relay") + " --passes fold --meta elsewhere");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--meta elsewhere: grove relay opt writes constants to the sidecar"));
}

// --threads sets the VM's threads (its kernels' and the recursive function's): on one thread and on
// three the TreeLSTM's rows equal PyTorch's; bench reports the count; the interpreter says it runs
// on one thread; a count below 1 is an error.
TEST(CliRelay, ThreadsSetTheVmsThreads) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  const std::string trees = " --trees " + kModels + "fixtures/treelstm_trees.txt";
  for (const char *threads : {"1", "3"}) {
    SCOPED_TRACE(threads);
    const std::string out = dir.file(std::string("out_") + threads);
    CliResult r = run_grove("relay run " + kModels + "treelstm.relay" + trees + args + " --threads " +
                            threads + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("note:")));
    expect_rows(out, expected, expected.shape()[0]);
  }
  CliResult r = run_grove("relay bench " + kModels + "treelstm.relay" + trees + args +
                          " --batch 4 --repeat 1 --threads 2 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"threads\":2,"));
  r = run_grove("relay run " + kModels + "treelstm.relay" + trees + args + " --executor interp --threads 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("grove: note: --threads applies to the VM; the interpreter (--executor interp) "
                        "runs on the calling thread"));
  r = run_grove("relay run " + kModels + "treelstm.relay" + trees + args + " --threads 0");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--threads"));
}

// The VM runs @main's map of @treelstm as one batched call of grove's compiled function; --stage ilir
// prints what that function compiles to (the weights' shapes from --arg, the `?` named otherwise).
TEST(CliRelay, DumpShowsTheRecursiveFunctionCompiledByGrove) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  CliResult r = run_grove("relay dump " + kModels + "treelstm.relay --stage vm");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("InvokeExternal $7 <- ext0($0, $1, $2, $3, $4, $5, $6)"));
  EXPECT_THAT(r.output,
              HasSubstr("ext0: @grove_map_treelstm: @treelstm over a List (grove recursive compiler)"));
  // --stage claimed: the module the VM compiler fuses, as Relay text: the map over the trees became
  // a call of the claimed function, whose body is the map as written, marked for grove.
  r = run_grove("relay dump " + kModels + "treelstm.relay --stage claimed");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("def @grove_map_treelstm("));
  EXPECT_THAT(r.output, HasSubstr("Compiler=\"grove\""));
  EXPECT_THAT(r.output, HasSubstr("@grove_map_treelstm(%trees"));
  EXPECT_THAT(r.output, StartsWith("#[version = \"0.0.5\"]"));
  r = run_grove("relay dump " + kModels + "treelstm.relay --stage claimed --arg emb=x.npy");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not with --stage claimed"));
  r = run_grove("relay dump " + kModels + "treelstm.relay --stage ilir" + args);
  ASSERT_EQ(r.status, 0) << r.output;
  const int64_t h = expected.shape()[1];
  EXPECT_THAT(r.output, HasSubstr("// @treelstm, compiled by grove's recursive compiler\n"));
  EXPECT_THAT(r.output,
              HasSubstr("  param U_f[" + std::to_string(2 * h) + ", " + std::to_string(2 * h) + "]\n"));
  EXPECT_THAT(r.output, HasSubstr("  output g_all\n"));
  r = run_grove("relay dump " + kModels + "treelstm.relay --stage ilir");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("treelstm.relay:17:32: @treelstm's parameter %emb has type Tensor[(?, ?), "
                        "float32], whose shape is not fully known; --stage ilir needs every weight's "
                        "shape: give it with --arg emb=FILE.npy"));
  r = run_grove("relay dump " + kModels + "treelstm.relay --stage ilir" + args +
                " --arg nope=" + dir.file("emb.npy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("--arg nope: no global that grove's recursive compiler compiles has a weight "
                        "parameter %nope (%emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f)"));
  r = run_grove("relay dump " + kModels + "mlp.relay --stage ilir");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no global is compiled by grove's recursive compiler"));
}

TEST(CliRelay, RunLooksTreeTokensUpInTheVocabulary) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  std::string vocab;
  for (int i = 0; i < 20; ++i) vocab += "w" + std::to_string(i) + "\n";
  write_text(dir.file("vocab.txt"), vocab);
  // The fixture's first two trees, (0 14) and (0 (0 18) (0 17)), in words.
  write_text(dir.file("trees.txt"), "(0 w14)\n(0 (0 w18) (0 w17))\n");
  CliResult r =
      run_grove("relay run " + kModels + "treelstm.relay --trees " + dir.file("trees.txt") + " --vocab " +
                dir.file("vocab.txt") + args + " --executor vm --out " + dir.file("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  expect_rows(dir.file("out"), expected, 2);
}

TEST(CliRelay, RunReadsAValueInRelaysSyntax) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  write_text(dir.file("trees.val"), "Cons(Leaf(14), Cons(Node(Leaf(18), Leaf(17)), Nil))\n");
  for (const char *executor : {"interp", "vm"}) {
    const std::string out = dir.file(std::string("out_") + executor);
    CliResult r = run_grove("relay run " + kModels + "treelstm.relay --arg trees=@" + dir.file("trees.val") +
                            args + " --executor " + executor + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    expect_rows(out, expected, 2);
  }

  // Tuples and scalar literals; a tuple result without --out is printed.
  write_text(dir.file("pair.relay"), R"(#[version = "0.0.5"]
def @main(%p: (float32, int64), %flag: bool) -> (float32, int64) {
  if (%flag) { (negative(%p.0), add(%p.1, 1i64)) } else { %p }
}
)");
  write_text(dir.file("p.val"), "(1.5f, -2i64)");
  write_text(dir.file("flag.val"), "True");
  for (const char *executor : {"interp", "vm"}) {
    CliResult r = run_grove("relay run " + dir.file("pair.relay") + " --arg p=@" + dir.file("p.val") +
                            " --arg flag=@" + dir.file("flag.val") + " --executor " + executor);
    ASSERT_EQ(r.status, 0) << r.output;
    // HasSubstr: under AddressSanitizer, Halide's JIT runtime adds a warning line on stderr.
    EXPECT_THAT(r.output, HasSubstr("(-1.5f, -1i64)\n"));
  }
}

TEST(CliRelay, RunValueErrorsNameTheParameterAndBothTypes) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  const std::string run = "relay run " + kModels + "treelstm.relay" + args + " --arg trees=@";

  write_text(dir.file("int64.val"), "Cons(Leaf(14i64), Nil)");
  CliResult r = run_grove(run + dir.file("int64.val"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("parameter %trees has type List[Tree[int32]], but the value has type "
                                  "List[Tree[int64]]"));

  write_text(dir.file("mixed.val"), "Cons(Leaf(1), Cons(2f, Nil))");
  r = run_grove(run + dir.file("mixed.val"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("parameter %trees has type List[Tree[int32]], but the value does not type-check"));
  EXPECT_THAT(r.output, HasSubstr("mixed.val:1:15"));

  // Written with Cons, a list nests one level per element: past the parser's 500 levels it is an
  // error that says so.
  std::string deep;
  for (int i = 0; i < 600; ++i) deep += "Cons(Leaf(1), ";
  write_text(dir.file("deep.val"), deep + "Nil" + std::string(600, ')'));
  r = run_grove(run + dir.file("deep.val"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nested too deeply"));
  EXPECT_THAT(r.output, HasSubstr("a value file nests at most 500 levels"));

  write_text(dir.file("free.val"), "free_var %x: int32;\nCons(Leaf(%x), Nil)");
  r = run_grove(run + dir.file("free.val"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the value has a free variable %x"));

  r = run_grove(run + dir.file("missing.val"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("missing.val"));
  EXPECT_THAT(r.output, Not(HasSubstr("bug in grove")));

  // A .npy file for a list parameter says how to give it.
  r = run_grove("relay run " + kModels + "treelstm.relay" + args + " --arg trees=" + dir.file("emb.npy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("NAME=@FILE"));
}

TEST(CliRelay, RunTreeErrorsNameTheTreeAndTheParameter) {
  TempDir dir;
  relay::NDArray expected;
  std::string args = treelstm_weight_args(dir, &expected);
  write_text(dir.file("ternary.txt"), "(0 1)\n(0 (0 1) (0 2) (0 3))\n");
  CliResult r =
      run_grove("relay run " + kModels + "treelstm.relay --trees " + dir.file("ternary.txt") + args);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("ternary.txt:2: node 3 of this tree (numbered in post-order) has 3 children"));

  // A tree parameter given by --arg is not the one --trees binds.
  write_text(dir.file("trees.val"), "Nil");
  r = run_grove("relay run " + kModels + "treelstm.relay --trees " + dir.file("ternary.txt") +
                " --arg trees=@" + dir.file("trees.val") + args);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("that --arg does not give"));

  r = run_grove("relay run " + kModels + "mlp.relay --trees " + dir.file("ternary.txt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("has no parameter of type List[Tree[int32]] or List[Rose[int32]]"));

  write_text(dir.file("two.relay"), R"(#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]), }
type Rose[A] { Rose(A, List[Rose[A]]), }
def @main(%a: List[Tree[int32]], %b: List[Rose[int32]]) { (%a, %b) }
)");
  r = run_grove("relay run " + dir.file("two.relay") + " --trees " + dir.file("ternary.txt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("several parameters that take trees (%a: List[Tree[int32]], %b: "
                                  "List[Rose[int32]])"));

  // Any arity binds to a Rose parameter; the other tree parameter comes from a value file.
  r = run_grove("relay run " + dir.file("two.relay") + " --trees " + dir.file("ternary.txt") + " --arg a=@" +
                dir.file("trees.val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      r.output,
      HasSubstr("(Nil, Cons(Rose(1, Nil), Cons(Rose(-1, Cons(Rose(1, Nil), Cons(Rose(2, Nil), Cons(Rose(3, "
                "Nil), Nil)))), Nil)))\n"));
  write_text(dir.file("rose.relay"), R"(#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
type Rose[A] { Rose(A, List[Rose[A]]), }
def @main(%ts: List[Rose[int32]]) { %ts }
)");
  r = run_grove("relay run " + dir.file("rose.relay") + " --trees " + dir.file("ternary.txt"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Cons(Rose(1, Nil), Cons(Rose(-1, Cons(Rose(1, Nil), Cons(Rose(2, Nil), "
                                  "Cons(Rose(3, Nil), Nil)))), Nil))"));

  r = run_grove("relay run " + kModels + "mlp.relay --vocab " + dir.file("ternary.txt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("only read with --trees"));
}

// `grove relay bench`: the report's fields (never its timings, which depend on the machine).
TEST(CliRelayBench, ReportsOneCallPerPassWithoutTrees) {
  TempDir dir;
  relay::write_npy_array(dir.file("x.npy"), relay::NDArray(relay::DType::Float32, {4, 16}));
  for (const std::string executor : {"vm", "interp"}) {
    CliResult r = run_grove("relay bench " + kModels + "mlp.relay --executor " + executor +
                            " --arg x=" + dir.file("x.npy") + " --random-args 7 --repeat 3 --json");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("\"executor\":\"" + executor + "\""));
    EXPECT_THAT(r.output, HasSubstr("\"calls\":1,"));
    EXPECT_THAT(r.output, HasSubstr("\"repeat\":3,"));
    for (const char *field :
         {"\"compile_ms\":", "\"warmup_ms\":", "\"median_ms_per_call\":", "\"min_ms\":", "\"max_ms\":"})
      EXPECT_THAT(r.output, HasSubstr(field));
  }
  CliResult r = run_grove("relay bench " + kModels + "cnn.relay --random-args 1 --repeat 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("on the VM (vm)"));
  EXPECT_THAT(r.output, HasSubstr("1 call of @main per pass"));
  EXPECT_THAT(r.output, HasSubstr("ms per call (median of 2 passes after 1 warm-up; min "));
}

TEST(CliRelayBench, BindsTheTreeListPerBatch) {
  TempDir dir;
  write_text(dir.file("trees.relay"), R"(#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]), }
def @main(%ts: List[Tree[int32]], %w: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] { add(%w, %w) }
)");
  write_text(dir.file("five.txt"), "(1 (2 a) (3 b))\n(4 c)\n(1 (2 (3 a) (4 b)) (2 c))\n(0 d)\n(1 e)\n");
  write_text(dir.file("vocab.txt"), "a\nb\nc\nd\ne\n");
  std::string bench = "relay bench " + dir.file("trees.relay") + " --trees " + dir.file("five.txt") +
                      " --vocab " + dir.file("vocab.txt") + " --random-args 1";
  CliResult r = run_grove(bench + " --batch 2 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"trees\":5,"));
  EXPECT_THAT(r.output, HasSubstr("\"nodes\":11,"));  // 3 + 1 + 5 + 1 + 1
  EXPECT_THAT(r.output, HasSubstr("\"batch\":2,"));
  EXPECT_THAT(r.output, HasSubstr("\"calls\":3,"));  // 2 + 2 + 1
  r = run_grove(bench + " --batch 10 --executor interp");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("trees     5 from "));
  EXPECT_THAT(r.output, HasSubstr("11 nodes per pass, 1 call(s) of up to 10"));
  EXPECT_THAT(r.output, HasSubstr("on the interpreter (interp)"));

  r = run_grove("relay bench " + dir.file("trees.relay") + " --trees " + dir.file("five.txt") +
                " --random-args 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("how many trees one call of @main takes with --batch N"));
  r = run_grove(bench + " --batch 0");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--batch N"));
}

TEST(CliRelayBench, ReportsMistakes) {
  TempDir dir;
  // A `?` dimension cannot be filled at random: the message names the parameter and the dimension.
  CliResult r = run_grove("relay bench " + kModels + "mlp.relay --random-args 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mlp.relay:4:"));
  EXPECT_THAT(r.output,
              HasSubstr("cannot fill parameter %x of type Tensor[(?, 16), float32]: dimension 0 is `?`"));
  // Without --random-args a missing parameter is relay run's error.
  r = run_grove("relay bench " + kModels + "cnn.relay");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("parameter %image of"));
  EXPECT_THAT(r.output, HasSubstr("has no value"));
  r = run_grove("relay bench " + kModels + "cnn.relay --random-args 1 --batch 4");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--batch 4: a batch is a number of trees per call; it needs --trees"));
  r = run_grove("relay bench " + kModels + "cnn.relay --random-args 1 --repeat 0");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--repeat must be at least 1, got 0"));
  r = run_grove("relay bench " + kModels + "cnn.relay --random-args 1 --executor jit");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--executor jit"));
  // Only float32 tensors are filled.
  write_text(dir.file("int.relay"), R"(#[version = "0.0.5"]
def @main(%i: Tensor[(3), int32]) -> Tensor[(3), int32] { %i }
)");
  r = run_grove("relay bench " + dir.file("int.relay") + " --random-args 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fills float32 tensors only; parameter %i has type Tensor[(3), int32]"));
}
}  // namespace
}  // namespace grove::testing
