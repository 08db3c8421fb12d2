// Merge compiler regions (passes/MergeCompilerRegions.h) on hand-written annotated modules, so the
// tests do not depend on annotate_target. The cases follow TVM's
// tests/python/relay/test_pass_merge_compiler_regions.py (the diamond, the example graph of the
// "improved graph partitioning" RFC) plus grove's rules: "default" regions never merge, regions
// merge only within one scope (an `if` branch, a function body), and a value passing through a
// let-bound variable keeps its regions apart. Merged modules must type-check and compute what the
// input computes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/passes/MergeCompilerRegions.h"
#include "support/Error.h"
#include "tests/relay/ByocTestUtil.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

Module parse(const std::string &text) { return parse_module(text, "merge_regions_test.relay"); }

// Merges `before`, compares with `expected` (alpha-equivalence and the same sharing), and checks
// that the merged module type-checks and computes what `before` computes.
void check_merge(const std::string &before, const std::string &expected) {
  EXPECT_TRUE(testing::check_pass(merge_compiler_regions, before, expected));
  Module in = parse(before);
  Module out = merge_compiler_regions(in);
  EXPECT_NO_THROW(infer_types(out));
  EXPECT_TRUE(testing::same_results(in, out));
}

TEST(MergeCompilerRegions, TwoAdjacentRegionsOfOneTargetMerge) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="test");
  %4 = nn.relu(%3);
  annotation.compiler_end(%4, compiler="test")
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = nn.relu(%1);
  annotation.compiler_end(%2, compiler="test")
}
)");
}

// TVM's test_diamond_graph_fanouts: abs feeds relu (test) and tanh (default), both feed add (test).
// abs and relu merge; add may not join them, since the path abs -> tanh -> add would then leave the
// merged region and come back into it.
TEST(MergeCompilerRegions, DiamondThroughAnotherTargetStaysSplit) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%data, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_end(%1, compiler="test");
  %4 = annotation.compiler_begin(%2, compiler="test");
  %5 = annotation.compiler_begin(%3, compiler="default");
  %6 = nn.relu(%4);
  %7 = annotation.compiler_end(%6, compiler="test");
  %8 = tanh(%5);
  %9 = annotation.compiler_end(%8, compiler="default");
  %10 = annotation.compiler_begin(%7, compiler="test");
  %11 = annotation.compiler_begin(%9, compiler="test");
  %12 = add(%10, %11);
  annotation.compiler_end(%12, compiler="test")
}
)",
              R"(#[version = "0.0.5"]
def @main(%data: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%data, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = nn.relu(%1);
  %5 = annotation.compiler_end(%4, compiler="test");
  %6 = tanh(%3);
  %7 = annotation.compiler_end(%6, compiler="default");
  %8 = annotation.compiler_begin(%5, compiler="test");
  %9 = annotation.compiler_begin(%7, compiler="test");
  %10 = add(%8, %9);
  annotation.compiler_end(%10, compiler="test")
}
)");
}

// TVM's test_example_graph (the RFC's figure): adds are "test", subtracts "default". The adds merge
// into {node0, node1, node2, node5, node7} and {node8, node9}; node8 may not join the first group
// because node5 -> node6 (default) -> node8. Unlike TVM, the two chained default subtracts stay
// separate regions: "default" regions are never merged (partition_graph drops them anyway).
TEST(MergeCompilerRegions, ExampleGraphOfTheRFC) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%in_1: Tensor[(10, 10), float32], %in_2: Tensor[(10, 10), float32], %in_3: Tensor[(10, 10), float32],
          %in_4: Tensor[(10, 10), float32], %in_5: Tensor[(10, 10), float32], %in_6: Tensor[(10, 10), float32],
          %in_7: Tensor[(10, 10), float32], %in_8: Tensor[(10, 10), float32], %in_9: Tensor[(10, 10), float32],
          %in_10: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%in_1, compiler="test");
  %1 = annotation.compiler_begin(%in_2, compiler="test");
  %2 = annotation.compiler_begin(%in_3, compiler="test");
  %3 = annotation.compiler_begin(%in_4, compiler="test");
  %4 = add(%0, %1);
  %5 = add(%2, %3);
  %6 = annotation.compiler_end(%4, compiler="test");
  %7 = annotation.compiler_end(%5, compiler="test");
  %8 = annotation.compiler_begin(%6, compiler="test");
  %9 = annotation.compiler_begin(%7, compiler="test");
  %10 = add(%8, %9);
  %11 = annotation.compiler_end(%10, compiler="test");
  %12 = annotation.compiler_begin(%in_5, compiler="default");
  %13 = annotation.compiler_begin(%in_6, compiler="default");
  %14 = subtract(%12, %13);
  %15 = annotation.compiler_begin(%in_7, compiler="default");
  %16 = annotation.compiler_end(%14, compiler="default");
  %17 = annotation.compiler_begin(%16, compiler="default");
  %18 = subtract(%15, %17);
  %19 = annotation.compiler_end(%18, compiler="default");
  %20 = annotation.compiler_begin(%11, compiler="test");
  %21 = annotation.compiler_begin(%19, compiler="test");
  %22 = add(%20, %21);
  %23 = annotation.compiler_end(%22, compiler="test");
  %24 = annotation.compiler_end(%22, compiler="test");
  %25 = annotation.compiler_begin(%in_8, compiler="default");
  %26 = annotation.compiler_begin(%23, compiler="default");
  %27 = subtract(%25, %26);
  %28 = annotation.compiler_begin(%in_9, compiler="test");
  %29 = annotation.compiler_begin(%24, compiler="test");
  %30 = add(%28, %29);
  %31 = annotation.compiler_end(%30, compiler="test");
  %32 = annotation.compiler_end(%27, compiler="default");
  %33 = annotation.compiler_begin(%32, compiler="test");
  %34 = annotation.compiler_begin(%31, compiler="test");
  %35 = add(%33, %34);
  %36 = annotation.compiler_end(%35, compiler="test");
  %37 = annotation.compiler_begin(%in_10, compiler="test");
  %38 = annotation.compiler_begin(%36, compiler="test");
  %39 = add(%37, %38);
  annotation.compiler_end(%39, compiler="test")
}
)",
              R"(#[version = "0.0.5"]
def @main(%in_1: Tensor[(10, 10), float32], %in_2: Tensor[(10, 10), float32], %in_3: Tensor[(10, 10), float32],
          %in_4: Tensor[(10, 10), float32], %in_5: Tensor[(10, 10), float32], %in_6: Tensor[(10, 10), float32],
          %in_7: Tensor[(10, 10), float32], %in_8: Tensor[(10, 10), float32], %in_9: Tensor[(10, 10), float32],
          %in_10: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = annotation.compiler_begin(%in_1, compiler="test");
  %1 = annotation.compiler_begin(%in_2, compiler="test");
  %2 = annotation.compiler_begin(%in_3, compiler="test");
  %3 = annotation.compiler_begin(%in_4, compiler="test");
  %4 = add(%0, %1);
  %5 = add(%2, %3);
  %6 = add(%4, %5);
  %7 = annotation.compiler_begin(%in_5, compiler="default");
  %8 = annotation.compiler_begin(%in_6, compiler="default");
  %9 = subtract(%7, %8);
  %10 = annotation.compiler_begin(%in_7, compiler="default");
  %11 = annotation.compiler_end(%9, compiler="default");
  %12 = annotation.compiler_begin(%11, compiler="default");
  %13 = subtract(%10, %12);
  %14 = annotation.compiler_end(%13, compiler="default");
  %15 = annotation.compiler_begin(%14, compiler="test");
  %16 = add(%6, %15);
  %17 = annotation.compiler_end(%16, compiler="test");
  %18 = annotation.compiler_begin(%in_8, compiler="default");
  %19 = annotation.compiler_begin(%17, compiler="default");
  %20 = subtract(%18, %19);
  %21 = annotation.compiler_begin(%in_9, compiler="test");
  %22 = add(%21, %16);
  %23 = annotation.compiler_end(%22, compiler="test");
  %24 = annotation.compiler_end(%20, compiler="default");
  %25 = annotation.compiler_begin(%24, compiler="test");
  %26 = annotation.compiler_begin(%23, compiler="test");
  %27 = add(%25, %26);
  %28 = annotation.compiler_begin(%in_10, compiler="test");
  %29 = add(%28, %27);
  annotation.compiler_end(%29, compiler="test")
}
)");
}

constexpr const char *kTestDefaultTest = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = tanh(%3);
  %5 = annotation.compiler_end(%4, compiler="default");
  %6 = annotation.compiler_begin(%5, compiler="default");
  %7 = exp(%6);
  %8 = annotation.compiler_end(%7, compiler="default");
  %9 = annotation.compiler_begin(%8, compiler="test");
  %10 = nn.relu(%9);
  annotation.compiler_end(%10, compiler="test")
}
)";

TEST(MergeCompilerRegions, DefaultRegionBetweenKeepsRegionsApartAndDefaultNeverMerges) {
  check_merge(kTestDefaultTest, kTestDefaultTest);
}

constexpr const char *kTwoTargets = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="dnnl");
  %3 = annotation.compiler_begin(%2, compiler="ccompiler");
  %4 = nn.relu(%3);
  annotation.compiler_end(%4, compiler="ccompiler")
}
)";

TEST(MergeCompilerRegions, AdjacentRegionsOfDifferentTargetsStaySplit) {
  check_merge(kTwoTargets, kTwoTargets);
}

TEST(MergeCompilerRegions, SeveralTargetsEachMergeTheirOwnChains) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="dnnl");
  %3 = annotation.compiler_begin(%2, compiler="dnnl");
  %4 = exp(%3);
  %5 = annotation.compiler_end(%4, compiler="dnnl");
  %6 = annotation.compiler_begin(%5, compiler="ccompiler");
  %7 = nn.relu(%6);
  %8 = annotation.compiler_end(%7, compiler="ccompiler");
  %9 = annotation.compiler_begin(%8, compiler="ccompiler");
  %10 = tanh(%9);
  annotation.compiler_end(%10, compiler="ccompiler")
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = abs(%0);
  %2 = exp(%1);
  %3 = annotation.compiler_end(%2, compiler="dnnl");
  %4 = annotation.compiler_begin(%3, compiler="ccompiler");
  %5 = nn.relu(%4);
  %6 = tanh(%5);
  annotation.compiler_end(%6, compiler="ccompiler")
}
)");
}

// TVM's test_if_else concern: regions inside a branch merge with each other, but not with a region
// outside the `if` (that would evaluate the branch's ops whichever branch is taken).
TEST(MergeCompilerRegions, IfBranchesMergeInsideButNotAcrossTheBranch) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_end(%1, compiler="test");
  %9 = if (%c) {
    %4 = annotation.compiler_begin(%2, compiler="test");
    %5 = nn.relu(%4);
    %6 = annotation.compiler_end(%5, compiler="test");
    %7 = annotation.compiler_begin(%6, compiler="test");
    %8 = exp(%7);
    annotation.compiler_end(%8, compiler="test")
  } else {
    %3
  };
  add(%9, %3)
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_end(%1, compiler="test");
  %7 = if (%c) {
    %4 = annotation.compiler_begin(%2, compiler="test");
    %5 = nn.relu(%4);
    %6 = exp(%5);
    annotation.compiler_end(%6, compiler="test")
  } else {
    %3
  };
  add(%7, %3)
}
)");
}

// A region whose value also feeds a branch lies in the function body, and merges there.
TEST(MergeCompilerRegions, RegionFeedingABranchStillMergesOutsideIt) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_end(%1, compiler="test");
  %4 = if (%c) {
    %2
  } else {
    %x
  };
  %5 = annotation.compiler_begin(%3, compiler="test");
  %6 = exp(%5);
  %7 = annotation.compiler_end(%6, compiler="test");
  add(%4, %7)
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = if (%c) {
    %2
  } else {
    %x
  };
  %4 = exp(%1);
  %5 = annotation.compiler_end(%4, compiler="test");
  add(%3, %5)
}
)");
}

// A tuple and a projection annotated with the target (annotate_target does this between calls of
// one target) join the calls' region.
TEST(MergeCompilerRegions, TuplesAndProjectionsJoinTheRegion) {
  check_merge(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%x, compiler="test");
  %4 = exp(%3);
  %5 = annotation.compiler_end(%4, compiler="test");
  %6 = annotation.compiler_begin(%2, compiler="test");
  %7 = annotation.compiler_begin(%5, compiler="test");
  %8 = (%6, %7);
  %9 = annotation.compiler_end(%8, compiler="test");
  %10 = annotation.compiler_begin(%9, compiler="test");
  %11 = %10.1;
  annotation.compiler_end(%11, compiler="test")
}
)",
              R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_begin(%x, compiler="test");
  %3 = exp(%2);
  %4 = (%1, %3);
  %5 = %4.1;
  annotation.compiler_end(%5, compiler="test")
}
)");
}

// A value that reaches a region through a let-bound variable is no begin(end) pair: nothing to remove.
constexpr const char *kThroughLet = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  let %v = annotation.compiler_end(abs(annotation.compiler_begin(%x, compiler="test")), compiler="test");
  annotation.compiler_end(nn.relu(annotation.compiler_begin(%v, compiler="test")), compiler="test")
}
)";

TEST(MergeCompilerRegions, RegionsConnectedThroughALetVariableStaySplit) {
  check_merge(kThroughLet, kThroughLet);
}

TEST(MergeCompilerRegions, WorksOnEveryGlobalFunction) {
  const std::string chain = R"(
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="test");
  %4 = exp(%3);
  annotation.compiler_end(%4, compiler="test")
)";
  const std::string merged = R"(
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = abs(%0);
  %2 = exp(%1);
  annotation.compiler_end(%2, compiler="test")
)";
  const std::string head =
      "#[version = \"0.0.5\"]\ndef @f(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {";
  const std::string main = "}\ndef @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  @f(%x)\n}\n";
  check_merge(head + chain + main, head + merged + main);
}

TEST(MergeCompilerRegions, InputModuleIsLeftUnchanged) {
  Module in = parse(kTwoTargets);
  Module copy = parse(kTwoTargets);
  merge_compiler_regions(in);
  EXPECT_TRUE(structural_equal(in, copy).equal);
}

// 100,000 abs calls, each its own region: one region after merging, without deep recursion.
TEST(MergeCompilerRegions, HundredThousandRegionChainMergesIntoOne) {
  const int n = 100000;
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Attrs test = Attrs().with("compiler", AttrValue::of_string("test"));
  Expr e = x;
  for (int i = 0; i < n; ++i) {
    Expr begin = Call::make(Op::make("annotation.compiler_begin"), {e}, test);
    e = Call::make(Op::make("annotation.compiler_end"), {Call::make(Op::make("abs"), {begin})}, test);
  }
  Module m = testing::main_module({x}, e);
  Module out = merge_compiler_regions(m);
  EXPECT_EQ(testing::count_annotations(out), 2);
  EXPECT_EQ(testing::count_calls(out, "abs"), n);
}

TEST(MergeCompilerRegions, RegionOfAnotherTargetInsideARegionIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  %1 = annotation.compiler_end(abs(%0), compiler="dnnl");
  annotation.compiler_end(nn.relu(%1), compiler="test")
}
)");
  EXPECT_THAT(
      [&] { merge_compiler_regions(m); },
      ::testing::ThrowsMessage<UserError>(::testing::AllOf(
          ::testing::HasSubstr("merge_regions_test.relay:4:"),
          ::testing::HasSubstr("is inside regions of two compilers, 'dnnl' and 'test'"),
          ::testing::HasSubstr("expected an annotation.compiler_end / compiler_begin pair between them"))));
}

TEST(MergeCompilerRegions, BeginOfAnotherTargetInsideARegionIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = annotation.compiler_begin(%x, compiler="dnnl");
  annotation.compiler_end(abs(%0), compiler="test")
}
)");
  EXPECT_THAT(
      [&] { merge_compiler_regions(m); },
      ::testing::ThrowsMessage<UserError>(::testing::AllOf(
          ::testing::HasSubstr("annotation.compiler_begin(compiler=\"dnnl\") is an input of a region of "
                               "'test'"),
          ::testing::HasSubstr("expected compiler=\"test\""))));
}

}  // namespace
}  // namespace grove::relay
