// The ccompiler code generator (backends/relay/byoc/CCompiler.h): partitioned functions written by
// hand, compiled to C by the system compiler and run, against the interpreter running the same
// function — bit for bit (the C code rounds exactly where the interpreter's kernels do) — and hand
// computations; broadcasting, constants bound into the function, tuple results, let-bound bodies,
// one kernel per shape, the target's predicates, errors (an unsupported op, a missing or failing C
// compiler), temporaries cleaned up, a golden check of the emitted C text, and end to end: a module
// partitioned for ccompiler on the VM against the unpartitioned module on the interpreter.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/relay/byoc/CCompiler.h"
#include "backends/relay/byoc/CSourceEmitter.h"
#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "support/Error.h"
#include "tests/relay/CodegenTestUtil.h"

namespace grove::relay {
namespace {

using testing::flatten;
using ::testing::HasSubstr;
using testing::random_array;
using testing::ScopedEnv;
using testing::shapes_of;
using testing::user_error_of;

// `body` as @f(params) with the attributes partition_graph gives a ccompiler function.
Module partitioned(const std::string &params, const std::string &body,
                   const std::vector<NDArray> &meta = {}) {
  Module m = parse_module("def @f(" + params +
                              ", Primitive=1, Inline=1, Compiler=\"ccompiler\", global_symbol=\"f\") {\n" +
                              body + "\n}\n",
                          "ccompiler.relay", meta);
  infer_types(m);
  return m;
}

const Expr &function_f(const Module &m) { return *m.find_function("f"); }

NDArray array(const Shape &shape, const std::vector<float> &values) {
  NDArray a(DType::Float32, shape);
  EXPECT_EQ(static_cast<size_t>(a.size()), values.size());
  std::copy(values.begin(), values.end(), a.data<float>());
  return a;
}

// @f's kernel from the ccompiler, for `inputs`' shapes.
std::shared_ptr<Kernel> compile_f(KernelCompiler &compiler, const Module &m,
                                  const std::vector<NDArray> &inputs) {
  return compiler.compile(function_f(m), std::vector<DType>(inputs.size(), DType::Float32), shapes_of(inputs))
      .kernel();
}

// Runs @f compiled by the ccompiler and by the interpreter; expects the same outputs, bit for bit.
// Returns the compiled outputs.
std::vector<NDArray> expect_same_as_interpreter(const Module &m, const std::vector<NDArray> &inputs) {
  auto compiler = make_ccompiler_kernel_compiler();
  std::vector<NDArray> actual = compile_f(*compiler, m, inputs)->run(inputs);
  std::vector<Value> args;
  for (const NDArray &a : inputs) args.push_back(tensor_value(a));
  std::vector<NDArray> expected;
  flatten(apply(m, global_function(m, "f"), args), expected);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
    EXPECT_TRUE(actual[i].bitwise_equal(expected[i]))
        << "output " << i << ": " << value_to_string(tensor_value(actual[i])) << " vs "
        << value_to_string(tensor_value(expected[i]));
  return actual;
}

TEST(CCompiler, AddSubtractMultiplyChainEqualsInterpreter) {
  Module m = partitioned("%x: Tensor[(4, 5), float32], %y: Tensor[(4, 5), float32]",
                         "%0 = add(%x, %y); %1 = subtract(%0, %x); %2 = multiply(%1, %0); divide(%2, %y)");
  expect_same_as_interpreter(m, {random_array({4, 5}, 1), random_array({4, 5}, 2, 0.5f, 2.0f)});
}

TEST(CCompiler, BroadcastsColumnAgainstRow) {
  Module m = partitioned("%x: Tensor[(3, 1), float32], %y: Tensor[(1, 4), float32]", "add(%x, %y)");
  std::vector<NDArray> out =
      expect_same_as_interpreter(m, {array({3, 1}, {0, 1, 2}), array({1, 4}, {10, 20, 30, 40})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), Shape({3, 4}));
  // By hand: out[i][j] = x[i] + y[j].
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[0].data<float>()[i * 4 + j], i + 10.0f * (j + 1));
}

TEST(CCompiler, BroadcastsAcrossRanksAndScalarConstants) {
  Module m = partitioned(
      "%x: Tensor[(2, 3, 4), float32], %y: Tensor[(4), float32], %z: Tensor[(2, 1, 4), float32], "
      "%w: Tensor[(3, 1), float32]",
      "%0 = multiply(%x, %y); %1 = subtract(%z, %w); %2 = add(%0, %1); %3 = add(%2, 1.5f);"
      "multiply(-2f, %3)");
  expect_same_as_interpreter(m, {random_array({2, 3, 4}, 3), random_array({4}, 4), random_array({2, 1, 4}, 5),
                                 random_array({3, 1}, 6)});
}

TEST(CCompiler, RankZeroTensors) {
  Module m =
      partitioned("%x: Tensor[(), float32], %y: Tensor[(2), float32]", "%0 = add(%x, 1f); multiply(%0, %y)");
  std::vector<NDArray> out =
      expect_same_as_interpreter(m, {NDArray::scalar(DType::Float32, 2.0), array({2}, {3, 4})});
  EXPECT_EQ(out[0].data<float>()[0], 9.0f);
  EXPECT_EQ(out[0].data<float>()[1], 12.0f);
}

TEST(CCompiler, BoundConstantIsHandedOverAtInit) {
  NDArray bias = random_array({1, 4}, 7);
  Module m = partitioned("%x: Tensor[(3, 4), float32]", "%0 = add(%x, meta[relay.Constant][0]); nn.relu(%0)",
                         {bias});
  auto compiler = make_ccompiler_kernel_compiler();
  auto kernel = compile_f(*compiler, m, {random_array({3, 4}, 8)});
  const auto *c_kernel = dynamic_cast<const CCompilerKernel *>(kernel.get());
  ASSERT_NE(c_kernel, nullptr);
  EXPECT_THAT(c_kernel->source(), HasSubstr("int f_init(const float *const *handed)"));
  EXPECT_THAT(c_kernel->source(), HasSubstr("const float *c0 = constants[0];"));
  expect_same_as_interpreter(m, {random_array({3, 4}, 8)});
}

TEST(CCompiler, TupleResultGivesEveryFieldFlattened) {
  // An op output, an op output twice, a parameter and a nested tuple: copies where storage is taken.
  Module m = partitioned("%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]",
                         "%0 = add(%x, %y); %1 = exp(%0); (%0, (%1, %0), %x, 2f)");
  std::vector<NDArray> out = expect_same_as_interpreter(m, {random_array({2, 3}, 9), random_array({3}, 10)});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(out[0].bitwise_equal(out[2]));
  EXPECT_EQ(out[4].data<float>()[0], 2.0f);
}

TEST(CCompiler, UnaryOpsEqualInterpreterBitForBit) {
  Module m = partitioned(
      "%x: Tensor[(64), float32], %p: Tensor[(64), float32]",
      "(exp(%x), tanh(%x), sigmoid(%x), erf(%x), negative(%x), abs(%x), nn.relu(%x), clip(%x, a_min=-0.5f, "
      "a_max=0.75f), log(%p), sqrt(%p), sqrt(%x))");
  NDArray x = random_array({64}, 11, -8.0f, 8.0f);
  x.data<float>()[0] = -0.0f;  // relu, abs and negative of a signed zero
  x.data<float>()[1] = NAN;
  expect_same_as_interpreter(m, {x, random_array({64}, 12, 0.0f, 100.0f)});
}

TEST(CCompiler, LetBoundBodyAndTupleProjections) {
  Module m =
      partitioned("%x: Tensor[(5), float32]",
                  "let %a = add(%x, %x); let %t = (%a, %x); let %b = multiply(%t.0, %t.1); (%b, %t.0)");
  expect_same_as_interpreter(m, {random_array({5}, 13)});
}

TEST(CCompiler, OneKernelPerShape) {
  Module m = partitioned("%x: Tensor[(?, 4), float32]", "multiply(%x, %x)");
  auto compiler = make_ccompiler_kernel_compiler();
  auto k2 = compile_f(*compiler, m, {random_array({2, 4}, 14)});
  auto k3 = compile_f(*compiler, m, {random_array({3, 4}, 15)});
  EXPECT_NE(k2.get(), k3.get());
  EXPECT_EQ(compile_f(*compiler, m, {random_array({2, 4}, 16)}).get(), k2.get());
  expect_same_as_interpreter(m, {random_array({3, 4}, 15)});
  EXPECT_THAT(user_error_of([&] {
                k2->run({random_array({3, 4}, 15)});
              }),
              HasSubstr("was compiled for a float32 input 0 of shape (2, 4), found float32 of shape (3, 4)"));
}

TEST(CCompiler, DescribeNamesSymbolAndOps) {
  Module m = partitioned("%x: Tensor[(2), float32]", "%0 = add(%x, %x); %1 = exp(%0); negative(%1)");
  auto compiler = make_ccompiler_kernel_compiler();
  EXPECT_EQ(compile_f(*compiler, m, {random_array({2}, 17)})->describe(), "ccompiler: f (3 ops)");
  EXPECT_EQ(compiler->name(), "ccompiler");
}

TEST(CCompiler, UnsupportedOpIsUnsupportedNamingIt) {
  // Not the user's mistake: an unsupported result (Kernel.h's one "cannot"), never a UserError.
  Module m = partitioned("%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]",
                         "%0 = add(%x, %x);\n  nn.dense(%0, %w)");
  auto compiler = make_ccompiler_kernel_compiler();
  const std::string reason = GROVE_UNSUPPORTED_REASON(
      compiler->compile(function_f(m), {DType::Float32, DType::Float32}, {{2, 3}, {4, 3}}));
  EXPECT_THAT(reason, HasSubstr("cannot compile the operator nn.dense (at ccompiler.relay:3:3)"));
  EXPECT_THAT(reason, HasSubstr("abs, add, clip, divide"));
}

TEST(CCompiler, OtherDtypesAreUnsupported) {
  Module m = partitioned("%x: Tensor[(2), int32]", "add(%x, %x)");
  auto compiler = make_ccompiler_kernel_compiler();
  EXPECT_THAT(GROVE_UNSUPPORTED_REASON(compiler->compile(function_f(m), {DType::Int32}, {{2}})),
              HasSubstr("computes float32 only; input 0 is int32"));
  std::string message;
  try {
    emit_c_source(function_f(m), {{2}});
    ADD_FAILURE() << "emit_c_source compiled an int32 parameter";
  } catch (const CSourceUnsupported &why) {
    message = why.what();
  }
  EXPECT_THAT(message, HasSubstr("cannot compile parameter %x of type Tensor[(2), int32]"));
}

TEST(CCompiler, MissingCompilerIsUserError) {
  Module m = partitioned("%x: Tensor[(2), float32]", "add(%x, %x)");
  ScopedEnv cc("CC", "/nonexistent/grove-no-such-cc");
  auto compiler = make_ccompiler_kernel_compiler();
  const std::string message = user_error_of([&] { compile_f(*compiler, m, {random_array({2}, 1)}); });
  EXPECT_THAT(message, HasSubstr("could not build f"));
  EXPECT_THAT(message, HasSubstr("no such C compiler: install one, or name it in $CC"));
  EXPECT_THAT(message, HasSubstr("grove-no-such-cc"));
}

TEST(CCompiler, FailedCompileShowsCompilerMessageAndLeavesNoTemporaries) {
  Module m = partitioned("%x: Tensor[(2), float32]", "add(%x, %x)");
  char dir_template[] = "/tmp/grove-ccompiler-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path tmp = dir_template;
  {
    ScopedEnv tmpdir("TMPDIR", tmp.string());
    ScopedEnv cc("CC", "cc -include grove_missing_header.h");
    auto compiler = make_ccompiler_kernel_compiler();
    const std::string message = user_error_of([&] { compile_f(*compiler, m, {random_array({2}, 1)}); });
    EXPECT_THAT(message, HasSubstr("exit status 1"));
    EXPECT_THAT(message, HasSubstr("grove_missing_header.h"));
  }
  {
    ScopedEnv tmpdir("TMPDIR", tmp.string());
    auto compiler = make_ccompiler_kernel_compiler();
    auto kernel = compile_f(*compiler, m, {random_array({2}, 1)});
    EXPECT_EQ(kernel->run({array({2}, {1, 2})})[0].data<float>()[1], 4.0f);  // loaded, its files gone
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  std::filesystem::remove_all(tmp);
}

// Each op reads the two before it, so workspace blocks are reused while others are live.
TEST(CCompiler, WorkspaceBlocksAreReusedSafely) {
  std::string body = "%0 = add(%x, %y); %1 = multiply(%0, %x);";
  for (int i = 2; i < 40; ++i)
    body += fmt::format(" %{} = {}(%{}, %{});", i, i % 3 == 0 ? "subtract" : "multiply", i - 1, i - 2);
  body += " (%39, %20)";
  Module m = partitioned("%x: Tensor[(3, 4), float32], %y: Tensor[(4), float32]", body);
  const CSource source = emit_c_source(function_f(m), {{3, 4}, {4}});
  EXPECT_THAT(source.text, HasSubstr("malloc(sizeof(float) * 36)"));  // three blocks of 12, not 38
  expect_same_as_interpreter(m, {random_array({3, 4}, 18, 0.9f, 1.1f), random_array({4}, 19, 0.9f, 1.1f)});
}

// A partition of 10,000 chained ops (deep IR): emitted without recursion, in a workspace of two blocks.
TEST(CCompiler, DeepChainEmitsIteratively) {
  std::string body = "%0 = add(%x, %x);";
  for (int i = 1; i < 10000; ++i) body += fmt::format(" %{} = add(%{}, %x);", i, i - 1);
  body += " negative(%9999)";
  Module m = partitioned("%x: Tensor[(4), float32]", body);
  const CSource source = emit_c_source(function_f(m), {{4}});
  EXPECT_EQ(source.num_ops, 10001);
  EXPECT_THAT(source.text, HasSubstr("malloc(sizeof(float) * 8)"));
}

// The C text for one small function: two broadcasts, a bound constant, a literal, clip, and a tuple
// result whose second field is an intermediate. Changes to the emitter show up here.
TEST(CCompiler, GoldenCSource) {
  Module m =
      partitioned("%x: Tensor[(3, 1), float32], %y: Tensor[(1, 4), float32]",
                  "%0 = add(%x, %y); %1 = multiply(%0, meta[relay.Constant][0]); %2 = subtract(%1, 0.5f);"
                  "(clip(%2, a_min=0f, a_max=6f), %0)",
                  {array({4}, {1, 2, 3, 4})});
  const CSource source = emit_c_source(function_f(m), {{3, 1}, {1, 4}});
  EXPECT_EQ(source.symbol, "f");
  EXPECT_EQ(source.init_symbol, "f_init");
  EXPECT_EQ(source.num_ops, 4);
  EXPECT_EQ(source.output_shapes, std::vector<Shape>({{3, 4}, {3, 4}}));
  EXPECT_EQ(source.text, R"(/* grove ccompiler: f, 4 ops on float32 (generated). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float grove_clip(float x, float lo, float hi) {
  const float v = x < hi ? x : hi;
  return v > lo ? v : lo;
}

/* The bound constants, handed over once by f_init. */
static const float *constants[1];

int f_init(const float *const *handed) {
  for (int i = 0; i < 1; ++i) constants[i] = handed[i];
  return 0;
}

int f(const float *const *inputs, float *const *outputs) {
  const float *in0 = inputs[0]; /* %x: (3, 1) */
  const float *in1 = inputs[1]; /* %y: (1, 4) */
  const float *c0 = constants[0]; /* (4,) */
  float *ws = (float *)malloc(sizeof(float) * 24);
  if (ws == NULL) return 1;
  float *t0 = outputs[1];
  float *t1 = ws;
  float *t2 = ws + 12;
  float *t3 = outputs[0];
  /* t0 = add(in0, in1): (3, 4) */
  for (int64_t i0 = 0; i0 < 3; ++i0) {
    for (int64_t i1 = 0; i1 < 4; ++i1) {
      t0[i0 * 4 + i1] = in0[i0] + in1[i1];
    }
  }
  /* t1 = multiply(t0, c0): (3, 4) */
  for (int64_t i0 = 0; i0 < 3; ++i0) {
    for (int64_t i1 = 0; i1 < 4; ++i1) {
      t1[i0 * 4 + i1] = t0[i0 * 4 + i1] * c0[i1];
    }
  }
  /* t2 = subtract(t1, 0.5f): (3, 4) */
  for (int64_t i0 = 0; i0 < 12; ++i0) {
    t2[i0] = t1[i0] - 0.5f;
  }
  /* t3 = clip(t2): (3, 4) */
  for (int64_t i0 = 0; i0 < 12; ++i0) {
    t3[i0] = grove_clip(t2[i0], 0.0f, 6.0f);
  }
  free(ws);
  return 0;
}
)");
}

// Records what each compiled kernel is, passing compilation on.
class RecordingCompiler : public KernelCompiler {
 public:
  RecordingCompiler(std::unique_ptr<KernelCompiler> inner, std::vector<std::string> *kernels)
      : inner_(std::move(inner)), kernels_(kernels) {}
  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    KernelResult kernel = inner_->compile(primitive, dtypes, shapes);
    kernels_->push_back(kernel.ok() ? kernel.kernel()->describe()
                                    : "unsupported: " + kernel.unsupported().reason);
    return kernel;
  }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<KernelCompiler> inner_;
  std::vector<std::string> *kernels_;
};

// End to end: a module partitioned for ccompiler (dense and softmax stay with grove) runs on the VM
// with the ccompiler's kernel for the elementwise region, bit for bit as the unpartitioned module on
// the interpreter.
TEST(CCompiler, PartitionedModuleOnVMEqualsUnpartitioned) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(6, 8), float32], %b: Tensor[(6), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%0, %b);
  %2 = nn.relu(%1);
  %3 = multiply(%2, 0.5f);
  %4 = subtract(%3, meta[relay.Constant][0]);
  (nn.softmax(%4), %2)
}
)",
                          "e2e.relay", {random_array({6}, 20)});
  infer_types(m);
  Module partitioned_module = partition_for_targets(m, {"ccompiler"});
  const Expr *region = partitioned_module.find_function("tvmgen_default_ccompiler_main_0");
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->as<Function>()->attrs.find(attr::kCompiler)->s, "ccompiler");

  std::vector<Value> args{tensor_value(random_array({4, 8}, 21)), tensor_value(random_array({6, 8}, 22)),
                          tensor_value(random_array({6}, 23))};
  vm::Executable exe = vm::compile(partitioned_module);
  std::vector<std::string> kernels;
  auto compiler = std::make_unique<RecordingCompiler>(
      make_external_kernel_compiler(make_interpreter_kernel_compiler(exe.module)), &kernels);
  VirtualMachine machine(std::move(exe), std::move(compiler));
  std::vector<NDArray> actual, expected;
  flatten(machine.run_main(args), actual);
  flatten(run_main(m, args), expected);
  ASSERT_EQ(actual.size(), 2u);
  ASSERT_EQ(expected.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(actual[i].bitwise_equal(expected[i])) << "output " << i;
  EXPECT_THAT(kernels, ::testing::Contains("ccompiler: tvmgen_default_ccompiler_main_0 (4 ops)"));
}

TEST(CCompiler, TargetClaimsFloat32ElementwiseOfKnownShape) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(?, 3), float32], %i: Tensor[(2, 3), int32],
          %w: Tensor[(4, 3), float32]) {
  (add(%x, %x), add(%y, %y), add(%i, %i), nn.dense(%x, %w), sigmoid(%x), less(%x, %x))
}
)",
                          "target.relay");
  infer_types(m);
  const ExternalTarget target = find_codegen("ccompiler").target();
  EXPECT_EQ(target.name, "ccompiler");
  std::vector<bool> claimed;
  for (const Expr &field : m.find_function("main")->as<Function>()->body.as<Tuple>()->fields)
    claimed.push_back(target.supports(*field.as<Call>()));
  EXPECT_EQ(claimed, std::vector<bool>({true, false, false, false, true, false}));
  EXPECT_THAT(find_codegen("ccompiler").description, HasSubstr("C source"));
  EXPECT_NE(find_codegen("ccompiler").make_compiler(), nullptr);
}

}  // namespace
}  // namespace grove::relay
