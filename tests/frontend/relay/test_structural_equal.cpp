// Structural equality and hashing: alpha-equivalence, free-variable mapping, constants, attributes,
// types, patterns, modules, the first difference's path, sharing, and deep IR (100,000 lets).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend/relay/StructuralEqual.h"

namespace grove::relay {
namespace {

using ::testing::HasSubstr;

Type f32(Shape shape = {}) { return TensorType::make(std::move(shape), DType::Float32); }
Expr var(const std::string &name, Type t = {}) { return Var::make(name, std::move(t)); }
Expr f32c(double v) { return Constant::make(NDArray::scalar(DType::Float32, v)); }
Expr op(const std::string &name) { return Op::make(name); }
Expr call(const std::string &name, std::vector<Expr> args, Attrs attrs = {}) {
  return Call::make(op(name), std::move(args), std::move(attrs));
}
Expr fn(std::vector<Expr> params, Expr body) { return Function::make(std::move(params), std::move(body)); }

// `type List[A] { Cons(A, List[A]), Nil }`, with the constructors.
struct ListAdt {
  TypeData data;
  Expr cons, nil;
};
ListAdt make_list(Type second_input = {}) {
  Type list = GlobalTypeVar::make("List");
  Type a = TypeVar::make("A");
  ListAdt adt;
  adt.cons = Constructor::make("Cons", {a, second_input.defined() ? second_input : TypeCall::make(list, {a})},
                               list, 0);
  adt.nil = Constructor::make("Nil", {}, list, 1);
  adt.data = {list, {a}, {adt.cons, adt.nil}, {}};
  return adt;
}

// A `let` chain of `n` bindings, each adding 1 to the previous variable, ending in `last`.
Expr let_chain(int n, double last) {
  std::vector<Expr> vars;
  for (int i = 0; i < n; ++i) vars.push_back(var("x" + std::to_string(i)));
  Expr body = call("add", {vars.back(), f32c(last)});
  for (int i = n; i-- > 0;) {
    Expr value = i == 0 ? f32c(0) : call("add", {vars[i - 1], f32c(1)});
    body = Let::make(vars[i], value, body);
  }
  return body;
}

TEST(StructuralEqual, AlphaRenamedFunctionsAreEqualAndHashAlike) {
  Expr x = var("x", f32()), y = var("y", f32());
  Expr a = fn({x}, call("add", {x, x}));
  Expr b = fn({y}, call("add", {y, y}));
  EXPECT_TRUE(structural_equal(a, b).equal);
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_TRUE(structural_equal(a, b, /*map_free_vars=*/false).equal);  // no free variables here
}

TEST(StructuralEqual, BoundVariablesMustCorrespond) {
  Expr x = var("x"), y = var("y"), p = var("x"), q = var("y");
  EqualResult r = structural_equal(fn({x, y}, call("add", {x, y})), fn({p, q}, call("add", {q, p})));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".body.args[0]");
  EXPECT_EQ(r.lhs, "%x");
  EXPECT_EQ(r.rhs, "%y");
  EXPECT_NE(structural_hash(fn({x, y}, call("add", {x, y}))),
            structural_hash(fn({p, q}, call("add", {q, p}))));
}

TEST(StructuralEqual, FreeVariablesMapOneToOneOnFirstMeeting) {
  Expr a = var("a"), b = var("b"), c = var("c"), d = var("d");
  EXPECT_TRUE(structural_equal(call("add", {a, b}), call("add", {c, d})).equal);
  EXPECT_TRUE(structural_equal(call("add", {a, b}), call("add", {b, a})).equal);
  EXPECT_EQ(structural_hash(call("add", {a, b})), structural_hash(call("add", {c, d})));
  // One-to-one: %a cannot stand for both %c and %d, nor %c for both %a and %b.
  EqualResult r = structural_equal(call("add", {a, a}), call("add", {c, d}));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".args[1]");
  EXPECT_FALSE(structural_equal(call("add", {a, b}), call("add", {c, c})).equal);
  EXPECT_NE(structural_hash(call("add", {a, a})), structural_hash(call("add", {c, d})));

  // Without mapping, free variables must be the very same node.
  EXPECT_FALSE(structural_equal(call("add", {a, b}), call("add", {c, d}), false).equal);
  EXPECT_TRUE(structural_equal(call("add", {a, b}), call("add", {a, b}), false).equal);
  EXPECT_EQ(structural_hash(call("add", {a, b}), false), structural_hash(call("add", {a, b}), false));
  EXPECT_NE(structural_hash(call("add", {a, b}), false), structural_hash(call("add", {c, d}), false));
}

TEST(StructuralEqual, TypeAnnotationsAreCompared) {
  Expr x = var("x", f32({1, 16})), y = var("y"), z = var("z", f32({1, 8}));
  EqualResult r = structural_equal(fn({x}, x), fn({y}, y));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".params[0].type_annotation");
  EXPECT_EQ(r.lhs, "Tensor[(1, 16), float32]");
  EXPECT_EQ(r.rhs, "<none>");
  r = structural_equal(fn({x}, x), fn({z}, z));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".params[0].type_annotation");
  EXPECT_NE(structural_hash(fn({x}, x)), structural_hash(fn({y}, y)));
}

TEST(StructuralEqual, ConstantsByDtypeShapeAndBytes) {
  EXPECT_TRUE(structural_equal(f32c(1.5), f32c(1.5)).equal);
  EXPECT_EQ(structural_hash(f32c(1.5)), structural_hash(f32c(1.5)));
  EqualResult r = structural_equal(f32c(1), f32c(2));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.lhs, "1f");
  EXPECT_EQ(r.rhs, "2f");
  EXPECT_FALSE(structural_equal(f32c(1), Constant::make(NDArray::scalar(DType::Float64, 1))).equal);
  EXPECT_FALSE(structural_equal(Constant::make(NDArray(DType::Float32, {2})),
                                Constant::make(NDArray(DType::Float32, {1, 2})))
                   .equal);
  // Bytes, not values: NaN equals the same NaN, 0 differs from -0.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(structural_equal(f32c(nan), f32c(nan)).equal);
  EXPECT_FALSE(structural_equal(f32c(0.0), f32c(-0.0)).equal);
}

TEST(StructuralEqual, AttributesInAnyOrder) {
  Expr x = var("x");
  Attrs ab = Attrs()
                 .with("axis", AttrValue::of_list({AttrValue::of_int(1)}))
                 .with("keepdims", AttrValue::of_bool(true));
  Attrs ba = Attrs()
                 .with("keepdims", AttrValue::of_bool(true))
                 .with("axis", AttrValue::of_list({AttrValue::of_int(1)}));
  Attrs other = Attrs()
                    .with("axis", AttrValue::of_list({AttrValue::of_int(0)}))
                    .with("keepdims", AttrValue::of_bool(true));
  EXPECT_TRUE(structural_equal(call("sum", {x}, ab), call("sum", {x}, ba)).equal);
  EXPECT_EQ(structural_hash(call("sum", {x}, ab)), structural_hash(call("sum", {x}, ba)));
  EqualResult r = structural_equal(call("sum", {x}, ab), call("sum", {x}, other));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".attrs");
  EXPECT_EQ(r.lhs, "{axis=[1], keepdims=True}");
  EXPECT_EQ(r.rhs, "{axis=[0], keepdims=True}");
  // Function attributes too.
  Expr y = var("y");
  Expr f = Function::make({y}, y, {}, {}, Attrs().with("Primitive", AttrValue::of_int(1)));
  EXPECT_EQ(structural_equal(f, fn({y}, y)).path, ".attrs");
}

TEST(StructuralEqual, NamesOfGlobalsOpsAndKindsOfNodes) {
  EXPECT_TRUE(structural_equal(GlobalVar::make("f"), GlobalVar::make("f")).equal);
  EXPECT_FALSE(structural_equal(GlobalVar::make("f"), GlobalVar::make("g")).equal);
  Expr x = var("x");
  EqualResult r = structural_equal(call("add", {x, x}), call("multiply", {x, x}));
  EXPECT_EQ(r.path, ".op");
  EXPECT_EQ(r.lhs, "add");
  EXPECT_EQ(r.rhs, "multiply");
  r = structural_equal(Tuple::make({x}), TupleGetItem::make(Tuple::make({x}), 0));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "");
  r = structural_equal(TupleGetItem::make(Tuple::make({x, x}), 0),
                       TupleGetItem::make(Tuple::make({x, x}), 1));
  EXPECT_EQ(r.path, ".index");
  r = structural_equal(Tuple::make({x, x}), Tuple::make({x}));
  EXPECT_EQ(r.path, ".fields");
  EXPECT_EQ(r.lhs, "2 fields");
}

TEST(StructuralEqual, SpansAndCheckedTypesAreIgnored) {
  auto file = std::make_shared<const std::string>("a.relay");
  Expr a = Constant::make(NDArray::scalar(DType::Float32, 3), Span{file, 4, 2});
  Expr b = f32c(3);
  a->checked_type = f32();
  EXPECT_TRUE(structural_equal(a, b).equal);
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, LetsBindTheirVariables) {
  Expr x = var("x"), y = var("y"), p = var("p"), q = var("q");
  EXPECT_TRUE(structural_equal(Let::make(x, f32c(1), x), Let::make(p, f32c(1), p)).equal);
  Expr a = Let::make(x, f32c(1), Let::make(y, f32c(2), x));
  Expr b = Let::make(p, f32c(1), Let::make(q, f32c(2), q));
  EqualResult r = structural_equal(a, b);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".body.body");
  // A let-bound closure that calls itself.
  Expr f = var("f"), n = var("n"), g = var("g"), m = var("m");
  Expr rec_f = Let::make(f, fn({n}, Call::make(f, {n})), f);
  Expr rec_g = Let::make(g, fn({m}, Call::make(g, {m})), g);
  EXPECT_TRUE(structural_equal(rec_f, rec_g).equal);
  EXPECT_EQ(structural_hash(rec_f), structural_hash(rec_g));
}

TEST(StructuralEqual, MatchBindsPatternVariables) {
  ListAdt list = make_list();
  Expr l = var("l"), h = var("h"), t = var("t"), h2 = var("a"), t2 = var("b");
  auto match = [&](Expr hv, Expr tv, Expr result, bool complete) {
    return Match::make(
        l,
        {{PatternNode::constructor_of(list.cons, {PatternNode::variable(hv), PatternNode::variable(tv)}),
          result},
         {PatternNode::wildcard(), f32c(0)}},
        complete);
  };
  EXPECT_TRUE(structural_equal(match(h, t, h, true), match(h2, t2, h2, true)).equal);
  EXPECT_EQ(structural_hash(match(h, t, h, true)), structural_hash(match(h2, t2, h2, true)));
  EqualResult r = structural_equal(match(h, t, h, true), match(h2, t2, t2, true));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, ".clauses[0].rhs");
  EXPECT_EQ(structural_equal(match(h, t, h, true), match(h2, t2, h2, false)).path, ".complete");
  // Patterns themselves: a wildcard differs from a variable.
  Expr other = Match::make(
      l, {{PatternNode::constructor_of(list.cons, {PatternNode::wildcard(), PatternNode::variable(t2)}),
           f32c(0)},
          {PatternNode::wildcard(), f32c(0)}});
  Expr mine = Match::make(
      l, {{PatternNode::constructor_of(list.cons, {PatternNode::variable(h), PatternNode::variable(t)}),
           f32c(0)},
          {PatternNode::wildcard(), f32c(0)}});
  EXPECT_EQ(structural_equal(mine, other).path, ".clauses[0].lhs.patterns[0]");
}

TEST(StructuralEqual, TypesUpToTheirParameters) {
  Type a = TypeVar::make("A"), b = TypeVar::make("B");
  EXPECT_TRUE(structural_equal(FuncType::make({a}, a, {a}), FuncType::make({b}, b, {b})).equal);
  EXPECT_EQ(structural_hash(FuncType::make({a}, a, {a})), structural_hash(FuncType::make({b}, b, {b})));
  EXPECT_FALSE(structural_equal(FuncType::make({a, b}, a, {a, b}), FuncType::make({a, b}, b, {a, b})).equal);
  EqualResult r = structural_equal(f32({1, kAnyDim}), f32({1, 2}));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.lhs, "Tensor[(1, ?), float32]");
  EXPECT_TRUE(structural_equal(f32({1, kAnyDim}), f32({1, kAnyDim})).equal);
  Type list = GlobalTypeVar::make("List");
  EXPECT_TRUE(
      structural_equal(TypeCall::make(list, {f32()}), TypeCall::make(GlobalTypeVar::make("List"), {f32()}))
          .equal);
  r = structural_equal(TupleType::make({f32(), TypeCall::make(list, {f32()})}),
                       TupleType::make({f32(), TypeCall::make(list, {TensorType::scalar(DType::Int32)})}));
  EXPECT_EQ(r.path, ".fields[1].args[0]");
  EXPECT_FALSE(structural_equal(RefType::make(f32()), f32()).equal);
  // The same polymorphic type node used twice pairs with two separately written ones.
  Type id = FuncType::make({a}, a, {a});
  Expr x = var("x", id), y = var("y", id);
  Type c = TypeVar::make("C");
  Expr p = var("p", FuncType::make({b}, b, {b})), q = var("q", FuncType::make({c}, c, {c}));
  EXPECT_TRUE(structural_equal(fn({x, y}, x), fn({p, q}, p)).equal);
}

TEST(StructuralEqual, PolymorphicFunctionsBindTypeParameters) {
  Type a = TypeVar::make("A"), b = TypeVar::make("B");
  Expr x = var("x", a), y = var("y", b);
  Expr f = Function::make({x}, x, a, {a});
  Expr g = Function::make({y}, y, b, {b});
  EXPECT_TRUE(structural_equal(f, g).equal);
  EXPECT_EQ(structural_hash(f), structural_hash(g));
  Expr z = var("z", a);
  EXPECT_EQ(structural_equal(f, Function::make({z}, z, b, {b})).path, ".params[0].type_annotation");
}

TEST(StructuralEqual, SharingDoesNotMatter) {
  Expr x = var("x");
  Expr shared = call("add", {x, x});
  Expr graph = call("multiply", {shared, shared});
  Expr tree = call("multiply", {call("add", {x, x}), call("add", {x, x})});
  EXPECT_TRUE(structural_equal(graph, tree).equal);
  EXPECT_TRUE(structural_equal(tree, graph).equal);
  EXPECT_EQ(structural_hash(graph), structural_hash(tree));
}

TEST(StructuralEqual, SharedBindersEqualTheirCopies) {
  // A let (and a function) shared in graph form binds its variable at each use: it equals two
  // separate copies, each with its own variable, and hashes alike.
  auto shared_let = [](const std::string &name) {
    Expr v = var(name);
    return Let::make(v, f32c(1), call("exp", {v}));
  };
  Expr once = shared_let("a");
  Expr graph = Tuple::make({once, once});
  Expr copies = Tuple::make({shared_let("b"), shared_let("c")});
  EXPECT_TRUE(structural_equal(graph, copies).equal);
  EXPECT_TRUE(structural_equal(copies, graph).equal);
  EXPECT_EQ(structural_hash(graph), structural_hash(copies));
  auto shared_fn = [](const std::string &name) {
    Expr p = var(name, f32());
    return fn({p}, call("negative", {p}));
  };
  Expr f = shared_fn("p");
  EXPECT_TRUE(structural_equal(Tuple::make({f, f}), Tuple::make({shared_fn("q"), shared_fn("r")})).equal);
  EXPECT_EQ(structural_hash(Tuple::make({f, f})),
            structural_hash(Tuple::make({shared_fn("q"), shared_fn("r")})));
}

TEST(StructuralEqual, HeavilySharedDagsAreLinear) {
  // 2^300 paths: only memoization makes this finish.
  auto dag = [](const Expr &x, int depth, double leaf) {
    Expr e = call("add", {x, f32c(leaf)});
    for (int i = 0; i < depth; ++i) e = call("add", {e, e});
    return e;
  };
  Expr x = var("x");
  EXPECT_TRUE(structural_equal(dag(x, 300, 1), dag(x, 300, 1)).equal);
  EqualResult r = structural_equal(dag(x, 300, 1), dag(x, 300, 2));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "(.args[0])*300.args[1]");
  EXPECT_EQ(structural_hash(dag(x, 300, 1)), structural_hash(dag(x, 300, 1)));
  EXPECT_NE(structural_hash(dag(x, 300, 1)), structural_hash(dag(x, 300, 2)));
}

TEST(StructuralEqual, HundredThousandLets) {
  Expr a = let_chain(100000, 1), b = let_chain(100000, 1), c = let_chain(100000, 2);
  EXPECT_TRUE(structural_equal(a, b).equal);
  EqualResult r = structural_equal(a, c);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "(.body)*100000.args[1]");
  EXPECT_EQ(r.lhs, "1f");
  EXPECT_EQ(r.rhs, "2f");
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_NE(structural_hash(a), structural_hash(c));
}

TEST(StructuralEqual, HundredThousandNestedCalls) {
  auto nest = [](const Expr &x) {
    Expr e = x;
    for (int i = 0; i < 100000; ++i) e = call("negative", {e});
    return e;
  };
  Expr x = var("x"), y = var("y");
  EXPECT_TRUE(structural_equal(nest(x), nest(y)).equal);
  EXPECT_EQ(structural_hash(nest(x)), structural_hash(nest(y)));
  EXPECT_FALSE(structural_equal(nest(x), nest(y), false).equal);
}

// The module of the example path `@main.body.args[1].fields[0]`.
Module module_with(double constant) {
  Module m;
  ListAdt list = make_list();
  m.add_type(list.data);
  Expr x = var("x", f32({1, 16}));
  Expr body = call("add", {x, TupleGetItem::make(Tuple::make({f32c(constant), x}), 0)});
  m.add_function("main", fn({x}, body));
  Expr y = var("y");
  m.add_function("id", fn({y}, y));
  return m;
}

TEST(StructuralEqual, ModulesFunctionByFunction) {
  EXPECT_TRUE(structural_equal(module_with(1), module_with(1)).equal);
  EqualResult r = structural_equal(module_with(1), module_with(2));
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "@main.body.args[1].tuple.fields[0]");
  EXPECT_EQ(r.lhs, "1f");
  EXPECT_EQ(r.rhs, "2f");

  Module fewer = module_with(1);
  Module more = module_with(1);
  Expr z = var("z");
  more.add_function("extra", fn({z}, z));
  r = structural_equal(fewer, more);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "@extra");
  EXPECT_EQ(r.lhs, "<missing>");
  r = structural_equal(more, fewer);
  EXPECT_EQ(r.path, "@extra");
  EXPECT_EQ(r.rhs, "<missing>");
}

TEST(StructuralEqual, ModulesTypeDefinitions) {
  Module a, b, c;
  a.add_type(make_list().data);
  b.add_type(make_list().data);
  c.add_type(make_list(TensorType::scalar(DType::Int32)).data);
  EXPECT_TRUE(structural_equal(a, b).equal);
  EqualResult r = structural_equal(a, c);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.path, "type List.constructors[0].inputs[1]");
  EXPECT_EQ(r.lhs, "List[A]");
  EXPECT_EQ(r.rhs, "int32");
  r = structural_equal(a, Module());
  EXPECT_EQ(r.path, "type List");
  EXPECT_EQ(r.rhs, "<missing>");
}

}  // namespace
}  // namespace grove::relay
