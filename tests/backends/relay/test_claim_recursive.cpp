// The claim pass of grove's code generator (backends/relay/recursive/ClaimRecursive.h), before/expected
// in the text format: `@map` of a recursive function over a list, with a rest after it, bindings
// computed once, projections of pairs and several encoders; direct calls; what stays as written (the
// recursive function's own body, a weight that depends on the element); Compiler="grove" on a
// function that is not a recursive form; and read_claimed on what the pass writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "backends/relay/recursive/ClaimRecursive.h"
#include "frontend/relay/TypeInfer.h"
#include "tests/UserError.h"
#include "tests/relay/PassTest.h"
#include "tests/relay/RecursiveTypes.h"

namespace grove::relay {
namespace {

using testing::check_pass;
using ::testing::HasSubstr;

// After kTreeTypes (trees, lists): the standard @map, and @f, a recursive function over trees with
// two weights.
constexpr char kMapAndF[] = R"(def @map[A, B](%g: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%g(%x), @map(%g, %rest)),
    Nil => Nil,
  }
}
def @f(%t: Tree[int32], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) -> Tensor[(4), float32] {
  match (%t) {
    Leaf(%x) => add(take(%e, %x, axis=0), %w),
    Node(%l, %r) => multiply(add(@f(%l, %w, %e), @f(%r, %w, %e)), 0.5f),
  }
}
)";

// The claimed map of @f over a List of trees, as the pass writes it.
constexpr char kMapOfF[] = R"(def @grove_map_f(%xs: List[Tree[int32]], %w: Tensor[(4), float32],
                  %e: Tensor[(10, 4), float32], Compiler="grove", global_symbol="grove_map_f") {
  @map(fn (%t: Tree[int32]) { @f(%t, %w, %e) }, %xs)
}
)";

Module claim(const Module &m) {
  Module typed = m;
  infer_types(typed);
  return claim_recursive(typed, RecursiveForms(typed));
}

std::string program(const std::string &defs) { return std::string(testing::kTreeTypes) + kMapAndF + defs; }

TEST(ClaimRecursive, MapOfTheFunctionIsOneCallOverTheList) {
  EXPECT_TRUE(check_pass(claim, program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @map(fn (%t: Tree[int32]) { @f(%t, %w, %e) }, %xs)
}
)"),
                         program(std::string(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @grove_map_f(%xs, %w, %e)
}
)") + kMapOfF)));
}

// The rest of the closure maps over the results; a binding that does not depend on the element is
// computed once, before the call; a let-bound closure stays, unused (its direct call claimed).
TEST(ClaimRecursive, RestMapsOverTheResultsAndBindingsMoveOut) {
  EXPECT_TRUE(check_pass(claim, program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  let %c = fn (%t: Tree[int32]) {
    let %v = multiply(%w, 2f);
    let %h = @f(%t, %v, %e);
    tanh(%h)
  };
  @map(%c, %xs)
}
)"),
                         program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  let %c = fn (%t: Tree[int32]) {
    let %v = multiply(%w, 2f);
    let %h = @grove_f(%t, %v, %e);
    tanh(%h)
  };
  let %v1 = multiply(%w, 2f);
  let %rs = @grove_map_f(%xs, %v1, %e);
  @map(fn (%r: Tensor[(4), float32]) { tanh(%r) }, %rs)
}
def @grove_f(%t1: Tree[int32], %w1: Tensor[(4), float32], %e1: Tensor[(10, 4), float32],
             Compiler="grove", global_symbol="grove_f") {
  @f(%t1, %w1, %e1)
}
def @grove_map_f(%xs1: List[Tree[int32]], %v2: Tensor[(4), float32],
                  %e2: Tensor[(10, 4), float32], Compiler="grove", global_symbol="grove_map_f") {
  @map(fn (%t2: Tree[int32]) { @f(%t2, %v2, %e2) }, %xs1)
}
)")));
}

// Two encoders over the projections of a pair: the claimed closure gives their tuple, and the rest
// reads its fields. An argument other than a variable is bound before the call.
TEST(ClaimRecursive, PairOfEncodersGiveATupleOfResults) {
  EXPECT_TRUE(check_pass(claim, program(R"(
def @main(%ps: List[(Tree[int32], Tree[int32])], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @map(fn (%p: (Tree[int32], Tree[int32])) {
    let %a = %p.0;
    let %ha = @f(%a, %w, %e);
    let %hb = @f(%p.1, negative(%w), %e);
    subtract(%ha, %hb)
  }, %ps)
}
)"),
                         program(R"(
def @main(%ps: List[(Tree[int32], Tree[int32])], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  let %arg1 = negative(%w);
  let %rs = @grove_map_f(%ps, %w, %e, %arg1);
  @map(fn (%r: (Tensor[(4), float32], Tensor[(4), float32])) { subtract(%r.0, %r.1) }, %rs)
}
def @grove_map_f(%xs: List[(Tree[int32], Tree[int32])], %w1: Tensor[(4), float32],
                  %e1: Tensor[(10, 4), float32], %arg2: Tensor[(4), float32],
                  Compiler="grove", global_symbol="grove_map_f") {
  @map(fn (%p1: (Tree[int32], Tree[int32])) { (@f(%p1.0, %w1, %e1), @f(%p1.1, %arg2, %e1)) }, %xs)
}
)")));
}

// A direct call outside @f is claimed; @f's own recursion is grove's to translate and stays.
TEST(ClaimRecursive, DirectCallOutsideTheFunction) {
  EXPECT_TRUE(check_pass(claim, program(R"(
def @main(%t: Tree[int32], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  add(@f(%t, %w, %e), @f(%t, %w, %e))
}
)"),
                         program(R"(
def @main(%t: Tree[int32], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  add(@grove_f(%t, %w, %e), @grove_f(%t, %w, %e))
}
def @grove_f(%t1: Tree[int32], %w1: Tensor[(4), float32], %e1: Tensor[(10, 4), float32],
             Compiler="grove", global_symbol="grove_f") {
  @f(%t1, %w1, %e1)
}
)")));
}

// A weight computed from the element is not the same for every element: the map stays, its calls
// claimed one by one.
TEST(ClaimRecursive, WeightThatDependsOnTheElementKeepsTheMap) {
  EXPECT_TRUE(check_pass(claim, program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @map(fn (%t: Tree[int32]) {
    let %h = @f(%t, %w, %e);
    @f(%t, %h, %e)
  }, %xs)
}
)"),
                         program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @map(fn (%t: Tree[int32]) {
    let %h = @grove_f(%t, %w, %e);
    @grove_f(%t, %h, %e)
  }, %xs)
}
def @grove_f(%t1: Tree[int32], %w1: Tensor[(4), float32], %e1: Tensor[(10, 4), float32],
             Compiler="grove", global_symbol="grove_f") {
  @f(%t1, %w1, %e1)
}
)")));
}

// Compiler="grove" (annotate_target's mark): on a recursive form it is dropped, the calls claimed;
// on anything else it is an error saying why.
TEST(ClaimRecursive, CompilerGroveOnAFunction) {
  Module m = parse_module(program(R"(
def @main(%xs: List[Tree[int32]], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  @map(fn (%t: Tree[int32]) { @f(%t, %w, %e) }, %xs)
}
)"),
                          "t.relay");
  Module annotated = m;
  const auto *f = m.find_function("f")->as<Function>();
  annotated.add_function(
      "f", Function::make(f->params, f->body, f->ret_type, f->type_params,
                          f->attrs.with(attr::kCompiler, AttrValue::of_string("grove")), f->span));
  Module out = claim(annotated);
  EXPECT_FALSE(out.find_function("f")->as<Function>()->has_attr(attr::kCompiler));
  ASSERT_NE(out.find_function("grove_map_f"), nullptr);

  Module bad = parse_module(program(R"(
def @g(%x: Tensor[(4), float32], Compiler="grove") {
  tanh(%x)
}
def @main(%x: Tensor[(4), float32]) {
  @g(%x)
}
)"),
                            "t.relay");
  EXPECT_THAT(
      grove::testing::user_error_of([&] { claim(bad); }),
      HasSubstr("t.relay:23:1: @g has Compiler=\"grove\" but grove's recursive compiler cannot compile "
                "it: it has no parameter of a tree type"));
}

// What the claimed functions run, read back from their bodies.
TEST(ClaimRecursive, ReadClaimedFunctions) {
  Module out = claim(parse_module(program(R"(
def @main(%ps: List[(Tree[int32], Tree[int32])], %w: Tensor[(4), float32], %e: Tensor[(10, 4), float32]) {
  let %one = match (%ps) {
    Cons(%p, _) => @f(%p.0, %w, %e),
    Nil => %w,
  };
  @map(fn (%p: (Tree[int32], Tree[int32])) {
    let %ha = @f(%p.0, %w, %e);
    let %hb = @f(%p.1, %w, %e);
    add(add(%ha, %hb), %one)
  }, %ps)
}
)"),
                                  "t.relay"));
  std::optional<ClaimedFunction> direct = read_claimed(out, "grove_f");
  ASSERT_TRUE(direct.has_value());
  EXPECT_FALSE(direct->over_list);
  ASSERT_EQ(direct->encoders.size(), 1u);
  EXPECT_EQ(direct->encoders[0].function, "f");
  EXPECT_EQ(direct->encoders[0].args, (std::vector<int>{0, 1, 2}));

  std::optional<ClaimedFunction> mapped = read_claimed(out, "grove_map_f");
  ASSERT_TRUE(mapped.has_value());
  EXPECT_TRUE(mapped->over_list);
  EXPECT_EQ(mapped->cons, "Cons");
  EXPECT_EQ(mapped->nil, "Nil");
  ASSERT_EQ(mapped->encoders.size(), 2u);
  EXPECT_EQ(mapped->encoders[0].path, (std::vector<int>{0}));
  EXPECT_EQ(mapped->encoders[1].path, (std::vector<int>{1}));
  EXPECT_EQ(mapped->encoders[1].args, (std::vector<int>{-1, 1, 2}));

  EXPECT_FALSE(read_claimed(out, "main").has_value());
}

}  // namespace
}  // namespace grove::relay
