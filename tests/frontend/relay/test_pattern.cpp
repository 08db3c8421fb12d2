// The dataflow pattern language of bring-your-own-codegen (byoc/Pattern.h). The cases follow TVM's
// tests/python/relay/test_dataflow_pattern.py (ops grove lacks replaced by ones of the same kind:
// nn.leaky_relu by tanh, which is elementwise too). Unlike TVM, add and multiply are not matched
// commutatively: arguments match one by one, as Pattern.h says.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/byoc/Pattern.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

// An expression in the text format (free variables declared with `free_var`), untyped.
Expr expr(const std::string &text) { return parse_expr(text, "pattern_test.relay"); }

// The same, type-checked (as @main's body).
Expr typed(const std::string &text) {
  Module m = parse_module(text, "pattern_test.relay");
  infer_types(m);
  return testing::main_body(m);
}

bool matches(const DFPattern &p, const Expr &e) { return match(p, e).has_value(); }

Attrs attrs_of(const std::string &name, AttrValue v) { return Attrs().with(name, std::move(v)); }

// TVM's `wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())`: a unary elementwise op.
DFPattern unary_elementwise() {
  return call(has_attr(wildcard(), attrs_of("TOpPattern", AttrValue::of_int(0))), {wildcard()});
}

// ---------------------------------------------------------------------------------------------
// Operators, calls, wildcards, constants, variables
// ---------------------------------------------------------------------------------------------

TEST(Pattern, OpMatchesTheOperatorOfThatNameOnly) {
  EXPECT_TRUE(matches(is_op("add"), Op::make("add")));
  EXPECT_FALSE(matches(is_op("add"), Op::make("subtract")));
  DFPattern add_or_sub = is_op("add") | is_op("subtract");
  EXPECT_TRUE(matches(add_or_sub, Op::make("add")));
  EXPECT_TRUE(matches(add_or_sub, Op::make("subtract")));
  EXPECT_FALSE(matches(add_or_sub, Op::make("multiply")));
}

TEST(Pattern, CallMatchesCalleeAndArgumentsInOrder) {
  DFPattern add = op("add", {wildcard(), wildcard()});
  EXPECT_TRUE(matches(add, expr("free_var %x; free_var %y; add(%x, %y)")));
  EXPECT_FALSE(matches(add, expr("free_var %x; free_var %y; subtract(%x, %y)")));
  EXPECT_FALSE(matches(op("add", {wildcard()}), expr("free_var %x; free_var %y; add(%x, %y)")));
  // Named variables, in order: no commutative matching.
  DFPattern xy = op("add", {is_var("x"), is_var("y")});
  EXPECT_TRUE(matches(xy, expr("free_var %x; free_var %y; add(%x, %y)")));
  EXPECT_FALSE(matches(xy, expr("free_var %x; free_var %y; add(%y, %x)")));
  DFPattern sub = op("subtract", {is_var("x"), is_var("y")});
  EXPECT_TRUE(matches(sub, expr("free_var %x; free_var %y; subtract(%x, %y)")));
  EXPECT_FALSE(matches(sub, expr("free_var %x; free_var %y; subtract(%y, %x)")));
  // Any callee: a wildcard in the callee's place.
  EXPECT_TRUE(matches(call(wildcard(), {wildcard()}), expr("free_var %x; nn.relu(%x)")));
}

TEST(Pattern, WildcardMatchesAnything) {
  EXPECT_TRUE(matches(wildcard(), expr("free_var %x; %x")));
  EXPECT_TRUE(matches(wildcard(), expr("1f")));
  EXPECT_TRUE(matches(wildcard(), Op::make("nn.relu")));
  EXPECT_TRUE(matches(wildcard(), expr("free_var %x; (%x, %x)")));
}

TEST(Pattern, ConstantMatchesConstantsOnlyAndVarMatchesItsNameHint) {
  DFPattern p = op("add", {wildcard(), is_constant()});
  EXPECT_TRUE(matches(p, expr("free_var %x; add(%x, 1f)")));
  EXPECT_FALSE(matches(p, expr("free_var %x; free_var %w; add(%x, %w)")));
  EXPECT_TRUE(matches(is_var(), expr("free_var %anything; %anything")));
  EXPECT_TRUE(matches(is_var("w"), expr("free_var %w; %w")));
  EXPECT_FALSE(matches(is_var("w"), expr("free_var %v; %v")));
  EXPECT_FALSE(matches(is_var(), expr("1f")));
}

// ---------------------------------------------------------------------------------------------
// Alternatives and optional patterns
// ---------------------------------------------------------------------------------------------

TEST(Pattern, OptionalMatchesWithAndWithoutTheExtraOp) {
  DFPattern p = op("nn.relu", {optional(op("nn.conv2d", {wildcard(), wildcard()}), [](DFPattern x) {
                     return op("nn.bias_add", {x, wildcard()});
                   })});
  const char *decls = "free_var %x; free_var %w; free_var %b; ";
  EXPECT_TRUE(matches(p, expr(std::string(decls) + "%0 = nn.conv2d(%x, %w); nn.relu(%0)")));
  EXPECT_TRUE(
      matches(p, expr(std::string(decls) + "%0 = nn.conv2d(%x, %w); %1 = nn.bias_add(%0, %b); nn.relu(%1)")));
  // test_no_match_option
  EXPECT_FALSE(matches(p, expr(std::string(decls) + "%0 = nn.conv2d(%x, %w); tanh(%0)")));
  EXPECT_FALSE(
      matches(p, expr(std::string(decls) + "%0 = nn.dense(%x, %w); %1 = nn.bias_add(%0, %b); nn.relu(%1)")));
  EXPECT_FALSE(
      matches(p, expr(std::string(decls) + "%0 = nn.conv2d(%x, %w); %1 = add(%0, %w); nn.relu(%1)")));

  // conv2d, then optionally relu, then optionally tanh.
  DFPattern q = optional(
      optional(op("nn.conv2d", {wildcard(), wildcard()}), [](DFPattern x) { return op("nn.relu", {x}); }),
      [](DFPattern x) { return op("tanh", {x}); });
  Expr conv = expr("free_var %x; free_var %w; nn.conv2d(%x, %w)");
  Expr relu = testing::call("nn.relu", {conv});
  Expr tanh = testing::call("tanh", {conv});
  EXPECT_TRUE(matches(q, conv));
  EXPECT_TRUE(matches(q, relu));
  EXPECT_TRUE(matches(q, tanh));
  EXPECT_TRUE(matches(q, testing::call("tanh", {relu})));
  EXPECT_FALSE(matches(q, testing::call("nn.relu", {tanh})));
}

TEST(Pattern, FailedAlternativeLeavesNoBindingsBehind) {
  // The left branch binds `x` to %a before failing on %b; the right branch then succeeds, and `x`
  // must be free to match %b afterwards.
  DFPattern x = wildcard();
  DFPattern alt = op("subtract", {x, is_var("zz")}) | op("subtract", {wildcard(), wildcard()});
  DFPattern p = op("add", {alt, x});
  Expr e = expr("free_var %a; free_var %b; %0 = subtract(%a, %b); add(%0, %b)");
  std::optional<DFPatternMatch> m = match(p, e);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->get(x).same_as(e.as<Call>()->args[1]));
  // The branch taken is recorded, the other one is not.
  EXPECT_TRUE(m->get(alt).same_as(e.as<Call>()->args[0]));
  EXPECT_FALSE(m->get(alt->children[0]).defined());
  EXPECT_TRUE(m->get(alt->children[1]).same_as(e.as<Call>()->args[0]));
}

// ---------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------

TEST(Pattern, AttrMatchesCallAttributesByValue) {
  const char *decls = "free_var %x; free_var %y; ";
  DFPattern conv = op("nn.conv2d", {wildcard(), wildcard()});
  Expr nchw = expr(std::string(decls) + R"(nn.conv2d(%x, %y, kernel_size=[3, 3], data_layout="NCHW"))");
  EXPECT_TRUE(matches(has_attr(conv, attrs_of("data_layout", AttrValue::of_string("NCHW"))), nchw));
  EXPECT_FALSE(matches(has_attr(conv, attrs_of("data_layout", AttrValue::of_string("NHWC"))), nchw));
  EXPECT_FALSE(matches(has_attr(conv, attrs_of("RandomAttr", AttrValue::of_string("NCHW"))), nchw));
  Attrs k33 = attrs_of("kernel_size", AttrValue::of_list({AttrValue::of_int(3), AttrValue::of_int(3)}));
  Attrs k21 = attrs_of("kernel_size", AttrValue::of_list({AttrValue::of_int(2), AttrValue::of_int(1)}));
  EXPECT_TRUE(matches(has_attr(conv, k33), nchw));
  EXPECT_FALSE(matches(has_attr(conv, k21), nchw));
  // An attribute that was not written does not match (grove keeps no defaults on the call).
  EXPECT_FALSE(matches(has_attr(conv, attrs_of("groups", AttrValue::of_int(1))),
                       expr(std::string(decls) + "nn.conv2d(%x, %y)")));
  // No attributes asked for: any call.
  EXPECT_TRUE(matches(has_attr(conv, Attrs()), expr(std::string(decls) + "nn.conv2d(%x, %y)")));
  // Only calls, functions and operators have attributes.
  EXPECT_FALSE(matches(has_attr(wildcard(), Attrs()), expr("free_var %x; %x")));
  EXPECT_TRUE(matches(has_attr(op("nn.softmax", {wildcard()}), attrs_of("axis", AttrValue::of_int(1))),
                      expr("free_var %x; nn.softmax(%x, axis=1)")));
}

TEST(Pattern, AttrMatchesFunctionAttributesAndTheOperatorsFusionPattern) {
  DFPattern composite_add = has_attr(wildcard(), attrs_of("Composite", AttrValue::of_string("add")));
  EXPECT_TRUE(matches(composite_add, expr(R"(fn (%x, %y, Composite="add") { add(%x, %y) })")));
  EXPECT_FALSE(matches(composite_add, expr(R"(fn (%x, %y, RandomTest="add") { add(%x, %y) })")));
  EXPECT_FALSE(matches(composite_add, expr(R"(fn (%x, %y, Composite="conv_bias") { add(%x, %y) })")));

  // TVM's TOpPattern: 1 = broadcast (add), 0 = elementwise (nn.relu), 4 = out-elementwise-fusable.
  DFPattern broadcast_add =
      call(has_attr(is_op("add"), attrs_of("TOpPattern", AttrValue::of_int(1))), {wildcard(), wildcard()});
  EXPECT_TRUE(matches(broadcast_add, expr("free_var %x; free_var %y; add(%x, %y)")));
  EXPECT_FALSE(matches(broadcast_add, expr("free_var %x; free_var %y; subtract(%x, %y)")));
  EXPECT_FALSE(matches(broadcast_add, expr("free_var %x; free_var %y; let %z = add(%x, %y); %z")));
  DFPattern elementwise_dense = call(
      has_attr(is_op("nn.dense"), attrs_of("TOpPattern", AttrValue::of_int(0))), {wildcard(), wildcard()});
  EXPECT_FALSE(matches(elementwise_dense, expr("free_var %x; free_var %y; nn.dense(%x, %y)")));
  EXPECT_TRUE(matches(unary_elementwise(), expr("free_var %x; nn.relu(%x)")));
  EXPECT_FALSE(matches(unary_elementwise(), expr("free_var %x; nn.softmax(%x)")));
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

TEST(Pattern, TypeDtypeAndShapeReadTheCheckedType) {
  Expr f32 = typed("free_var %x: Tensor[(10, 10), float32]; nn.relu(%x)");
  Expr i32 = typed("free_var %x: Tensor[(10, 10), int32]; nn.relu(%x)");
  Type t = TensorType::make({10, 10}, DType::Float32);
  EXPECT_TRUE(matches(has_type(wildcard(), t), f32));
  EXPECT_FALSE(matches(has_type(wildcard(), t), i32));
  EXPECT_TRUE(matches(has_dtype(wildcard(), DType::Float32), f32));
  EXPECT_FALSE(matches(has_dtype(wildcard(), DType::Float32), i32));
  EXPECT_TRUE(matches(has_shape(wildcard(), {10, 10}), i32));
  EXPECT_FALSE(matches(has_shape(wildcard(), {10, 5}), i32));
  // The constraint applies to the expression the inner pattern matches, here the argument.
  EXPECT_TRUE(matches(op("nn.relu", {has_dtype(is_var("x"), DType::Float32)}), f32));
  EXPECT_FALSE(matches(op("nn.relu", {has_dtype(is_var("x"), DType::Float32)}), i32));
  // An unknown dimension matches `?` only.
  Expr any = typed("free_var %x: Tensor[(?, 10), float32]; nn.relu(%x)");
  EXPECT_TRUE(matches(has_shape(wildcard(), {kAnyDim, 10}), any));
  EXPECT_FALSE(matches(has_shape(wildcard(), {10, 10}), any));
  // Untyped expressions never match a type constraint.
  EXPECT_FALSE(matches(has_dtype(wildcard(), DType::Float32), expr("free_var %x; nn.relu(%x)")));
  EXPECT_FALSE(matches(has_type(wildcard(), t), expr("free_var %x: Tensor[(10, 10), float32]; nn.relu(%x)")));
}

// ---------------------------------------------------------------------------------------------
// Tuples, projections, if, let
// ---------------------------------------------------------------------------------------------

TEST(Pattern, TupleAndTupleGetItem) {
  Expr x = Var::make("x"), y = Var::make("y");
  Expr tuple = Tuple::make({x, y, Op::make("add")});
  DFPattern tp = is_tuple({is_var("x"), wildcard(), is_op("add")});
  EXPECT_TRUE(matches(tp, tuple));
  EXPECT_FALSE(matches(is_tuple({is_var("x"), wildcard(), is_op("add"), wildcard()}), tuple));
  EXPECT_TRUE(matches(is_tuple_get_item(tp, 1), TupleGetItem::make(tuple, 1)));
  EXPECT_FALSE(matches(is_tuple_get_item(tp, 1), TupleGetItem::make(tuple, 2)));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(matches(is_tuple_get_item(tp), TupleGetItem::make(tuple, i)));
  DFPattern concat = op("concatenate", {is_tuple({wildcard(), wildcard()})});
  EXPECT_TRUE(matches(concat, expr("free_var %x; free_var %y; concatenate((%x, %y), axis=0)")));
  EXPECT_FALSE(matches(concat, expr("free_var %x; concatenate((%x,), axis=0)")));
}

TEST(Pattern, IfAndLetMatchFieldByField) {
  DFPattern x = is_var("x"), y = is_var("y");
  DFPattern ifp = is_if(op("less", {x, y}), x, y);
  EXPECT_TRUE(matches(ifp, expr("free_var %x; free_var %y; if (less(%x, %y)) { %x } else { %y }")));
  EXPECT_FALSE(matches(ifp, expr("free_var %x; free_var %y; if (greater(%x, %y)) { %x } else { %y }")));
  EXPECT_FALSE(matches(ifp, expr("free_var %x; free_var %y; if (less(%x, %y)) { %y } else { %x }")));

  DFPattern let_var = is_var("let");
  DFPattern letp = is_let(let_var, op("less", {x, y}), let_var);
  EXPECT_TRUE(matches(letp, expr("free_var %x; free_var %y; let %let = less(%x, %y); %let")));
  EXPECT_FALSE(matches(letp, expr("free_var %x; free_var %y; let %let = greater(%x, %y); %let")));
  EXPECT_FALSE(matches(letp, expr("free_var %x; free_var %y; let %let = less(%x, %y); multiply(%let, %x)")));
}

// ---------------------------------------------------------------------------------------------
// One pattern node, one expression
// ---------------------------------------------------------------------------------------------

TEST(Pattern, ANodeUsedTwiceMatchesOneExpression) {
  DFPattern x = wildcard();
  EXPECT_TRUE(matches(op("add", {x, x}), expr("free_var %a; add(%a, %a)")));
  EXPECT_FALSE(matches(op("add", {x, x}), expr("free_var %a; free_var %b; add(%a, %b)")));
}

constexpr const char *kDiamond = R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight);
%1 = nn.relu(%0);
%2 = tanh(%0);
add(%1, %2))";

DFPattern diamond_pattern() {
  DFPattern conv = op("nn.conv2d", {wildcard(), wildcard()});
  return op("add", {op("nn.relu", {conv}), op("tanh", {conv})});
}

TEST(Pattern, DiamondMatchesWhenBothPathsShareTheConv) {
  Expr e = expr(kDiamond);
  std::optional<DFPatternMatch> m = match(diamond_pattern(), e);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->root.same_as(e));
  // The match says which expression each node matched: the conv is the shared one.
  DFPattern p = diamond_pattern();
  m = match(p, e);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(m->get(diamond_pattern()).defined());  // another pattern's nodes are absent
  Expr relu = e.as<Call>()->args[0];
  EXPECT_TRUE(m->get(p->children[1]).same_as(relu));
  EXPECT_TRUE(m->get(p->children[1]->children[1]).same_as(relu.as<Call>()->args[0]));
}

TEST(Pattern, DiamondDoesNotMatchTwoDifferentConvsOrHalfADiamond) {
  Expr fake = expr(R"(free_var %i1; free_var %w1; free_var %i2; free_var %w2;
%0 = nn.conv2d(%i1, %w1);
%1 = nn.conv2d(%i2, %w2);
%2 = nn.relu(%0);
%3 = tanh(%1);
add(%2, %3))");
  EXPECT_FALSE(matches(diamond_pattern(), fake));
  Expr e = expr(kDiamond);
  EXPECT_FALSE(matches(diamond_pattern(), e.as<Call>()->args[0]));
  EXPECT_FALSE(matches(diamond_pattern(), e.as<Call>()->args[1]));
}

// ---------------------------------------------------------------------------------------------
// Dominator patterns
// ---------------------------------------------------------------------------------------------

DFPattern conv_dominates_add(DFPattern path = unary_elementwise()) {
  return dominates(op("nn.conv2d", {wildcard(), wildcard()}), std::move(path),
                   op("add", {wildcard(), wildcard()}));
}

TEST(Pattern, DominatorMatchesElementwisePathsOfAnyLength) {
  // Classic diamond, a deeper branch, and a single branch.
  EXPECT_TRUE(matches(conv_dominates_add(), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = tanh(%0); add(%2, %3))")));
  EXPECT_TRUE(matches(conv_dominates_add(), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = tanh(%2); %4 = sigmoid(%0); add(%3, %4))")));
  EXPECT_TRUE(matches(conv_dominates_add(), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = tanh(%2); add(%2, %3))")));
  // A fuzzy path: an add inside the path, through an alternative.
  DFPattern fuzzy = unary_elementwise() | op("add", {wildcard(), wildcard()});
  EXPECT_TRUE(matches(conv_dominates_add(fuzzy), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = add(%1, %1); %3 = tanh(%2); %4 = sigmoid(%0); add(%3, %4))")));
}

TEST(Pattern, DominatorRecordsTheParentOnceAndEveryPathNode) {
  DFPattern parent = op("nn.conv2d", {wildcard(), wildcard()});
  DFPattern path = unary_elementwise();
  DFPattern p = dominates(parent, path, op("add", {wildcard(), wildcard()}));
  Expr e = expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = tanh(%0); add(%2, %3))");
  std::optional<DFPatternMatch> m = match(p, e);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->matched.at(parent.get()).size(), 1u);
  EXPECT_EQ(m->get(parent)->kind, ExprKind::Call);
  EXPECT_EQ(m->matched.at(path.get()).size(), 3u);  // relu, relu, tanh
  EXPECT_TRUE(m->get(p).same_as(e));
}

TEST(Pattern, DominatorDoesNotMatchWithoutAProperPath) {
  // Two different convs.
  EXPECT_FALSE(matches(conv_dominates_add(), expr(R"(free_var %i1; free_var %w1; free_var %i2; free_var %w2;
%0 = nn.conv2d(%i1, %w1); %1 = nn.conv2d(%i2, %w2); %2 = nn.relu(%0); %3 = tanh(%1); add(%2, %3))")));
  // A binary add on the path is not unary elementwise.
  EXPECT_FALSE(matches(conv_dominates_add(), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = add(%1, %1); %3 = tanh(%0); add(%2, %3))")));
  // A path that starts at the input instead of the conv.
  EXPECT_FALSE(matches(conv_dominates_add(), expr(R"(free_var %input; free_var %weight;
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%input); %2 = tanh(%0); add(%1, %2))")));
  // No conv at all.
  EXPECT_FALSE(matches(conv_dominates_add(), expr(R"(free_var %input;
%0 = nn.relu(%input); %1 = nn.relu(%0); %2 = tanh(%1); add(%0, %2))")));
}

TEST(Pattern, DominatorParentIsOneExpression) {
  // TVM's test_at_most_one_parent and test_not_match_dominator2: a conv on each side, one of them
  // behind a tanh, which the path (relu) does not allow.
  DFPattern p = dominates(op("nn.conv2d", {wildcard(), wildcard()}), op("nn.relu", {wildcard()}),
                          op("add", {wildcard(), wildcard()}));
  EXPECT_FALSE(matches(p, expr(R"(free_var %x; free_var %w;
%0 = nn.conv2d(%x, %w); %1 = tanh(%0); %2 = nn.conv2d(%1, %w); %3 = nn.relu(%2); %4 = nn.relu(%0); add(%3, %4))")));
  EXPECT_FALSE(matches(p, expr(R"(free_var %x; free_var %w;
%0 = nn.conv2d(%x, %w); %1 = tanh(%0); %2 = nn.conv2d(%1, %w); %3 = nn.relu(%0); add(%2, %3))")));
}

TEST(Pattern, TypedDominator) {
  const char *text =
      R"(free_var %input: Tensor[(1, 3, 12, 12), float32]; free_var %weight: Tensor[(3, 3, 3, 3), float32];
%0 = nn.conv2d(%input, %weight); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = tanh(%0); add(%2, %3))";
  Expr e = typed(text);
  auto pattern = [](DType path_dtype, Shape child_shape) {
    return dominates(op("nn.conv2d", {wildcard(), wildcard()}), has_dtype(unary_elementwise(), path_dtype),
                     has_shape(op("add", {wildcard(), wildcard()}), std::move(child_shape)));
  };
  EXPECT_TRUE(matches(pattern(DType::Float32, {1, 3, 10, 10}), e));
  EXPECT_FALSE(matches(pattern(DType::Float32, {1, 1, 10, 10}), e));
  EXPECT_FALSE(matches(pattern(DType::Float16, {1, 3, 10, 10}), e));
}

TEST(Pattern, DominatorWalksALongPathWithoutRecursion) {
  // conv2d, then 100,000 relus on one branch and a tanh on the other, joined by an add.
  Expr conv = expr("free_var %x; free_var %w; nn.conv2d(%x, %w)");
  Expr chain = conv;
  const int n = 100000;
  for (int i = 0; i < n; ++i) chain = testing::call("nn.relu", {chain});
  Expr root = testing::call("add", {chain, testing::call("tanh", {conv})});
  DFPattern path = unary_elementwise();
  DFPattern p =
      dominates(op("nn.conv2d", {wildcard(), wildcard()}), path, op("add", {wildcard(), wildcard()}));
  std::optional<DFPatternMatch> m = match(p, root);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->matched.at(path.get()).size(), static_cast<size_t>(n + 1));
  // A sigmoid in the middle of the chain is still elementwise; a softmax is not.
  Expr broken = conv;
  for (int i = 0; i < n; ++i) broken = testing::call(i == n / 2 ? "nn.softmax" : "nn.relu", {broken});
  EXPECT_FALSE(matches(p, testing::call("add", {broken, testing::call("tanh", {conv})})));
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

TEST(Pattern, ToStringUsesTvmNotation) {
  DFPattern dense = op("nn.dense", {wildcard(), is_constant()});
  DFPattern bias = op("nn.bias_add", {dense, wildcard()});
  EXPECT_EQ(to_string(op("nn.relu", {bias})), "nn.relu(nn.bias_add(nn.dense(*, const), *))");
  EXPECT_EQ(to_string(optional(bias, [](DFPattern x) { return op("nn.relu", {x}); })),
            "(nn.bias_add(nn.dense(*, const), *) | nn.relu(nn.bias_add(nn.dense(*, const), *)))");
  EXPECT_EQ(to_string(has_attr(is_tuple_get_item(is_var("t"), 0), attrs_of("axis", AttrValue::of_int(1)))),
            "%t.0.has_attr({axis=1})");
  EXPECT_EQ(to_string(has_shape(has_dtype(wildcard(), DType::Float32), {1, kAnyDim})),
            "*.has_dtype(float32).has_shape((1, ?))");
  EXPECT_EQ(to_string(dominates(is_op("nn.conv2d"), wildcard(), is_tuple({wildcard()}))),
            "dominates(nn.conv2d, *, (*,))");
}

}  // namespace
}  // namespace grove::relay
