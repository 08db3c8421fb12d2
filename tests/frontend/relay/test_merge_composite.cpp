// Merge composite (passes/MergeComposite.h): before/expected pairs after TVM's
// tests/python/relay/test_pass_merge_composite.py (smaller shapes; composite names without a target
// prefix, as TVM's tests write them). Every merged module must type-check and compute exactly what
// the original computes (a composite function runs the same kernels on the same values, so the
// interpreter's results are compared bit for bit).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/byoc/Pattern.h"
#include "frontend/relay/byoc/Target.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/MergeComposite.h"
#include "frontend/relay/passes/PassList.h"
#include "tests/relay/PassTest.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay {
namespace {

using Table = std::vector<CompositePattern>;

Module parse(const std::string &text, const std::vector<NDArray> &meta = {}) {
  return parse_module(text, "merge_composite_test.relay", meta);
}

// Deterministic inputs in [-1, 1) for @main's parameters (float32 tensors; a bool scalar is true),
// or nothing when @main has a parameter of another type.
std::optional<std::vector<Value>> inputs_for(const Module &m) {
  const auto *main = m.find_function("main")->as<Function>();
  std::vector<Value> args;
  uint32_t state = 12345;
  for (const Expr &p : main->params) {
    const auto *tt = p.as<Var>()->type_annotation.as<TensorType>();
    if (tt && tt->dtype == DType::Bool && tt->shape.empty()) {  // an `if` condition: take the first branch
      args.push_back(tensor_value(NDArray::scalar(DType::Bool, 1)));
      continue;
    }
    if (!tt || tt->dtype != DType::Float32) return std::nullopt;
    NDArray a(tt->dtype, tt->shape);
    for (int64_t i = 0; i < a.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      a.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
    }
    args.push_back(tensor_value(a));
  }
  return args;
}

// Bit for bit (tests/relay/ValueCompare.h).
bool same_value(const Value &a, const Value &b) {
  std::string why;
  return testing::same_value(a, b, &why);
}

// Merges `before` and compares with `expected` (alpha-equivalence and the same sharing); the merged
// module must type-check and, when @main takes float32 tensors, compute what `before` computes.
void check_merge(const Table &table, const std::string &before, const std::string &expected,
                 const std::vector<NDArray> &meta = {}) {
  auto pass = [&](const Module &m) { return merge_composite(m, table); };
  EXPECT_TRUE(testing::check_pass(pass, before, expected, meta));
  Module in = parse(before, meta);
  infer_types(in);
  Module out = merge_composite(in, table);
  ASSERT_NO_THROW(infer_types(out)) << print_module(out).text;
  if (std::optional<std::vector<Value>> args = inputs_for(in))
    EXPECT_TRUE(same_value(run_main(in, *args), run_main(out, *args))) << print_module(out).text;
}

// The Composite functions of a module.
std::vector<const Function *> composites(const Module &m) {
  std::vector<const Function *> out;
  for (const auto &[name, fn] : m.functions())
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *f = e.as<Function>(); f && f->has_attr(attr::kComposite)) out.push_back(f);
    });
  return out;
}

// ---------------------------------------------------------------------------------------------
// TVM's patterns
// ---------------------------------------------------------------------------------------------

DFPattern add_relu() { return op("nn.relu", {op("add", {wildcard(), wildcard()})}); }

DFPattern add_sub_mul() {
  DFPattern x = wildcard(), y = wildcard();
  return op("multiply", {op("add", {x, y}), op("subtract", {x, y})});
}

DFPattern conv_bias_relu() {
  return op("nn.relu", {op("nn.bias_add", {op("nn.conv2d", {wildcard(), wildcard()}), wildcard()})});
}

DFPattern add_add_add() {
  DFPattern x = wildcard(), y = wildcard();
  DFPattern a = op("add", {x, y});
  return op("add", {op("add", {x, a}), a});
}

DFPattern bn_relu() {
  DFPattern bn = op("nn.batch_norm", {wildcard(), wildcard(), wildcard(), wildcard(), wildcard()});
  return op("nn.relu", {is_tuple_get_item(bn, 0)});
}

// ---------------------------------------------------------------------------------------------
// Simple, branching and shared-node merges
// ---------------------------------------------------------------------------------------------

TEST(MergeComposite, SimpleMergeOutlinesTheMatch) {
  check_merge({{"add_relu", add_relu(), nullptr}}, R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = add(%a, %b);
  nn.relu(%0)
}
)",
              R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %1 = fn (%FunctionVar_0_0: Tensor[(10, 10), float32], %FunctionVar_0_1: Tensor[(10, 10), float32],
           Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> Tensor[(10, 10), float32] {
    %0 = add(%FunctionVar_0_0, %FunctionVar_0_1);
    nn.relu(%0)
  };
  %1(%a, %b)
}
)");
}

TEST(MergeComposite, ParametersAreNamedAndTypedAsTvmNamesThem) {
  Module m = merge_composite(parse(R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = add(%a, %b);
  nn.relu(%0)
}
)"),
                             {{"add_relu", add_relu(), nullptr}});
  std::vector<const Function *> fns = composites(m);
  ASSERT_EQ(fns.size(), 1u);
  ASSERT_EQ(fns[0]->params.size(), 2u);
  EXPECT_EQ(fns[0]->params[0].as<Var>()->name_hint, "FunctionVar_0_0");
  EXPECT_EQ(fns[0]->params[1].as<Var>()->name_hint, "FunctionVar_0_1");
  EXPECT_EQ(relay::to_string(fns[0]->params[0].as<Var>()->type_annotation), "Tensor[(10, 10), float32]");
  EXPECT_EQ(relay::to_string(fns[0]->ret_type), "Tensor[(10, 10), float32]");
  EXPECT_EQ(fns[0]->attrs.find(attr::kComposite)->s, "add_relu");
  EXPECT_EQ(fns[0]->attrs.find(attr::kPartitionedFromPattern)->s, "add_nn.relu_");
  EXPECT_THAT(print_module(m).text, ::testing::HasSubstr(R"(Composite="add_relu")"));
}

constexpr const char *kT10 = "Tensor[(10, 10), float32]";

std::string with_t10(std::string text) {
  for (size_t at; (at = text.find("T10")) != std::string::npos;) text.replace(at, 3, kT10);
  return text;
}

TEST(MergeComposite, BranchMergeOutlinesEachDiamond) {
  check_merge({{"add_sub_mul", add_sub_mul(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10, %c: T10) -> T10 {
  %0 = add(%a, %b);
  %1 = subtract(%a, %b);
  %2 = multiply(%0, %1);
  %3 = add(%c, %2);
  %4 = subtract(%c, %2);
  %5 = multiply(%3, %4);
  nn.relu(%5)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10, %c: T10) -> T10 {
  %3 = fn (%x: T10, %y: T10, Composite="add_sub_mul", PartitionedFromPattern="add_subtract_multiply_") -> T10 {
    %0 = add(%x, %y);
    %1 = subtract(%x, %y);
    multiply(%0, %1)
  };
  %4 = %3(%a, %b);
  %8 = fn (%u: T10, %v: T10, Composite="add_sub_mul", PartitionedFromPattern="add_subtract_multiply_") -> T10 {
    %5 = add(%u, %v);
    %6 = subtract(%u, %v);
    multiply(%5, %6)
  };
  %9 = %8(%c, %4);
  nn.relu(%9)
}
)"));
}

TEST(MergeComposite, ReusedCallNodeIsOneNodeOfTheComposite) {
  check_merge({{"add_add_add", add_add_add(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = subtract(%a, %b);
  %1 = add(%0, %b);
  %2 = add(%0, %1);
  add(%2, %1)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = subtract(%a, %b);
  %4 = fn (%x: T10, %y: T10, Composite="add_add_add", PartitionedFromPattern="add_add_add_") -> T10 {
    %1 = add(%x, %y);
    %2 = add(%x, %1);
    add(%2, %1)
  };
  %4(%0, %b)
}
)"));
}

TEST(MergeComposite, ParallelBranchesOnTheSameInputsAreMergedSeparately) {
  check_merge({{"add_sub_mul", add_sub_mul(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  %1 = subtract(%a, %b);
  %2 = multiply(%0, %1);
  %3 = add(%a, %b);
  %4 = subtract(%a, %b);
  %5 = multiply(%3, %4);
  multiply(%2, %5)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %3 = fn (%x: T10, %y: T10, Composite="add_sub_mul", PartitionedFromPattern="add_subtract_multiply_") -> T10 {
    %0 = add(%x, %y);
    %1 = subtract(%x, %y);
    multiply(%0, %1)
  };
  %4 = %3(%a, %b);
  %8 = fn (%u: T10, %v: T10, Composite="add_sub_mul", PartitionedFromPattern="add_subtract_multiply_") -> T10 {
    %5 = add(%u, %v);
    %6 = subtract(%u, %v);
    multiply(%5, %6)
  };
  %9 = %8(%a, %b);
  multiply(%4, %9)
}
)"));
}

// ---------------------------------------------------------------------------------------------
// Several patterns: priority, inputs from other composites
// ---------------------------------------------------------------------------------------------

constexpr const char *kConvNet = R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 4, 6, 6), float32], %kernel: Tensor[(8, 4, 1, 1), float32], %bias: Tensor[(8), float32],
          %a: Tensor[(1, 8, 6, 6), float32], %b: Tensor[(1, 8, 6, 6), float32]) -> Tensor[(1, 8, 6, 6), float32] {
  %0 = nn.conv2d(%data, %kernel, padding=[0, 0], kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %bias);
  %2 = nn.relu(%1);
  %3 = add(%2, %a);
  %4 = nn.relu(%3);
  multiply(%4, %b)
}
)";

TEST(MergeComposite, MultiplePatternsEachOutlineTheirMatches) {
  check_merge({{"conv2d_bias_relu", conv_bias_relu(), nullptr}, {"add_relu", add_relu(), nullptr}}, kConvNet,
              R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 4, 6, 6), float32], %kernel: Tensor[(8, 4, 1, 1), float32], %bias: Tensor[(8), float32],
          %a: Tensor[(1, 8, 6, 6), float32], %b: Tensor[(1, 8, 6, 6), float32]) -> Tensor[(1, 8, 6, 6), float32] {
  %3 = fn (%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32], %z: Tensor[(8), float32],
           Composite="conv2d_bias_relu", PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_")
           -> Tensor[(1, 8, 6, 6), float32] {
    %0 = nn.conv2d(%x, %w, padding=[0, 0], kernel_size=[1, 1]);
    %1 = nn.bias_add(%0, %z);
    nn.relu(%1)
  };
  %4 = %3(%data, %kernel, %bias);
  %7 = fn (%p: Tensor[(1, 8, 6, 6), float32], %q: Tensor[(1, 8, 6, 6), float32],
           Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> Tensor[(1, 8, 6, 6), float32] {
    %6 = add(%p, %q);
    nn.relu(%6)
  };
  %8 = %7(%4, %a);
  multiply(%8, %b)
}
)");
}

constexpr const char *kAddAbsRelu = R"(#[version = "0.0.5"]
def @main(%i1: Tensor[(10, 10), float32], %i2: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = add(%i1, %i2);
  %1 = abs(%0);
  nn.relu(%1)
}
)";

DFPattern pattern_a() { return op("nn.relu", {op("abs", {op("add", {wildcard(), wildcard()})})}); }
DFPattern pattern_b() { return op("abs", {op("add", {wildcard(), wildcard()})}); }
DFPattern pattern_c() { return op("nn.relu", {op("abs", {wildcard()})}); }

TEST(MergeComposite, PatternTableOrderIsPriority) {
  check_merge({{"A", pattern_a(), nullptr}, {"B", pattern_b(), nullptr}, {"C", pattern_c(), nullptr}},
              kAddAbsRelu, with_t10(R"(#[version = "0.0.5"]
def @main(%i1: T10, %i2: T10) -> T10 {
  %2 = fn (%x: T10, %y: T10, Composite="A", PartitionedFromPattern="add_abs_nn.relu_") -> T10 {
    %0 = add(%x, %y);
    %1 = abs(%0);
    nn.relu(%1)
  };
  %2(%i1, %i2)
}
)"));
  check_merge({{"B", pattern_b(), nullptr}, {"C", pattern_c(), nullptr}, {"A", pattern_a(), nullptr}},
              kAddAbsRelu, with_t10(R"(#[version = "0.0.5"]
def @main(%i1: T10, %i2: T10) -> T10 {
  %1 = fn (%x: T10, %y: T10, Composite="B", PartitionedFromPattern="add_abs_") -> T10 {
    %0 = add(%x, %y);
    abs(%0)
  };
  %2 = %1(%i1, %i2);
  nn.relu(%2)
}
)"));
  check_merge({{"C", pattern_c(), nullptr}, {"A", pattern_a(), nullptr}, {"B", pattern_b(), nullptr}},
              kAddAbsRelu, with_t10(R"(#[version = "0.0.5"]
def @main(%i1: T10, %i2: T10) -> T10 {
  %0 = add(%i1, %i2);
  %2 = fn (%x: T10, Composite="C", PartitionedFromPattern="abs_nn.relu_") -> T10 {
    %1 = abs(%x);
    nn.relu(%1)
  };
  %2(%0)
}
)"));
}

TEST(MergeComposite, CompositesFeedALaterPatternsMatch) {
  // TVM's test_multiple_input_subgraphs, case A: four add_relu results feed add_sub_mul, which
  // has priority and takes the shared inputs; the add_relu matches below it merge afterwards.
  check_merge({{"add_sub_mul", add_sub_mul(), nullptr}, {"add_relu", add_relu(), nullptr}},
              with_t10(R"(#[version = "0.0.5"]
def @main(%i0: T10, %i1: T10, %i2: T10, %i3: T10) -> T10 {
  %0 = add(%i0, %i1);
  %1 = nn.relu(%0);
  %2 = add(%i2, %i3);
  %3 = nn.relu(%2);
  %4 = add(%1, %3);
  %5 = subtract(%1, %3);
  multiply(%4, %5)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%i0: T10, %i1: T10, %i2: T10, %i3: T10) -> T10 {
  %1 = fn (%x: T10, %y: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
    %0 = add(%x, %y);
    nn.relu(%0)
  };
  %2 = %1(%i0, %i1);
  %4 = fn (%x1: T10, %y1: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
    %3 = add(%x1, %y1);
    nn.relu(%3)
  };
  %5 = %4(%i2, %i3);
  %9 = fn (%x2: T10, %y2: T10, Composite="add_sub_mul", PartitionedFromPattern="add_subtract_multiply_") -> T10 {
    %6 = add(%x2, %y2);
    %7 = subtract(%x2, %y2);
    multiply(%6, %7)
  };
  %9(%2, %5)
}
)"));
}

TEST(MergeComposite, DiamondNeedsTheSameInputsOnBothSides) {
  // Case B: add and subtract read different values, so add_sub_mul does not match.
  check_merge({{"add_sub_mul", add_sub_mul(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%i0: T10, %i1: T10, %i2: T10, %i3: T10) -> T10 {
  %0 = add(%i0, %i1);
  %1 = subtract(%i2, %i3);
  multiply(%0, %1)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%i0: T10, %i1: T10, %i2: T10, %i3: T10) -> T10 {
  %0 = add(%i0, %i1);
  %1 = subtract(%i2, %i3);
  multiply(%0, %1)
}
)"));
}

// ---------------------------------------------------------------------------------------------
// Matches that must not be taken
// ---------------------------------------------------------------------------------------------

TEST(MergeComposite, IntermediateWithAnOutsideConsumerBlocksTheMatch) {
  const std::string program = with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  %1 = nn.relu(%0);
  multiply(%1, %0)
}
)");
  check_merge({{"add_relu", add_relu(), nullptr}}, program, program);
}

TEST(MergeComposite, DiamondPatternDoesNotMatchAnUnrelatedStructure) {
  // TVM's test_diamond_not_merge: multiply(relu, clip(relu)) against multiply(relu, clip(add(relu, 1))).
  DFPattern cbr = conv_bias_relu();
  DFPattern pattern = op("multiply", {cbr, op("clip", {cbr})});
  const std::string program = R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 4, 6, 6), float32], %kernel: Tensor[(8, 4, 1, 1), float32], %bias: Tensor[(8), float32]) {
  %0 = nn.conv2d(%data, %kernel, padding=[0, 0], kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %bias);
  %2 = nn.relu(%1);
  %3 = add(%2, 1f);
  %4 = clip(%3, a_min=0f, a_max=255f);
  multiply(%2, %4)
}
)";
  check_merge({{"pat", pattern, nullptr}}, program, program);
}

TEST(MergeComposite, CheckFunctionDecidesWhetherAMatchIsTaken) {
  // TVM's test_pattern_with_check and test_type_check: the check reads the conv's attributes
  // (strides here; grove's conv2d is NCHW only) and its checked type.
  const std::string program = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32], %b: Tensor[(8), float32]) {
  %0 = nn.conv2d(%x, %w, strides=[2, 2], kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
)";
  DFPattern conv = op("nn.conv2d", {wildcard(), wildcard()});
  DFPattern pattern = op("nn.relu", {op("nn.bias_add", {conv, wildcard()})});
  auto stride_is = [conv](int64_t stride) {
    return [conv, stride](const DFPatternMatch &m) {
      return attr_ints(m.get(conv).as<Call>()->attrs, "strides", {1, 1}) ==
             std::vector<int64_t>{stride, stride};
    };
  };
  check_merge({{"conv_bias_relu", pattern, stride_is(1)}}, program, program);
  check_merge({{"conv_bias_relu", pattern, stride_is(2)}}, program, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32], %b: Tensor[(8), float32]) {
  %2 = fn (%p: Tensor[(1, 4, 6, 6), float32], %q: Tensor[(8, 4, 1, 1), float32], %r: Tensor[(8), float32],
           Composite="conv_bias_relu", PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_")
           -> Tensor[(1, 8, 3, 3), float32] {
    %0 = nn.conv2d(%p, %q, strides=[2, 2], kernel_size=[1, 1]);
    %1 = nn.bias_add(%0, %r);
    nn.relu(%1)
  };
  %2(%x, %w, %b)
}
)");
  auto batch_is_one = [conv](const DFPatternMatch &m) {
    return m.get(conv)->checked_type.as<TensorType>()->shape[0] == 1;
  };
  auto batch_is_not_one = [conv](const DFPatternMatch &m) {
    return m.get(conv)->checked_type.as<TensorType>()->shape[0] != 1;
  };
  EXPECT_EQ(composites(merge_composite(parse(program), {{"c", pattern, batch_is_one}})).size(), 1u);
  EXPECT_EQ(composites(merge_composite(parse(program), {{"c", pattern, batch_is_not_one}})).size(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Optional and alternative patterns, constants, projections
// ---------------------------------------------------------------------------------------------

TEST(MergeComposite, OptionalPatternNamesWhatItMatched) {
  DFPattern bias = op("nn.bias_add", {op("nn.conv2d", {wildcard(), wildcard()}), wildcard()});
  DFPattern layer = optional(bias, [](DFPattern x) { return op("nn.relu", {x}); });
  check_merge({{"layer", layer, nullptr}}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 7, 7), float32], %w1: Tensor[(3, 3, 1, 1), float32], %w2: Tensor[(3, 3, 1, 1), float32],
          %b1: Tensor[(3), float32], %b2: Tensor[(3), float32]) {
  %0 = nn.conv2d(%x, %w1, kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, kernel_size=[1, 1]);
  nn.bias_add(%3, %b2)
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 7, 7), float32], %w1: Tensor[(3, 3, 1, 1), float32], %w2: Tensor[(3, 3, 1, 1), float32],
          %b1: Tensor[(3), float32], %b2: Tensor[(3), float32]) {
  %3 = fn (%p0: Tensor[(1, 3, 7, 7), float32], %p1: Tensor[(3, 3, 1, 1), float32], %p2: Tensor[(3), float32],
           Composite="layer", PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_") -> Tensor[(1, 3, 7, 7), float32] {
    %0 = nn.conv2d(%p0, %p1, kernel_size=[1, 1]);
    %1 = nn.bias_add(%0, %p2);
    nn.relu(%1)
  };
  %4 = %3(%x, %w1, %b1);
  %7 = fn (%q0: Tensor[(1, 3, 7, 7), float32], %q1: Tensor[(3, 3, 1, 1), float32], %q2: Tensor[(3), float32],
           Composite="layer", PartitionedFromPattern="nn.conv2d_nn.bias_add_") -> Tensor[(1, 3, 7, 7), float32] {
    %5 = nn.conv2d(%q0, %q1, kernel_size=[1, 1]);
    nn.bias_add(%5, %q2)
  };
  %7(%4, %w2, %b2)
}
)");
}

TEST(MergeComposite, AlternativeInputsAndTuplesAreNamedInOrder) {
  // TVM's test_einsum_reshape_pattern, with concatenate for einsum: each input optionally reshaped.
  DFPattern x = wildcard(), y = wildcard();
  DFPattern rx = op("reshape", {x}) | x;
  DFPattern ry = op("reshape", {y}) | y;
  DFPattern pattern = op("concatenate", {is_tuple({rx, ry})});
  check_merge({{"concat_reshape", pattern, nullptr}}, R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = reshape(%a, newshape=[20, 5]);
  %1 = reshape(%b, newshape=[20, 5]);
  %2 = (%0, %1);
  concatenate(%2, axis=0)
}
)",
              R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %4 = fn (%p: Tensor[(10, 10), float32], %q: Tensor[(10, 10), float32], Composite="concat_reshape",
           PartitionedFromPattern="reshape_reshape_Tuple_concatenate_") -> Tensor[(40, 5), float32] {
    %0 = reshape(%p, newshape=[20, 5]);
    %1 = reshape(%q, newshape=[20, 5]);
    %2 = (%0, %1);
    concatenate(%2, axis=0)
  };
  %4(%a, %b)
}
)");
}

TEST(MergeComposite, ConstantMatchedByIsConstantIsBoundInside) {
  NDArray w(DType::Float32, {4, 3});
  for (int64_t i = 0; i < w.size(); ++i) w.data<float>()[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  const std::string program = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.dense(%x, meta[relay.Constant][0]);
  %1 = nn.bias_add(%0, %b);
  add(%1, 1f)
}
)";
  DFPattern bound = op("nn.bias_add", {op("nn.dense", {wildcard(), is_constant()}), wildcard()});
  check_merge({{"dense_bias", bound, nullptr}}, program, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(4), float32]) {
  %2 = fn (%p: Tensor[(2, 3), float32], %q: Tensor[(4), float32], Composite="dense_bias",
           PartitionedFromPattern="nn.dense_nn.bias_add_") -> Tensor[(2, 4), float32] {
    %0 = nn.dense(%p, meta[relay.Constant][0]);
    nn.bias_add(%0, %q)
  };
  %3 = %2(%x, %b);
  add(%3, 1f)
}
)",
              {w});
  // A wildcard makes the constant an argument instead; a scalar constant likewise.
  DFPattern passed =
      op("add", {op("nn.bias_add", {op("nn.dense", {wildcard(), wildcard()}), wildcard()}), wildcard()});
  check_merge({{"dense_bias_add", passed, nullptr}}, program, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(4), float32]) {
  %3 = fn (%p: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32], %q: Tensor[(4), float32], %c: float32,
           Composite="dense_bias_add", PartitionedFromPattern="nn.dense_nn.bias_add_add_") -> Tensor[(2, 4), float32] {
    %0 = nn.dense(%p, %w);
    %1 = nn.bias_add(%0, %q);
    add(%1, %c)
  };
  %3(%x, meta[relay.Constant][0], %b, 1f)
}
)",
              {w});
}

TEST(MergeComposite, TupleGetItemPattern) {
  check_merge({{"bn_relu", bn_relu(), nullptr}}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %gamma: Tensor[(8), float32], %beta: Tensor[(8), float32],
          %mean: Tensor[(8), float32], %var: Tensor[(8), float32]) {
  %0 = nn.batch_norm(%x, %gamma, %beta, %mean, %var);
  %1 = %0.0;
  nn.relu(%1)
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %gamma: Tensor[(8), float32], %beta: Tensor[(8), float32],
          %mean: Tensor[(8), float32], %var: Tensor[(8), float32]) {
  %3 = fn (%p0: Tensor[(1, 8), float32], %p1: Tensor[(8), float32], %p2: Tensor[(8), float32],
           %p3: Tensor[(8), float32], %p4: Tensor[(8), float32], Composite="bn_relu",
           PartitionedFromPattern="nn.batch_norm_TupleGetItem0_nn.relu_") -> Tensor[(1, 8), float32] {
    %0 = nn.batch_norm(%p0, %p1, %p2, %p3, %p4);
    %1 = %0.0;
    nn.relu(%1)
  };
  %3(%x, %gamma, %beta, %mean, %var)
}
)");
}

TEST(MergeComposite, InputUsedTwiceIsOneParameter) {
  check_merge({{"add_relu", add_relu(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%x: T10) -> T10 {
  %0 = add(%x, %x);
  nn.relu(%0)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%x: T10) -> T10 {
  %1 = fn (%p: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
    %0 = add(%p, %p);
    nn.relu(%0)
  };
  %1(%x)
}
)"));
}

// ---------------------------------------------------------------------------------------------
// Dominator patterns
// ---------------------------------------------------------------------------------------------

DFPattern conv_elementwise_add() {
  DFPattern path = call(has_attr(wildcard(), Attrs().with("TOpPattern", AttrValue::of_int(0))), {wildcard()});
  return dominates(op("nn.conv2d", {wildcard(), wildcard()}), path, op("add", {wildcard(), wildcard()}));
}

TEST(MergeComposite, DominatorPatternOutlinesTheWholeDiamond) {
  check_merge({{"conv_ew_add", conv_elementwise_add(), nullptr}}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, kernel_size=[1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.relu(%1);
  %3 = tanh(%0);
  add(%2, %3)
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32]) {
  %4 = fn (%p: Tensor[(1, 4, 6, 6), float32], %q: Tensor[(8, 4, 1, 1), float32], Composite="conv_ew_add",
           PartitionedFromPattern="nn.conv2d_nn.relu_nn.relu_tanh_add_") -> Tensor[(1, 8, 6, 6), float32] {
    %0 = nn.conv2d(%p, %q, kernel_size=[1, 1]);
    %1 = nn.relu(%0);
    %2 = nn.relu(%1);
    %3 = tanh(%0);
    add(%2, %3)
  };
  %4(%x, %w)
}
)");
}

TEST(MergeComposite, DominatorWhoseParentEscapesIsNotTaken) {
  // The conv is also read by the final multiply: the add does not post-dominate it.
  const std::string program = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, kernel_size=[1, 1]);
  %1 = nn.relu(%0);
  %2 = tanh(%0);
  %3 = add(%1, %2);
  multiply(%3, %0)
}
)";
  check_merge({{"conv_ew_add", conv_elementwise_add(), nullptr}}, program, program);
}

TEST(MergeComposite, LongDominatorChainBecomesOneCompositeWithoutRecursion) {
  const int n = 100000;
  Expr x = Var::make("x", TensorType::make({1, 2, 3, 3}, DType::Float32));
  Expr w = Var::make("w", TensorType::make({2, 2, 1, 1}, DType::Float32));
  Expr conv = testing::call("nn.conv2d", {x, w});
  Expr chain = conv;
  for (int i = 0; i < n; ++i) chain = testing::call(i % 2 ? "nn.relu" : "tanh", {chain});
  Module m = testing::main_module({x, w}, testing::call("add", {chain, testing::call("sigmoid", {conv})}));
  Module out = merge_composite(m, {{"conv_ew_add", conv_elementwise_add(), nullptr}});
  std::vector<const Function *> fns = composites(out);
  ASSERT_EQ(fns.size(), 1u);
  const auto *root = testing::main_body(out).as<Call>();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->args.size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Where matches are looked for: lets, branches, local and global functions, earlier composites
// ---------------------------------------------------------------------------------------------

TEST(MergeComposite, LetValuesAreMatchedButLetsAreNotLookedThrough) {
  check_merge({{"add_relu", add_relu(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  let %x = nn.relu(add(%a, %b));
  let %y = add(%x, %a);
  nn.relu(%y)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  let %x = fn (%p: T10, %q: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
    %0 = add(%p, %q);
    nn.relu(%0)
  }(%a, %b);
  let %y = add(%x, %a);
  nn.relu(%y)
}
)"));
}

TEST(MergeComposite, LetPatternOutlinesTheWholeLet) {
  // The let's variable is bound inside the composite, so it is not a parameter.
  DFPattern pattern = is_let(is_var(), op("add", {wildcard(), wildcard()}), op("nn.relu", {wildcard()}));
  check_merge({{"let_add_relu", pattern, nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  let %x = add(%a, %b);
  nn.relu(%x)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = fn (%p: T10, %q: T10, Composite="let_add_relu", PartitionedFromPattern="add_nn.relu_Let_") -> T10 {
    let %y = add(%p, %q);
    nn.relu(%y)
  };
  %0(%a, %b)
}
)"));
}

TEST(MergeComposite, PatternMatchingOnlyALeafOutlinesNothing) {
  const std::string program = with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  nn.relu(%0)
}
)");
  check_merge({{"anything", has_dtype(wildcard(), DType::Float32), nullptr}}, program, program);
}

TEST(MergeComposite, BranchesOfAnIfAreMatchedSeparately) {
  check_merge({{"add_relu", add_relu(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @main(%c: bool, %a: T10, %b: T10) -> T10 {
  if (%c) {
    %0 = add(%a, %b);
    nn.relu(%0)
  } else {
    %1 = subtract(%a, %b);
    nn.relu(%1)
  }
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @main(%c: bool, %a: T10, %b: T10) -> T10 {
  if (%c) {
    %1 = fn (%p: T10, %q: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
      %0 = add(%p, %q);
      nn.relu(%0)
    };
    %1(%a, %b)
  } else {
    %2 = subtract(%a, %b);
    nn.relu(%2)
  }
}
)"));
}

TEST(MergeComposite, EveryFunctionOfTheModuleIsMerged) {
  check_merge({{"add_relu", add_relu(), nullptr}}, with_t10(R"(#[version = "0.0.5"]
def @f(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  nn.relu(%0)
}
def @main(%a: T10) -> T10 {
  %2 = fn (%u: T10) -> T10 {
    %1 = add(%u, %u);
    nn.relu(%1)
  };
  %3 = %2(%a);
  @f(%3, %a)
}
)"),
              with_t10(R"(#[version = "0.0.5"]
def @f(%a: T10, %b: T10) -> T10 {
  %1 = fn (%p: T10, %q: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
    %0 = add(%p, %q);
    nn.relu(%0)
  };
  %1(%a, %b)
}
def @main(%a: T10) -> T10 {
  %4 = fn (%u: T10) -> T10 {
    %3 = fn (%r: T10, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") -> T10 {
      %2 = add(%r, %r);
      nn.relu(%2)
    };
    %3(%u)
  };
  %5 = %4(%a);
  @f(%5, %a)
}
)"));
}

TEST(MergeComposite, CompositesAreNotMatchedAgain) {
  // Merging twice, or with a pattern that also matches inside the composite, changes nothing more.
  const std::string program = with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  %1 = abs(%0);
  nn.relu(%1)
}
)");
  Table table = {{"A", pattern_a(), nullptr}, {"B", pattern_b(), nullptr}};
  Module once = merge_composite(parse(program), table);
  Module twice = merge_composite(once, table);
  EXPECT_TRUE(structural_equal(once, twice).equal) << print_module(twice).text;
  EXPECT_EQ(composites(twice).size(), 1u);
}

TEST(MergeComposite, RunsFromThePassListWithATargetsPatterns) {
  ExternalTarget t;
  t.name = "test";
  t.patterns = {{"test.add_relu", add_relu(), nullptr}};
  PassOptions options;
  options.targets = {t};
  Module out = run_passes(parse(with_t10(R"(#[version = "0.0.5"]
def @main(%a: T10, %b: T10) -> T10 {
  %0 = add(%a, %b);
  nn.relu(%0)
}
)")),
                          parse_pass_list("merge-composite=test"), options);
  std::vector<const Function *> fns = composites(out);
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0]->attrs.find(attr::kComposite)->s, "test.add_relu");
  // The annotate pass then claims the composite's call for the target.
  EXPECT_TRUE(t.supports(*testing::main_body(out).as<Call>()));
}

TEST(MergeComposite, ManyMatchesInALongChain) {
  // 20,000 add+relu pairs in one graph-form chain: each pair becomes one composite.
  const int n = 20000;
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Expr y = Var::make("y", TensorType::make({4}, DType::Float32));
  Expr e = x;
  for (int i = 0; i < n; ++i) e = testing::call("nn.relu", {testing::call("add", {e, y})});
  Module out = merge_composite(testing::main_module({x, y}, e), {{"add_relu", add_relu(), nullptr}});
  EXPECT_EQ(composites(out).size(), static_cast<size_t>(n));
  NDArray a(DType::Float32, {4}), b(DType::Float32, {4});
  for (int i = 0; i < 4; ++i) {
    a.data<float>()[i] = static_cast<float>(i) - 2.0f;
    b.data<float>()[i] = 0.5f;
  }
  // relu(relu(...(x + y) + y) ...): after the first step every element is at least 0.5, then grows by 0.5.
  Value v = run_main(out, {tensor_value(a), tensor_value(b)});
  const NDArray &r = v->as<TensorValue>()->data;
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(r.data<float>()[i], std::max(a.data<float>()[i] + 0.5f, 0.0f) + 0.5f * (n - 1));
}

}  // namespace
}  // namespace grove::relay
