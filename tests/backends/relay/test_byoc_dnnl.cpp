// The dnnl code generator (backends/relay/byoc/Dnnl.cpp): partitioned functions written by hand as
// partition_graph gives them (Compiler="dnnl", composite local functions called inside), compiled
// to oneDNN primitives and run, against the interpreter running the same function. oneDNN sums in
// float32 (the interpreter's dense and batch_matmul in double), so outputs must agree within
// |dnnl - interpreter| <= 1e-5 * max(1, max |interpreter|) per tensor. Also: the target's
// predicates and pattern table, one kernel per shape, the errors (an op dnnl lacks, a function of
// another code generator, an input of the wrong shape), and the MLP and CNN of models/relay
// partitioned for dnnl on the VM against the unpartitioned VM run (same tolerance).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/relay/VMRunner.h"
#include "backends/relay/byoc/Codegen.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/Visitor.h"
#include "support/Error.h"
#include "tests/relay/CodegenTestUtil.h"
#include "tests/relay/ModelFixtures.h"

namespace grove::relay {
namespace {

using testing::flatten;
using ::testing::HasSubstr;
using testing::random_array;
using testing::shapes_of;
using testing::user_error_of;

const Codegen &dnnl() { return find_codegen("dnnl"); }

// `body` as @f(params) with the attributes partition_graph gives a dnnl function; typed.
Module partitioned(const std::string &params, const std::string &body,
                   const std::vector<NDArray> &meta = {}) {
  Module m = parse_module("def @f(" + params +
                              ", Primitive=1, Inline=1, Compiler=\"dnnl\", global_symbol=\"f\") {\n" + body +
                              "\n}\n",
                          "dnnl.relay", meta);
  infer_types(m);
  return m;
}

std::shared_ptr<Kernel> compile_f(KernelCompiler &compiler, const Module &m,
                                  const std::vector<NDArray> &inputs) {
  return compiler
      .compile(*m.find_function("f"), std::vector<DType>(inputs.size(), DType::Float32), shapes_of(inputs))
      .kernel();
}

std::vector<NDArray> interpret_f(const Module &m, const std::vector<NDArray> &inputs) {
  std::vector<Value> args;
  for (const NDArray &a : inputs) args.push_back(tensor_value(a));
  std::vector<NDArray> out;
  flatten(apply(m, global_function(m, "f"), args), out);
  return out;
}

::testing::AssertionResult close(const NDArray &got, const NDArray &want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(got.shape()) << " vs " << shape_to_string(want.shape());
  double scale = 1.0;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::abs(want.element_as_double(i)));
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    if (!(std::abs(g - w) <= 1e-5 * scale))
      return ::testing::AssertionFailure() << "element " << i << ": dnnl " << g << ", interpreter " << w;
  }
  return ::testing::AssertionSuccess();
}

// Runs @f compiled by dnnl (twice: the second run reuses the kernel's memories) and by the
// interpreter; expects the same outputs within the tolerance. Returns the kernel's description.
std::string expect_close_to_interpreter(const Module &m, const std::vector<NDArray> &inputs) {
  auto compiler = dnnl().make_compiler();
  std::shared_ptr<Kernel> kernel = compile_f(*compiler, m, inputs);
  std::vector<NDArray> expected = interpret_f(m, inputs);
  for (int run = 0; run < 2; ++run) {
    std::vector<NDArray> actual = kernel->run(inputs);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
      EXPECT_TRUE(close(actual[i], expected[i]))
          << "run " << run << ", output " << i << " of " << kernel->describe();
  }
  return kernel->describe();
}

std::vector<NDArray> random_inputs(const std::vector<Shape> &shapes, unsigned seed = 1) {
  std::vector<NDArray> in;
  for (const Shape &s : shapes) in.push_back(random_array(s, seed++));
  return in;
}

// ---------------------------------------------------------------------------------------------
// Single ops
// ---------------------------------------------------------------------------------------------

TEST(DnnlCodegen, DenseIsAnInnerProduct) {
  Module m =
      partitioned("%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32]", "nn.dense(%x, %w, units=5)");
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{2, 8}, {5, 8}})), "dnnl: nn.dense");
}

TEST(DnnlCodegen, DenseFoldsLeadingDataDimensions) {
  Module m = partitioned("%x: Tensor[(2, 3, 7), float32], %w: Tensor[(11, 7), float32]", "nn.dense(%x, %w)");
  expect_close_to_interpreter(m, random_inputs({{2, 3, 7}, {11, 7}}));
}

TEST(DnnlCodegen, DenseWithAConstantWeightOfOddSize) {
  // The bound weight is reordered into oneDNN's layout at compile time; 33 and 67 fit no vector width.
  Module m = partitioned("%x: Tensor[(3, 67), float32]", "nn.dense(%x, meta[relay.Constant][0])",
                         {random_array({33, 67}, 7)});
  expect_close_to_interpreter(m, random_inputs({{3, 67}}));
}

TEST(DnnlCodegen, Conv2dWithStridePaddingDilationAndGroups) {
  Module m =
      partitioned("%x: Tensor[(2, 4, 11, 9), float32], %w: Tensor[(6, 2, 3, 3), float32]",
                  "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 2, 0, 1], dilation=[1, 2], groups=2)");
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{2, 4, 11, 9}, {6, 2, 3, 3}})), "dnnl: nn.conv2d");
}

TEST(DnnlCodegen, Conv2dWithAConstantWeightAndOddChannels) {
  Module m =
      partitioned("%x: Tensor[(1, 5, 7, 7), float32]",
                  "nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1], channels=13, kernel_size=[3, 3])",
                  {random_array({13, 5, 3, 3}, 9)});
  expect_close_to_interpreter(m, random_inputs({{1, 5, 7, 7}}));
}

TEST(DnnlCodegen, DepthwiseConv2d) {
  Module m = partitioned("%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 1, 3, 3), float32]",
                         "nn.conv2d(%x, %w, padding=[1, 1], groups=8)");
  expect_close_to_interpreter(m, random_inputs({{1, 8, 6, 6}, {8, 1, 3, 3}}));
}

TEST(DnnlCodegen, BatchMatmulWithTransposesAndBroadcastBatch) {
  Module m = partitioned("%x: Tensor[(3, 4, 5), float32], %y: Tensor[(3, 6, 5), float32]",
                         "nn.batch_matmul(%x, %y)");
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{3, 4, 5}, {3, 6, 5}})), "dnnl: nn.batch_matmul");
  Module ta = partitioned("%x: Tensor[(2, 5, 4), float32], %y: Tensor[(2, 5, 6), float32]",
                          "nn.batch_matmul(%x, %y, transpose_a=True, transpose_b=False)");
  expect_close_to_interpreter(ta, random_inputs({{2, 5, 4}, {2, 5, 6}}));
  Module broadcast = partitioned("%x: Tensor[(1, 4, 5), float32], %y: Tensor[(3, 6, 5), float32]",
                                 "nn.batch_matmul(%x, %y)");
  expect_close_to_interpreter(broadcast, random_inputs({{1, 4, 5}, {3, 6, 5}}));
  Module weights_broadcast = partitioned("%x: Tensor[(3, 4, 5), float32], %y: Tensor[(1, 5, 6), float32]",
                                         "nn.batch_matmul(%x, %y, transpose_b=False)");
  expect_close_to_interpreter(weights_broadcast, random_inputs({{3, 4, 5}, {1, 5, 6}}));
}

TEST(DnnlCodegen, ElementwiseOpsAreEltwiseAndBinaryPrimitives) {
  Module m = partitioned(
      "%x: Tensor[(3, 5), float32], %y: Tensor[(5), float32], %z: Tensor[(3, 1), float32]",
      "%0 = tanh(%x); %1 = sigmoid(%0); %2 = subtract(%1, %y); %3 = multiply(%z, %2); %4 = exp(%3);"
      "%5 = clip(%4, a_min=0.5f, a_max=1.5f); %6 = negative(%5); %7 = divide(%6, %x); %8 = abs(%7);"
      "%9 = sqrt(%8); %10 = log(%9); %11 = add(%10, 0.25f); nn.relu(%11)");
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{3, 5}, {5}, {3, 1}})),
            "dnnl: tanh+sigmoid+subtract+multiply+exp+clip+negative+divide+abs+sqrt+log+add+nn.relu");
}

TEST(DnnlCodegen, BiasAddAlongAnyAxis) {
  Module m = partitioned("%x: Tensor[(2, 3, 4), float32], %b: Tensor[(3), float32], %c: Tensor[(4), float32]",
                         "%0 = nn.bias_add(%x, %b); nn.bias_add(%0, %c, axis=-1)");
  expect_close_to_interpreter(m, random_inputs({{2, 3, 4}, {3}, {4}}));
}

// ---------------------------------------------------------------------------------------------
// Composites: one fused primitive each
// ---------------------------------------------------------------------------------------------

constexpr const char *kDenseBias = R"(
  %1 = fn (%a: Tensor[(2, 8), float32], %b: Tensor[(5, 8), float32], %c: Tensor[(5), float32],
           Composite="dnnl.dense_bias", PartitionedFromPattern="nn.dense_nn.bias_add_") {
    %0 = nn.dense(%a, %b, units=5);
    nn.bias_add(%0, %c)
  };
  %1(%x, meta[relay.Constant][0], meta[relay.Constant][1]))";

TEST(DnnlCodegen, DenseBiasCompositeWithBoundConstants) {
  Module m =
      partitioned("%x: Tensor[(2, 8), float32]", kDenseBias, {random_array({5, 8}, 3), random_array({5}, 4)});
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{2, 8}})), "dnnl: dense_bias");
}

TEST(DnnlCodegen, DenseBiasReluCompositeWithAddOfABroadcastBias) {
  // Constants inside the composite (is_constant() patterns keep them there); odd sizes.
  Module m = partitioned("%x: Tensor[(3, 7), float32]", R"(
    %2 = fn (%a: Tensor[(3, 7), float32], Composite="dnnl.dense_bias_relu") {
      %0 = nn.dense(%a, meta[relay.Constant][0]);
      %1 = add(%0, meta[relay.Constant][1]);
      nn.relu(%1)
    };
    %2(%x))",
                         {random_array({13, 7}, 5), random_array({1, 13}, 6)});
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{3, 7}})), "dnnl: dense_bias_relu");
}

TEST(DnnlCodegen, DenseBiasReluCompositeWithRunTimeWeights) {
  Module m =
      partitioned("%x: Tensor[(4, 6), float32], %w: Tensor[(9, 6), float32], %b: Tensor[(9), float32]", R"(
    %2 = fn (%a: Tensor[(4, 6), float32], %p: Tensor[(9, 6), float32], %q: Tensor[(9), float32],
             Composite="dnnl.dense_bias_relu") {
      %0 = nn.dense(%a, %p);
      %1 = nn.bias_add(%0, %q);
      nn.relu(%1)
    };
    %2(%x, %w, %b))");
  expect_close_to_interpreter(m, random_inputs({{4, 6}, {9, 6}, {9}}));
}

TEST(DnnlCodegen, Conv2dBiasReluComposite) {
  Module m = partitioned("%x: Tensor[(2, 3, 9, 7), float32]", R"(
    %2 = fn (%a: Tensor[(2, 3, 9, 7), float32], %w: Tensor[(5, 3, 3, 3), float32], %b: Tensor[(5), float32],
             Composite="dnnl.conv2d_bias_relu") {
      %0 = nn.conv2d(%a, %w, strides=[2, 1], padding=[1, 1]);
      %1 = nn.bias_add(%0, %b);
      nn.relu(%1)
    };
    %2(%x, meta[relay.Constant][0], meta[relay.Constant][1]))",
                         {random_array({5, 3, 3, 3}, 11), random_array({5}, 12)});
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{2, 3, 9, 7}})), "dnnl: conv2d_bias_relu");
}

TEST(DnnlCodegen, Conv2dBiasCompositeWithAddOfAChannelBias) {
  Module m = partitioned(
      "%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(6, 2, 1, 1), float32], %b: Tensor[(6, 1, 1), float32]",
      R"(
    %2 = fn (%a: Tensor[(1, 4, 6, 6), float32], %p: Tensor[(6, 2, 1, 1), float32], %q: Tensor[(6, 1, 1), float32],
             Composite="dnnl.conv2d_bias") {
      %0 = nn.conv2d(%a, %p, groups=2);
      add(%0, %q)
    };
    %2(%x, %w, %b))");
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{1, 4, 6, 6}, {6, 2, 1, 1}, {6, 1, 1}})),
            "dnnl: conv2d_bias");
}

TEST(DnnlCodegen, TwoDenseCompositesInOnePartition) {
  // The MLP's two layers: the hidden layer stays in a oneDNN memory between the two primitives.
  Module m = partitioned("%x: Tensor[(2, 16), float32]", R"(
    %2 = fn (%a: Tensor[(2, 16), float32], %b: Tensor[(32, 16), float32], %c: Tensor[(32), float32],
             Composite="dnnl.dense_bias_relu") {
      %0 = nn.dense(%a, %b, units=32);
      %1 = nn.bias_add(%0, %c);
      nn.relu(%1)
    };
    %3 = %2(%x, meta[relay.Constant][0], meta[relay.Constant][1]);
    %5 = fn (%d: Tensor[(2, 32), float32], %e: Tensor[(10, 32), float32], %f: Tensor[(10), float32],
             Composite="dnnl.dense_bias") {
      %4 = nn.dense(%d, %e, units=10);
      nn.bias_add(%4, %f)
    };
    %5(%3, meta[relay.Constant][2], meta[relay.Constant][3]))",
                         {random_array({32, 16}, 21), random_array({32}, 22), random_array({10, 32}, 23),
                          random_array({10}, 24)});
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{2, 16}})), "dnnl: dense_bias_relu+dense_bias");
}

TEST(DnnlCodegen, ConvolutionChainWithTupleResult) {
  // conv -> conv in oneDNN's blocked layouts, a residual add, and two outputs: the first conv's
  // result (also read inside the partition) and the sum.
  Module m = partitioned("%x: Tensor[(1, 16, 5, 5), float32]", R"(
    %2 = fn (%a: Tensor[(1, 16, 5, 5), float32], %w: Tensor[(16, 16, 3, 3), float32], %b: Tensor[(16), float32],
             Composite="dnnl.conv2d_bias_relu") {
      %0 = nn.conv2d(%a, %w, padding=[1, 1]);
      %1 = nn.bias_add(%0, %b);
      nn.relu(%1)
    };
    %3 = %2(%x, meta[relay.Constant][0], meta[relay.Constant][1]);
    %4 = nn.conv2d(%3, meta[relay.Constant][2], padding=[1, 1]);
    %5 = nn.relu(%4);
    %6 = add(%5, %x);
    (%3, %6))",
                         {random_array({16, 16, 3, 3}, 31, -0.3f, 0.3f), random_array({16}, 32),
                          random_array({16, 16, 3, 3}, 33, -0.3f, 0.3f)});
  EXPECT_EQ(expect_close_to_interpreter(m, random_inputs({{1, 16, 5, 5}})),
            "dnnl: conv2d_bias_relu+nn.conv2d+nn.relu+add");
}

TEST(DnnlCodegen, ResultsThatAreInputsOrRepeatedAreCopied) {
  Module m = partitioned("%x: Tensor[(2, 3), float32]", "%0 = nn.relu(%x); (%0, %x, %0)");
  std::vector<NDArray> in = random_inputs({{2, 3}});
  expect_close_to_interpreter(m, in);
}

TEST(DnnlCodegen, LetBoundBody) {
  Module m = partitioned("%x: Tensor[(2, 3), float32]", "let %y = nn.relu(%x); let %z = add(%y, %y); %z");
  expect_close_to_interpreter(m, random_inputs({{2, 3}}));
}

TEST(DnnlCodegen, LongChainIsWalkedWithoutRecursion) {
  // 5,000 ops in graph form: the walk keeps its own stack.
  constexpr int kOps = 5000;
  std::string body = "%0 = add(%x, 1f);";
  for (int i = 1; i < kOps; ++i) body += fmt::format(" %{} = add(%{}, 1f);", i, i - 1);
  body += fmt::format(" %{}", kOps - 1);
  Module m = partitioned("%x: Tensor[(2, 3), float32]", body);
  std::vector<NDArray> in = random_inputs({{2, 3}});
  auto compiler = dnnl().make_compiler();
  std::vector<NDArray> out = compile_f(*compiler, m, in)->run(in);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data<float>()[i], in[0].data<float>()[i] + kOps);
}

TEST(DnnlCodegen, OneKernelPerShape) {
  Module m = partitioned("%x: Tensor[(?, 8), float32], %w: Tensor[(5, 8), float32]", "nn.dense(%x, %w)");
  auto compiler = dnnl().make_compiler();
  std::vector<NDArray> two = random_inputs({{2, 8}, {5, 8}}), three = random_inputs({{3, 8}, {5, 8}});
  std::shared_ptr<Kernel> k2 = compile_f(*compiler, m, two);
  EXPECT_EQ(compile_f(*compiler, m, two), k2);
  std::shared_ptr<Kernel> k3 = compile_f(*compiler, m, three);
  EXPECT_NE(k3, k2);
  EXPECT_TRUE(close(k3->run(three)[0], interpret_f(m, three)[0]));
  EXPECT_TRUE(close(k2->run(two)[0], interpret_f(m, two)[0]));
  EXPECT_EQ(compiler->name(), "dnnl");
}

// ---------------------------------------------------------------------------------------------
// What dnnl claims
// ---------------------------------------------------------------------------------------------

// A typed call of `op_name` built by hand (type inference rejects what grove cannot run, such as an
// NHWC convolution, so the predicate's call is assembled directly).
Expr typed_call(const std::string &op_name, const std::vector<Shape> &arg_shapes, const Shape &result,
                Attrs attrs, DType dtype = DType::Float32) {
  std::vector<Expr> args;
  for (size_t i = 0; i < arg_shapes.size(); ++i) {
    args.push_back(Var::make("a" + std::to_string(i)));
    args.back()->checked_type = TensorType::make(arg_shapes[i], dtype);
  }
  Expr call = Call::make(Op::make(op_name), args, std::move(attrs));
  call->checked_type = TensorType::make(result, dtype);
  return call;
}

TEST(DnnlTarget, Conv2dPredicateRejectsOtherLayoutsAndDtypes) {
  const ExternalTarget target = dnnl().target();
  EXPECT_EQ(target.name, "dnnl");
  Expr nchw = typed_call("nn.conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {1, 4, 6, 6}, {});
  EXPECT_TRUE(target.supports(*nchw.as<Call>()));
  Expr nhwc = typed_call("nn.conv2d", {{1, 8, 8, 3}, {3, 3, 3, 4}}, {1, 6, 6, 4},
                         Attrs()
                             .with("data_layout", AttrValue::of_string("NHWC"))
                             .with("kernel_layout", AttrValue::of_string("HWIO")));
  EXPECT_FALSE(target.supports(*nhwc.as<Call>()));
  Expr hwio = typed_call("nn.conv2d", {{1, 3, 8, 8}, {3, 3, 3, 4}}, {1, 4, 6, 6},
                         Attrs().with("kernel_layout", AttrValue::of_string("HWIO")));
  EXPECT_FALSE(target.supports(*hwio.as<Call>()));
  Expr f64 = typed_call("nn.conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {1, 4, 6, 6}, {}, DType::Float64);
  EXPECT_FALSE(target.supports(*f64.as<Call>()));
  Expr int_out = typed_call("nn.conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {1, 4, 6, 6},
                            Attrs().with("out_dtype", AttrValue::of_string("int32")));
  EXPECT_FALSE(target.supports(*int_out.as<Call>()));
}

TEST(DnnlTarget, OpPredicates) {
  const ExternalTarget target = dnnl().target();
  for (const char *name :
       {"nn.dense", "nn.conv2d", "nn.batch_matmul", "nn.bias_add", "nn.relu", "add", "multiply"})
    EXPECT_TRUE(target.ops.count(name)) << name;
  EXPECT_FALSE(target.ops.count("nn.softmax"));
  EXPECT_TRUE(target.supports(*typed_call("nn.dense", {{2, 8}, {5, 8}}, {2, 5}, {}).as<Call>()));
  EXPECT_FALSE(
      target.supports(*typed_call("nn.dense", {{2, 8}, {5, 8}}, {2, 5}, {}, DType::Int32).as<Call>()));
  // add broadcasting one operand into the other's shape: yes; both ways (2x1 + 1x3): no.
  EXPECT_TRUE(target.supports(*typed_call("add", {{3}, {2, 3}}, {2, 3}, {}).as<Call>()));
  EXPECT_FALSE(target.supports(*typed_call("add", {{2, 1}, {1, 3}}, {2, 3}, {}).as<Call>()));
  // subtract does not commute: only the second operand may broadcast.
  EXPECT_TRUE(target.supports(*typed_call("subtract", {{2, 3}, {3}}, {2, 3}, {}).as<Call>()));
  EXPECT_FALSE(target.supports(*typed_call("subtract", {{3}, {2, 3}}, {2, 3}, {}).as<Call>()));
}

TEST(DnnlTarget, PatternTableInPriorityOrder) {
  const ExternalTarget target = dnnl().target();
  std::vector<std::string> names;
  for (const CompositePattern &p : target.patterns) names.push_back(p.name);
  EXPECT_THAT(names, ::testing::ElementsAre("dnnl.conv2d_bias_relu", "dnnl.conv2d_bias",
                                            "dnnl.dense_bias_relu", "dnnl.dense_bias"));
}

TEST(DnnlTarget, PatternsMatchAndChecksRejectABiasOnTheWrongAxis) {
  const ExternalTarget target = dnnl().target();
  auto find = [&](const std::string &name) {
    for (const CompositePattern &p : target.patterns)
      if (p.name == name) return p;
    throw std::runtime_error("no pattern " + name);
  };
  Module m = parse_module(R"(
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32], %b: Tensor[(5), float32],
          %c: Tensor[(2, 1), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.dense(%x, %w);
  %4 = add(%3, %c);
  (%2, %4)
}
)",
                          "patterns.relay");
  infer_types(m);
  const auto *tuple = m.find_function("main")->as<Function>()->body.as<Tuple>();
  const CompositePattern relu = find("dnnl.dense_bias_relu"), bias = find("dnnl.dense_bias");
  std::optional<DFPatternMatch> good = match(relu.pattern, tuple->fields[0]);
  ASSERT_TRUE(good);
  EXPECT_TRUE(relu.check(*good));
  // add of a [2, 1] bias varies along the rows, not the units: the pattern matches, the check refuses.
  std::optional<DFPatternMatch> wrong_axis = match(bias.pattern, tuple->fields[1]);
  ASSERT_TRUE(wrong_axis);
  EXPECT_FALSE(bias.check(*wrong_axis));
  EXPECT_FALSE(match(relu.pattern, tuple->fields[1]));
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

TEST(DnnlCodegen, AnOpDnnlLacksIsUnsupportedNamingIt) {
  // Not the user's mistake: an unsupported result (Kernel.h's one "cannot"), never a UserError.
  Module m = partitioned("%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32]",
                         "%0 = nn.dense(%x, %w); nn.softmax(%0)");
  auto compiler = dnnl().make_compiler();
  KernelResult result = KernelResult::unsupported("");
  ASSERT_NO_THROW(
      result = compiler->compile(*m.find_function("f"), {DType::Float32, DType::Float32}, {{2, 8}, {5, 8}}));
  ASSERT_TRUE(result.is_unsupported());
  EXPECT_THAT(result.unsupported().reason, HasSubstr("dnnl cannot compile the operator nn.softmax"));
  EXPECT_THAT(result.unsupported().reason, HasSubstr("dnnl.relay:"));
}

TEST(DnnlCodegen, TheVmReportsAnUnsupportedPartitionAsAUserErrorNamingTheOp) {
  // The VM has nothing to fall back to for a function claimed by dnnl: the reason, as a UserError.
  Module m = parse_module(R"(
def @f(%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32], Primitive=1, Inline=1, Compiler="dnnl",
       global_symbol="f") {
  %0 = nn.dense(%x, %w);
  nn.softmax(%0)
}
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32]) { @f(%x, %w) }
)",
                          "dnnl.relay");
  infer_types(m);
  EXPECT_THAT(
      user_error_of([&] {
        run_main_on_vm(m, {tensor_value(random_array({2, 8}, 1)), tensor_value(random_array({5, 8}, 2))});
      }),
      HasSubstr("dnnl cannot compile the operator nn.softmax (at dnnl.relay:"));
}

TEST(DnnlCodegen, AFunctionOfAnotherCodeGeneratorIsAUserError) {
  Module m = parse_module("def @f(%x: Tensor[(2, 3), float32], Primitive=1) { nn.relu(%x) }", "plain.relay");
  infer_types(m);
  auto compiler = dnnl().make_compiler();
  EXPECT_THAT(user_error_of([&] {
                compile_f(*compiler, m, random_inputs({{2, 3}}));
              }),
              HasSubstr("compiles functions with Compiler=\"dnnl\" only"));
}

TEST(DnnlCodegen, NonFloatInputsAreUnsupportedAndWrongRunShapesAreUserErrors) {
  Module m = partitioned("%x: Tensor[(2, 3), float32]", "nn.relu(%x)");
  auto compiler = dnnl().make_compiler();
  EXPECT_THAT(GROVE_UNSUPPORTED_REASON(compiler->compile(*m.find_function("f"), {DType::Int32}, {{2, 3}})),
              HasSubstr("float32 tensors only, found a int32 input 0"));
  std::shared_ptr<Kernel> k = compile_f(*compiler, m, random_inputs({{2, 3}}));
  EXPECT_THAT(user_error_of([&] {
                k->run(random_inputs({{3, 2}}));
              }),
              HasSubstr("was compiled for a float32 input 0 of shape (2, 3), found float32 of shape (3, 2)"));
}

// ---------------------------------------------------------------------------------------------
// End to end: models/relay partitioned for dnnl, on the VM
// ---------------------------------------------------------------------------------------------

// The functions of `m` with Compiler="dnnl", and the composites called inside them.
std::pair<std::vector<std::string>, std::vector<std::string>> dnnl_partitions(const Module &m) {
  std::vector<std::string> names, composites;
  for (const auto &[name, fn] : m.functions()) {
    const AttrValue *compiler = fn.as<Function>()->attrs.find(attr::kCompiler);
    if (!compiler || compiler->s != "dnnl") continue;
    names.push_back(name);
    post_order_visit(fn.as<Function>()->body, [&](const Expr &e) {
      if (const auto *f = e.as<Function>())
        if (const AttrValue *c = f->attrs.find(attr::kComposite)) composites.push_back(c->s);
    });
  }
  return {names, composites};
}

// Runs @main of `model` (with its fixture) on the VM unpartitioned and partitioned for dnnl; expects
// the same result within the tolerance. Returns the partitioned module.
Module expect_partitioned_run_close(const std::string &model) {
  testing::LoadedModel l = testing::load_model(model);
  Module partitioned_module = partition_for_targets(l.module, {"dnnl"});
  const std::vector<Value> args = testing::main_args(l);
  const NDArray want = tensor_of(run_main_on_vm(l.module, args));
  const NDArray got = tensor_of(run_main_on_vm(partitioned_module, args));
  EXPECT_TRUE(close(got, want));
  return partitioned_module;
}

TEST(DnnlEndToEnd, MlpPartitionedForDnnlMatchesTheUnpartitionedVm) {
  Module p = expect_partitioned_run_close("mlp");
  auto [names, composites] = dnnl_partitions(p);
  ASSERT_THAT(names, ::testing::ElementsAre("tvmgen_default_dnnl_main_0"));
  EXPECT_THAT(composites, ::testing::UnorderedElementsAre("dnnl.dense_bias_relu", "dnnl.dense_bias"));
  const std::string &name = names[0];
  // The VM's kernel for it: the two composites as two fused oneDNN primitives (batch of 4).
  const auto *fn = p.find_function(name)->as<Function>();
  auto compiler = dnnl().make_compiler();
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const Expr &param : fn->params) {
    Shape s = param->checked_type.as<TensorType>()->shape;
    for (int64_t &d : s) d = d == kAnyDim ? 4 : d;
    dtypes.push_back(DType::Float32);
    shapes.push_back(s);
  }
  EXPECT_EQ(compiler->compile(*p.find_function(name), dtypes, shapes).kernel()->describe(),
            "dnnl: dense_bias_relu+dense_bias");
}

TEST(DnnlEndToEnd, CnnPartitionedForDnnlMatchesTheUnpartitionedVm) {
  Module p = expect_partitioned_run_close("cnn");
  // conv2d+bias+relu, then (past batch_norm, max_pool2d and reshape, which dnnl does not claim)
  // dense+add: two partitions.
  auto [names, composites] = dnnl_partitions(p);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_THAT(composites, ::testing::UnorderedElementsAre("dnnl.conv2d_bias_relu", "dnnl.dense_bias"));
}

}  // namespace
}  // namespace grove::relay
