// The Relay IR core: node construction and its checks, NDArray element access, attributes, and the
// iterative walks of Visitor.h on deep IR (a chain of 100,000 lets built, walked, rewritten and
// destroyed without recursion on the C stack).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/relay/IR.h"
#include "frontend/relay/Visitor.h"
#include "support/Error.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

Expr f32_scalar(float v) { return Constant::make(NDArray::scalar(DType::Float32, v)); }

// let %x0 = 0f; let %x1 = %x0; ... let %x{n-1} = %x{n-2}; %x{n-1}
Expr let_chain(int n) {
  std::vector<Expr> vars;
  for (int i = 0; i < n; ++i) vars.push_back(Var::make("x" + std::to_string(i)));
  Expr body = vars.back();
  for (int i = n - 1; i >= 0; --i) body = Let::make(vars[i], i == 0 ? f32_scalar(0.0f) : vars[i - 1], body);
  return body;
}

TEST(RelayNDArray, ScalarsConvertEveryDType) {
  for (DType t : {DType::Bool, DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::Float16,
                  DType::Float32, DType::Float64}) {
    NDArray a = NDArray::scalar(t, 1.0);
    EXPECT_EQ(a.ndim(), 0);
    EXPECT_EQ(a.size(), 1);
    EXPECT_EQ(a.nbytes(), dtype_bytes(t));
    EXPECT_EQ(a.element_as_double(0), 1.0) << to_string(t);
    EXPECT_EQ(a.element_as_int(0), 1) << to_string(t);
  }
  EXPECT_EQ(NDArray::scalar(DType::Float16, -2.5).element_as_double(0), -2.5);
  EXPECT_EQ(NDArray::scalar(DType::Float16, 0.1).element_as_double(0), 0.0999755859375);  // nearest half
  EXPECT_EQ(NDArray::scalar(DType::Int32, -42.0).element_as_int(0), -42);
}

TEST(RelayNDArray, ZeroFilledAndBitwiseEquality) {
  NDArray a(DType::Float32, {2, 3});
  EXPECT_EQ(a.size(), 6);
  EXPECT_EQ(a.nbytes(), 24u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a.data<float>()[i], 0.0f);
  NDArray b(DType::Float32, {2, 3});
  EXPECT_TRUE(a.bitwise_equal(b));
  b.data<float>()[4] = 1.0f;
  EXPECT_FALSE(a.bitwise_equal(b));
  EXPECT_FALSE(a.bitwise_equal(NDArray(DType::Int32, {2, 3})));
  EXPECT_FALSE(a.bitwise_equal(NDArray(DType::Float32, {3, 2})));
}

TEST(RelayDType, NamesRoundTrip) {
  for (const char *name : {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                           "float16", "float32", "float64"}) {
    auto t = parse_dtype(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_STREQ(to_string(*t), name);
  }
  EXPECT_FALSE(parse_dtype("float128").has_value());
  EXPECT_TRUE(is_float(DType::Float16));
  EXPECT_TRUE(is_int(DType::UInt8));
  EXPECT_FALSE(is_int(DType::Bool));
}

TEST(RelayAttrs, OrderInsensitiveEqualityAndReplacement) {
  Attrs a = Attrs().with("axis", AttrValue::of_int(1)).with("keepdims", AttrValue::of_bool(true));
  Attrs b = Attrs().with("keepdims", AttrValue::of_bool(true)).with("axis", AttrValue::of_int(1));
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.entries().front().first, "axis");  // written order kept for printing
  Attrs c = a.with("axis", AttrValue::of_int(2));
  EXPECT_FALSE(a == c);
  EXPECT_EQ(c.find("axis")->i, 2);
  EXPECT_EQ(c.entries().size(), 2u);
  EXPECT_FALSE(a.without("axis").has("axis"));
  EXPECT_TRUE(a.with("padding", AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(1)})) ==
              b.with("padding", AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(1)})));
}

TEST(RelayTypes, PrintInTheTextFormat) {
  EXPECT_EQ(to_string(TensorType::make({1, 16}, DType::Float32)), "Tensor[(1, 16), float32]");
  EXPECT_EQ(to_string(TensorType::make({kAnyDim, 1}, DType::UInt16)), "Tensor[(?, 1), uint16]");
  EXPECT_EQ(to_string(TensorType::make({10}, DType::Float32)), "Tensor[(10), float32]");
  EXPECT_EQ(to_string(TensorType::scalar(DType::Bool)), "bool");
  Type a = TypeVar::make("A");
  Type list = GlobalTypeVar::make("List");
  EXPECT_EQ(to_string(FuncType::make({a, TypeCall::make(list, {a})}, TypeCall::make(list, {a}), {a})),
            "fn [A](A, List[A]) -> List[A]");
  EXPECT_EQ(to_string(TupleType::make({})), "()");
  EXPECT_EQ(to_string(TupleType::make({TensorType::scalar(DType::Int32)})), "(int32,)");
  EXPECT_EQ(to_string(RefType::make(TensorType::scalar(DType::Float32))), "ref(float32)");
  EXPECT_EQ(to_string(IncompleteType::make()), "_");
}

TEST(RelayModule, DuplicateTypesAndConstructorsAreUserErrors) {
  Module m;
  Type list = GlobalTypeVar::make("List");
  Type a = TypeVar::make("A");
  TypeData data{list, {a}, {Constructor::make("Nil", {}, list, 0)}, {}};
  m.add_type(data);
  ASSERT_NE(m.find_constructor("Nil"), nullptr);
  EXPECT_EQ(m.find_constructor("Cons"), nullptr);
  EXPECT_THAT(user_error_of([&] { m.add_type(data); }), HasSubstr("the type List is defined twice"));
  Type other = GlobalTypeVar::make("Other");
  EXPECT_THAT(user_error_of([&] {
                m.add_type(TypeData{other, {}, {Constructor::make("Nil", {}, other, 0)}, {}});
              }),
              HasSubstr("the constructor Nil is defined twice"));
}

TEST(RelayModule, FunctionsKeepDefinitionOrder) {
  Module m;
  Expr x = Var::make("x");
  m.add_function("main", Function::make({x}, x));
  m.add_function("f", Function::make({x}, x));
  m.add_function("main", Function::make({}, f32_scalar(1.0f)));  // replaces, keeps its place
  ASSERT_EQ(m.functions().size(), 2u);
  EXPECT_EQ(m.functions()[0].first, "main");
  EXPECT_TRUE(m.find_function("main")->as<Function>()->params.empty());
}

TEST(RelayVisitor, PostOrderVisitsSharedNodesOnce) {
  // %0 = (%x, %x); (%0, %0): four distinct nodes, children first.
  Expr x = Var::make("x");
  Expr inner = Tuple::make({x, x});
  Expr outer = Tuple::make({inner, inner});
  std::vector<const ExprNode *> order;
  post_order_visit(outer, [&](const Expr &e) { order.push_back(e.get()); });
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], x.get());
  EXPECT_EQ(order[1], inner.get());
  EXPECT_EQ(order[2], outer.get());
}

TEST(RelayVisitor, FreeVarsExcludeEveryBinder) {
  Expr x = Var::make("x"), y = Var::make("y"), z = Var::make("z"), p = Var::make("p"), h = Var::make("h");
  Type list = GlobalTypeVar::make("List");
  Expr cons = Constructor::make("Cons", {TensorType::scalar(DType::Float32), list}, list, 0);
  Expr match = Match::make(
      y, {Clause{PatternNode::constructor_of(cons, {PatternNode::variable(h), PatternNode::wildcard()}),
                 Tuple::make({h, z})}});
  Expr e = Let::make(x, Function::make({p}, Tuple::make({p, x})), Tuple::make({x, match}));
  std::vector<Expr> fv = free_vars(e);
  ASSERT_EQ(fv.size(), 2u);
  EXPECT_TRUE(fv[0].same_as(y));
  EXPECT_TRUE(fv[1].same_as(z));
}

TEST(RelayVisitor, MutatorReturnsTheSameNodeWhenNothingChanges) {
  Expr e = let_chain(10);
  ExprMutator identity;
  EXPECT_TRUE(identity.mutate(e).same_as(e));
}

TEST(RelayVisitor, SubstituteRewritesUsesAndKeepsSharing) {
  Expr x = Var::make("x"), y = Var::make("y");
  Expr shared = Tuple::make({x});
  Expr e = Tuple::make({shared, shared, y});
  Expr one = f32_scalar(1.0f);
  Expr r = substitute(e, {{x, one}});
  const auto *t = r.as<Tuple>();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->fields[0].same_as(t->fields[1])) << "a shared node must stay shared";
  EXPECT_TRUE(t->fields[0].as<Tuple>()->fields[0].same_as(one));
  EXPECT_TRUE(t->fields[2].same_as(y));
}

TEST(RelayVisitor, MatchClausesRebuildWithReplacedPatternVars) {
  Expr d = Var::make("d"), a = Var::make("a"), b = Var::make("b");
  Expr m =
      Match::make(d, {Clause{PatternNode::tuple({PatternNode::variable(a), PatternNode::wildcard()}), a}});
  Expr r = substitute(m, {{a, b}});
  const auto *rm = r.as<Match>();
  ASSERT_NE(rm, nullptr);
  EXPECT_TRUE(rm->clauses[0].lhs->patterns[0]->var.same_as(b));
  EXPECT_TRUE(rm->clauses[0].rhs.same_as(b));
}

TEST(RelayVisitor, HundredThousandLetsAreWalkedRewrittenAndDestroyed) {
  const int n = 100000;
  Expr chain = let_chain(n);
  int lets = 0;
  post_order_visit(chain, [&](const Expr &e) { lets += e.as<Let>() != nullptr; });
  EXPECT_EQ(lets, n);
  EXPECT_EQ(free_vars(chain).size(), 0u);
  // Replace the constant at the bottom: every Let above it is rebuilt.
  class ReplaceZero : public ExprMutator {
   protected:
    Expr rewrite(const Expr &pre, const Expr &post) override {
      return pre.as<Constant>() ? Constant::make(NDArray::scalar(DType::Float32, 7.0)) : post;
    }
  } replace;
  Expr rewritten = replace.mutate(chain);
  EXPECT_FALSE(rewritten.same_as(chain));
  const auto *first = rewritten.as<Let>();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->value.as<Constant>()->data.element_as_double(0), 7.0);
  chain = Expr();  // destroying 100,000 nested lets must not overflow the stack
  rewritten = Expr();
  SUCCEED();
}

TEST(RelayVisitor, HundredThousandNestedTuplesAreWalked) {
  Expr e = f32_scalar(0.0f);
  for (int i = 0; i < 100000; ++i) e = Tuple::make({e});
  int count = 0;
  post_order_visit(e, [&](const Expr &) { ++count; });
  EXPECT_EQ(count, 100001);
  ExprMutator identity;
  EXPECT_TRUE(identity.mutate(e).same_as(e));
}

TEST(RelayIR, UnknownOperatorIsAUserErrorWithItsLocation) {
  Span span{std::make_shared<const std::string>("prog.relay"), 3, 7};
  const std::string message = user_error_of([&] { Op::make("nn.no_such_op", span); });
  EXPECT_THAT(message, HasSubstr("prog.relay:3:7"));
  EXPECT_THAT(message, HasSubstr("grove does not support the operator 'nn.no_such_op'"));
}

TEST(RelayIR, ExprTypeBeforeInferenceIsAnInternalError) {
  Expr x = Var::make("x");
  EXPECT_THROW(x.type(), InternalError);
}

}  // namespace
}  // namespace grove::relay
