// Inlining of global functions marked Inline=1: before/expected programs (after TVM's
// test_pass_inline.py), what must not be inlined, and a deep chain of call sites.
#include <gtest/gtest.h>

#include "frontend/relay/passes/Inline.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

TEST(Inline, OnlyTheLeafIsMarked) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @g11(%x11: Tensor[(3, 5), float32], Inline=1) {
  %x11
}
def @g1(%x1: Tensor[(3, 5), float32], %y1: Tensor[(3, 5), float32]) {
  add(add(%x1, %y1), @g11(%x1))
}
def @g2(%x2: Tensor[(3, 5), float32], %y2: Tensor[(3, 5), float32]) {
  subtract(%x2, %y2)
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(@g1(%p0, %p1), @g2(%p2, %p3))
})",
                         R"(#[version = "0.0.5"]
def @g1(%x1: Tensor[(3, 5), float32], %y1: Tensor[(3, 5), float32]) {
  add(add(%x1, %y1), %x1)
}
def @g2(%x2: Tensor[(3, 5), float32], %y2: Tensor[(3, 5), float32]) {
  subtract(%x2, %y2)
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(@g1(%p0, %p1), @g2(%p2, %p3))
})"));
}

TEST(Inline, MultipleLevels) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @g11(%x11: Tensor[(3, 5), float32], Inline=1) {
  %x11
}
def @g1(%x1: Tensor[(3, 5), float32], %y1: Tensor[(3, 5), float32], Inline=1) {
  add(add(%x1, %y1), @g11(%x1))
}
def @g2(%x2: Tensor[(3, 5), float32], %y2: Tensor[(3, 5), float32]) {
  subtract(%x2, %y2)
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(@g1(%p0, %p1), @g2(%p2, %p3))
})",
                         R"(#[version = "0.0.5"]
def @g2(%x2: Tensor[(3, 5), float32], %y2: Tensor[(3, 5), float32]) {
  subtract(%x2, %y2)
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(add(add(%p0, %p1), %p0), @g2(%p2, %p3))
})"));
}

TEST(Inline, ExternalCompilerFunctionsStayFunctions) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @g11(%x11: Tensor[(3, 5), float32], Inline=1, Compiler="a") {
  %x11
}
def @g1(%x1: Tensor[(3, 5), float32], %y1: Tensor[(3, 5), float32], Inline=1) {
  add(add(%x1, %y1), @g11(%x1))
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32]) {
  @g1(%p0, %p1)
})",
                         R"(#[version = "0.0.5"]
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32]) {
  add(add(%p0, %p1), (fn (%x11: Tensor[(3, 5), float32], Inline=1, Compiler="a") { %x11 })(%p0))
})"));
}

TEST(Inline, GlobalsAsArguments) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @g1(%x1: Tensor[(3, 5), float32], %y1: Tensor[(3, 5), float32], Inline=1) {
  add(%x1, %y1)
}
def @g2(%x2: Tensor[(3, 5), float32], %y2: Tensor[(3, 5), float32], Inline=1) {
  subtract(%x2, %y2)
}
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(@g1(%p0, %p1), @g2(%p2, %p3))
})",
                         R"(#[version = "0.0.5"]
def @main(%p0: Tensor[(3, 5), float32], %p1: Tensor[(3, 5), float32], %p2: Tensor[(3, 5), float32],
          %p3: Tensor[(3, 5), float32]) {
  multiply(add(%p0, %p1), subtract(%p2, %p3))
})"));
}

TEST(Inline, ArgumentsAreEvaluatedOnce) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @square(%a: float32, Inline=1) {
  multiply(%a, %a)
}
def @main(%x: float32) {
  @square(add(%x, 1f))
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %a: float32 = add(%x, 1f);
  multiply(%a, %a)
})"));
}

TEST(Inline, AReferenceThatIsNotACallBecomesAFunction) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @inc(%a: float32, Inline=1) {
  add(%a, 1f)
}
def @apply(%f: fn (float32) -> float32, %x: float32) {
  %f(%x)
}
def @main(%x: float32) {
  @apply(@inc, %x)
})",
                         R"(#[version = "0.0.5"]
def @apply(%f: fn (float32) -> float32, %x: float32) {
  %f(%x)
}
def @main(%x: float32) {
  @apply(fn (%a: float32, Inline=1) { add(%a, 1f) }, %x)
})"));
}

TEST(Inline, EachCallSiteGetsFreshVariables) {
  const char *before = R"(#[version = "0.0.5"]
def @f(%a: float32, Inline=1) {
  let %t = add(%a, 1f);
  %t
}
def @main(%x: float32) {
  add(@f(%x), @f(%x))
})";
  EXPECT_TRUE(check_pass(inline_globals, before, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  add({ let %t = add(%x, 1f); %t }, { let %u = add(%x, 1f); %u })
})"));
  Module out = inline_globals(parse_module(before, "before"));
  const auto *sum = testing::main_body(out).as<Call>();
  ASSERT_NE(sum, nullptr);
  const auto *l0 = sum->args[0].as<Let>();
  const auto *l1 = sum->args[1].as<Let>();
  ASSERT_TRUE(l0 && l1);
  EXPECT_FALSE(l0->var.same_as(l1->var)) << "one variable bound at two call sites";
}

TEST(Inline, RecursiveFunctionsStayButTheirCalleesAreInlined) {
  EXPECT_TRUE(check_pass(inline_globals, R"(#[version = "0.0.5"]
def @gx(%x: int32, Inline=1) {
  %x
}
def @sum_up(%i: int32, Inline=1) -> int32 {
  if (%i == 0) {
    %i
  } else {
    add(add(@sum_up(%i - 1), @gx(%i)), %i)
  }
}
def @main(%i: int32) -> int32 {
  @sum_up(%i)
})",
                         R"(#[version = "0.0.5"]
def @sum_up(%i: int32, Inline=1) -> int32 {
  if (%i == 0) {
    %i
  } else {
    add(add(@sum_up(%i - 1), %i), %i)
  }
}
def @main(%i: int32) -> int32 {
  @sum_up(%i)
})"));
}

TEST(Inline, NeverMutuallyRecursiveFunctions) {
  const char *program = R"(#[version = "0.0.5"]
def @even(%n: int32, Inline=1) -> bool {
  if (%n == 0) { True } else { @odd(%n - 1) }
}
def @odd(%n: int32, Inline=1) -> bool {
  if (%n == 0) { False } else { @even(%n - 1) }
}
def @main(%n: int32) -> bool {
  @even(%n)
})";
  EXPECT_TRUE(check_pass(inline_globals, program, program));
}

TEST(Inline, OnlyFunctionsMarkedInline) {
  const char *program = R"(#[version = "0.0.5"]
def @f(%a: float32) {
  add(%a, 1f)
}
def @g(%a: float32, Inline=0) {
  add(%a, 2f)
}
def @main(%x: float32) {
  @g(@f(%x))
})";
  EXPECT_TRUE(check_pass(inline_globals, program, program));
}

TEST(Inline, KeepsAMarkedFunctionNothingCalls) {
  const char *program = R"(#[version = "0.0.5"]
def @entry(%a: float32, Inline=1) {
  add(%a, 1f)
}
def @main(%x: float32) {
  %x
})";
  EXPECT_TRUE(check_pass(inline_globals, program, program));
}

// 100,000 call sites in a let chain: let %x_i = @inc(%x_{i-1}); ...
TEST(Inline, HundredThousandCallSites) {
  using namespace testing;
  constexpr int kDeep = 100000;
  Module m;
  Expr a = Var::make("a", f32_type());
  m.add_function("inc", Function::make({a}, call("add", {a, f32(1)}), Type(), {},
                                       Attrs().with(attr::kInline, AttrValue::of_int(1))));
  Expr p = Var::make("p", f32_type());
  std::vector<Expr> xs;
  for (int i = 0; i < kDeep; ++i) xs.push_back(numbered_var("x", i));
  Expr body = xs.back();
  for (int i = kDeep - 1; i >= 0; --i)
    body = Let::make(xs[i], Call::make(GlobalVar::make("inc"), {i == 0 ? p : xs[i - 1]}), body);
  m.add_function("main", Function::make({p}, body));
  Module out = inline_globals(m);
  EXPECT_EQ(out.find_function("inc"), nullptr);
  Expr e = main_body(out);
  ASSERT_EQ(let_chain_length(e), static_cast<size_t>(kDeep));
  for (int i = 0; i < kDeep; ++i) {
    const auto *l = e.as<Let>();
    const auto *c = l->value.as<Call>();
    ASSERT_TRUE(c && c->op.as<Op>() && c->op.as<Op>()->name == "add") << "let " << i;
    ASSERT_TRUE(c->args[0].same_as(i == 0 ? p : xs[i - 1]));
    e = l->body;
  }
}

// @inc(@inc(...@inc(%p)...)), 100,000 deep in graph form: every call inlined, each argument
// let-bound (it is not atomic), so nothing refers to @inc any more.
TEST(Inline, HundredThousandDeepCallNest) {
  using namespace testing;
  constexpr int kDeep = 100000;
  Module m;
  Expr a = Var::make("a", f32_type());
  m.add_function("inc", Function::make({a}, call("add", {a, f32(1)}), Type(), {},
                                       Attrs().with(attr::kInline, AttrValue::of_int(1))));
  Expr p = Var::make("p", f32_type());
  Expr chain = p;
  for (int i = 0; i < kDeep; ++i) chain = Call::make(GlobalVar::make("inc"), {chain});
  m.add_function("main", Function::make({p}, chain));
  Module out = inline_globals(m);
  EXPECT_EQ(out.find_function("inc"), nullptr);
  size_t globals = 0, adds = 0;
  post_order_visit(*out.find_function("main"), [&](const Expr &e) {
    if (e.as<GlobalVar>()) ++globals;
    if (const auto *c = e.as<Call>()) adds += c->op.as<Op>() != nullptr;
  });
  EXPECT_EQ(globals, 0u);
  EXPECT_EQ(adds, static_cast<size_t>(kDeep));
}

}  // namespace
}  // namespace grove::relay
