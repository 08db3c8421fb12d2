// The reference interpreter: values, closures, recursion, ADTs, refs, graph-form sharing, op calls,
// argument and run-time shape checks, and 100,000-deep programs that must not use the C stack.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "tests/UserError.h"
#include "tests/relay/Differential.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

Span loc(int line, int col) { return Span{std::make_shared<const std::string>("t.relay"), line, col}; }

Expr f32(float v) { return Constant::make(NDArray::scalar(DType::Float32, v)); }
Expr i32(int v) { return Constant::make(NDArray::scalar(DType::Int32, v)); }
Expr i64(int64_t v) { return Constant::make(NDArray::scalar(DType::Int64, static_cast<double>(v))); }
Expr boolean(bool v) { return Constant::make(NDArray::scalar(DType::Bool, v ? 1 : 0)); }
Expr var(const std::string &name, Type type = {}) { return Var::make(name, std::move(type)); }
Expr op(const std::string &name, std::vector<Expr> args, Span span = {}) {
  return Call::make(Op::make(name), std::move(args), {}, {}, std::move(span));
}
Expr call(Expr f, std::vector<Expr> args) { return Call::make(std::move(f), std::move(args)); }
Expr fn(std::vector<Expr> params, Expr body) { return Function::make(std::move(params), std::move(body)); }
Expr let(Expr v, Expr value, Expr body) { return Let::make(std::move(v), std::move(value), std::move(body)); }
Type tensor(Shape shape, DType dtype = DType::Float32) { return TensorType::make(std::move(shape), dtype); }
Type scalar(DType dtype) { return TensorType::scalar(dtype); }

double as_double(const Value &v) { return tensor_of(v).element_as_double(0); }
int64_t as_int(const Value &v) { return tensor_of(v).element_as_int(0); }

NDArray filled(Shape shape, float start = 0) {
  NDArray a(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = start + static_cast<float>(i);
  return a;
}

// A module with `type List[A] { Cons(A, List[A]), Nil }` and `type Nat { Z, S(Nat) }` (Peano
// numbers, for recursion without ops).
class RelayInterpreter : public ::testing::Test {
 protected:
  RelayInterpreter() {
    Type list = GlobalTypeVar::make("List");
    Type a = TypeVar::make("A");
    cons = Constructor::make("Cons", {a, TypeCall::make(list, {a})}, list, 0);
    nil = Constructor::make("Nil", {}, list, 1);
    module.add_type(TypeData{list, {a}, {cons, nil}, {}});
    Type nat = GlobalTypeVar::make("Nat");
    zero = Constructor::make("Z", {}, nat, 0);
    succ = Constructor::make("S", {TypeCall::make(nat, {})}, nat, 1);
    module.add_type(TypeData{nat, {}, {zero, succ}, {}});
    list_of_f32 = TypeCall::make(list, {scalar(DType::Float32)});
    list_of_i32 = TypeCall::make(list, {scalar(DType::Int32)});
    nat_type = TypeCall::make(nat, {});
  }

  // Types the module, then evaluates `e` (typed in the module's context) in it — and on the VM,
  // which must agree (tests/relay/Differential.h).
  Value eval(const Expr &e) {
    infer_types(module);
    infer_type(e, module);
    testing::BothEvaluated both = testing::evaluate_on_both(module, e);
    EXPECT_NE(both.vm.result, testing::Check::Differ) << both.vm.detail;
    if (both.error) std::rethrow_exception(both.error);
    return both.value;
  }

  // The Nat n, built here (iteratively).
  Value nat_value(int n) {
    Value v = adt_value(zero, {});
    for (int i = 0; i < n; ++i) v = adt_value(succ, {v});
    return v;
  }
  // n for the Nat n (iteratively).
  static int nat_count(Value v) {
    int n = 0;
    while (!v->as<ADTValue>()->fields.empty()) {
      v = v->as<ADTValue>()->fields[0];
      ++n;
    }
    return n;
  }
  // [first, first+1, ..., first+n-1] as a List of int32 scalars.
  Value int_list(int n, int first = 0) {
    Value v = adt_value(nil, {});
    for (int i = n - 1; i >= 0; --i)
      v = adt_value(cons, {tensor_value(NDArray::scalar(DType::Int32, first + i)), v});
    return v;
  }

  Module module;
  Expr cons, nil, zero, succ;
  Type list_of_f32, list_of_i32, nat_type;
};

TEST_F(RelayInterpreter, ConstantsTuplesAndProjection) {
  Value v = eval(TupleGetItem::make(Tuple::make({f32(1), Tuple::make({f32(2), i32(3)})}), 1));
  EXPECT_EQ(value_to_string(v), "(2f, 3)");
  EXPECT_EQ(value_to_string(eval(Tuple::make({}))), "()");
}

TEST_F(RelayInterpreter, IfRunsOnlyTheChosenBranch) {
  // The other branch writes to a ref; the ref must keep its value.
  Expr r = var("r");
  Expr body = If::make(boolean(false), RefWrite::make(r, f32(5)), Tuple::make({}));
  Value v = eval(let(r, RefCreate::make(f32(1)), let(var("u"), body, RefRead::make(r))));
  EXPECT_EQ(as_double(v), 1.0);
}

TEST_F(RelayInterpreter, ConstructorsBuildValuesAndPrint) {
  Value v = eval(call(cons, {f32(1), call(cons, {f32(2.5), call(nil, {})})}));
  EXPECT_EQ(value_to_string(v), "Cons(1f, Cons(2.5f, Nil))");
  ASSERT_NE(v->as<ADTValue>(), nullptr);
  EXPECT_EQ(v->as<ADTValue>()->tag, 0);
}

TEST_F(RelayInterpreter, ClosuresCaptureTheirFreeVariables) {
  // let %x = 1f; let %f = fn (%y) { (%x, %y) }; let %x2 = 7f; (%f(2f), %f(%x2))
  Expr x = var("x"), y = var("y"), f = var("f"), x2 = var("x2");
  Expr prog = let(
      x, f32(1),
      let(f, fn({y}, Tuple::make({x, y})), let(x2, f32(7), Tuple::make({call(f, {f32(2)}), call(f, {x2})}))));
  EXPECT_EQ(value_to_string(eval(prog)), "((1f, 2f), (1f, 7f))");
}

TEST_F(RelayInterpreter, ClosuresOutliveTheirScope) {
  // A curried function returns a closure that still sees the outer argument.
  Expr a = var("a", scalar(DType::Float32)), b = var("b", scalar(DType::Float32)), add = var("add");
  Expr prog = let(add, fn({a}, fn({b}, op("add", {a, b}))), call(call(add, {f32(3)}), {f32(4)}));
  EXPECT_EQ(as_double(eval(prog)), 7.0);
}

TEST_F(RelayInterpreter, LetBoundClosureRecurses) {
  // let %len = fn (%l) { match (%l) { Cons(_, %t) => S(%len(%t)), Nil => Z } }; %len([0..4])
  Expr l = var("l", list_of_i32), t = var("t"), len = var("len");
  Expr body =
      Match::make(l, {{PatternNode::constructor_of(cons, {PatternNode::wildcard(), PatternNode::variable(t)}),
                       call(succ, {call(len, {t})})},
                      {PatternNode::constructor_of(nil, {}), call(zero, {})}});
  Expr list = call(cons, {i32(0), call(cons, {i32(1), call(cons, {i32(2), call(nil, {})})})});
  Value v = eval(let(len, fn({l}, body), call(len, {list})));
  EXPECT_EQ(value_to_string(v), "S(S(S(Z)))");
}

TEST_F(RelayInterpreter, MutuallyRecursiveGlobals) {
  // @even(%n) = match %n { S(%m) => @odd(%m), Z => True }; @odd(%n) = match %n { S(%m) => @even(%m), Z =>
  // False }
  auto parity = [&](const std::string &other, bool at_zero) {
    Expr n = var("n", nat_type), m = var("m");
    return fn({n}, Match::make(n, {{PatternNode::constructor_of(succ, {PatternNode::variable(m)}),
                                    call(GlobalVar::make(other), {m})},
                                   {PatternNode::constructor_of(zero, {}), boolean(at_zero)}}));
  };
  module.add_function("even", parity("odd", true));
  module.add_function("odd", parity("even", false));
  infer_types(module);
  EXPECT_EQ(as_int(apply(module, global_function(module, "even"), {nat_value(7)})), 0);
  EXPECT_EQ(as_int(apply(module, global_function(module, "odd"), {nat_value(7)})), 1);
  // 100,001 alternating calls, all in tail position.
  EXPECT_EQ(as_int(apply(module, global_function(module, "even"), {nat_value(100001)})), 0);
}

TEST_F(RelayInterpreter, MatchTakesTheFirstMatchingClauseAndBindsNestedPatterns) {
  // match ((1f, Cons(2f, Nil))) { (_, Nil) => 0f, (%a, Cons(%b, _)) => add(%a, %b), _ => 9f }
  Expr a = var("a"), b = var("b");
  Expr data = Tuple::make({f32(1), call(cons, {f32(2), call(nil, {})})});
  Expr m = Match::make(
      data, {{PatternNode::tuple({PatternNode::wildcard(), PatternNode::constructor_of(nil, {})}), f32(0)},
             {PatternNode::tuple(
                  {PatternNode::variable(a),
                   PatternNode::constructor_of(cons, {PatternNode::variable(b), PatternNode::wildcard()})}),
              op("add", {a, b})},
             {PatternNode::wildcard(), f32(9)}});
  EXPECT_EQ(as_double(eval(m)), 3.0);
}

TEST_F(RelayInterpreter, IncompleteMatchWithoutAMatchingClauseIsAUserError) {
  // match? (Cons(1f, Nil)) { Nil => 0f }
  Expr m = Match::make(call(cons, {f32(1), call(nil, {})}), {{PatternNode::constructor_of(nil, {}), f32(0)}},
                       /*complete=*/false, loc(3, 5));
  EXPECT_EQ(user_error_of([&] { eval(m); }), "no clause of the match at t.relay:3:5 matches Cons(1f, Nil)");
}

TEST_F(RelayInterpreter, RefsAreSharedMutableCells) {
  // let %r = ref(0f); let %s = %r; ref_write(%s, 5f); (ref_read(%r), ref_write(%r, 6f), ref_read(%s))
  Expr r = var("r"), s = var("s");
  Expr prog = let(r, RefCreate::make(f32(0)),
                  let(s, r,
                      let(var("u"), RefWrite::make(s, f32(5)),
                          Tuple::make({RefRead::make(r), RefWrite::make(r, f32(6)), RefRead::make(s)}))));
  EXPECT_EQ(value_to_string(eval(prog)), "(5f, (), 6f)");
}

TEST_F(RelayInterpreter, RefCounterIncrementedInALoop) {
  // let %r = ref(0); let %loop = fn (%n: Nat) { match (%n) { S(%m) => ref_write(%r, add(ref_read(%r), 1));
  // %loop(%m), Z => ref_read(%r) } }; %loop(N) — a tail-recursive loop of 100,000 iterations.
  Expr r = var("r"), loop = var("loop"), n = var("n", nat_type), m = var("m"), count = var("count", nat_type);
  Expr step = let(var("u"), RefWrite::make(r, op("add", {RefRead::make(r), i32(1)})), call(loop, {m}));
  Expr body = Match::make(n, {{PatternNode::constructor_of(succ, {PatternNode::variable(m)}), step},
                              {PatternNode::constructor_of(zero, {}), RefRead::make(r)}});
  module.add_function(
      "main", fn({count}, let(r, RefCreate::make(i32(0)), let(loop, fn({n}, body), call(loop, {count})))));
  infer_types(module);
  EXPECT_EQ(as_int(run_main(module, {nat_value(10)})), 10);
  EXPECT_EQ(as_int(run_main(module, {nat_value(100000)})), 100000);
}

TEST_F(RelayInterpreter, SharedNodeIsEvaluatedOncePerFrame) {
  // %inc = ref_write(%r, add(ref_read(%r), 1f)) appears twice in a tuple (graph form): it runs once.
  Expr r = var("r");
  Expr inc = RefWrite::make(r, op("add", {RefRead::make(r), f32(1)}));
  Value v = eval(let(r, RefCreate::make(f32(0)), let(var("u"), Tuple::make({inc, inc}), RefRead::make(r))));
  EXPECT_EQ(as_double(v), 1.0);

  // Inside a function body the shared node runs once per call: two calls, two increments.
  Expr r2 = var("r2"), g = var("g");
  Expr inc2 = RefWrite::make(r2, op("add", {RefRead::make(r2), f32(1)}));
  Expr prog = let(r2, RefCreate::make(f32(0)),
                  let(g, fn({}, Tuple::make({inc2, inc2})),
                      let(var("u1"), call(g, {}), let(var("u2"), call(g, {}), RefRead::make(r2)))));
  EXPECT_EQ(as_double(eval(prog)), 2.0);
}

TEST_F(RelayInterpreter, OpCallsComputeThroughTheOpTable) {
  Expr x = var("x", tensor({2, 3})), y = var("y", tensor({3}));
  module.add_function("main", fn({x, y}, op("multiply", {op("add", {x, y}), f32(2)})));
  infer_types(module);
  Value v = run_main(module, {tensor_value(filled({2, 3})), tensor_value(filled({3}, 10))});
  const NDArray &out = tensor_of(v);
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  // (x + y) * 2 by hand: x = 0..5 row-major, y = 10, 11, 12.
  const float expected[] = {20, 24, 28, 26, 30, 34};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out.data<float>()[i], expected[i]) << i;
}

TEST_F(RelayInterpreter, KernelErrorsNameTheOpAndTheCallsLocation) {
  Expr x = var("x", tensor({kAnyDim, 4})), y = var("y", tensor({kAnyDim, 4}));
  module.add_function("main", fn({x, y}, op("add", {x, y}, loc(2, 3))));
  infer_types(module);
  std::string message = user_error_of([&] {
    run_main(module, {tensor_value(filled({3, 4})), tensor_value(filled({5, 4}))});
  });
  EXPECT_THAT(message, HasSubstr("t.relay:2:3: error in add: cannot broadcast (3, 4) and (5, 4)"));
}

TEST_F(RelayInterpreter, UnknownDimensionMeetingAKnownOneIsCheckedAtRunTime) {
  // add(%x: Tensor[(?), float32], %y: Tensor[(3), float32]) has the type Tensor[(3), float32]; an x of
  // size 1 broadcasts, one of size 5 is a run-time error at the call.
  Expr x = var("x", tensor({kAnyDim})), y = var("y", tensor({3}));
  Expr sum = op("add", {x, y}, loc(4, 7));
  module.add_function("main", fn({x, y}, sum));
  infer_types(module);
  ASSERT_EQ(to_string(sum.type()), "Tensor[(3), float32]");
  EXPECT_EQ(tensor_of(run_main(module, {tensor_value(filled({1})), tensor_value(filled({3}))})).shape(),
            (Shape{3}));
  EXPECT_THAT(user_error_of([&] {
                run_main(module, {tensor_value(filled({5})), tensor_value(filled({3}))});
              }),
              HasSubstr("t.relay:4:7: error in add: cannot broadcast (5,) and (3,)"));
}

TEST_F(RelayInterpreter, ResultOfAnOpIsCheckedAgainstItsType) {
  // negative(%x: Tensor[(?), float32]) typed as if inference had concluded Tensor[(3), float32] (the
  // kernels check their own `?`s, so only a relation/kernel disagreement reaches this check).
  Expr x = var("x", tensor({kAnyDim}));
  Expr neg = op("negative", {x}, loc(4, 7));
  module.add_function("main", fn({x}, neg));
  infer_types(module);
  neg->checked_type = tensor({3});
  EXPECT_EQ(tensor_of(run_main(module, {tensor_value(filled({3}))})).shape(), (Shape{3}));
  std::string message = user_error_of([&] { run_main(module, {tensor_value(filled({5}))}); });
  EXPECT_EQ(
      message,
      "t.relay:4:7: error in negative: the result has shape (5,) and dtype float32, but the call's type is "
      "Tensor[(3), float32]");
}

TEST_F(RelayInterpreter, RunMainChecksItsArguments) {
  Expr x = var("x", tensor({kAnyDim, 4})), y = var("y", scalar(DType::Int32));
  module.add_function("main", fn({x, y}, x));
  infer_types(module);
  Value ok = tensor_value(filled({7, 4}));
  Value y_ok = tensor_value(NDArray::scalar(DType::Int32, 1));
  EXPECT_EQ(run_main(module, {ok, y_ok}).get(), ok.get());  // `?` accepts any size
  EXPECT_THAT(user_error_of([&] { run_main(module, {ok}); }),
              HasSubstr("@main takes 2 arguments, but 1 was given"));
  EXPECT_EQ(user_error_of([&] {
              run_main(module, {tensor_value(filled({7, 5})), y_ok});
            }),
            "argument %x of @main: expected Tensor[(?, 4), float32], found a tensor of shape (7, 5) and "
            "dtype float32");
  EXPECT_THAT(user_error_of([&] {
                run_main(module, {tensor_value(filled({4})), y_ok});
              }),
              HasSubstr("found a tensor of shape (4,) and dtype float32"));
  EXPECT_THAT(
      user_error_of([&] {
        run_main(module, {ok, tensor_value(NDArray::scalar(DType::Float32, 1))});
      }),
      HasSubstr("argument %y of @main: expected int32, found a tensor of shape () and dtype float32"));
  EXPECT_THAT(user_error_of([&] {
                run_main(module, {tuple_value({}), y_ok});
              }),
              HasSubstr("argument %x of @main: expected Tensor[(?, 4), float32], found a tuple of 0 fields"));
}

TEST_F(RelayInterpreter, RunMainWithoutMainIsAUserError) {
  EXPECT_EQ(user_error_of([&] { run_main(module, {}); }), "the module has no @main function");
}

TEST_F(RelayInterpreter, PrimitiveFunctionsAreJustFunctions) {
  Expr a = var("a", scalar(DType::Float32)), b = var("b", scalar(DType::Float32));
  Expr fused = Function::make({a, b}, op("multiply", {op("add", {a, b}), b}), {}, {},
                              Attrs().with(attr::kPrimitive, AttrValue::of_int(1)));
  EXPECT_EQ(as_double(eval(call(fused, {f32(2), f32(3)}))), 15.0);
}

TEST_F(RelayInterpreter, TupleResultsOfOpsAndTupleArguments) {
  // split(concatenate((%x, %x)), 2): a tuple argument flattened for the kernel, a tuple result.
  Expr x = var("x", tensor({3}));
  Expr cat =
      Call::make(Op::make("concatenate"), {Tuple::make({x, x})}, Attrs().with("axis", AttrValue::of_int(0)));
  Expr split = Call::make(
      Op::make("split"), {cat},
      Attrs().with("indices_or_sections", AttrValue::of_int(2)).with("axis", AttrValue::of_int(0)));
  module.add_function("main", fn({x}, TupleGetItem::make(split, 1)));
  infer_types(module);
  Value v = run_main(module, {tensor_value(filled({3}, 1))});
  const NDArray &out = tensor_of(v);
  ASSERT_EQ(out.shape(), (Shape{3}));
  EXPECT_FLOAT_EQ(out.data<float>()[0], 1);
  EXPECT_FLOAT_EQ(out.data<float>()[2], 3);
}

TEST_F(RelayInterpreter, ConstructorsAreFirstClassFunctions) {
  // let %c = Cons; %c(1f, Nil)
  Expr c = var("c");
  EXPECT_EQ(value_to_string(eval(let(c, cons, call(c, {f32(1), call(nil, {})})))), "Cons(1f, Nil)");
}

TEST_F(RelayInterpreter, ApplyCallsClosuresFromEvaluate) {
  Expr x = var("x", scalar(DType::Float32));
  Value f = eval(fn({x}, op("add", {x, x})));
  EXPECT_EQ(as_double(apply(module, f, {tensor_value(NDArray::scalar(DType::Float32, 4))})), 8.0);
  EXPECT_THAT(user_error_of([&] { apply(module, f, {}); }),
              HasSubstr("takes 1 argument(s), but the call passes 0"));
  EXPECT_THAT(user_error_of([&] { apply(module, tuple_value({}), {}); }), HasSubstr("it is not a function"));
}

TEST_F(RelayInterpreter, NullaryConstructorAloneIsAFunction) {
  // Inference types a bare `Nil` as fn [A]() -> List[A]: `let %n: fn () -> List[float32] = Nil; %n()`
  // builds the value.
  Expr n = var("n", FuncType::make({}, list_of_f32));
  EXPECT_EQ(value_to_string(eval(let(n, nil, call(n, {})))), "Nil");
}

TEST_F(RelayInterpreter, FreeVariablesAreUserErrors) {
  // evaluate() without inference: the variable is found unbound before anything needs a type.
  Expr x = Var::make("x", {}, loc(1, 9));
  EXPECT_EQ(user_error_of([&] {
              evaluate(module, Tuple::make({f32(1), x}));
            }),
            "t.relay:1:9: the variable %x has no value here: only closed expressions can be evaluated");
}

TEST_F(RelayInterpreter, IfConditionMustBeABoolScalar) {
  // Untyped, so that the interpreter's own check is reached.
  Expr e = If::make(f32(1), f32(2), f32(3), loc(5, 1));
  EXPECT_EQ(
      user_error_of([&] { evaluate(module, e); }),
      "t.relay:5:1: the condition of an if must be a rank-0 bool tensor, but it is a tensor of shape () and "
      "dtype float32");
}

TEST_F(RelayInterpreter, UnknownGlobalIsAUserError) {
  EXPECT_EQ(user_error_of([&] { global_function(module, "nope"); }),
            "the module has no global function @nope");
}

// ---------------------------------------------------------------------------------------------
// Programs in the text format.
// ---------------------------------------------------------------------------------------------

constexpr const char *kListPrelude = R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
)";

// Parses and types `text` (after the List prelude, 5 lines).
Module typed_module(const std::string &text) {
  Module m = parse_module(std::string(kListPrelude) + text, "t.relay");
  infer_types(m);
  return m;
}

TEST(RelayInterpreterText, ListBuiltAndMeasuredRecursively) {
  Module m = typed_module(R"(
def @build(%n: int64) -> List[int64] {
  if (equal(%n, 0i64)) { Nil } else { Cons(%n, @build(subtract(%n, 1i64))) }
}
def @length(%l: List[int64]) -> int32 {
  match (%l) {
    Cons(_, %t) => add(1, @length(%t)),
    Nil => 0,
  }
}
def @main(%n: int64) -> int32 {
  @length(@build(%n))
}
)");
  EXPECT_EQ(as_int(run_main(m, {tensor_value(NDArray::scalar(DType::Int64, 3))})), 3);
  EXPECT_EQ(as_int(run_main(m, {tensor_value(NDArray::scalar(DType::Int64, 100000))})), 100000);
}

TEST(RelayInterpreterText, GraphBindingsAreSharedAndComputed) {
  Module m = typed_module(R"(
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x);
  %1 = multiply(%0, %0);
  (%1, %0)
}
)");
  NDArray x(DType::Float32, {2});
  x.data<float>()[0] = 1.5f;
  x.data<float>()[1] = -2.0f;
  Value v = run_main(m, {tensor_value(x)});
  const NDArray &squared = tensor_of(v->as<TupleValue>()->fields[0]);
  const NDArray &doubled = tensor_of(v->as<TupleValue>()->fields[1]);
  EXPECT_FLOAT_EQ(doubled.data<float>()[0], 3.0f);
  EXPECT_FLOAT_EQ(doubled.data<float>()[1], -4.0f);
  EXPECT_FLOAT_EQ(squared.data<float>()[0], 9.0f);
  EXPECT_FLOAT_EQ(squared.data<float>()[1], 16.0f);
}

TEST(RelayInterpreterText, RefCounterInALetBoundLoop) {
  Module m = typed_module(R"(
def @main(%n: int32) -> int32 {
  let %r = ref(0);
  let %loop = fn (%i: int32) -> () {
    if (less(%i, %n)) {
      ref_write(%r, add(ref_read(%r), 1));
      %loop(add(%i, 1))
    } else {
      ()
    }
  };
  %loop(0);
  ref_read(%r)
}
)");
  EXPECT_EQ(as_int(run_main(m, {tensor_value(NDArray::scalar(DType::Int32, 100000))})), 100000);
}

TEST(RelayInterpreterText, ClosuresCaptureAndCurry) {
  Module m = typed_module(R"(
def @main(%a: float32, %b: float32) -> float32 {
  let %scale = fn (%k: float32) -> fn (float32) -> float32 { fn (%v: float32) -> float32 { multiply(%k, %v) } };
  let %triple = %scale(3f);
  add(%triple(%a), %triple(%b))
}
)");
  Value v = run_main(m, {tensor_value(NDArray::scalar(DType::Float32, 2)),
                         tensor_value(NDArray::scalar(DType::Float32, 5))});
  EXPECT_EQ(as_double(v), 21.0);
}

TEST(RelayInterpreterText, IncompleteMatchNamesItsLocationAndTheValue) {
  Module m = typed_module(R"(
def @main(%l: List[float32]) -> float32 {
  match? (%l) {
    Cons(%h, _) => %h,
  }
}
)");
  Value nil = adt_value(*m.find_constructor("Nil"), {});
  EXPECT_EQ(user_error_of([&] { run_main(m, {nil}); }), "no clause of the match at t.relay:8:3 matches Nil");
  Value one = adt_value(*m.find_constructor("Cons"), {tensor_value(NDArray::scalar(DType::Float32, 4)), nil});
  EXPECT_EQ(as_double(run_main(m, {one})), 4.0);
}

// ---------------------------------------------------------------------------------------------
// Deep programs: none of these may recurse on the C stack per element.
// ---------------------------------------------------------------------------------------------

TEST_F(RelayInterpreter, HundredThousandElementListBuiltAndFoldedRecursively) {
  // @build(%n: int64) = if (equal(%n, 0i64)) { Nil } else { Cons(%n, @build(subtract(%n, 1i64))) }
  // @length(%l) = match (%l) { Cons(_, %t) => add(1, @length(%t)), Nil => 0 }   (not tail recursive)
  // @sum(%l) = match (%l) { Cons(%h, %t) => add(%h, @sum(%t)), Nil => 0i64 }
  Type list_of_i64 = TypeCall::make(module.find_type("List")->header, {scalar(DType::Int64)});
  Expr n = var("n", scalar(DType::Int64));
  Expr recurse = call(GlobalVar::make("build"), {op("subtract", {n, i64(1)})});
  module.add_function(
      "build",
      Function::make({n}, If::make(op("equal", {n, i64(0)}), call(nil, {}), call(cons, {n, recurse})),
                     list_of_i64));
  Expr l = var("l", list_of_i64), t = var("t");
  module.add_function(
      "length",
      fn({l}, Match::make(
                  l, {{PatternNode::constructor_of(cons, {PatternNode::wildcard(), PatternNode::variable(t)}),
                       op("add", {i32(1), call(GlobalVar::make("length"), {t})})},
                      {PatternNode::constructor_of(nil, {}), i32(0)}})));
  Expr l2 = var("l", list_of_i64), h = var("h"), t2 = var("t");
  module.add_function(
      "sum", fn({l2}, Match::make(l2, {{PatternNode::constructor_of(
                                            cons, {PatternNode::variable(h), PatternNode::variable(t2)}),
                                        op("add", {h, call(GlobalVar::make("sum"), {t2})})},
                                       {PatternNode::constructor_of(nil, {}), i64(0)}})));
  Expr count = var("count", scalar(DType::Int64)), list = var("list");
  module.add_function("main", fn({count}, let(list, call(GlobalVar::make("build"), {count}),
                                              Tuple::make({call(GlobalVar::make("length"), {list}),
                                                           call(GlobalVar::make("sum"), {list})}))));
  infer_types(module);
  Value v = run_main(module, {tensor_value(NDArray::scalar(DType::Int64, 100000))});
  const auto &fields = v->as<TupleValue>()->fields;
  EXPECT_EQ(as_int(fields[0]), 100000);
  EXPECT_EQ(as_int(fields[1]), int64_t{100000} * 100001 / 2);  // 1 + ... + 100000
}

TEST_F(RelayInterpreter, HundredThousandElementListPassedToMainAndPrintedShort) {
  Expr l = var("l", list_of_i32), t = var("t");
  module.add_function(
      "main",
      fn({l}, Match::make(
                  l, {{PatternNode::constructor_of(cons, {PatternNode::wildcard(), PatternNode::variable(t)}),
                       call(succ, {call(GlobalVar::make("main"), {t})})},
                      {PatternNode::constructor_of(nil, {}), call(zero, {})}})));
  infer_types(module);
  Value list = int_list(100000);
  EXPECT_EQ(nat_count(run_main(module, {list})), 100000);
  std::string text = value_to_string(list);
  EXPECT_THAT(text, HasSubstr("Cons(0, Cons(1, Cons(2, "));
  EXPECT_THAT(text, HasSubstr("..."));
  EXPECT_LT(text.size(), 1000u);
}

TEST_F(RelayInterpreter, HundredThousandLets) {
  // let %x0 = 0; let %x1 = add(%x0, 1); ... %x100000
  const int n = 100000;
  std::vector<Expr> xs;
  for (int i = 0; i <= n; ++i) xs.push_back(var(fmt::format("x{}", i)));
  Expr e = xs[n];
  for (int i = n; i >= 1; --i) e = let(xs[i], op("add", {xs[i - 1], i32(1)}), e);
  e = let(xs[0], i32(0), e);
  // The interpreter alone: the VM's compile pipeline (fusion and A-normal form, each typing the
  // chain again) takes some 25 s on it, too long for this suite.
  infer_type(e, module);
  EXPECT_EQ(as_int(evaluate(module, e)), n);
}

TEST_F(RelayInterpreter, HundredThousandDeepClosureRecursion) {
  // let %f = fn (%n: int32) { if (equal(%n, 0)) { 0 } else { add(1, %f(subtract(%n, 1))) } }; %f(100000)
  Expr f = var("f"), n = var("n", scalar(DType::Int32));
  Expr body =
      If::make(op("equal", {n, i32(0)}), i32(0), op("add", {i32(1), call(f, {op("subtract", {n, i32(1)})})}));
  EXPECT_EQ(as_int(eval(let(f, fn({n}, body), call(f, {i32(100000)})))), 100000);
}

TEST_F(RelayInterpreter, HundredThousandNestedClosuresCapturingEachOther) {
  // Each closure captures the previous one: a chain of 100,000 environments, called through and
  // destroyed without recursion.
  Value f = nullptr;
  Expr prev = var("prev");
  Expr x = var("x");
  Expr step = fn({x}, call(prev, {op("add", {x, f32(1)})}));  // fn (%x) { %prev(add(%x, 1f)) }
  Expr id_x = var("x");
  f = closure_value(fn({id_x}, id_x));
  for (int i = 0; i < 100000; ++i) f = closure_value(step, {{prev, f}});
  EXPECT_EQ(as_double(apply(module, f, {tensor_value(NDArray::scalar(DType::Float32, 0))})), 100000.0);
  f.reset();
}

TEST(RelayValue, DestroyingLongChainsDoesNotRecurse) {
  Type list = GlobalTypeVar::make("List");
  Expr cons =
      Constructor::make("Cons", {TensorType::scalar(DType::Int32), TypeCall::make(list, {})}, list, 0);
  Expr nil = Constructor::make("Nil", {}, list, 1);
  Value v = adt_value(nil, {});
  for (int i = 0; i < 1000000; ++i) v = adt_value(cons, {tensor_value(NDArray::scalar(DType::Int32, i)), v});
  v.reset();
  // Tuples nested a million deep, and refs holding refs.
  Value t = tuple_value({});
  for (int i = 0; i < 1000000; ++i) t = tuple_value({t});
  t.reset();
  Value r = tuple_value({});
  for (int i = 0; i < 1000000; ++i) r = ref_value(r);
  r.reset();
  SUCCEED();
}

TEST(RelayValue, ToStringShowsScalarsTensorsAndRefs) {
  EXPECT_EQ(value_to_string(tensor_value(NDArray::scalar(DType::Float32, 1.5))), "1.5f");
  EXPECT_EQ(value_to_string(tensor_value(NDArray::scalar(DType::Int64, -3))), "-3i64");
  EXPECT_EQ(value_to_string(tensor_value(NDArray::scalar(DType::Bool, 1))), "True");
  NDArray a(DType::Float32, {2, 4});
  for (int i = 0; i < 8; ++i) a.data<float>()[i] = static_cast<float>(i);
  EXPECT_EQ(value_to_string(tensor_value(a)), "Tensor[(2, 4), float32] [0, 1, 2, 3, 4, 5, ...]");
  EXPECT_EQ(value_to_string(ref_value(tuple_value({tensor_value(NDArray::scalar(DType::Int32, 2))}))),
            "ref((2,))");
}

TEST(RelayValue, RefWriteIsSeenByEveryHolder) {
  Value r = ref_value(tensor_value(NDArray::scalar(DType::Int32, 1)));
  Value holder = tuple_value({r});
  r->as<RefValue>()->write(tensor_value(NDArray::scalar(DType::Int32, 2)));
  EXPECT_EQ(value_to_string(holder), "(ref(2),)");
}

}  // namespace
}  // namespace grove::relay
