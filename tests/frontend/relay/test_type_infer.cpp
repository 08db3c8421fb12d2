// Relay type inference: polymorphism, ADTs, recursion, references, op relations, unknown dims and
// every type error, on IR built with the make() functions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "tests/UserError.h"
#include "tests/relay/Differential.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

Span at(int line, int col) {
  static const auto file = std::make_shared<const std::string>("t.relay");
  return Span{file, line, col};
}

Type tensor(Shape shape, DType dtype = DType::Float32) { return TensorType::make(std::move(shape), dtype); }
Type scalar(DType dtype) { return TensorType::scalar(dtype); }
Type unit() { return TupleType::make({}); }

Expr constant(double value, DType dtype = DType::Float32, Span span = {}) {
  return Constant::make(NDArray::scalar(dtype, value), span);
}
Expr constant_of(Shape shape, DType dtype = DType::Float32) {
  return Constant::make(NDArray(dtype, std::move(shape)));
}
Expr var(const std::string &name, Type annotation = {}, Span span = {}) {
  return Var::make(name, std::move(annotation), span);
}
Expr fn(std::vector<Expr> params, Expr body, Type ret = {}, std::vector<Type> type_params = {}) {
  return Function::make(std::move(params), std::move(body), std::move(ret), std::move(type_params));
}
Expr call(Expr f, std::vector<Expr> args, Span span = {}) {
  return Call::make(std::move(f), std::move(args), {}, {}, span);
}
Expr op_call(const std::string &op, std::vector<Expr> args, Attrs attrs = {}, Span span = {}) {
  return Call::make(Op::make(op), std::move(args), std::move(attrs), {}, span);
}
Expr global(const std::string &name, Span span = {}) { return GlobalVar::make(name, span); }

// `type List[A] { Cons(A, List[A]), Nil }`
struct ListADT {
  Type list = GlobalTypeVar::make("List");
  Type a = TypeVar::make("A");
  Expr cons = Constructor::make("Cons", {a, TypeCall::make(list, {a})}, list, 0);
  Expr nil = Constructor::make("Nil", {}, list, 1);
  Type of(Type elem) const { return TypeCall::make(list, {std::move(elem)}); }
  void add_to(Module &m) const { m.add_type(TypeData{list, {a}, {cons, nil}, {}}); }
};

// The type of `e` inferred in an otherwise empty module (or `m`).
std::string infer(const Expr &e, const Module &m = {}) { return to_string(infer_type(e, m)); }

// ---------------------------------------------------------------------------------------------
// Polymorphism
// ---------------------------------------------------------------------------------------------

TEST(TypeInfer, PolymorphicGlobalIdentityAtTwoTypes) {
  Module m;
  Type a = TypeVar::make("A");
  Expr x = var("x", a);
  m.add_function("id", fn({x}, x, a, {a}));
  Expr body =
      Tuple::make({call(global("id"), {constant(1)}), call(global("id"), {constant(2, DType::Int32)})});
  m.add_function("main", fn({}, body));
  infer_types(m);
  EXPECT_EQ(to_string(body->checked_type), "(float32, int32)");
  EXPECT_EQ(to_string((*m.find_function("id"))->checked_type), "fn [A](A) -> A");
  EXPECT_EQ(to_string(x->checked_type), "A");
}

TEST(TypeInfer, PolymorphicGlobalWithoutReturnAnnotationIsGeneralizedAfterItsComponent) {
  Module m;
  Type a = TypeVar::make("A");
  Expr x = var("x", a);
  // @main comes first: globals are inferred callees first, whatever their order in the module.
  Expr body = Tuple::make({call(global("id"), {constant(1)}), call(global("id"), {Tuple::make({})})});
  m.add_function("main", fn({}, body));
  m.add_function("id", fn({x}, x, {}, {a}));
  infer_types(m);
  EXPECT_EQ(to_string(body->checked_type), "(float32, ())");
}

TEST(TypeInfer, LetPolymorphism) {
  // let %id = fn [A](%x: A) -> A { %x }; (%id(1), %id(()))
  Type a = TypeVar::make("A");
  Expr x = var("x", a);
  Expr id = var("id");
  Expr e = Let::make(id, fn({x}, x, a, {a}),
                     Tuple::make({call(id, {constant(1, DType::Int32)}), call(id, {Tuple::make({})})}));
  EXPECT_EQ(infer(e), "(int32, ())");
  EXPECT_EQ(to_string(id->checked_type), "fn [A](A) -> A");
}

TEST(TypeInfer, ExplicitTypeArgumentsAreHonoured) {
  Module m;
  Type a = TypeVar::make("A");
  Expr x = var("x", a);
  m.add_function("id", fn({x}, x, a, {a}));
  Expr ok = Call::make(global("id"), {constant(1)}, {}, {scalar(DType::Float32)});
  EXPECT_EQ(infer(ok, m), "float32");
  Expr bad =
      Call::make(global("id"), {constant(1, DType::Float32, at(3, 9))}, {}, {scalar(DType::Int32)}, at(3, 5));
  EXPECT_EQ(user_error_of([&] { infer_type(bad, m); }),
            "t.relay:3:9: type error: argument 1 of @id: expected int32, found float32");
  Expr too_many = Call::make(global("id"), {constant(1)}, {}, {scalar(DType::Int32), unit()}, at(4, 1));
  EXPECT_EQ(user_error_of([&] { infer_type(too_many, m); }),
            "t.relay:4:1: type error: wrong number of type arguments to @id: expected 1, found 2");
}

// ---------------------------------------------------------------------------------------------
// ADTs and recursion
// ---------------------------------------------------------------------------------------------

TEST(TypeInfer, ConstructorsInstantiateTheirTypeParameters) {
  Module m;
  ListADT l;
  l.add_to(m);
  Expr list = call(l.cons, {constant(1), call(l.cons, {constant(2), call(l.nil, {})})});
  EXPECT_EQ(infer(list, m), "List[float32]");
  EXPECT_EQ(to_string(l.cons->checked_type), "fn [A](A, List[A]) -> List[A]");
  // A constructor used as a value has its generic type.
  EXPECT_EQ(infer(l.nil, m), "fn [A]() -> List[A]");
  // Mixed element types do not unify.
  Expr mixed =
      call(l.cons, {constant(1), call(l.cons, {constant(2, DType::Int32), call(l.nil, {})}, at(2, 12))});
  EXPECT_EQ(user_error_of([&] { infer_type(mixed, m); }),
            "t.relay:2:12: type error: argument 2 of Cons: expected List[float32], found List[int32]");
}

// def @length[A](%l: List[A]) -> int32 { match (%l) { Cons(_, %t) => add(1, @length(%t)), Nil => 0 } }
Expr length_function(const ListADT &l, bool annotate_result) {
  Expr lv = var("l", l.of(l.a));
  Expr t = var("t");
  Expr rec = op_call("add", {constant(1, DType::Int32), call(global("length"), {t})});
  Expr body = Match::make(
      lv, {{PatternNode::constructor_of(l.cons, {PatternNode::wildcard(), PatternNode::variable(t)}), rec},
           {PatternNode::constructor_of(l.nil, {}), constant(0, DType::Int32)}});
  return fn({lv}, body, annotate_result ? scalar(DType::Int32) : Type(), {l.a});
}

TEST(TypeInfer, RecursiveLengthOverList) {
  for (bool annotated : {true, false}) {
    Module m;
    ListADT l;
    l.add_to(m);
    m.add_function("length", length_function(l, annotated));
    Expr use = call(global("length"), {call(l.cons, {Tuple::make({}), call(l.nil, {})})});
    m.add_function("main", fn({}, use));
    infer_types(m);
    EXPECT_EQ(to_string((*m.find_function("length"))->checked_type), "fn [A](List[A]) -> int32") << annotated;
    EXPECT_EQ(to_string(use->checked_type), "int32");
  }
}

TEST(TypeInfer, RecursiveMapOverList) {
  // def @map[A, B](%f: fn(A) -> B, %l: List[A]) -> List[B] {
  //   match (%l) { Cons(%h, %t) => Cons(%f(%h), @map(%f, %t)), Nil => Nil() } }
  Module m;
  ListADT l;
  l.add_to(m);
  Type a = TypeVar::make("A"), b = TypeVar::make("B");
  Expr f = var("f", FuncType::make({a}, b)), lv = var("l", l.of(a)), h = var("h"), t = var("t");
  Expr cons_case = call(l.cons, {call(f, {h}), call(global("map"), {f, t})});
  Expr body = Match::make(
      lv,
      {{PatternNode::constructor_of(l.cons, {PatternNode::variable(h), PatternNode::variable(t)}), cons_case},
       {PatternNode::constructor_of(l.nil, {}), call(l.nil, {})}});
  m.add_function("map", fn({f, lv}, body, l.of(b), {a, b}));
  Expr x = var("x", scalar(DType::Float32));
  Expr use =
      call(global("map"), {fn({x}, Tuple::make({x, x})), call(l.cons, {constant(1), call(l.nil, {})})});
  m.add_function("main", fn({}, use));
  infer_types(m);
  EXPECT_EQ(to_string(use->checked_type), "List[(float32, float32)]");
  EXPECT_EQ(to_string(h->checked_type), "A");
  EXPECT_EQ(to_string(t->checked_type), "List[A]");
}

TEST(TypeInfer, MutualRecursionWithoutReturnAnnotations) {
  // @even(%l: List[int32]) { match (%l) { Cons(_, %t) => @odd(%t), Nil => True } } and @odd alike.
  Module m;
  ListADT l;
  l.add_to(m);
  auto parity = [&](const std::string &other, bool at_nil) {
    Expr lv = var("l", l.of(scalar(DType::Int32))), t = var("t");
    return fn({lv}, Match::make(lv, {{PatternNode::constructor_of(
                                          l.cons, {PatternNode::wildcard(), PatternNode::variable(t)}),
                                      call(global(other), {t})},
                                     {PatternNode::wildcard(), constant(at_nil, DType::Bool)}}));
  };
  m.add_function("even", parity("odd", true));
  m.add_function("odd", parity("even", false));
  m.add_function("main", fn({}, call(global("even"), {call(l.nil, {})})));
  infer_types(m);
  EXPECT_EQ(to_string((*m.find_function("even"))->checked_type), "fn (List[int32]) -> bool");
  EXPECT_EQ(to_string((*m.find_function("odd"))->checked_type), "fn (List[int32]) -> bool");
}

TEST(TypeInfer, LetBoundRecursiveClosure) {
  // let %loop = fn (%n: int32) { if (less(%n, 10)) { %loop(add(%n, 1)) } else { %n } }; %loop(0)
  Expr loop = var("loop"), n = var("n", scalar(DType::Int32));
  Expr body = If::make(op_call("less", {n, constant(10, DType::Int32)}),
                       call(loop, {op_call("add", {n, constant(1, DType::Int32)})}), n);
  Expr e = Let::make(loop, fn({n}, body), call(loop, {constant(0, DType::Int32)}));
  EXPECT_EQ(infer(e), "int32");
  EXPECT_EQ(to_string(loop->checked_type), "fn (int32) -> int32");
}

TEST(TypeInfer, TupleAndVarPatterns) {
  // match ((1f, 2)) { (%a, _) => %a }
  Expr a = var("a");
  Expr e = Match::make(Tuple::make({constant(1), constant(2, DType::Int32)}),
                       {{PatternNode::tuple({PatternNode::variable(a), PatternNode::wildcard()}), a}});
  EXPECT_EQ(infer(e), "float32");
  Expr wrong = Match::make(
      Tuple::make({constant(1)}),
      {{PatternNode::tuple({PatternNode::wildcard(), PatternNode::wildcard()}, at(5, 3)), constant(0)}});
  EXPECT_EQ(
      user_error_of([&] { infer_type(wrong, {}); }),
      "t.relay:5:3: type error: the tuple pattern does not match the type of the matched value: expected "
      "(float32,), found (_, _)");
}

// ---------------------------------------------------------------------------------------------
// References, tuples, if, functions
// ---------------------------------------------------------------------------------------------

TEST(TypeInfer, References) {
  // let %r = ref(1f); let %u = ref_write(%r, 2f); ref_read(%r)
  Expr r = var("r"), u = var("u");
  Expr e = Let::make(r, RefCreate::make(constant(1)),
                     Let::make(u, RefWrite::make(r, constant(2)), RefRead::make(r)));
  EXPECT_EQ(infer(e), "float32");
  EXPECT_EQ(to_string(r->checked_type), "ref(float32)");
  EXPECT_EQ(to_string(u->checked_type), "()");
  Expr bad = RefWrite::make(RefCreate::make(constant(1)), constant(2, DType::Int32, at(1, 20)));
  EXPECT_EQ(user_error_of([&] { infer_type(bad, {}); }),
            "t.relay:1:20: type error: the value written by ref_write does not match the reference's type: "
            "expected float32, found int32");
  Expr not_ref = RefRead::make(constant(1, DType::Float32, at(2, 10)));
  EXPECT_EQ(user_error_of([&] { infer_type(not_ref, {}); }),
            "t.relay:2:10: type error: the argument of ref_read must be a reference: expected ref(_), found "
            "float32");
}

TEST(TypeInfer, TuplesAndDeferredProjection) {
  EXPECT_EQ(infer(TupleGetItem::make(Tuple::make({constant(1), constant(2, DType::Int32)}), 1)), "int32");
  // %t has no annotation: its projection waits until the call tells its type.
  Expr t = var("t"), f = var("f");
  Expr e = Let::make(f, fn({t}, TupleGetItem::make(t, 0)),
                     call(f, {Tuple::make({constant(1), constant(2, DType::Int32)})}));
  EXPECT_EQ(infer(e), "float32");
  EXPECT_EQ(to_string(t->checked_type), "(float32, int32)");
}

TEST(TypeInfer, IfUnifiesBranchesTowardUnknownDims) {
  // Relay joins toward less precision: (?, 1) and (?, ?) give (?, ?).
  Expr a = var("a", tensor({kAnyDim, 1})), b = var("b", tensor({kAnyDim, kAnyDim}));
  Expr c = var("c", scalar(DType::Bool));
  EXPECT_EQ(infer(fn({c, a, b}, If::make(c, a, b))),
            "fn (bool, Tensor[(?, 1), float32], Tensor[(?, ?), float32]) -> Tensor[(?, ?), float32]");
  Expr d = var("d", tensor({3, 1}));
  EXPECT_EQ(infer(fn({c, a, d}, If::make(c, d, a))),
            "fn (bool, Tensor[(?, 1), float32], Tensor[(3, 1), float32]) -> Tensor[(?, 1), float32]");
  Expr e = var("e", tensor({3, 2}));
  EXPECT_EQ(
      user_error_of([&] {
        infer_type(fn({c, a, e}, If::make(c, e, a, at(2, 1))), {});
      }),
      "t.relay:2:1: type error: the branches of if have different types: expected Tensor[(3, 2), float32], "
      "found Tensor[(?, 1), float32]");
}

TEST(TypeInfer, FunctionReturnAnnotationWithUnknownDims) {
  Expr x = var("x", tensor({2, 3}));
  EXPECT_EQ(infer(fn({x}, x, tensor({kAnyDim, 3}))),
            "fn (Tensor[(2, 3), float32]) -> Tensor[(?, 3), float32]");
}

TEST(TypeInfer, UnannotatedParameterLearnsItsTypeFromAnOp) {
  // fn (%x, %w: Tensor[(4, 3)]) { nn.dense(%x, %w) }: nothing tells %x's type.
  Expr x = var("x", {}, at(1, 5)), w = var("w", tensor({4, 3}));
  EXPECT_EQ(user_error_of([&] {
              infer_type(fn({x, w}, op_call("nn.dense", {x, w})), {});
            }),
            "t.relay:1:5: type error: cannot infer the type of %x; add a type annotation");
  // let %f = fn (%p) { add(%p, 1f) }; %f(zeros(2, 2)): the call tells %p's type, then add's relation runs.
  Expr p = var("p"), f = var("f");
  Expr e = Let::make(f, fn({p}, op_call("add", {p, constant(1)})), call(f, {constant_of({2, 2})}));
  EXPECT_EQ(infer(e), "Tensor[(2, 2), float32]");
}

TEST(TypeInfer, OpCallsUseTheirRelations) {
  Expr x = var("x", tensor({2, 3})), w = var("w", tensor({4, 3}));
  EXPECT_EQ(infer(fn({x, w}, op_call("nn.dense", {x, w}))),
            "fn (Tensor[(2, 3), float32], Tensor[(4, 3), float32]) -> Tensor[(2, 4), float32]");
  Expr y = var("y", tensor({kAnyDim, 3}));
  EXPECT_EQ(infer(fn({y}, op_call("add", {y, constant_of({1, 3})}))),
            "fn (Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32]");
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

TEST(TypeInferErrors, WrongArity) {
  Module m;
  Expr x = var("x", scalar(DType::Float32));
  m.add_function("f", fn({x}, x));
  m.add_function("main", fn({}, call(global("f"), {constant(1), constant(2)}, at(7, 3))));
  EXPECT_EQ(user_error_of([&] { infer_types(m); }),
            "t.relay:7:3: type error: wrong number of arguments to @f: expected 1, found 2");
  EXPECT_EQ(user_error_of([&] { infer_type(op_call("add", {constant(1)}, {}, at(2, 2)), {}); }),
            "t.relay:2:2: type error: wrong number of arguments to add: expected 2, found 1");
}

TEST(TypeInferErrors, DtypeMismatch) {
  Expr x = var("x", scalar(DType::Float32));
  Expr e = call(fn({x}, x), {constant(1, DType::Int64, at(3, 14))});
  EXPECT_EQ(user_error_of([&] { infer_type(e, {}); }),
            "t.relay:3:14: type error: argument 1 of this function: expected float32, found int64");
}

TEST(TypeInferErrors, LetAnnotationMismatch) {
  Expr x = var("x", tensor({2}));
  Expr e = Let::make(x, constant_of({3}), x);
  // The value has no location: the let's is used, and it has none either.
  EXPECT_EQ(user_error_of([&] { infer_type(e, {}); }),
            "<unknown>: type error: the value bound to %x does not match its type annotation: expected "
            "Tensor[(2), float32], found Tensor[(3), float32]");
}

TEST(TypeInferErrors, ReturnAnnotationMismatch) {
  Expr x = var("x", tensor({2, 3}), at(1, 1));
  EXPECT_EQ(user_error_of([&] {
              infer_type(fn({x}, x, tensor({2, 3}, DType::Int32)), {});
            }),
            "t.relay:1:1: type error: the body of the function does not match its return type: expected "
            "Tensor[(2, 3), int32], found Tensor[(2, 3), float32]");
}

TEST(TypeInferErrors, NonBoolCondition) {
  Expr c = Constant::make(NDArray(DType::Bool, {1}), at(4, 5));
  EXPECT_EQ(user_error_of([&] { infer_type(If::make(c, constant(1), constant(2)), {}); }),
            "t.relay:4:5: type error: the condition of if must be a bool scalar: expected bool, found "
            "Tensor[(1), bool]");
  Expr i = constant(1, DType::Int32, at(4, 6));
  EXPECT_EQ(user_error_of([&] { infer_type(If::make(i, constant(1), constant(2)), {}); }),
            "t.relay:4:6: type error: the condition of if must be a bool scalar: expected bool, found int32");
}

TEST(TypeInferErrors, IfBranchesDiffer) {
  Expr e = If::make(constant(1, DType::Bool), constant_of({2}), constant_of({3}, DType::Float32), at(6, 1));
  EXPECT_EQ(
      user_error_of([&] { infer_type(e, {}); }),
      "t.relay:6:1: type error: the branches of if have different types: expected Tensor[(2), float32], "
      "found Tensor[(3), float32]");
}

TEST(TypeInferErrors, RankMismatch) {
  Expr x = var("x", tensor({kAnyDim}));
  Expr e = call(fn({x}, x), {Constant::make(NDArray(DType::Float32, {2, 2}), at(1, 8))});
  EXPECT_EQ(user_error_of([&] { infer_type(e, {}); }),
            "t.relay:1:8: type error: argument 1 of this function: expected Tensor[(?), float32], found "
            "Tensor[(2, 2), "
            "float32]");
}

TEST(TypeInferErrors, TupleIndexOutOfRange) {
  Expr e = TupleGetItem::make(Tuple::make({constant(1), constant(2)}), 2, at(2, 7));
  EXPECT_EQ(user_error_of([&] { infer_type(e, {}); }),
            "t.relay:2:7: type error: tuple index 2 is out of range for (float32, float32): expected an "
            "index below "
            "2, found 2");
  Expr not_tuple = TupleGetItem::make(constant(1), 0, at(2, 9));
  EXPECT_EQ(
      user_error_of([&] { infer_type(not_tuple, {}); }),
      "t.relay:2:9: type error: cannot take field 0 of a non-tuple: expected a tuple type, found float32");
}

TEST(TypeInferErrors, UnknownGlobal) {
  Module m;
  m.add_function("main", fn({}, call(global("nope", at(1, 22)), {})));
  EXPECT_EQ(user_error_of([&] { infer_types(m); }), "t.relay:1:22: type error: undefined global @nope");
}

TEST(TypeInferErrors, UnresolvedHole) {
  Module m;
  Expr x = var("x", {}, at(1, 10));
  m.add_function("main", fn({x}, Tuple::make({})));
  EXPECT_EQ(user_error_of([&] { infer_types(m); }),
            "t.relay:1:10: type error: cannot infer the type of %x; add a type annotation");
  // A global whose result is never determined.
  Module loop;
  Expr n = var("n", scalar(DType::Int32));
  loop.add_function("spin", fn({n}, call(global("spin"), {n}, at(3, 20))));
  EXPECT_EQ(user_error_of([&] { infer_types(loop); }),
            "t.relay:3:20: type error: cannot infer the type of the call to @spin; add a type annotation");
}

TEST(TypeInferErrors, OpRelationFailureCarriesTheCallLocation) {
  Expr x = var("x", tensor({2, 3})), w = var("w", tensor({4, 5}));
  std::string error = user_error_of([&] {
    infer_type(fn({x, w}, op_call("nn.dense", {x, w}, {}, at(9, 4))), {});
  });
  EXPECT_THAT(error, HasSubstr("t.relay:9:4: type error in nn.dense: "));
  EXPECT_THAT(error, HasSubstr("the weight's last dimension is 5 but the data's is 3"));
}

TEST(TypeInferErrors, UnknownOpAttribute) {
  Expr x = var("x", tensor({2, 3})), w = var("w", tensor({4, 3}));
  Attrs attrs = Attrs().with("foo", AttrValue::of_int(1));
  EXPECT_EQ(user_error_of([&] {
              infer_type(fn({x, w}, op_call("nn.dense", {x, w}, attrs, at(2, 3))), {});
            }),
            "t.relay:2:3: type error: nn.dense has no attribute 'foo'; it accepts units, out_dtype");
}

TEST(TypeInferErrors, CallingANonFunction) {
  Expr x = var("x", scalar(DType::Float32), at(1, 2));
  EXPECT_EQ(
      user_error_of([&] { infer_type(fn({x}, call(x, {})), {}); }),
      "t.relay:1:2: type error: %x is called but is not a function: expected a function type, found float32");
}

TEST(TypeInferErrors, ConstructorPatterns) {
  Module m;
  ListADT l;
  l.add_to(m);
  Expr x = var("x", scalar(DType::Float32));
  Expr e = fn({x}, Match::make(x, {{PatternNode::constructor_of(l.nil, {}, at(3, 4)), x}}));
  EXPECT_EQ(user_error_of([&] { infer_type(e, m); }),
            "t.relay:3:4: type error: the pattern Nil does not match the type of the matched value: expected "
            "float32, found List[_]");
  Expr h = var("h", scalar(DType::Int32));
  Expr lv = var("l", l.of(scalar(DType::Float32)));
  Expr annotated =
      fn({lv}, Match::make(lv, {{PatternNode::constructor_of(
                                     l.cons, {PatternNode::variable(h, at(3, 10)), PatternNode::wildcard()}),
                                 constant(0)}}));
  EXPECT_EQ(user_error_of([&] { infer_type(annotated, m); }),
            "t.relay:3:10: type error: the pattern variable %h does not match its type annotation: expected "
            "float32, found int32");
  Module empty;
  EXPECT_EQ(user_error_of([&] {
              infer_type(call(Constructor::make("Cons", {}, GlobalTypeVar::make("List"), 0, at(1, 1)), {}),
                         empty);
            }),
            "t.relay:1:1: type error: constructor Cons belongs to an undefined type List");
}

TEST(TypeInferErrors, MatchClausesDiffer) {
  Expr e = Match::make(constant(1), {{PatternNode::wildcard(), constant(1)},
                                     {PatternNode::wildcard(), constant(1, DType::Int32, at(8, 2))}});
  EXPECT_EQ(
      user_error_of([&] { infer_type(e, {}); }),
      "t.relay:8:2: type error: the clauses of match have different types: expected float32, found int32");
}

TEST(TypeInferErrors, DeferredResultsMeetTheirUses) {
  // let %f = fn (%p) { let %y: Tensor[(3)] = add(%p, %p); %y }; %f(zeros(2)): add's relation runs
  // after %y's annotation has fixed its result.
  Expr p = var("p"), y = var("y", tensor({3})), f = var("f");
  Expr e = Let::make(f, fn({p}, Let::make(y, op_call("add", {p, p}, {}, at(2, 30)), y)),
                     call(f, {constant_of({2})}));
  EXPECT_EQ(
      user_error_of([&] { infer_type(e, {}); }),
      "t.relay:2:30: type error: the result of add does not match its use: expected Tensor[(3), float32], "
      "found Tensor[(2), float32]");
  // The same for a projection of a tuple whose type comes later.
  Expr t = var("t"), z = var("z", scalar(DType::Int32));
  Expr g = Let::make(f, fn({t}, Let::make(z, TupleGetItem::make(t, 0, at(4, 8)), z)),
                     call(f, {Tuple::make({constant(1)})}));
  EXPECT_EQ(
      user_error_of([&] { infer_type(g, {}); }),
      "t.relay:4:8: type error: field 0 of the tuple does not match its use: expected int32, found float32");
}

TEST(TypeInferErrors, AttributeOfAnOpWithoutAttributes) {
  Attrs attrs = Attrs().with("axis", AttrValue::of_int(1));
  EXPECT_EQ(user_error_of([&] {
              infer_type(op_call("add", {constant(1), constant(2)}, attrs, at(1, 1)), {});
            }),
            "t.relay:1:1: type error: add has no attribute 'axis'; it accepts no attributes");
}

TEST(TypeInferErrors, TypeArgumentsOfAMonomorphicFunction) {
  Module m;
  Expr x = var("x", scalar(DType::Float32));
  m.add_function("f", fn({x}, x));
  Expr e = Call::make(global("f"), {constant(1)}, {}, {scalar(DType::Float32)}, at(2, 2));
  EXPECT_EQ(user_error_of([&] { infer_type(e, m); }),
            "t.relay:2:2: type error: wrong number of type arguments to @f: expected 0, found 1");
}

TEST(TypeInferErrors, RefWriteToANonReference) {
  Expr e = RefWrite::make(constant(1, DType::Float32, at(5, 11)), constant(2));
  EXPECT_EQ(
      user_error_of([&] { infer_type(e, {}); }),
      "t.relay:5:11: type error: the first argument of ref_write must be a reference: expected ref(_), found "
      "float32");
}

TEST(TypeInferErrors, OpUsedAsAValue) {
  EXPECT_EQ(user_error_of([&] { infer_type(Tuple::make({Op::make("add", at(1, 3))}), {}); }),
            "t.relay:1:3: type error: the operator add can only be called, not used as a value");
}

TEST(TypeInferErrors, InfiniteType) {
  // fn (%f) { %f(%f) }
  Expr f = var("f", {}, at(1, 5));
  std::string error = user_error_of([&] { infer_type(fn({f}, call(f, {f})), {}); });
  EXPECT_THAT(error, HasSubstr("type error: argument 1 of %f: expected"));
}

// ---------------------------------------------------------------------------------------------
// Programs in the text format
// ---------------------------------------------------------------------------------------------

// The type of @main after inferring the program `text` (with the version header added). A program
// that types runs on the VM and the interpreter too, which must agree (tests/relay/Differential.h).
std::string main_type(const std::string &text) {
  Module m = parse_module("#[version = \"0.0.5\"]\n" + text, "t.relay");
  infer_types(m);
  testing::Check vm = testing::check_on_both(m, "main", 1, testing::VMKernels::Interpreter);
  EXPECT_NE(vm.result, testing::Check::Differ) << vm.detail;
  return to_string((*m.find_function("main"))->checked_type);
}

TEST(TypeInferText, ProgramWithPolymorphismADTsRefsAndOps) {
  Module m = parse_module(R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @length[A](%l: List[A]) -> int32 {
  match (%l) {
    Cons(_, %t) => add(1, @length(%t)),
    Nil => 0,
  }
}
def @id[A](%x: A) -> A { %x }
def @main(%x: Tensor[(?, 4), float32], %w: Tensor[(8, 4), float32]) {
  let %f = fn [B](%y: B) -> B { %y };
  let %r = ref(0f);
  %0 = nn.dense(%x, %w, units=8);
  %1 = add(%0, 1f);
  (%1, @length(Cons(1f, Nil)), %f(%1), @id(2), ref_read(%r), if (less(0, 1)) { 1f } else { 2f }, (%0, %1).1)
}
)",
                          "t.relay");
  infer_types(m);
  EXPECT_EQ(to_string((*m.find_function("main"))->checked_type),
            "fn (Tensor[(?, 4), float32], Tensor[(8, 4), float32]) -> (Tensor[(?, 8), float32], int32, "
            "Tensor[(?, 8), float32], int32, float32, float32, Tensor[(?, 8), float32])");
  EXPECT_EQ(to_string((*m.find_function("length"))->checked_type), "fn [A](List[A]) -> int32");
}

TEST(TypeInferText, LetPolymorphismAndTypeArgumentInference) {
  // TVM's test_let_polymorphism and test_type_arg_infer.
  EXPECT_EQ(main_type("def @main() {\n  let %id = fn [T](%x: T) -> T { %x };\n  (%id(1), %id(()))\n}\n"),
            "fn () -> (int32, ())");
  EXPECT_EQ(main_type("def @id[A](%x: A) -> A { %x }\n"
                      "def @main(%y: Tensor[(2, ?), int8]) { (@id(%y), @id(1f)) }\n"),
            "fn (Tensor[(2, ?), int8]) -> (Tensor[(2, ?), int8], float32)");
}

TEST(TypeInferText, UnknownDimsJoinAcrossBranches) {
  EXPECT_EQ(main_type("def @main(%x: Tensor[(?, 1), uint16], %y: Tensor[(?, ?), uint16], %c: bool) {\n"
                      "  if (%c) { %x } else { %y }\n}\n"),
            "fn (Tensor[(?, 1), uint16], Tensor[(?, ?), uint16], bool) -> Tensor[(?, ?), uint16]");
}

TEST(TypeInferText, AGlobalReturningItselfIsAnInfiniteTypeError) {
  // Found by fuzz_relay: these were internal errors.
  auto error = [](const std::string &text) { return user_error_of([&] { main_type(text); }); };
  for (const char *text : {"def @main() {\n  @main\n}\n", "def @main() {\n  (@main())()()\n}\n"})
    EXPECT_THAT(error(text),
                HasSubstr("type error: @main would return a value of its own type, which is infinite"))
        << text;
}

TEST(TypeInferText, AnUntypedWeightIsInferredFromTheOpsAttributes) {
  // TVM's Conv2DRel and DenseRel assign the weight's type: OIHW from channels, kernel_size, groups
  // and the data's channels; [units, in] from units.
  EXPECT_EQ(
      main_type("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {\n"
                "  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3])\n}\n"),
      "fn (Tensor[(1, 3, 8, 8), float32], Tensor[(4, 3, 3, 3), float32]) -> Tensor[(1, 4, 6, 6), float32]");
  EXPECT_EQ(
      main_type("def @main(%x: Tensor[(2, 6, 5, 5), float64], %w) {\n"
                "  nn.conv2d(%x, %w, padding=[1, 1], groups=3, channels=9, kernel_size=[3, 1])\n}\n"),
      "fn (Tensor[(2, 6, 5, 5), float64], Tensor[(9, 2, 3, 1), float64]) -> Tensor[(2, 9, 5, 7), float64]");
  EXPECT_EQ(main_type("def @main(%x: Tensor[(2, 5), float32], %w) {\n  nn.dense(%x, %w, units=7)\n}\n"),
            "fn (Tensor[(2, 5), float32], Tensor[(7, 5), float32]) -> Tensor[(2, 7), float32]");
  // TVM's BiasAddRel likewise types the bias: [the data's size along axis].
  EXPECT_EQ(main_type("def @main(%x: Tensor[(2, 5), float32], %b) {\n  nn.bias_add(%x, %b, axis=-1)\n}\n"),
            "fn (Tensor[(2, 5), float32], Tensor[(5), float32]) -> Tensor[(2, 5), float32]");
  // The data's type is learnt after the call is seen: the weight's follows.
  EXPECT_EQ(main_type("def @main(%a: Tensor[(3, 4), float32], %w) {\n"
                      "  let %f = fn (%x) { nn.dense(%x, %w, units=2) };\n  %f(%a)\n}\n"),
            "fn (Tensor[(3, 4), float32], Tensor[(2, 4), float32]) -> Tensor[(3, 2), float32]");
  // An unknown channel count stays unknown in the weight.
  Module m = parse_module(
      "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, ?, 8, 8), float32], %w) {\n"
      "  nn.conv2d(%x, %w, channels=4, kernel_size=3)\n}\n",
      "t.relay");
  infer_types(m);
  EXPECT_EQ(
      to_string((*m.find_function("main"))->checked_type),
      "fn (Tensor[(1, ?, 8, 8), float32], Tensor[(4, ?, 3, 3), float32]) -> Tensor[(1, 4, 6, 6), float32]");
}

TEST(TypeInferText, AnUntypedWeightWithoutTheAttributesSaysWhatIsMissing) {
  auto error = [](const std::string &text) { return user_error_of([&] { main_type(text); }); };
  EXPECT_EQ(
      error("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {\n  nn.conv2d(%x, %w)\n}\n"),
      "t.relay:3:3: type error in nn.conv2d: cannot infer the weight's type without channels and "
      "kernel_size (the weight is OIHW: [channels, in_channels / groups, kernel_size]): give channels and "
      "kernel_size or annotate the weight");
  EXPECT_THAT(
      error("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {\n  nn.conv2d(%x, %w, channels=2)\n}\n"),
      HasSubstr("t.relay:3:3: type error in nn.conv2d: cannot infer the weight's type without kernel_size "));
  EXPECT_EQ(
      error("def @main(%x: Tensor[(2, 5), float32], %w) {\n  %0 = nn.dense(%x, %w);\n  %0\n}\n"),
      "t.relay:3:8: type error in nn.dense: cannot infer the weight's type without units (the weight is "
      "[units, in]): give units=N or annotate the weight");
  EXPECT_THAT(
      error("def @main(%x: Tensor[(1, 4, 8, 8), float32], %w) {\n"
            "  nn.conv2d(%x, %w, groups=3, channels=3, kernel_size=3)\n}\n"),
      HasSubstr("t.relay:3:3: type error in nn.conv2d: the data (1, 4, 8, 8) has 4 input channels, which "
                "do not divide into groups=3"));
  EXPECT_THAT(error("def @main(%x: Tensor[(1, 4, 8, 8), float32], %w) {\n"
                    "  nn.conv2d(%x, %w, channels=3, kernel_size=3, data_layout=\"NHWC\")\n}\n"),
              HasSubstr("grove supports data_layout NCHW only"));
  // A weight typed elsewhere needs no attributes; one typed both ways must agree.
  EXPECT_EQ(main_type("def @main(%x: Tensor[(2, 5), float32], %w) {\n"
                      "  let %v: Tensor[(3, 5), float32] = %w;\n  nn.dense(%x, %w)\n}\n"),
            "fn (Tensor[(2, 5), float32], Tensor[(3, 5), float32]) -> Tensor[(2, 3), float32]");
  EXPECT_THAT(error("def @main(%x: Tensor[(2, 5), float32], %w) {\n"
                    "  %0 = nn.dense(%x, %w, units=4);\n  let %v: Tensor[(3, 5), float32] = %w;\n  %0\n}\n"),
              HasSubstr("t.relay:3:8: type error in nn.dense: units=4 but the weight (3, 5) has 3 rows"));
}

TEST(TypeInferText, ErrorsPointAtTheSource) {
  auto error = [](const std::string &text) { return user_error_of([&] { main_type(text); }); };
  EXPECT_EQ(
      error("def @main(%c: bool, %a: Tensor[(2), float32], %b: Tensor[(3), float32]) {\n"
            "  if (%c) { %a } else { %b }\n}\n"),
      "t.relay:3:3: type error: the branches of if have different types: expected Tensor[(2), float32], "
      "found Tensor[(3), float32]");
  EXPECT_THAT(
      error("def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 5), float32]) {\n"
            "  %0 = nn.dense(%x, %w);\n  nn.relu(%0)\n}\n"),
      HasSubstr("t.relay:3:8: type error in nn.dense: the weight's last dimension is 5 but the data's is 3"));
  EXPECT_EQ(error("def @f(%x: float32) { %x }\ndef @main() {\n  @f(1f, 2f)\n}\n"),
            "t.relay:4:3: type error: wrong number of arguments to @f: expected 1, found 2");
  EXPECT_EQ(
      error("def @main(%x: int32) {\n  let %y: float32 = %x;\n  %y\n}\n"),
      "t.relay:3:3: type error: the value bound to %y does not match its type annotation: expected float32, "
      "found int32");
  EXPECT_EQ(error("def @main(%x) {\n  %x\n}\n"),
            "t.relay:2:11: type error: cannot infer the type of %x; add a type annotation");
  EXPECT_EQ(error("def @main(%x: int32) {\n  if (%x) { 1 } else { 2 }\n}\n"),
            "t.relay:3:3: type error: the condition of if must be a bool scalar: expected bool, found int32");
}

// ---------------------------------------------------------------------------------------------
// Deep programs
// ---------------------------------------------------------------------------------------------

// A chain of `n` lets, inferred; returns the seconds inference took and the types of the whole and
// of the middle variable.
//   direct:   fn (%x0: Tensor[(?, 8)]) { let %x1 = add(%x0, %x0); let %x2 = %x1; ...; %xn }
//             (op calls alternate with plain copies, no annotation after %x0);
//   deferred: let %f = fn (%x0) { let %x1 = add(%x0, %x0); let %x2 = add(%x1, %x1); ...; %xn };
//             %f(zeros(4)): every relation waits until the call tells %x0's type, then each wakes the
//             next one.
struct ChainResult {
  std::string type, middle;
};
ChainResult infer_let_chain(int n, bool deferred) {
  std::vector<Expr> vars{deferred ? var("x0") : var("x0", tensor({kAnyDim, 8}))};
  for (int i = 1; i <= n; ++i) vars.push_back(var("x" + std::to_string(i)));
  Expr body = vars.back();
  for (int i = n; i >= 1; --i) {
    Expr value = deferred || i % 2 ? op_call("add", {vars[i - 1], vars[i - 1]}) : vars[i - 1];
    body = Let::make(vars[i], value, body);
  }
  Expr e = fn({vars[0]}, body);
  if (deferred) {
    Expr f = var("f");
    e = Let::make(f, e, call(f, {constant_of({4})}));
  }
  std::string type = infer(e);
  return {type, to_string(vars[n / 2]->checked_type)};
}

TEST(TypeInfer, HundredThousandLetChain) {
  ChainResult big = infer_let_chain(100000, false);
  EXPECT_EQ(big.type, "fn (Tensor[(?, 8), float32]) -> Tensor[(?, 8), float32]");
  EXPECT_EQ(big.middle, "Tensor[(?, 8), float32]");
}

TEST(TypeInfer, HundredThousandDeferredRelationsWakeInTurn) {
  ChainResult big = infer_let_chain(100000, true);
  EXPECT_EQ(big.type, "Tensor[(4), float32]");
  EXPECT_EQ(big.middle, "Tensor[(4), float32]");
}

TEST(TypeInfer, HundredThousandNestedCallsInGraphForm) {
  // %0 = add(%x, %x); %1 = add(%0, %0); ...: one expression 100,000 calls deep.
  Expr x = var("x", tensor({3}));
  Expr e = x;
  for (int i = 0; i < 100000; ++i) e = op_call("add", {e, e});
  EXPECT_EQ(infer(fn({x}, e)), "fn (Tensor[(3), float32]) -> Tensor[(3), float32]");
}

}  // namespace
}  // namespace grove::relay
