// A-normal form and graph normal form: before/expected programs (after TVM's
// test_pass_to_a_normal_form.py and test_pass_to_graph_normal_form.py), scopes, effects, round trips
// and deep inputs.
#include <gtest/gtest.h>

#include "frontend/relay/passes/ToANormalForm.h"
#include "frontend/relay/passes/ToGraphNormalForm.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

// ---------------------------------------------------------------------------------------------
// A-normal form
// ---------------------------------------------------------------------------------------------

// Bindings follow evaluation order, not the order the expression was built in (TVM's test_order).
TEST(ToANormalForm, EvaluationOrder) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main() {
  add(1, multiply(2, 3))
})",
                         R"(#[version = "0.0.5"]
def @main() {
  let %a = 1;
  let %b = 2;
  let %c = 3;
  let %d = multiply(%b, %c);
  let %e = add(%a, %d);
  %e
})"));
}

TEST(ToANormalForm, IfBranchesAreScopes) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main() {
  if (True) { 2 } else { 3 }
})",
                         R"(#[version = "0.0.5"]
def @main() {
  let %c = True;
  let %d = if (%c) {
    let %a = 2;
    %a
  } else {
    let %b = 3;
    %b
  };
  %d
})"));
}

TEST(ToANormalForm, SharedNodesAreBoundOnce) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main() {
  %0 = add(1f, 1f);
  %1 = add(%0, %0);
  add(%1, %1)
})",
                         R"(#[version = "0.0.5"]
def @main() {
  let %a = 1f;
  let %b = 1f;
  let %c = add(%a, %b);
  let %d = add(%c, %c);
  let %e = add(%d, %d);
  %e
})"));
}

// A node used in both branches of an if, and nowhere before, is bound before the if, in the
// innermost scope enclosing both uses (TVM's lowest common ancestor of the uses' scopes).
TEST(ToANormalForm, NodeSharedByTwoBranchesIsBoundInTheirCommonScope) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32, %y: float32) {
  %0 = add(%x, %y);
  if (%c) { %0 } else { multiply(%0, negative(%x)) }
})",
                         R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32, %y: float32) {
  let %s = add(%x, %y);
  let %r = if (%c) {
    %s
  } else {
    let %n = negative(%x);
    let %m = multiply(%s, %n);
    %m
  };
  %r
})"));
}

TEST(ToANormalForm, FunctionBodiesAndRecursion) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main() -> int32 {
  let %f = fn (%n: int32) -> int32 {
    if (%n == 0) { 0 } else { %f(%n - 1) }
  };
  %f(3)
})",
                         R"(#[version = "0.0.5"]
def @main() -> int32 {
  let %f = fn (%n: int32) -> int32 {
    let %x0 = 0;
    let %x1 = equal(%n, %x0);
    let %x6 = if (%x1) {
      let %x2 = 0;
      %x2
    } else {
      let %x3 = 1;
      let %x4 = subtract(%n, %x3);
      let %x5 = %f(%x4);
      %x5
    };
    %x6
  };
  let %x7 = 3;
  let %x8 = %f(%x7);
  %x8
})"));
}

TEST(ToANormalForm, NestedLetsAreFlattened) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %y = { let %z = add(%x, %x); negative(%z) };
  multiply(%y, %y)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %z = add(%x, %x);
  let %n = negative(%z);
  let %y = %n;
  let %m = multiply(%y, %y);
  %m
})"));
}

TEST(ToANormalForm, KeepsEffectsInOrder) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main() {
  let %i = ref(1);
  let %iv = ref_read(%i);
  let %u = ref_write(%i, 2);
  let %uv = ref_read(%i);
  add(%iv, %uv)
})",
                         R"(#[version = "0.0.5"]
def @main() {
  let %one = 1;
  let %i = ref(%one);
  let %iv = ref_read(%i);
  let %two = 2;
  let %u = ref_write(%i, %two);
  let %uv = ref_read(%i);
  let %s = add(%iv, %uv);
  %s
})"));
}

TEST(ToANormalForm, IsIdempotent) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%x: float32, %c: bool) {
  let %a = add(%x, %x);
  let %t = (%a, %x);
  let %f = fn (%y: float32) {
    let %b = multiply(%y, %a);
    %b
  };
  let %r = if (%c) {
    let %g = %f(%x);
    %g
  } else {
    %a
  };
  %r
})";
  EXPECT_TRUE(check_pass(to_a_normal_form, program, program));
}

TEST(ToANormalForm, LeavesPrimitiveFunctionsAlone) {
  EXPECT_TRUE(check_pass(to_a_normal_form, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  %0 = fn (%p: float32, Primitive=1) { add(%p, multiply(%p, 2f)) };
  %0(%x)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %f = fn (%p: float32, Primitive=1) { add(%p, multiply(%p, 2f)) };
  let %r = %f(%x);
  %r
})"));
}

constexpr int kDeep = 100000;

// add(...add(add(%p, 1f), 1f)..., 1f), 100,000 deep, becomes 200,000 lets (a constant and an add
// per level) in evaluation order.
TEST(ToANormalForm, HundredThousandDeepCallNest) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  Expr e = p;
  for (int i = 0; i < kDeep; ++i) e = call("add", {e, f32(1)});
  Module out = to_a_normal_form(main_module({p}, e));
  Expr body = main_body(out);
  ASSERT_EQ(let_chain_length(body), static_cast<size_t>(2 * kDeep));
  Expr previous = p;
  for (int i = 0; i < kDeep; ++i) {
    const auto *c = body.as<Let>();
    ASSERT_TRUE(c->value.as<Constant>()) << "level " << i;
    const auto *a = c->body.as<Let>();
    const auto *add = a->value.as<Call>();
    ASSERT_TRUE(add->args[0].same_as(previous) && add->args[1].same_as(c->var)) << "level " << i;
    previous = a->var;
    body = a->body;
  }
  EXPECT_TRUE(body.same_as(previous));
}

// An A-normal chain of 100,000 lets comes back unchanged.
TEST(ToANormalForm, HundredThousandLetChainIsUnchanged) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  std::vector<Expr> xs;
  for (int i = 0; i < kDeep; ++i) xs.push_back(numbered_var("x", i));
  Expr body = xs.back();
  for (int i = kDeep - 1; i >= 0; --i)
    body = Let::make(xs[i], call("negative", {i == 0 ? p : xs[i - 1]}), body);
  Module in = main_module({p}, body);
  Module out = to_a_normal_form(in);
  EqualResult eq = structural_equal(out, in);
  EXPECT_TRUE(eq.equal) << eq.path;
  EXPECT_EQ(let_chain_length(main_body(out)), static_cast<size_t>(kDeep));
}

// ---------------------------------------------------------------------------------------------
// Graph normal form
// ---------------------------------------------------------------------------------------------

TEST(ToGraphNormalForm, SharingBecomesImplicit) {
  EXPECT_TRUE(check_pass(to_graph_normal_form, R"(#[version = "0.0.5"]
def @main() {
  let %x = 1f;
  let %y = add(%x, %x);
  let %z = add(%y, %y);
  add(%z, %z)
})",
                         R"(#[version = "0.0.5"]
def @main() {
  %0 = add(1f, 1f);
  %1 = add(%0, %0);
  add(%1, %1)
})"));
}

TEST(ToGraphNormalForm, KeepsEffectfulBindings) {
  EXPECT_TRUE(check_pass(to_graph_normal_form, R"(#[version = "0.0.5"]
def @write(%r) {
  ref_write(%r, 5)
}
def @main() {
  let %r = ref(0);
  let %v = ref_read(%r);
  let %u = ref_write(%r, add(%v, 1));
  let %w = @write(%r);
  let %s = add(%v, 2);
  multiply(%s, %s)
})",
                         R"(#[version = "0.0.5"]
def @write(%r) {
  ref_write(%r, 5)
}
def @main() {
  let %r = ref(0);
  let %v = ref_read(%r);
  let %u = ref_write(%r, add(%v, 1));
  let %w = @write(%r);
  %0 = add(%v, 2);
  multiply(%0, %0)
})"));
}

TEST(ToGraphNormalForm, KeepsRecursiveClosuresBound) {
  EXPECT_TRUE(check_pass(to_graph_normal_form, R"(#[version = "0.0.5"]
def @main() -> int32 {
  let %f = fn (%n: int32) -> int32 {
    let %m = subtract(%n, 1);
    if (%n == 0) { 0 } else { %f(%m) }
  };
  let %g = fn (%k: int32) -> int32 { add(%k, 1) };
  let %y = %f(3);
  %g(%y)
})",
                         R"(#[version = "0.0.5"]
def @main() -> int32 {
  let %f = fn (%n: int32) -> int32 {
    if (%n == 0) { 0 } else { %f(subtract(%n, 1)) }
  };
  (fn (%k: int32) -> int32 { add(%k, 1) })(%f(3))
})"));
}

TEST(ToGraphNormalForm, RoundTripThroughANormalForm) {
  Module graph = parse_module(R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32) {
  %0 = add(%x, %x);
  %1 = if (%c) { multiply(%0, %0) } else { negative(%0) };
  (%1, %0)
})",
                              "graph");
  Module back = to_graph_normal_form(to_a_normal_form(graph));
  EqualResult eq = structural_equal(back, graph);
  EXPECT_TRUE(eq.equal) << eq.path << ": " << eq.lhs << " vs " << eq.rhs;
  EXPECT_EQ(testing::compound_nodes(back), testing::compound_nodes(graph));
}

// A chain of 100,000 lets becomes a 100,000-deep nest of calls.
TEST(ToGraphNormalForm, HundredThousandLetChain) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  std::vector<Expr> xs;
  for (int i = 0; i < kDeep; ++i) xs.push_back(numbered_var("x", i));
  Expr body = xs.back();
  for (int i = kDeep - 1; i >= 0; --i)
    body = Let::make(xs[i], call("negative", {i == 0 ? p : xs[i - 1]}), body);
  Module out = to_graph_normal_form(main_module({p}, body));
  Expr e = main_body(out);
  for (int i = 0; i < kDeep; ++i) {
    const auto *c = e.as<Call>();
    ASSERT_TRUE(c != nullptr) << "level " << i;
    e = c->args[0];
  }
  EXPECT_TRUE(e.same_as(p));
  // And back: 100,000 lets again.
  EXPECT_EQ(let_chain_length(main_body(to_a_normal_form(out))), static_cast<size_t>(kDeep));
}

// let %x = %p; negative(...negative(%x)...), 100,000 deep: the let goes, the nest stays.
TEST(ToGraphNormalForm, HundredThousandDeepCallNest) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  Expr x = Var::make("x", Type());
  Expr chain = x;
  for (int i = 0; i < kDeep; ++i) chain = call("negative", {chain});
  Module out = to_graph_normal_form(main_module({p}, Let::make(x, p, chain)));
  Expr e = main_body(out);
  for (int i = 0; i < kDeep; ++i) {
    const auto *c = e.as<Call>();
    ASSERT_TRUE(c != nullptr) << "level " << i;
    e = c->args[0];
  }
  EXPECT_TRUE(e.same_as(p));
}

}  // namespace
}  // namespace grove::relay
