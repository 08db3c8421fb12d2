// The `infer` pass (TVM's InferType as its printer shows it): before/expected programs where every
// missing annotation is filled in, a weight typed from its op's attributes, and what is kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/relay/passes/InferType.h"
#include "frontend/relay/passes/PassList.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

TEST(InferType, ParametersLetsAndReturnTypesAreAnnotated) {
  const char *before = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w, %b) {
  %0 = nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3]);
  let %y = nn.bias_add(%0, %b);
  let %f = fn (%z) { nn.relu(%z) };
  %f(%y)
})";
  const char *expected = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32])
    -> Tensor[(1, 4, 6, 6), float32] {
  %0 = nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3]);
  let %y: Tensor[(1, 4, 6, 6), float32] = nn.bias_add(%0, %b);
  let %f: fn (Tensor[(1, 4, 6, 6), float32]) -> Tensor[(1, 4, 6, 6), float32] =
      fn (%z: Tensor[(1, 4, 6, 6), float32]) -> Tensor[(1, 4, 6, 6), float32] { nn.relu(%z) };
  %f(%y)
})";
  EXPECT_TRUE(check_pass(infer_type_annotations, before, expected));
  // The comparison sees annotations: the program as it was is not the expected one.
  EXPECT_FALSE(check_pass([](const Module &m) { return m; }, before, expected));
}

TEST(InferType, DenseWeightAndPatternVariables) {
  EXPECT_TRUE(check_pass(infer_type_annotations, R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @sum(%l: List[Tensor[(2, 3), float32]], %w) {
  match (%l) {
    Cons(%h, %t) => add(nn.dense(%h, %w, units=3), @sum(%t, %w)),
    Nil => zeros(shape=[2, 3], dtype="float32"),
  }
})",
                         R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @sum(%l: List[Tensor[(2, 3), float32]], %w: Tensor[(3, 3), float32]) -> Tensor[(2, 3), float32] {
  match (%l) {
    Cons(%h: Tensor[(2, 3), float32], %t: List[Tensor[(2, 3), float32]]) =>
        add(nn.dense(%h, %w, units=3), @sum(%t, %w)),
    Nil => zeros(shape=[2, 3], dtype="float32"),
  }
})"));
}

TEST(InferType, WrittenAnnotationsAreKeptAsWritten) {
  // `?` in an annotation stays `?` (inference joins toward it); a generic function keeps its type
  // parameters.
  EXPECT_TRUE(check_pass(infer_type_annotations, R"(#[version = "0.0.5"]
def @id[A](%x: A) { %x }
def @main(%x: Tensor[(?, 4), float32]) -> Tensor[(?, 4), float32] {
  let %y: Tensor[(?, 4), float32] = @id(%x);
  %y
})",
                         R"(#[version = "0.0.5"]
def @id[A](%x: A) -> A { %x }
def @main(%x: Tensor[(?, 4), float32]) -> Tensor[(?, 4), float32] {
  let %y: Tensor[(?, 4), float32] = @id(%x);
  %y
})"));
}

TEST(InferType, IsThePassNamedInfer) {
  std::vector<PassStep> steps = parse_pass_list("infer");
  ASSERT_EQ(steps.size(), 1u);
  Module m = parse_module(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 5), float32], %w) { nn.dense(%x, %w, units=7) })",
                          "t.relay");
  Module out = run_passes(m, steps, PassOptions{});
  EXPECT_THAT(print_module(out).text,
              ::testing::HasSubstr("def @main(%x: Tensor[(2, 5), float32], %w: Tensor[(7, 5), float32]) -> "
                                   "Tensor[(2, 7), float32] {"));
}

}  // namespace
}  // namespace grove::relay
