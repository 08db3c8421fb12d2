// The Relay text printer: golden text for each construct (TVM's format 0.0.5), literals that read
// back bit for bit, unique names, meta constants and their sidecar, and the contract that matters
// most: parse(print(m)) is structurally equal to m, for every construct, for TVM's own parser test
// programs, and for 100,000-let chains.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "frontend/relay/Interpreter.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Type f32(Shape shape = {}) { return TensorType::make(std::move(shape), DType::Float32); }
Expr var(const std::string &name, Type t = {}) { return Var::make(name, std::move(t)); }
Expr f32c(double v) { return Constant::make(NDArray::scalar(DType::Float32, v)); }
Expr call(const std::string &name, std::vector<Expr> args, Attrs attrs = {}) {
  return Call::make(Op::make(name), std::move(args), std::move(attrs));
}
Expr fn(std::vector<Expr> params, Expr body, Type ret = {}) {
  return Function::make(std::move(params), std::move(body), std::move(ret));
}
Module module_of(Expr main) {
  Module m;
  m.add_function("main", std::move(main));
  return m;
}

// `type List[A] { Cons(A, List[A]), Nil }`.
struct ListAdt {
  TypeData data;
  Expr cons, nil;
  Type list;
};
ListAdt make_list() {
  ListAdt adt;
  adt.list = GlobalTypeVar::make("List");
  Type a = TypeVar::make("A");
  adt.cons = Constructor::make("Cons", {a, TypeCall::make(adt.list, {a})}, adt.list, 0);
  adt.nil = Constructor::make("Nil", {}, adt.list, 1);
  adt.data = {adt.list, {a}, {adt.cons, adt.nil}, {}};
  return adt;
}

// parse(print(m)) equals m, and printing the parsed module gives the same text again.
void expect_round_trip(const Module &m, const PrintOptions &options = {}) {
  PrintedModule printed = print_module(m, options);
  Module back;
  ASSERT_NO_THROW(back = parse_module(printed.text, "printed.relay", printed.meta)) << printed.text;
  EqualResult r = structural_equal(m, back);
  EXPECT_TRUE(r.equal) << "at " << r.path << ":\n" << r.lhs << "\nvs\n" << r.rhs << "\n" << printed.text;
  // Printing is a fixpoint (checked types are not parsed back, so their comments would differ).
  if (!options.show_types) {
    EXPECT_EQ(print_module(back, options).text, printed.text);
  }
}

// The text after the version line.
std::string body_of(const Module &m, const PrintOptions &options = {}) {
  std::string text = print_module(m, options).text;
  const std::string header = "#[version = \"0.0.5\"]\n";
  EXPECT_THAT(text, StartsWith(header));
  return text.substr(header.size());
}

// ---------------------------------------------------------------------------------------------
// Golden text
// ---------------------------------------------------------------------------------------------

TEST(Printer, GraphBindingsForEveryOperand) {
  Expr x = var("x", f32({1, 16})), y = var("y", f32({1, 16}));
  Expr sum = call("add", {x, y});
  Module m = module_of(fn({x, y}, call("nn.relu", {call("multiply", {sum, sum})}), f32({1, 16})));
  EXPECT_EQ(
      body_of(m),
      "def @main(%x: Tensor[(1, 16), float32], %y: Tensor[(1, 16), float32]) -> Tensor[(1, 16), float32] {\n"
      "  %0 = add(%x, %y);\n"
      "  %1 = multiply(%0, %0);\n"
      "  nn.relu(%1)\n"
      "}\n");
  expect_round_trip(m);
}

TEST(Printer, LetsTuplesAndProjections) {
  Expr a = var("a", f32()), b = var("b"), t = var("t");
  Expr body =
      Let::make(b, call("add", {a, f32c(1)}),
                Let::make(t, Tuple::make({a, b}),
                          Tuple::make({TupleGetItem::make(t, 1), Tuple::make({b}), Tuple::make({})})));
  Module m = module_of(fn({a}, body));
  EXPECT_EQ(body_of(m),
            "def @main(%a: float32) {\n"
            "  let %b = add(%a, 1f);\n"
            "  let %t = (%a, %b);\n"
            "  %0 = %t.1;\n"
            "  %1 = (%b,);\n"
            "  %2 = ();\n"
            "  (%0, %1, %2)\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, IfAndNestedFunctionsWithAttributes) {
  Expr c = var("c", TensorType::scalar(DType::Bool)), x = var("x", f32()), p = var("p");
  Expr inner =
      Function::make({p}, call("negative", {p}), {}, {}, Attrs().with("Primitive", AttrValue::of_int(1)));
  Expr body = If::make(c, Call::make(inner, {x}), call("add", {x, call("exp", {x})}));
  Module m = module_of(fn({c, x}, body));
  EXPECT_EQ(body_of(m),
            "def @main(%c: bool, %x: float32) {\n"
            "  if (%c) {\n"
            "    %0 = fn (%p, Primitive=1) {\n"
            "      negative(%p)\n"
            "    };\n"
            "    %0(%x)\n"
            "  } else {\n"
            "    %1 = exp(%x);\n"
            "    add(%x, %1)\n"
            "  }\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, CallAttributesAsTVMWritesThem) {
  Expr x = var("x", f32({1, 3, 8, 8})), w = var("w", f32({16, 3, 3, 3}));
  Attrs attrs = Attrs()
                    .with("padding", AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(1),
                                                         AttrValue::of_int(1), AttrValue::of_int(1)}))
                    .with("channels", AttrValue::of_int(16))
                    .with("data_layout", AttrValue::of_string("NCHW"))
                    .with("out_dtype", AttrValue::of_string(""));
  Module m = module_of(fn({x, w}, call("nn.conv2d", {x, w}, attrs)));
  EXPECT_THAT(body_of(m),
              HasSubstr("  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, data_layout=\"NCHW\", "
                        "out_dtype=\"\")\n"));
  EXPECT_EQ(print_attr_value(AttrValue::of_float(1e-05)), "1e-05f");
  EXPECT_EQ(print_attr_value(AttrValue::of_float(0.5)), "0.5f");
  EXPECT_EQ(print_attr_value(AttrValue::of_float(1e300)), "1e+300f64");
  EXPECT_EQ(print_attr_value(AttrValue::of_bool(false)), "False");
  EXPECT_EQ(print_attr_value(AttrValue::none()), "None");
  EXPECT_EQ(print_attr_value(AttrValue::of_int(-1)), "-1");
  EXPECT_EQ(print_attr_value(AttrValue::of_string("a\"b\\c\nd")), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(print_attr_value(AttrValue::of_list({})), "[]");
  expect_round_trip(m);
  Expr d = var("d", f32({2, 4}));
  expect_round_trip(module_of(fn({d}, call("nn.softmax", {d}, Attrs().with("axis", AttrValue::of_int(-1))))));
}

// Attributes on a call of a global, a closure or a constructor print after its arguments, as TVM
// prints a call's DictAttrs; a constructor without fields then keeps its parentheses.
TEST(Printer, AttributesOnCallsOfFunctions) {
  const std::string text = R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @id(%x: int32) -> int32 {
  %x
}

def @main() {
  %0 = @id(1, name="func_call_attrs", attrs_type_key="attrs.TestAttrs");
  %1 = Nil(note="empty");
  %2 = Cons(%0, %1, tag=3);
  %3 = fn (%y: int32) {
    %y
  };
  %4 = %3(2, inline=True);
  (%2, %4)
}
)";
  Module m;
  ASSERT_NO_THROW(m = parse_module(text, "attrs.relay"));
  EXPECT_EQ(print_module(m).text, text);
  expect_round_trip(m);
  // They do not change the call's type, nor its value: the interpreter ignores them, as TVM's does.
  infer_types(m);
  EXPECT_EQ(to_string(m.find_function("main")->as<Function>()->body->checked_type), "(List[int32], int32)");
  Module twice = parse_module(R"(#[version = "0.0.5"]
def @twice(%x: float32) -> float32 { multiply(%x, 2f) }
def @main() -> float32 {
  %0 = fn (%y: float32) { add(%y, 1f) };
  @twice(%0(3f, name="func_call_attrs", attrs_type_key="attrs.TestAttrs"), inline=True)
}
)",
                              "attrs.relay");
  infer_types(twice);
  EXPECT_EQ(tensor_of(run_main(twice, {})).element_as_double(0), 8.0);
}

// A module as TVM prints one, using the operators of issue 25 with their attributes written out as
// TVM writes them (nested pad_width lists, argmax's axis list, a float16 cast): it type-checks,
// and parse(print(m)) equals m.
TEST(Printer, TvmPrintedOperatorsRoundTrip) {
  const std::string text = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 3, 3), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], %i: Tensor[(2), int32], %m: Tensor[(1, 4, 3, 3), bool]) {
  %0 = cast(%x, dtype="float16");
  %1 = cast(%0, dtype="float32");
  %2 = copy(%1);
  %3 = maximum(%2, 0f);
  %4 = minimum(%3, 6f);
  %5 = power(%4, 2f);
  %6 = floor(%5);
  %7 = ceil(%6);
  %8 = round(%7);
  %9 = nn.layer_norm(%8, %g, %b, axis=-1, epsilon=1e-05f, center=True, scale=True);
  %10 = nn.pad(%9, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [2, 0]], pad_mode="constant");
  %11 = nn.global_avg_pool2d(%10, layout="NCHW");
  %12 = argmax(%11, axis=[1], keepdims=False, exclude=False, select_last_index=False);
  %13 = broadcast_to(%12, shape=[2, 1, 1]);
  %14 = tile(%13, reps=[1, 3]);
  %15 = one_hot(%i, 1f, 0f, depth=4, axis=-1, dtype="float32");
  %16 = greater(%x, 1f);
  %17 = logical_and(%16, %m);
  %18 = logical_or(%17, %m);
  (%14, %15, %18)
}
)";
  Module m;
  ASSERT_NO_THROW(m = parse_module(text, "tvm.relay"));
  infer_types(m);
  const Expr *main = m.find_function("main");
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(to_string(main->as<Function>()->body->checked_type),
            "(Tensor[(2, 1, 3), int32], Tensor[(2, 4), float32], Tensor[(1, 4, 3, 3), bool])");
  expect_round_trip(m);
  const std::string printed = print_module(m).text;
  EXPECT_THAT(printed, HasSubstr("pad_width=[[0, 0], [0, 0], [1, 1], [2, 0]]"));
  EXPECT_THAT(printed, HasSubstr("cast(%x, dtype=\"float16\")"));
}

// A wrong attribute is a type error at the call: file:line:col, the op, and what was expected.
TEST(Printer, TvmPrintedOperatorErrorsSayWhere) {
  const std::string text = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  nn.pad(%x, 0f, pad_width=[[1, 1]])
}
)";
  Module m = parse_module(text, "tvm.relay");
  const std::string error = user_error_of([&] { infer_types(m); });
  EXPECT_THAT(error, StartsWith("tvm.relay:3:3"));
  EXPECT_THAT(error, HasSubstr("nn.pad"));
  EXPECT_THAT(error, HasSubstr("pad_width has 1 pair(s) but the data (2, 3) has rank 2"));
}

TEST(Printer, AdtsMatchAndPolymorphism) {
  ListAdt list = make_list();
  Module m;
  m.add_type(list.data);
  // def @length[A](%xs: List[A]) -> int32 { match (%xs) { Cons(_, %rest) => ..., Nil => 0 } }
  Type a = TypeVar::make("A");
  Expr xs = var("xs", TypeCall::make(list.list, {a})), rest = var("rest", TypeCall::make(list.list, {a}));
  Expr length = GlobalVar::make("length");
  Expr body = Match::make(
      xs, {{PatternNode::constructor_of(list.cons, {PatternNode::wildcard(), PatternNode::variable(rest)}),
            call("add", {Constant::make(NDArray::scalar(DType::Int32, 1)), Call::make(length, {rest})})},
           {PatternNode::constructor_of(list.nil, {}), Constant::make(NDArray::scalar(DType::Int32, 0))}});
  m.add_function("length", Function::make({xs}, body, TensorType::scalar(DType::Int32), {a}));
  Expr x = var("x", TensorType::scalar(DType::Int32));
  m.add_function("singleton", fn({x}, Call::make(list.cons, {x, Call::make(list.nil, {})}),
                                 TypeCall::make(list.list, {TensorType::scalar(DType::Int32)})));
  EXPECT_EQ(body_of(m),
            "type List[A] {\n"
            "  Cons(A, List[A]),\n"
            "  Nil,\n"
            "}\n"
            "\n"
            "def @length[A](%xs: List[A]) -> int32 {\n"
            "  match (%xs) {\n"
            "    Cons(_, %rest: List[A]) => {\n"
            "      %0 = @length(%rest);\n"
            "      add(1, %0)\n"
            "    },\n"
            "    Nil => {\n"
            "      0\n"
            "    },\n"
            "  }\n"
            "}\n"
            "\n"
            "def @singleton(%x: int32) -> List[int32] {\n"
            "  %1 = Nil;\n"
            "  Cons(%x, %1)\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, IncompleteMatchTuplePatternsAndRefs) {
  Expr p = var("p"), a = var("a"), b = var("b"), r = var("r");
  Expr m1 =
      Match::make(p, {{PatternNode::tuple({PatternNode::variable(a), PatternNode::variable(b)}), a}}, false);
  Expr body = Let::make(r, RefCreate::make(f32c(0)), Tuple::make({RefWrite::make(r, m1), RefRead::make(r)}));
  Module m = module_of(fn({p}, body));
  EXPECT_EQ(body_of(m),
            "def @main(%p) {\n"
            "  let %r = ref(0f);\n"
            "  %0 = match? (%p) {\n"
            "    (%a, %b) => {\n"
            "      %a\n"
            "    },\n"
            "  };\n"
            "  %1 = ref_write(%r, %0);\n"
            "  %2 = ref_read(%r);\n"
            "  (%1, %2)\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, ScalarLiteralsReadBackBitForBit) {
  auto text = [](NDArray a) { return print_expr(Constant::make(std::move(a))); };
  EXPECT_EQ(text(NDArray::scalar(DType::Bool, 1)), "True");
  EXPECT_EQ(text(NDArray::scalar(DType::Bool, 0)), "False");
  EXPECT_EQ(text(NDArray::scalar(DType::Int32, -2147483648.0)), "-2147483648");
  EXPECT_EQ(text(NDArray::scalar(DType::Int64, 2)), "2i64");
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, 1)), "1f");
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, 0.1)), "0.1f");
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, 1e-05)), "1e-05f");
  EXPECT_EQ(text(NDArray::scalar(DType::Float64, 1)), "1f64");
  EXPECT_EQ(text(NDArray::scalar(DType::Float64, 0.1)), "0.1f64");
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, -INFINITY)), "-inff");
  EXPECT_EQ(text(NDArray::scalar(DType::Float64, INFINITY)), "inff64");
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, NAN)), "nanf");
  // FLT_MAX's short forms read as doubles beyond FLT_MAX, which the lexer refuses.
  EXPECT_EQ(text(NDArray::scalar(DType::Float32, std::numeric_limits<float>::max())),
            "3.4028234663852886e+38f");

  NDArray int64_min(DType::Int64, {});
  *int64_min.data<int64_t>() = std::numeric_limits<int64_t>::min();
  NDArray negative_nan(DType::Float32, {});
  *negative_nan.data<float>() = -std::numeric_limits<float>::quiet_NaN();
  NDArray int8(DType::Int8, {});
  std::vector<Expr> fields;
  for (double v : {0.0, -0.0, 0.1, 1.0 / 3, 1e-45, 1.17549435e-38, 3.4028235e38, 16777217.0, -2.5e30}) {
    fields.push_back(f32c(v));
    fields.push_back(Constant::make(NDArray::scalar(DType::Float64, v)));
  }
  for (double v : {5e-324, 1.7976931348623157e308, 0.30000000000000004}) {
    fields.push_back(Constant::make(NDArray::scalar(DType::Float64, v)));
  }
  for (NDArray a :
       {int64_min, negative_nan, int8, NDArray::scalar(DType::Float32, NAN),
        NDArray::scalar(DType::Float64, -INFINITY), NDArray::scalar(DType::Int32, 2147483647.0)}) {
    fields.push_back(Constant::make(a));
  }
  // Every other scalar dtype has a literal too (TVM prints -42i16 and 3f16).
  EXPECT_EQ(text(NDArray::scalar(DType::Int8, -128)), "-128i8");
  EXPECT_EQ(text(NDArray::scalar(DType::Int16, -42)), "-42i16");
  EXPECT_EQ(text(NDArray::scalar(DType::UInt8, 255)), "255u8");
  EXPECT_EQ(text(NDArray::scalar(DType::UInt16, 7)), "7u16");
  EXPECT_EQ(text(NDArray::scalar(DType::UInt32, 4294967295.0)), "4294967295u32");
  EXPECT_EQ(text(NDArray::scalar(DType::UInt64, 3)), "3u64");
  EXPECT_EQ(text(NDArray::scalar(DType::Float16, 3)), "3f16");
  EXPECT_EQ(text(NDArray::scalar(DType::Float16, 0.1)), "0.099975586f16");  // the half nearest 0.1
  EXPECT_EQ(text(NDArray::scalar(DType::Float16, 65504)), "65504f16");
  EXPECT_EQ(text(NDArray::scalar(DType::Float16, -INFINITY)), "-inff16");
  EXPECT_EQ(text(NDArray::scalar(DType::Float16, NAN)), "nanf16");
  for (double v : {0.0, -0.0, 6e-8, 0.333, 1024.5, -65504.0})
    fields.push_back(Constant::make(NDArray::scalar(DType::Float16, v)));
  NDArray half_nan(DType::Float16, {});
  *half_nan.data<uint16_t>() = 0x7E01;  // a NaN with a payload has no literal
  fields.push_back(Constant::make(half_nan));
  Module m = module_of(fn({}, Tuple::make(fields)));
  PrintedModule printed = print_module(m);
  EXPECT_EQ(printed.meta.size(), 2u);  // the negative NaN and the half NaN with a payload
  expect_round_trip(m);
}

// TVM's short dtype names read as it reads them.
TEST(Printer, ShortDtypeNamesReadAsTvmReadsThem) {
  Module m = parse_module(
      "def @main(%a: Tensor[(2), int], %b: Tensor[(2), uint], %c: float) { (%a, %b, %c) }", "short.relay");
  const auto *f = m.find_function("main")->as<Function>();
  EXPECT_EQ(to_string(f->params[0].as<Var>()->type_annotation), "Tensor[(2), int32]");
  EXPECT_EQ(to_string(f->params[1].as<Var>()->type_annotation), "Tensor[(2), uint32]");
  EXPECT_EQ(to_string(f->params[2].as<Var>()->type_annotation), "float32");
}

TEST(Printer, OtherConstantsGoToMeta) {
  NDArray matrix(DType::Float32, {2, 2});
  matrix.data<float>()[3] = 7;
  Expr big = Constant::make(matrix);
  Expr x = var("x", f32({2, 2}));
  Module m = module_of(fn({x}, call("add", {call("multiply", {x, big}), big})));
  PrintedModule printed = print_module(m);
  EXPECT_EQ(printed.text,
            "#[version = \"0.0.5\"]\n"
            "def @main(%x: Tensor[(2, 2), float32]) {\n"
            "  %0 = multiply(%x, meta[relay.Constant][0]);\n"
            "  add(%0, meta[relay.Constant][0])\n"
            "}\n");
  ASSERT_EQ(printed.meta.size(), 1u);  // one entry per distinct array
  EXPECT_TRUE(printed.meta[0].bitwise_equal(matrix));
  expect_round_trip(m);

  // print_expr appends to the caller's list and numbers from its size.
  std::vector<NDArray> meta(3);
  EXPECT_EQ(print_expr(big, &meta), "meta[relay.Constant][3]");
  EXPECT_EQ(meta.size(), 4u);
  EXPECT_EQ(print_expr(big), "meta[relay.Constant][0]");
}

TEST(Printer, NamesAreUniqueAndNeverGraphNumbers) {
  Expr x1 = var("x"), x2 = var("x"), x3 = var("x1"), digits = var("0"), dotted = var("a.b"), empty = var("");
  Module m =
      module_of(fn({x1, x2, x3, digits, dotted, empty}, Tuple::make({x1, x2, x3, digits, dotted, empty})));
  EXPECT_EQ(body_of(m),
            "def @main(%x, %x1, %x11, %v0, %a_b, %v) {\n"
            "  (%x, %x1, %x11, %v0, %a_b, %v)\n"
            "}\n");
  expect_round_trip(m);
  // Shadowing in the IR: two lets of the same name, the inner one used.
  Expr a1 = var("a"), a2 = var("a");
  expect_round_trip(module_of(fn({}, Let::make(a1, f32c(1), Let::make(a2, f32c(2), call("add", {a1, a2}))))));
}

TEST(Printer, ShowTypesAfterBindingsAndLetValues) {
  Expr x = var("x", f32({2})), y = var("y");
  Expr sum = call("add", {x, x});
  sum->checked_type = f32({2});
  Expr neg = call("negative", {sum});
  neg->checked_type = f32({2});
  Module m = module_of(fn({x}, Let::make(y, neg, y)));
  EXPECT_EQ(body_of(m, {true}),
            "def @main(%x: Tensor[(2), float32]) {\n"
            "  %0 = add(%x, %x) /* ty=Tensor[(2), float32] */;\n"
            "  let %y = negative(%0) /* ty=Tensor[(2), float32] */;\n"
            "  %y\n"
            "}\n");
  expect_round_trip(m, {true});
}

TEST(Printer, FreeVariablesAreDeclared) {
  Expr a = var("a", f32()), b = var("b");
  EXPECT_EQ(print_expr(call("add", {a, b})), "free_var %a: float32;\nfree_var %b;\nadd(%a, %b)");
  Expr parsed = parse_expr(print_expr(call("add", {a, b})), "expr.relay");
  EXPECT_TRUE(structural_equal(parsed, call("add", {a, b})).equal);
}

TEST(Printer, BindingsDoNotLeakOutOfTheirScope) {
  // `shared` is used in both branches: each branch binds it itself.
  Expr c = var("c", TensorType::scalar(DType::Bool)), x = var("x");
  Expr shared = call("exp", {x});
  Module m = module_of(fn({c, x}, If::make(c, call("add", {shared, shared}), call("negative", {shared}))));
  EXPECT_EQ(body_of(m),
            "def @main(%c: bool, %x) {\n"
            "  if (%c) {\n"
            "    %0 = exp(%x);\n"
            "    add(%0, %0)\n"
            "  } else {\n"
            "    %1 = exp(%x);\n"
            "    negative(%1)\n"
            "  }\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, LetsInOperandPositionsAreParenthesized) {
  Expr x = var("x"), y = var("y");
  Module m = module_of(fn({x}, call("add", {Let::make(y, call("exp", {x}), y), x})));
  EXPECT_EQ(body_of(m),
            "def @main(%x) {\n"
            "  %0 = (\n"
            "    let %y = exp(%x);\n"
            "    %y\n"
            "  );\n"
            "  add(%0, %x)\n"
            "}\n");
  expect_round_trip(m);
}

TEST(Printer, ClosuresRecursionAndTypeArguments) {
  // let %f = fn (%n) { %f(%n) }; a let-bound closure calling itself, and a curried function.
  Expr f = var("f"), n = var("n"), g = var("g"), u = var("u"), v = var("v");
  Expr body = Let::make(f, fn({n}, Call::make(f, {n})),
                        Let::make(g, fn({u}, fn({v}, call("multiply", {u, v}))),
                                  Call::make(Call::make(g, {f32c(2)}), {Call::make(f, {f32c(1)})})));
  expect_round_trip(module_of(fn({}, body)));

  Type a = TypeVar::make("A");
  Expr p = var("p", a);
  Module m;
  m.add_function("id", Function::make({p}, p, a, {a}));
  Expr q = var("q", f32());
  m.add_function("main", fn({q}, Call::make(GlobalVar::make("id"), {q}, {}, {f32()})));
  EXPECT_THAT(body_of(m), HasSubstr("  @id[float32](%q)\n"));
  expect_round_trip(m);
}

TEST(Printer, EveryTypeInAnnotations) {
  ListAdt list = make_list();
  Module m;
  m.add_type(list.data);
  Type a = TypeVar::make("A");
  std::vector<Type> types = {
      f32(),
      f32({1, kAnyDim, 3}),
      f32({7}),
      TensorType::make({2}, DType::UInt16),
      TupleType::make({}),
      TupleType::make({f32()}),
      TupleType::make({f32(), TensorType::scalar(DType::Bool)}),
      FuncType::make({f32(), f32()}, f32()),
      FuncType::make({a}, a, {a}),
      RefType::make(f32({2})),
      TypeCall::make(list.list, {f32()}),
      TypeCall::make(list.list, {TypeCall::make(list.list, {TensorType::scalar(DType::Int64)})}),
      IncompleteType::make(),
  };
  std::vector<Expr> params;
  for (size_t i = 0; i < types.size(); ++i) params.push_back(var("p" + std::to_string(i), types[i]));
  m.add_function("main",
                 Function::make(params, Tuple::make(params), TupleType::make({f32(), RefType::make(f32())})));
  EXPECT_THAT(body_of(m), HasSubstr("%p1: Tensor[(1, ?, 3), float32], %p2: Tensor[(7), float32]"));
  expect_round_trip(m);
}

TEST(Printer, WritesTheFileAndItsSidecar) {
  grove::testing::TempDir dir;
  NDArray w(DType::Int64, {3});
  w.data<int64_t>()[2] = -4;
  Expr x = var("x", TensorType::make({3}, DType::Int64));
  Module m = module_of(fn({x}, call("add", {x, Constant::make(w)})));
  write_relay_file(dir.file("prog.relay"), m);
  EXPECT_EQ(grove::testing::read_bytes(dir.file("prog.relay")), print_module(m).text);
  std::vector<NDArray> meta = read_meta_constants(dir.file("prog.meta.safetensors"));
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_TRUE(meta[0].bitwise_equal(w));
  EXPECT_TRUE(structural_equal(parse_relay_file(dir.file("prog.relay")), m).equal);

  // Without meta constants there is no sidecar.
  write_relay_file(dir.file("plain.relay"), module_of(fn({x}, x)));
  EXPECT_FALSE(std::filesystem::exists(dir.file("plain.meta.safetensors")));
  EXPECT_EQ(dir.entries().size(), 3u);  // no temporaries left behind
}

TEST(Printer, FailedWritesLeaveTheOldFile) {
  grove::testing::TempDir dir;
  grove::testing::write_bytes(dir.file("prog.relay"), "old");
  Expr x = var("x");
  std::vector<Expr> fields(2000, x);
  Module m = module_of(fn({x}, Tuple::make(fields)));
  {
    grove::testing::FileSizeLimit limit(1000);
    EXPECT_THAT(user_error_of([&] { write_relay_file(dir.file("prog.relay"), m); }), HasSubstr("prog.relay"));
  }
  EXPECT_EQ(grove::testing::read_bytes(dir.file("prog.relay")), "old");
}

// ---------------------------------------------------------------------------------------------
// Deep IR
// ---------------------------------------------------------------------------------------------

TEST(Printer, HundredThousandLets) {
  const int n = 100000;
  std::vector<Expr> vars;
  for (int i = 0; i < n; ++i) vars.push_back(var("x"));
  Expr add = Op::make("add");
  Expr body = vars.back();
  for (int i = n; i-- > 0;) {
    Expr value = i == 0 ? f32c(0) : Call::make(add, {vars[i - 1], f32c(1)});
    body = Let::make(vars[i], value, body);
  }
  Module m = module_of(fn({}, body));
  std::string text = print_module(m).text;
  EXPECT_THAT(text, HasSubstr("  let %x = 0f;\n  let %x1 = add(%x, 1f);\n"));
  EXPECT_THAT(text, HasSubstr("  let %x99999 = add(%x99998, 1f);\n  %x99999\n}\n"));
  expect_round_trip(m);
}

TEST(Printer, HundredThousandNestedCalls) {
  Expr x = var("x", f32());
  Expr e = x;
  for (int i = 0; i < 100000; ++i) e = call("negative", {e});
  Module m = module_of(fn({x}, e));
  std::string text = print_module(m).text;
  EXPECT_THAT(text, HasSubstr("  %0 = negative(%x);\n"));
  EXPECT_THAT(text, HasSubstr("  %99998 = negative(%99997);\n  negative(%99998)\n}\n"));
  expect_round_trip(m);
}

// ---------------------------------------------------------------------------------------------
// Random programs: every construct, nested and shared, printed and parsed back
// ---------------------------------------------------------------------------------------------

// Builds random well-scoped expressions: each binder opens a level of variables and of nodes that
// may be shared again (graph form) only inside it.
class RandomProgram {
 public:
  RandomProgram(unsigned seed, const ListAdt &list) : rng_(seed), list_(list) {}

  Expr generate() {
    levels_.emplace_back();
    Expr e = expr(6);
    levels_.pop_back();
    return e;
  }

 private:
  struct Level {
    std::vector<Expr> vars, reusable;
  };

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  Expr new_var() {
    static const char *kNames[] = {"x", "y", "x1", "0", "", "a.b", "_"};
    Type annotation;
    if (chance(0.3)) annotation = chance(0.5) ? f32({2, kAnyDim}) : TensorType::scalar(DType::Int64);
    Expr v = var(kNames[pick(7)], annotation);
    levels_.back().vars.push_back(v);
    return v;
  }

  AttrValue attr_value(int depth) {
    switch (pick(depth > 0 ? 7 : 6)) {
      case 0:
        return AttrValue::of_int(pick(2) ? -pick(1000) : int64_t{1} << 40);
      case 1:
        return AttrValue::of_float(std::ldexp(pick(1000) - 500.0, pick(80) - 40));
      case 2:
        return AttrValue::of_bool(chance(0.5));
      case 3:
        return AttrValue::of_string(chance(0.5) ? "NCHW" : "q\"\\\n\t");
      case 4:
        return AttrValue::none();
      case 5:
        return AttrValue::of_float(0.1 * pick(100));
      default: {
        std::vector<AttrValue> items;
        for (int i = pick(4); i > 0; --i) items.push_back(attr_value(depth - 1));
        return AttrValue::of_list(std::move(items));
      }
    }
  }

  Expr constant() {
    switch (pick(7)) {
      case 0:
        return f32c(std::ldexp(pick(2000) - 1000.0, pick(60) - 30));
      case 1:
        return Constant::make(NDArray::scalar(DType::Int32, pick(200) - 100));
      case 2:
        return Constant::make(NDArray::scalar(DType::Int64, pick(200) - 100));
      case 3:
        return Constant::make(NDArray::scalar(DType::Bool, pick(2)));
      case 4:
        return Constant::make(NDArray::scalar(DType::Float64, 1.0 / (pick(50) + 1)));
      case 5:
        return Constant::make(NDArray::scalar(DType::Float16, pick(10)));  // meta
      default: {
        NDArray a(DType::UInt8, {2, static_cast<int64_t>(pick(3))});  // meta
        for (size_t i = 0; i < a.nbytes(); ++i) a.raw()[i] = static_cast<std::byte>(pick(256));
        return Constant::make(a);
      }
    }
  }

  Expr leaf() {
    std::vector<Expr> visible;
    for (const Level &l : levels_) visible.insert(visible.end(), l.vars.begin(), l.vars.end());
    if (!visible.empty() && chance(0.5)) return visible[pick(static_cast<int>(visible.size()))];
    if (chance(0.1)) return GlobalVar::make("main");
    if (chance(0.1)) return Call::make(list_.nil, {});
    return constant();
  }

  // A scope: a new level of variables, the binders made by `bind`, then the body.
  template <typename Bind>
  Expr scoped(int depth, Bind &&bind, std::vector<Expr> *binders) {
    levels_.emplace_back();
    bind();
    if (binders) *binders = levels_.back().vars;
    Expr body = expr(depth);
    levels_.pop_back();
    return body;
  }

  Expr expr(int depth) {
    if (depth == 0 || chance(0.2)) return leaf();
    // Copied: scoped() adds levels, which may move this one.
    const std::vector<Expr> reusable = levels_.back().reusable;
    if (!reusable.empty() && chance(0.15)) return reusable[pick(static_cast<int>(reusable.size()))];
    Expr e;
    switch (pick(11)) {
      case 0:
      case 1: {
        static const char *kOps[] = {"add", "multiply", "negative", "exp", "nn.relu", "sum"};
        std::vector<Expr> args;
        for (int i = pick(3) + 1; i > 0; --i) args.push_back(expr(depth - 1));
        Attrs attrs;
        for (int i = pick(3); i > 0; --i) attrs = attrs.with("a" + std::to_string(i), attr_value(2));
        e = call(kOps[pick(6)], std::move(args), attrs);
        break;
      }
      case 2: {
        std::vector<Expr> fields;
        for (int i = pick(4); i > 0; --i) fields.push_back(expr(depth - 1));
        e = Tuple::make(std::move(fields));
        break;
      }
      case 3:
        e = TupleGetItem::make(Tuple::make({expr(depth - 1), expr(depth - 1)}), pick(2));
        break;
      case 4: {
        Expr value = expr(depth - 1);
        Expr v;
        Expr body = scoped(
            depth - 1, [&] { v = new_var(); }, nullptr);
        e = Let::make(v, value, body);
        break;
      }
      case 5:
        e = If::make(expr(depth - 1), expr(depth - 1), expr(depth - 1));
        break;
      case 6: {
        std::vector<Expr> params;
        Expr body = scoped(
            depth - 1,
            [&] {
              for (int i = pick(3); i > 0; --i) new_var();
            },
            &params);
        Attrs attrs;
        if (chance(0.3)) attrs = attrs.with("Primitive", AttrValue::of_int(1));
        Expr f = Function::make(params, body, chance(0.3) ? f32() : Type(), {}, attrs);
        if (chance(0.5)) {
          std::vector<Expr> args;
          for (size_t i = 0; i < params.size(); ++i) args.push_back(expr(depth - 1));
          f = Call::make(f, std::move(args));
        }
        e = f;
        break;
      }
      case 7:
        e = RefRead::make(RefCreate::make(expr(depth - 1)));
        break;
      case 8:
        e = RefWrite::make(RefCreate::make(expr(depth - 1)), expr(depth - 1));
        break;
      case 9: {
        Expr data = Call::make(list_.cons, {expr(depth - 1), Call::make(list_.nil, {})});
        std::vector<Expr> bound;
        Pattern lhs;
        Expr rhs = scoped(
            depth - 1,
            [&] {
              Expr h = new_var(), t = new_var();
              lhs = PatternNode::constructor_of(
                  list_.cons, {PatternNode::variable(h),
                               chance(0.5) ? PatternNode::variable(t) : PatternNode::wildcard()});
            },
            &bound);
        std::vector<Clause> clauses{{lhs, rhs}};
        if (chance(0.5)) clauses.push_back({PatternNode::wildcard(), expr(depth - 1)});
        e = Match::make(data, std::move(clauses), chance(0.5));
        break;
      }
      default: {
        Pattern lhs;
        Expr rhs = scoped(
            depth - 1,
            [&] {
              lhs = PatternNode::tuple({PatternNode::variable(new_var()), PatternNode::variable(new_var())});
            },
            nullptr);
        e = Match::make(Tuple::make({expr(depth - 1), expr(depth - 1)}), {{lhs, rhs}});
        break;
      }
    }
    levels_.back().reusable.push_back(e);
    return e;
  }

  std::mt19937 rng_;
  const ListAdt &list_;
  std::vector<Level> levels_;
};

TEST(Printer, RandomProgramsRoundTrip) {
  ListAdt list = make_list();
  for (unsigned seed = 0; seed < 1000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Module m;
    m.add_type(list.data);
    m.add_function("main", fn({}, RandomProgram(seed, list).generate()));
    expect_round_trip(m);
    if (::testing::Test::HasFailure()) break;
  }
}

// ---------------------------------------------------------------------------------------------
// TVM's parser test programs (tests/python/relay/test_ir_parser.py): parse, print, parse again
// ---------------------------------------------------------------------------------------------

constexpr const char *kListDefinition = R"(
type List[A] {
    Cons(A, List[A]),
    Nil,
}
)";

void expect_text_round_trip(const std::string &program) {
  const std::string text = "#[version = \"0.0.5\"]\n" + program;
  Module first;
  ASSERT_NO_THROW(first = parse_module(text, "tvm.relay"));
  expect_round_trip(first);
}

TEST(Printer, TVMParserTestPrograms) {
  expect_text_round_trip(std::string(kListDefinition) + R"(
    def @length[A](%xs: List[A]) -> int32 {
      match (%xs) {
        Cons(_, %rest : List[A]) => {
          ();
          1 + @length(%rest)
        },
        Nil => 0,
      }
    }
  )");
  expect_text_round_trip(std::string(kListDefinition) + R"(
    def @length[A](%xs: List[A]) -> int32 {
      match? (%xs) {
        Cons(_, %rest : List[A]) => {
          ();
          1 + @length(%rest)
        },
        Nil => 0,
      }
    }
  )");
  expect_text_round_trip(std::string(kListDefinition) + R"(
    def @make_singleton(%x: int32) -> List[int32] {
      Cons(%x, Nil)
    }
  )");
  expect_text_round_trip(R"(
    def @main(%x: float32) {
        %0 = ref(%x);
        ref_write(%0, 1f);
        ref_read(%0)
    }
  )");
  expect_text_round_trip(R"(
    type Box[T] {
        constructor(T)
    }

    def @example() {
        %0 = ();
        %1 = constructor(%0);
        %2 = constructor(0f);
        (%1, %2,)
    }
  )");
  expect_text_round_trip(R"(
    def @example(%b: bool) {
        %0 = if (%b) {
            1
        } else {
            0
        };
        %0
    }
  )");
  expect_text_round_trip(R"(
    type Either[A, B] {
      Left(A),
      Right(B),
    }
    type Ayy { }
    def @id(%x: int32) -> int32 {
        @id(%x)
    }
  )");
  expect_text_round_trip(R"(
    def @main() {
      let %curried_mult =
          fn (%x) {
          fn (%y) {
              %x * %y
          }
          };
          %curried_mult(0);
          %curried_mult(0)(0)
    }
  )");
  expect_text_round_trip(R"(
    def @main(%x: Tensor[(1, 32, 32, 3), float32], %y: Tensor[(1, 1, 3, 3), float32]) {
      nn.conv2d(%x, %y, data_layout="NHWC", kernel_layout="HWIO")
    }
  )");
  expect_text_round_trip(R"(
    def @main(%p0: Tensor[(2, 4), float32], %p1: Tensor[(2, 4), float32]) {
      %2 = fn (%data: Tensor[(2, 4), float32], %weight: Tensor[(2, 4), float32]) {
          %0 = nn.dense(%data, %weight, units=None);
          %1 = nn.relu(%0);
          add(%1, 1f)
      };
      %2(%p0, %p1)
    }
  )");
  // test_call_attrs_def: attributes on the call of a closure.
  expect_text_round_trip(R"(
    def @main(%p0: Tensor[(2, 4), float32], %p1: Tensor[(2, 4), float32]) {
      %2 = fn (%data: Tensor[(2, 4), float32], %weight: Tensor[(2, 4), float32]) {
          %0 = nn.dense(%data, %weight, units=None);
          %1 = nn.relu(%0);
          add(%1, 1f)
      };
      %2(%p0, %p1, name="func_call_attrs", attrs_type_key="attrs.TestAttrs")
    }
  )");
  expect_text_round_trip(R"(
    def @main(%x: float32) {
      let %_: fn (int32, int32) -> int32 = fn (%a: int32, %b: int32) -> int32 { 0 };
      let %t: (int32,) = (0,);
      let %u: Tensor[(?, 1), float32] = ();
      (%x((%x,).0, %x), 1 * 1 + 1 < 1 == 1, --10, -42i16, 3f16)
    }
  )");
}

// grove's example models (models/relay): TreeLSTM with its ADT and recursion, an LSTM, a CNN, an MLP.
TEST(Printer, ExampleModelsRoundTrip) {
  int count = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(std::string(GROVE_SOURCE_DIR) + "/models/relay")) {
    if (entry.path().extension() != ".relay") continue;
    SCOPED_TRACE(entry.path().filename().string());
    expect_round_trip(parse_relay_file(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 4);
}

}  // namespace
}  // namespace grove::relay
