// Common subexpression elimination: before/expected programs (after TVM's
// test_pass_eliminate_common_subexpr.py), what must not be merged, and deep inputs.
#include <gtest/gtest.h>

#include "frontend/relay/passes/EliminateCommonSubexpr.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

TEST(EliminateCommonSubexpr, GraphForm) {
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%x);
  %2 = add(%0, 1f);
  %3 = add(%1, 1f);
  add(%2, %3)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0, 1f);
  add(%1, %1)
})"));
}

TEST(EliminateCommonSubexpr, TupleGetItem) {
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = split(%x, indices_or_sections=2);
  %1 = %0.0;
  %2 = %0.0;
  add(%1, %2)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = split(%x, indices_or_sections=2);
  %1 = %0.0;
  add(%1, %1)
})"));
}

TEST(EliminateCommonSubexpr, TupleArguments) {
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32], %c: Tensor[(1, 16), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%x);
  %2 = concatenate((%0, %c), axis=0);
  %3 = concatenate((%1, %c), axis=0);
  add(%2, %3)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32], %c: Tensor[(1, 16), float32]) {
  %0 = nn.relu(%x);
  %1 = concatenate((%0, %c), axis=0);
  add(%1, %1)
})"));
}

TEST(EliminateCommonSubexpr, ANormalFormReplacesTheLaterVariable) {
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, R"(#[version = "0.0.5"]
def @main(%x: float32, %y: float32) {
  let %a = add(%x, %y);
  let %b = add(%x, %y);
  let %c = multiply(%a, %b);
  let %d = multiply(%a, %b);
  subtract(%c, %d)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32, %y: float32) {
  let %a = add(%x, %y);
  let %c = multiply(%a, %a);
  subtract(%c, %c)
})"));
}

TEST(EliminateCommonSubexpr, IntoADominatedBranch) {
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32, %y: float32) {
  let %a = add(%x, %y);
  if (%c) {
    let %b = add(%x, %y);
    %b
  } else {
    %a
  }
})",
                         R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32, %y: float32) {
  let %a = add(%x, %y);
  if (%c) {
    %a
  } else {
    %a
  }
})"));
}

TEST(EliminateCommonSubexpr, NeverAcrossBranches) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32, %y: float32) {
  %0 = if (%c) {
    add(%x, %y)
  } else {
    add(%x, %y)
  };
  multiply(%0, add(%x, %y))
})";
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, program, program));
}

TEST(EliminateCommonSubexpr, NeverOutOfAFunctionBody) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%x: float32, %y: float32) {
  (fn () { add(%x, %y) }, add(%x, %y))
})";
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, program, program));
}

TEST(EliminateCommonSubexpr, NeverOutOfALetBody) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%x: float32, %y: float32) {
  multiply({ let %a = add(%x, %y); %a }, add(%x, %y))
})";
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, program, program));
}

TEST(EliminateCommonSubexpr, OnlyEqualAttributes) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  (sum(%x, axis=[0]), sum(%x, axis=[1]), sum(%x, axis=[0], keepdims=True))
})";
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, program, program));
}

TEST(EliminateCommonSubexpr, NeverMergesCallsOfFunctionsOrReferenceReads) {
  const char *program = R"(#[version = "0.0.5"]
def @f(%a: float32) {
  add(%a, 1f)
}
def @main(%x: float32, %r) {
  (@f(%x), @f(%x), ref_read(%r), ref_read(%r))
})";
  EXPECT_TRUE(check_pass(eliminate_common_subexpr, program, program));
}

constexpr int kDeep = 100000;

// let %x_i = add(%y_{i-1}, 1f); let %y_i = add(%y_{i-1}, 1f); ...: every %y_i is %x_i.
TEST(EliminateCommonSubexpr, HundredThousandLetChain) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  int n = kDeep / 2;
  std::vector<Expr> xs, ys;
  for (int i = 0; i < n; ++i) {
    xs.push_back(numbered_var("x", i));
    ys.push_back(numbered_var("y", i));
  }
  Expr body = ys.back();
  for (int i = n - 1; i >= 0; --i) {
    Expr prev = i == 0 ? p : ys[i - 1];
    body = Let::make(ys[i], call("add", {prev, f32(1)}), body);
    body = Let::make(xs[i], call("add", {prev, f32(1)}), body);
  }
  Module out = eliminate_common_subexpr(main_module({p}, body));
  Expr e = main_body(out);
  ASSERT_EQ(let_chain_length(e), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto *l = e.as<Let>();
    ASSERT_TRUE(l->var.same_as(xs[i]));
    ASSERT_TRUE(l->value.as<Call>()->args[0].same_as(i == 0 ? p : xs[i - 1])) << "let " << i;
    e = l->body;
  }
  EXPECT_TRUE(e.same_as(xs.back()));
}

// Two separately built 100,000-deep chains of adds become one.
TEST(EliminateCommonSubexpr, HundredThousandDeepCallNests) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  Expr a = p, b = p;
  for (int i = 0; i < kDeep; ++i) {
    a = call("add", {a, f32(1)});
    b = call("add", {b, f32(1)});
  }
  Module out = eliminate_common_subexpr(main_module({p}, call("multiply", {a, b})));
  const auto *m = main_body(out).as<Call>();
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->args[0].same_as(m->args[1]));
  EXPECT_EQ(compound_nodes(out), static_cast<size_t>(kDeep + 2));  // the adds, multiply, @main
}

}  // namespace
}  // namespace grove::relay
