// Partition graph (passes/PartitionGraph.h) on hand-written annotated modules, so the tests do not
// depend on annotate_target. The cases follow TVM's tests/python/relay/test_pass_partition_graph.py
// (constant propagation, multiple outputs, mixed single and multiple outputs, duplicate outputs,
// multiple use of an output, flattened tuple outputs, constant tuples, several functions) and the
// pitfalls TVM fixed later (leftover "default" annotations, name collisions). Every partitioned
// module must type-check, hold no annotation, and compute under the interpreter exactly what the
// annotated module computes (the interpreter runs a Primitive/Compiler global's body like any other).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/byoc/Target.h"
#include "frontend/relay/passes/AnnotateTarget.h"
#include "frontend/relay/passes/MergeCompilerRegions.h"
#include "frontend/relay/passes/PartitionGraph.h"
#include "support/Error.h"
#include "tests/relay/ByocTestUtil.h"
#include "tests/relay/ModelFixtures.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

Module parse(const std::string &text, const std::vector<NDArray> &meta = {}) {
  return parse_module(text, "partition_test.relay", meta);
}

Module partition(const Module &m) { return partition_graph(m); }

// Partitions `before`, compares with `expected`, and checks that the result has no annotation left
// and computes what `before` computes.
void check_partition(const std::string &before, const std::string &expected,
                     const std::vector<NDArray> &meta = {}) {
  EXPECT_TRUE(testing::check_pass(partition, before, expected, meta));
  Module in = parse(before, meta);
  Module out = partition_graph(in);
  EXPECT_EQ(testing::count_annotations(out), 0) << print_module(out).text;
  EXPECT_TRUE(testing::same_results(in, out));
}

const Function *global(const Module &m, const std::string &name) {
  const Expr *f = m.find_function(name);
  return f ? f->as<Function>() : nullptr;
}

// ---------------------------------------------------------------------------------------------
// One region, default annotations, constants
// ---------------------------------------------------------------------------------------------

// TVM's test_extern_ccompiler_default_ops before fusion: the add goes to ccompiler; log, exp and
// concatenate are "default" and lose their annotations.
TEST(PartitionGraph, OneRegionBecomesAGlobalAndDefaultAnnotationsVanish) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32]) -> Tensor[(16, 8), float32] {
  %0 = annotation.compiler_begin(%x, compiler="ccompiler");
  %1 = annotation.compiler_begin(%y, compiler="ccompiler");
  %2 = add(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="ccompiler");
  %4 = annotation.compiler_begin(%3, compiler="default");
  %5 = log(%4);
  %6 = annotation.compiler_end(%5, compiler="default");
  %7 = annotation.compiler_begin(%3, compiler="default");
  %8 = exp(%7);
  %9 = annotation.compiler_end(%8, compiler="default");
  %10 = annotation.compiler_begin(%6, compiler="default");
  %11 = annotation.compiler_begin(%9, compiler="default");
  %12 = (%10, %11);
  %13 = annotation.compiler_end(%12, compiler="default");
  %14 = annotation.compiler_begin(%13, compiler="default");
  %15 = concatenate(%14, axis=0);
  annotation.compiler_end(%15, compiler="default")
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_ccompiler_main_0(%x0: Tensor[(8, 8), float32], %y0: Tensor[(8, 8), float32], Primitive=1,
    Inline=1, Compiler="ccompiler", global_symbol="tvmgen_default_ccompiler_main_0") -> Tensor[(8, 8), float32] {
  add(%x0, %y0)
}
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32]) -> Tensor[(16, 8), float32] {
  %0 = @tvmgen_default_ccompiler_main_0(%x, %y);
  %1 = log(%0);
  %2 = exp(%0);
  %3 = (%1, %2);
  concatenate(%3, axis=0)
}
)");
}

constexpr const char *kConstantInput = R"(#[version = "0.0.5"]
def @main(%y: Tensor[(8, 8), float32]) -> Tensor[(8, 8), float32] {
  %0 = annotation.compiler_begin(meta[relay.Constant][0], compiler="ccompiler");
  %1 = annotation.compiler_begin(%y, compiler="ccompiler");
  %2 = add(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="ccompiler");
  log(%3)
}
)";

NDArray ones(Shape shape) {
  NDArray a(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = 1.0f;
  return a;
}

// TVM's test_constant_propagation: the constant moves into the partition; only %y is passed.
TEST(PartitionGraph, ConstantInputIsBoundIntoThePartition) {
  check_partition(kConstantInput, R"(#[version = "0.0.5"]
def @tvmgen_default_ccompiler_main_0(%y0: Tensor[(8, 8), float32], Primitive=1, Inline=1, Compiler="ccompiler",
    global_symbol="tvmgen_default_ccompiler_main_0") -> Tensor[(8, 8), float32] {
  add(meta[relay.Constant][0], %y0)
}
def @main(%y: Tensor[(8, 8), float32]) -> Tensor[(8, 8), float32] {
  %0 = @tvmgen_default_ccompiler_main_0(%y);
  log(%0)
}
)",
                  {ones({8, 8})});
}

// bind_constants=false (what C-source generators prefer): the constant stays an argument.
TEST(PartitionGraph, WithoutBindConstantsTheConstantIsAnArgument) {
  auto pass = [](const Module &m) { return partition_graph(m, "default", /*bind_constants=*/false); };
  EXPECT_TRUE(testing::check_pass(pass, kConstantInput, R"(#[version = "0.0.5"]
def @tvmgen_default_ccompiler_main_0(%c: Tensor[(8, 8), float32], %y0: Tensor[(8, 8), float32], Primitive=1,
    Inline=1, Compiler="ccompiler", global_symbol="tvmgen_default_ccompiler_main_0") -> Tensor[(8, 8), float32] {
  add(%c, %y0)
}
def @main(%y: Tensor[(8, 8), float32]) -> Tensor[(8, 8), float32] {
  %0 = @tvmgen_default_ccompiler_main_0(meta[relay.Constant][0], %y);
  log(%0)
}
)",
                                  {ones({8, 8})}));
}

// TVM's test_constant_tuples: a tuple of constants entering a region (concatenate's input) is bound
// whole, so the code generator sees constants, not parameters.
TEST(PartitionGraph, ConstantTupleIsBoundIntoThePartition) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = (meta[relay.Constant][0], meta[relay.Constant][1]);
  %1 = annotation.compiler_begin(%0, compiler="test");
  %2 = concatenate(%1, axis=0);
  %3 = annotation.compiler_end(%2, compiler="test");
  add(%3, %x)
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0") -> Tensor[(4), float32] {
  %0 = (meta[relay.Constant][0], meta[relay.Constant][1]);
  concatenate(%0, axis=0)
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = @tvmgen_default_test_main_0();
  add(%0, %x)
}
)",
                  {ones({2}), ones({2})});
}

// ---------------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------------

// TVM's test_multiple_outputs (batch_norm without the conv): three outputs leave the region, so
// the partition returns a tuple and each former output is a projection of one call.
TEST(PartitionGraph, MultipleOutputsBecomeOneTupleAndProjections) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 4, 2, 2), float32], %gamma: Tensor[(4), float32], %beta: Tensor[(4), float32],
          %mean: Tensor[(4), float32], %var: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%data, compiler="test");
  %1 = annotation.compiler_begin(%gamma, compiler="test");
  %2 = annotation.compiler_begin(%beta, compiler="test");
  %3 = annotation.compiler_begin(%mean, compiler="test");
  %4 = annotation.compiler_begin(%var, compiler="test");
  %5 = nn.batch_norm(%0, %1, %2, %3, %4);
  %6 = %5.0;
  %7 = nn.relu(%6);
  %8 = annotation.compiler_end(%7, compiler="test");
  %9 = %5.1;
  %10 = annotation.compiler_end(%9, compiler="test");
  %11 = %5.2;
  %12 = annotation.compiler_end(%11, compiler="test");
  %13 = abs(%10);
  %14 = abs(%12);
  (%8, %13, %14)
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(1, 4, 2, 2), float32], %i1: Tensor[(4), float32],
    %i2: Tensor[(4), float32], %i3: Tensor[(4), float32], %i4: Tensor[(4), float32], Primitive=1, Inline=1,
    Compiler="test", global_symbol="tvmgen_default_test_main_0")
    -> (Tensor[(1, 4, 2, 2), float32], Tensor[(4), float32], Tensor[(4), float32]) {
  %0 = nn.batch_norm(%i0, %i1, %i2, %i3, %i4);
  %1 = %0.0;
  %2 = nn.relu(%1);
  %3 = %0.1;
  %4 = %0.2;
  (%2, %3, %4)
}
def @main(%data: Tensor[(1, 4, 2, 2), float32], %gamma: Tensor[(4), float32], %beta: Tensor[(4), float32],
          %mean: Tensor[(4), float32], %var: Tensor[(4), float32]) {
  %0 = @tvmgen_default_test_main_0(%data, %gamma, %beta, %mean, %var);
  %1 = %0.0;
  %2 = %0.1;
  %3 = abs(%2);
  %4 = %0.2;
  %5 = abs(%4);
  (%1, %3, %5)
}
)");
}

// TVM's test_mixed_single_multiple_outputs: one region with two outputs, one with one.
TEST(PartitionGraph, MixedSingleAndMultipleOutputs) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%data, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = nn.relu(%1);
  %4 = annotation.compiler_end(%3, compiler="test");
  %5 = tanh(%2);
  %6 = annotation.compiler_begin(%4, compiler="test");
  %7 = annotation.compiler_begin(%5, compiler="test");
  %8 = add(%6, %7);
  annotation.compiler_end(%8, compiler="test")
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(10, 10), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0") -> (Tensor[(10, 10), float32], Tensor[(10, 10), float32]) {
  %0 = abs(%i0);
  %1 = nn.relu(%0);
  (%1, %0)
}
def @tvmgen_default_test_main_1(%i0: Tensor[(10, 10), float32], %i1: Tensor[(10, 10), float32], Primitive=1,
    Inline=1, Compiler="test", global_symbol="tvmgen_default_test_main_1") -> Tensor[(10, 10), float32] {
  add(%i0, %i1)
}
def @main(%data: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = @tvmgen_default_test_main_0(%data);
  %1 = %0.0;
  %2 = %0.1;
  %3 = tanh(%2);
  @tvmgen_default_test_main_1(%1, %3)
}
)");
}

// TVM's test_duplicate_outputs: one value ended once per consumer is one output, not three.
TEST(PartitionGraph, RegionOutputUsedThreeTimesIsOneOutput) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(10, 10), float32]) {
  %0 = annotation.compiler_begin(%data, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_end(%1, compiler="test");
  %4 = annotation.compiler_end(%1, compiler="test");
  %5 = annotation.compiler_begin(%2, compiler="default");
  %6 = nn.relu(%5);
  %7 = annotation.compiler_begin(%3, compiler="default");
  %8 = tanh(%7);
  %9 = annotation.compiler_begin(%4, compiler="default");
  %10 = log(%9);
  (%6, %8, %10)
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(10, 10), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0") -> Tensor[(10, 10), float32] {
  abs(%i0)
}
def @main(%data: Tensor[(10, 10), float32]) {
  %0 = @tvmgen_default_test_main_0(%data);
  %1 = nn.relu(%0);
  %2 = tanh(%0);
  %3 = log(%0);
  (%1, %2, %3)
}
)");
}

// TVM's test_multiple_use_of_an_output (same region): subtract, log and multiply annotated one by
// one, merged, then partitioned; add's value enters the region twice but is one parameter.
TEST(PartitionGraph, ValueEnteringTwiceIsOneParameterAfterMerging) {
  const std::string annotated = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32], %z: Tensor[(8, 8), float32]) {
  %0 = add(%x, %y);
  %1 = annotation.compiler_begin(%0, compiler="ccompiler");
  %2 = annotation.compiler_begin(%z, compiler="ccompiler");
  %3 = subtract(%1, %2);
  %4 = annotation.compiler_end(%3, compiler="ccompiler");
  %5 = annotation.compiler_begin(%0, compiler="ccompiler");
  %6 = log(%5);
  %7 = annotation.compiler_end(%6, compiler="ccompiler");
  %8 = annotation.compiler_begin(%7, compiler="ccompiler");
  %9 = annotation.compiler_begin(%4, compiler="ccompiler");
  %10 = multiply(%8, %9);
  annotation.compiler_end(%10, compiler="ccompiler")
}
)";
  auto merge_then_partition = [](const Module &m) { return partition_graph(merge_compiler_regions(m)); };
  EXPECT_TRUE(testing::check_pass(merge_then_partition, annotated, R"(#[version = "0.0.5"]
def @tvmgen_default_ccompiler_main_0(%x0: Tensor[(8, 8), float32], %y0: Tensor[(8, 8), float32], Primitive=1,
    Inline=1, Compiler="ccompiler", global_symbol="tvmgen_default_ccompiler_main_0") -> Tensor[(8, 8), float32] {
  %0 = log(%x0);
  %1 = subtract(%x0, %y0);
  multiply(%0, %1)
}
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32], %z: Tensor[(8, 8), float32]) {
  %0 = add(%x, %y);
  @tvmgen_default_ccompiler_main_0(%0, %z)
}
)"));
  Module in = parse(annotated);
  EXPECT_TRUE(testing::same_results(in, merge_then_partition(in)));
}

// TVM's FlattenTupleOutputs (#5616) and duplicate outputs (#5320): a tuple output contributes its
// fields to the one flat result, and a field that is also an output of its own appears once.
TEST(PartitionGraph, TupleOutputIsFlattenedWithoutDuplicates) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = exp(%0);
  %3 = (%1, %2);
  %4 = annotation.compiler_end(%3, compiler="test");
  %5 = annotation.compiler_end(%1, compiler="test");
  (%4, %5)
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0") -> (Tensor[(4), float32], Tensor[(4), float32]) {
  %0 = abs(%i0);
  %1 = exp(%i0);
  (%0, %1)
}
def @main(%x: Tensor[(4), float32]) {
  %0 = @tvmgen_default_test_main_0(%x);
  %1 = %0.0;
  %2 = %0.1;
  %3 = (%1, %2);
  (%3, %1)
}
)");
}

// TVM's test_flatten_tuple_output: a tuple-typed call (split) leaving the region is returned as
// its fields; the caller's concatenate gets a tuple of projections.
TEST(PartitionGraph, TupleTypedCallOutputIsFlattened) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32]) {
  %0 = annotation.compiler_begin(%a, compiler="test");
  %1 = split(%0, indices_or_sections=2);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = %1.0;
  %4 = abs(%3);
  %5 = annotation.compiler_end(%4, compiler="test");
  %6 = concatenate(%2, axis=0);
  %7 = nn.relu(%5);
  (%6, %7)
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(10, 10), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0")
    -> (Tensor[(5, 10), float32], Tensor[(5, 10), float32], Tensor[(5, 10), float32]) {
  %0 = split(%i0, indices_or_sections=2);
  %1 = %0.0;
  %2 = %0.1;
  %3 = %0.0;
  %4 = abs(%3);
  (%1, %2, %4)
}
def @main(%a: Tensor[(10, 10), float32]) {
  %0 = @tvmgen_default_test_main_0(%a);
  %1 = %0.0;
  %2 = %0.1;
  %3 = (%1, %2);
  %4 = concatenate(%3, axis=0);
  %5 = %0.2;
  %6 = nn.relu(%5);
  (%4, %6)
}
)");
}

// ---------------------------------------------------------------------------------------------
// Control flow, composites, several targets and functions, names
// ---------------------------------------------------------------------------------------------

// The regions in each branch are outlined; their calls stay in their branches.
TEST(PartitionGraph, RegionsInsideIfBranchesAreCalledThere) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%c, compiler="default");
  %7 = if (%0) {
    %1 = annotation.compiler_begin(%x, compiler="test");
    %2 = abs(%1);
    %3 = annotation.compiler_end(%2, compiler="test");
    annotation.compiler_begin(%3, compiler="default")
  } else {
    %4 = annotation.compiler_begin(%x, compiler="test");
    %5 = exp(%4);
    %6 = annotation.compiler_end(%5, compiler="test");
    annotation.compiler_begin(%6, compiler="default")
  };
  annotation.compiler_end(%7, compiler="default")
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_0") -> Tensor[(4), float32] {
  abs(%i0)
}
def @tvmgen_default_test_main_1(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="test",
    global_symbol="tvmgen_default_test_main_1") -> Tensor[(4), float32] {
  exp(%i0)
}
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  if (%c) {
    @tvmgen_default_test_main_0(%x)
  } else {
    @tvmgen_default_test_main_1(%x)
  }
}
)");
}

// A composite function called inside a region stays a local function of the partition.
TEST(PartitionGraph, CompositeFunctionStaysLocalInsideThePartition) {
  check_partition(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) -> Tensor[(2, 4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = annotation.compiler_begin(%w, compiler="dnnl");
  %2 = fn (%a: Tensor[(2, 3), float32], %b: Tensor[(4, 3), float32], Composite="dnnl.dense_relu",
           PartitionedFromPattern="nn.dense_nn.relu_") -> Tensor[(2, 4), float32] {
    %3 = nn.dense(%a, %b);
    nn.relu(%3)
  };
  %4 = %2(%0, %1);
  %5 = annotation.compiler_end(%4, compiler="dnnl");
  %6 = annotation.compiler_begin(%5, compiler="default");
  %7 = tanh(%6);
  annotation.compiler_end(%7, compiler="default")
}
)",
                  R"(#[version = "0.0.5"]
def @tvmgen_default_dnnl_main_0(%i0: Tensor[(2, 3), float32], %i1: Tensor[(4, 3), float32], Primitive=1,
    Inline=1, Compiler="dnnl", global_symbol="tvmgen_default_dnnl_main_0") -> Tensor[(2, 4), float32] {
  %1 = fn (%a: Tensor[(2, 3), float32], %b: Tensor[(4, 3), float32], Composite="dnnl.dense_relu",
           PartitionedFromPattern="nn.dense_nn.relu_") -> Tensor[(2, 4), float32] {
    %0 = nn.dense(%a, %b);
    nn.relu(%0)
  };
  %1(%i0, %i1)
}
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) -> Tensor[(2, 4), float32] {
  %0 = @tvmgen_default_dnnl_main_0(%x, %w);
  tanh(%0)
}
)");
}

constexpr const char *kSeveralTargets = R"(#[version = "0.0.5"]
def @f(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = exp(%0);
  annotation.compiler_end(%1, compiler="dnnl")
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="dnnl");
  %3 = annotation.compiler_begin(%2, compiler="ccompiler");
  %4 = nn.relu(%3);
  %5 = annotation.compiler_end(%4, compiler="ccompiler");
  %6 = annotation.compiler_begin(%5, compiler="dnnl");
  %7 = tanh(%6);
  %8 = annotation.compiler_end(%7, compiler="dnnl");
  @f(%8)
}
)";

// Several targets in several functions: every partition gets its own name (n counts per target
// over the whole module), and @f's region is outlined like @main's.
TEST(PartitionGraph, SeveralTargetsAndFunctionsGetUniqueNames) {
  check_partition(kSeveralTargets, R"(#[version = "0.0.5"]
def @tvmgen_default_dnnl_main_0(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="dnnl",
    global_symbol="tvmgen_default_dnnl_main_0") -> Tensor[(4), float32] {
  exp(%i0)
}
def @f(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  @tvmgen_default_dnnl_main_0(%x)
}
def @tvmgen_default_dnnl_main_1(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="dnnl",
    global_symbol="tvmgen_default_dnnl_main_1") -> Tensor[(4), float32] {
  abs(%i0)
}
def @tvmgen_default_ccompiler_main_0(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="ccompiler",
    global_symbol="tvmgen_default_ccompiler_main_0") -> Tensor[(4), float32] {
  nn.relu(%i0)
}
def @tvmgen_default_dnnl_main_2(%i0: Tensor[(4), float32], Primitive=1, Inline=1, Compiler="dnnl",
    global_symbol="tvmgen_default_dnnl_main_2") -> Tensor[(4), float32] {
  tanh(%i0)
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = @tvmgen_default_dnnl_main_1(%x);
  %1 = @tvmgen_default_ccompiler_main_0(%0);
  %2 = @tvmgen_default_dnnl_main_2(%1);
  @f(%2)
}
)");
}

// Names never collide with a global the module already has (a second partitioning, a user's
// function), and the module name and odd target names are made identifiers.
TEST(PartitionGraph, NamesAvoidExistingGlobalsAndAreSanitized) {
  Module m = parse(R"(#[version = "0.0.5"]
def @tvmgen_my_mod_unsanitary_name___main_0(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  negative(%x)
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="unsanitary-name++");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="unsanitary-name++");
  @tvmgen_my_mod_unsanitary_name___main_0(%2)
}
)");
  Module out = partition_graph(m, "my-mod");
  const Function *f = global(out, "tvmgen_my_mod_unsanitary_name___main_1");
  ASSERT_NE(f, nullptr) << print_module(out).text;
  EXPECT_EQ(f->attrs.find(attr::kCompiler)->s, "unsanitary-name++");
  EXPECT_EQ(f->attrs.find(attr::kGlobalSymbol)->s, "tvmgen_my_mod_unsanitary_name___main_1");
  EXPECT_EQ(f->attrs.find(attr::kPrimitive)->i, 1);
  EXPECT_EQ(f->attrs.find(attr::kInline)->i, 1);
  // The user's function is untouched.
  EXPECT_EQ(global(out, "tvmgen_my_mod_unsanitary_name___main_0")->attrs.has(attr::kCompiler), false);
  EXPECT_TRUE(testing::same_results(m, out));
}

TEST(PartitionGraph, PartitioningTwiceChangesNothing) {
  Module once = partition_graph(parse(kSeveralTargets));
  Module twice = partition_graph(once);
  EXPECT_TRUE(structural_equal(once, twice).equal);
  EXPECT_EQ(once.functions().size(), twice.functions().size());
}

TEST(PartitionGraph, InputModuleIsLeftUnchanged) {
  Module in = parse(kSeveralTargets);
  Module copy = parse(kSeveralTargets);
  partition_graph(in);
  EXPECT_TRUE(structural_equal(in, copy).equal);
}

// ---------------------------------------------------------------------------------------------
// The whole pipeline: annotate_target, merge_compiler_regions, partition_graph
// ---------------------------------------------------------------------------------------------

ExternalTarget op_target(const std::string &name, const std::vector<std::string> &ops) {
  ExternalTarget t;
  t.name = name;
  for (const std::string &op : ops) t.ops[op] = nullptr;
  return t;
}

Module annotate_merge_partition(const Module &m, const ExternalTarget &target) {
  infer_types(m);
  return partition_graph(merge_compiler_regions(annotate_target(m, {&target})));
}

// TVM's test_duplicate_merge_and_tuplegetitem: batch_norm and relu merge into one partition that
// returns relu's value and the projection two default ops share (once).
TEST(PartitionGraph, PipelineMergesBatchNormAndReluIntoOnePartition) {
  const ExternalTarget target = op_target("test", {"nn.batch_norm", "nn.relu"});
  auto pipeline = [&](const Module &m) { return annotate_merge_partition(m, target); };
  const std::string before = R"(#[version = "0.0.5"]
def @main(%data: Tensor[(10, 10), float32], %gamma: Tensor[(10), float32], %beta: Tensor[(10), float32],
          %mean: Tensor[(10), float32], %var: Tensor[(10), float32]) {
  %0 = nn.batch_norm(%data, %gamma, %beta, %mean, %var);
  %1 = %0.0;
  %2 = nn.relu(%1);
  %3 = %0.1;
  %4 = tanh(%3);
  %5 = log(%3);
  (%2, %4, %5)
}
)";
  EXPECT_TRUE(testing::check_pass(pipeline, before, R"(#[version = "0.0.5"]
def @tvmgen_default_test_main_0(%i0: Tensor[(10, 10), float32], %i1: Tensor[(10), float32],
    %i2: Tensor[(10), float32], %i3: Tensor[(10), float32], %i4: Tensor[(10), float32], Primitive=1, Inline=1,
    Compiler="test", global_symbol="tvmgen_default_test_main_0") -> (Tensor[(10, 10), float32], Tensor[(10), float32]) {
  %0 = nn.batch_norm(%i0, %i1, %i2, %i3, %i4);
  %1 = %0.0;
  %2 = nn.relu(%1);
  %3 = %0.1;
  (%2, %3)
}
def @main(%data: Tensor[(10, 10), float32], %gamma: Tensor[(10), float32], %beta: Tensor[(10), float32],
          %mean: Tensor[(10), float32], %var: Tensor[(10), float32]) {
  %0 = @tvmgen_default_test_main_0(%data, %gamma, %beta, %mean, %var);
  %1 = %0.0;
  %2 = %0.1;
  %3 = tanh(%2);
  %4 = log(%2);
  (%1, %3, %4)
}
)"));
  Module in = parse(before);
  EXPECT_TRUE(testing::same_results(in, pipeline(in)));
}

// TVM's test_if_else: partitioning what annotate and merge make of an `if` between supported ops
// must succeed, leave no annotation, and compute the same values.
TEST(PartitionGraph, PipelineHandlesIfBetweenSupportedOps) {
  const ExternalTarget target = op_target("test", {"sigmoid", "erf", "add"});
  Module in = parse(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32), float32]) -> Tensor[(1, 32), float32] {
  %0 = add(%data, %data);
  %1 = subtract(%0, %data);
  %2 = sum(%0);
  %3 = sum(%1);
  %4 = equal(%2, %3);
  %5 = if (%4) {
    sigmoid(%0)
  } else {
    sigmoid(%1)
  };
  %6 = erf(%5);
  add(%0, %6)
}
)");
  Module out = annotate_merge_partition(in, target);
  EXPECT_EQ(testing::count_annotations(out), 0) << print_module(out).text;
  EXPECT_GE(out.functions().size(), 3u) << print_module(out).text;
  for (uint64_t seed : {1u, 2u, 3u}) EXPECT_TRUE(testing::same_results(in, out, seed));
}

// A let-bound closure that calls itself: its uses of the variable form a cycle in the dependency
// graph merge_compiler_regions walks, which must neither hang nor merge across the recursion.
TEST(PartitionGraph, PipelineHandlesALetBoundRecursiveClosure) {
  const ExternalTarget target = op_target("test", {"add", "nn.relu", "tanh", "subtract"});
  Module in = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  let %f = fn (%i: int32, %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
    if (less(%i, 1)) {
      %y
    } else {
      %0 = add(%y, %y);
      %1 = nn.relu(%0);
      %f(subtract(%i, 1), %1)
    }
  };
  %f(3, tanh(%x))
}
)");
  Module out = annotate_merge_partition(in, target);
  EXPECT_EQ(testing::count_annotations(out), 0) << print_module(out).text;
  EXPECT_GE(out.functions().size(), 3u) << print_module(out).text;
  EXPECT_TRUE(testing::same_results(in, out));
}

// The example models (an MLP, a CNN, an LSTM over a list, two TreeLSTMs recursing over trees with
// `match`) through the whole pipeline, for a target claiming their arithmetic but not all of it:
// the partitioned modules compute bit for bit what the originals compute, on the fixtures' weights
// (random trees for the TreeLSTMs).
TEST(PartitionGraph, PipelineKeepsTheResultsOfTheExampleModels) {
  const ExternalTarget target = op_target(
      "test", {"nn.dense", "nn.bias_add", "nn.relu", "nn.conv2d", "add", "multiply", "sigmoid", "tanh"});
  for (const char *name : {"mlp", "cnn", "lstm", "treelstm", "childsum_treelstm"}) {
    SCOPED_TRACE(name);
    testing::LoadedModel l = testing::load_model(name);
    std::map<std::string, Value> special;
    if (std::string(name) == "lstm") special["xs"] = testing::lstm_sequence(l);
    if (std::string(name).find("treelstm") != std::string::npos) {
      std::mt19937_64 rng(3);
      std::string why;
      const Expr &trees = l.module.find_function("main")->as<Function>()->params[0];
      special["trees"] = *random_value(l.module, trees.type(), rng, &why);
    }
    std::vector<Value> args = testing::main_args(l, special);
    Module out = annotate_merge_partition(l.module, target);
    EXPECT_EQ(testing::count_annotations(out), 0) << print_module(out).text;
    EXPECT_GT(out.functions().size(), l.module.functions().size()) << print_module(out).text;
    EXPECT_TRUE(testing::same_results_on(l.module, out, args));
  }
}

// ---------------------------------------------------------------------------------------------
// Deep input and errors
// ---------------------------------------------------------------------------------------------

// 100,000 annotated abs calls, merged into one region and outlined: no deep recursion, and the
// partition computes what the chain computes.
TEST(PartitionGraph, HundredThousandCallChainIsOnePartition) {
  const int n = 100000;
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Attrs test = Attrs().with("compiler", AttrValue::of_string("test"));
  Expr e = x;
  for (int i = 0; i < n; ++i) {
    Expr begin = Call::make(Op::make("annotation.compiler_begin"), {e}, test);
    e = Call::make(Op::make("annotation.compiler_end"), {Call::make(Op::make("negative"), {begin})}, test);
  }
  Module m = testing::main_module({x}, e);
  Module out = partition_graph(merge_compiler_regions(m));
  // What the partition computes is checked on small modules above; here, that nothing recursed.
  EXPECT_EQ(out.functions().size(), 2u);
  EXPECT_EQ(testing::count_annotations(out), 0);
  EXPECT_EQ(testing::count_calls(out, "negative"), n);
}

// 2,000 regions one after another (unmerged): 2,000 partitions, each named once.
TEST(PartitionGraph, ThousandsOfRegionsGetDistinctNames) {
  const int n = 2000;
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Attrs test = Attrs().with("compiler", AttrValue::of_string("test"));
  Expr e = x;
  for (int i = 0; i < n; ++i) {
    Expr begin = Call::make(Op::make("annotation.compiler_begin"), {e}, test);
    e = Call::make(Op::make("annotation.compiler_end"), {Call::make(Op::make("negative"), {begin})}, test);
  }
  Module out = partition_graph(testing::main_module({x}, e));
  EXPECT_EQ(out.functions().size(), static_cast<size_t>(n + 1));
  EXPECT_NE(global(out, "tvmgen_default_test_main_0"), nullptr);
  EXPECT_NE(global(out, "tvmgen_default_test_main_1999"), nullptr);
}

TEST(PartitionGraph, RegionValueUsedOutsideWithoutEndIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  add(%2, %1)
}
)");
  EXPECT_THAT([&] { partition_graph(m); },
              ::testing::ThrowsMessage<UserError>(::testing::AllOf(
                  ::testing::HasSubstr("partition_test.relay:4:"),
                  ::testing::HasSubstr("inside a region of 'test' but also used outside it"),
                  ::testing::HasSubstr("expected one compiler_end per use outside the region"))));
}

// An end whose value also feeds its own region (TVM merges the regions it separates): inside the
// partition it is an identity, and the value is still an output.
TEST(PartitionGraph, EndInsideItsOwnRegionIsAnIdentityThere) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_end(abs(%0), compiler="test");
  %2 = annotation.compiler_end(nn.relu(%1), compiler="test");
  (%1, %2)
}
)");
  Module out = partition_graph(m);
  EXPECT_EQ(out.functions().size(), 2u);
  EXPECT_EQ(testing::count_annotations(out), 0) << print_module(out).text;
  EXPECT_TRUE(testing::same_results(m, out));
}

TEST(PartitionGraph, DefaultEndInsideARegionIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="default");
  %1 = annotation.compiler_end(abs(%0), compiler="default");
  annotation.compiler_end(nn.relu(%1), compiler="test")
}
)");
  EXPECT_THAT(
      [&] { partition_graph(m); },
      ::testing::ThrowsMessage<UserError>(::testing::AllOf(
          ::testing::HasSubstr("partition_test.relay:4:"),
          ::testing::HasSubstr("annotation.compiler_end(compiler=\"default\") is inside a region of 'test'"),
          ::testing::HasSubstr("expected an annotation.compiler_begin between a region and the values"))));
}

TEST(PartitionGraph, RegionsInACycleAreAnError) {
  // abs is an output (through %2) and feeds add directly, while tanh(%2) re-enters the same
  // region: the region would need its own output as an input.
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = tanh(%2);
  %4 = annotation.compiler_begin(%3, compiler="test");
  %5 = add(%1, %4);
  annotation.compiler_end(%5, compiler="test")
}
)");
  EXPECT_THAT(
      [&] { partition_graph(m); },
      ::testing::ThrowsMessage<UserError>(::testing::AllOf(
          ::testing::HasSubstr("the annotated regions depend on each other in a cycle"),
          ::testing::HasSubstr("expected regions as annotate_target and merge_compiler_regions make them"))));
}

TEST(PartitionGraph, VariableEnteringWithoutBeginIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = add(%0, %y);
  annotation.compiler_end(%1, compiler="test")
}
)");
  EXPECT_THAT(
      [&] { partition_graph(m); },
      ::testing::ThrowsMessage<UserError>(::testing::AllOf(
          ::testing::HasSubstr("partition_test.relay:5:"),
          ::testing::HasSubstr("the region of 'test' ending here uses %y, defined outside it"),
          ::testing::HasSubstr("expected every value entering a region to pass through a compiler_begin"))));
}

}  // namespace
}  // namespace grove::relay
