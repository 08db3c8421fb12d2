// The Relay text format reader (Parser.h), construct by construct: literals, comments and the
// header, bindings and scopes, expressions, types, and syntax errors (every message matched by its
// text). Modules, ADTs, spans, deep programs, files and round trips: test_parser_programs.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontend/relay/IR.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/ops/Op.h"
#include "support/Error.h"
#include "tests/relay/ParserTestUtil.h"

namespace grove::relay {
namespace {

using namespace parser_test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// Literals
// ---------------------------------------------------------------------------------------------

TEST(RelayParserLiterals, IntegersTakeTheirSuffixDType) {
  struct Case {
    const char *text;
    DType dtype;
    int64_t value;
  };
  for (const Case &c : std::vector<Case>{{"1", DType::Int32, 1},
                                         {"0", DType::Int32, 0},
                                         {"-100", DType::Int32, -100},
                                         {"-05", DType::Int32, -5},
                                         {"--10", DType::Int32, 10},
                                         {"---10", DType::Int32, -10},
                                         {"-42i", DType::Int32, -42},
                                         {"-42i16", DType::Int16, -42},
                                         {"-42i32", DType::Int32, -42},
                                         {"-42i64", DType::Int64, -42},
                                         {"1i8", DType::Int8, 1},
                                         {"-128i8", DType::Int8, -128},
                                         {"255u8", DType::UInt8, 255},
                                         {"7u16", DType::UInt16, 7},
                                         {"7u32", DType::UInt32, 7},
                                         {"7u64", DType::UInt64, 7},
                                         {"2147483647", DType::Int32, 2147483647},
                                         {"2147483648", DType::Int64, 2147483648LL},
                                         {"-2147483648", DType::Int32, -2147483648LL},
                                         {"9223372036854775807", DType::Int64, 9223372036854775807LL}}) {
    const Constant &k = constant(c.text);
    EXPECT_EQ(k.data.dtype(), c.dtype) << c.text;
    EXPECT_EQ(k.data.ndim(), 0) << c.text;
    EXPECT_EQ(k.data.element_as_int(0), c.value) << c.text;
  }
  // int64's extremes keep every digit (they do not pass through a double).
  EXPECT_EQ(*constant("-9223372036854775808i64").data.data<int64_t>(), INT64_MIN);
  EXPECT_EQ(*constant("18446744073709551615u64").data.data<uint64_t>(), UINT64_MAX);
}

TEST(RelayParserLiterals, FloatsAreFloat32UnlessSuffixed) {
  struct Case {
    const char *text;
    DType dtype;
    double value;
  };
  for (const Case &c : std::vector<Case>{{"1f", DType::Float32, 1.0},
                                         {"1.0f", DType::Float32, 1.0},
                                         {"0.0f", DType::Float32, 0.0},
                                         {"-10.0f", DType::Float32, -10.0},
                                         {"1.5f", DType::Float32, 1.5},
                                         {"1.5", DType::Float32, 1.5},
                                         {"-1f", DType::Float32, -1.0},
                                         {"1e+1f", DType::Float32, 10.0},
                                         {"1E+1f", DType::Float32, 10.0},
                                         {"1.0e+1f", DType::Float32, 10.0},
                                         {"3f16", DType::Float16, 3.0},
                                         {"3f32", DType::Float32, 3.0},
                                         {"3f64", DType::Float64, 3.0},
                                         {"1f64", DType::Float64, 1.0},
                                         {"0.5f", DType::Float32, 0.5}}) {
    const Constant &k = constant(c.text);
    EXPECT_EQ(k.data.dtype(), c.dtype) << c.text;
    EXPECT_EQ(k.data.element_as_double(0), c.value) << c.text;
  }
  EXPECT_FLOAT_EQ(constant("1e-05f").data.element_as_double(0), 1e-05f);
  EXPECT_FLOAT_EQ(constant("1E-1f").data.element_as_double(0), 0.1f);
  EXPECT_FLOAT_EQ(constant("1.56667f").data.element_as_double(0), 1.56667f);
  EXPECT_EQ(constant("-inff").data.element_as_double(0), -INFINITY);
  EXPECT_EQ(constant("inff").data.element_as_double(0), INFINITY);
}

TEST(RelayParserLiterals, BoolsAreBoolScalars) {
  EXPECT_EQ(constant("True").data.dtype(), DType::Bool);
  EXPECT_EQ(constant("True").data.element_as_int(0), 1);
  EXPECT_EQ(constant("False").data.element_as_int(0), 0);
}

TEST(RelayParserLiterals, OutOfRangeAndMalformedNumbersAreErrors) {
  EXPECT_THAT(expr_error("2147483648i32"),
              HasSubstr("integer literal '2147483648i32' is out of range for int32"));
  EXPECT_THAT(expr_error("32768i16"), HasSubstr("integer literal '32768i16' is out of range for int16"));
  EXPECT_THAT(expr_error("256u8"), HasSubstr("'256u8' is out of range for uint8"));
  EXPECT_THAT(expr_error("-1u8"), HasSubstr("'-1u8' is out of range for uint8"));
  EXPECT_THAT(expr_error("99999999999999999999"), HasSubstr("is out of range for int64"));
  EXPECT_THAT(expr_error("3.40283e+38f32"),
              HasSubstr("float literal '3.40283e+38f32' is out of range for float32"));
  EXPECT_THAT(expr_error("70000f16"), HasSubstr("out of range for float16"));
  EXPECT_THAT(expr_error("1.5i32"), HasSubstr("number '1.5i32' has a fraction or an exponent"));
  EXPECT_THAT(expr_error("1i7"), HasSubstr("unknown suffix 'i7' on the number '1i7'"));
  EXPECT_THAT(expr_error("12abc"), HasSubstr("malformed number '12abc'"));
}

// ---------------------------------------------------------------------------------------------
// Comments, header, lexical errors
// ---------------------------------------------------------------------------------------------

TEST(RelayParserLexical, CommentsAreSkippedAndNest) {
  EXPECT_EQ(as<Tuple>(parse("// This is a line comment!\n()")).fields.size(), 0u);
  EXPECT_EQ(as<Tuple>(parse("/* block\n still a block */ ()")).fields.size(), 0u);
  EXPECT_EQ(as<Tuple>(parse("/* outer /* Block comment is recursive! */ still outer */ ()")).fields.size(),
            0u);
  // TVM's printer annotates bindings with /* ty=... */.
  Expr e = parse("free_var %x: float32;\n%0 = add(%x, 1f) /* ty=float32 */;\n%0 /* ty=float32 */");
  EXPECT_EQ(as<Op>(as<Call>(e).op).name, "add");
}

TEST(RelayParserLexical, UnterminatedCommentAndStringAreErrors) {
  EXPECT_THAT(expr_error("()\n  /* open /* nested */"),
              HasSubstr("test.relay:2:3: error: unterminated comment: this '/*' is never closed by '*/'"));
  EXPECT_THAT(expr_error("free_var %x: float32;\nnn.softmax(%x, s=\"abc)"),
              HasSubstr("test.relay:2:18: error: unterminated string"));
  EXPECT_THAT(expr_error("\"a\\qb\""), HasSubstr("unknown escape '\\q' in a string"));
  EXPECT_THAT(expr_error("()\n$"), HasSubstr("test.relay:2:1: error: unexpected character '$'"));
  EXPECT_THAT(expr_error("% x"), HasSubstr("expected a name or a number right after '%'"));
}

TEST(RelayParserLexical, VersionHeader) {
  Module m = parse_module("#[version = \"0.0.5\"]\ndef @main() { () }", "v.relay");
  EXPECT_NE(m.find_function("main"), nullptr);
  EXPECT_THAT(
      module_error("#[version = \"0.0.4\"]\ndef @main() { () }"),
      HasSubstr("test.relay:1:1: error: unsupported text format version \"0.0.4\": grove reads version "
                "\"0.0.5\""));
  EXPECT_THAT(
      module_error("def @main() { () }\n#[version = \"0.0.5\"]"),
      HasSubstr("test.relay:2:1: error: the #[version = ...] header must come before everything else"));
  EXPECT_THAT(module_error("#[foo]"), HasSubstr("unknown header '#[foo]'"));
}

// TVM's #[metadata] section is read (tests/frontend/relay/test_metadata.cpp); on a line of its own only.
TEST(RelayParserLexical, MetadataSectionStartsALineOfItsOwn) {
  EXPECT_THAT(module_error("#[version = \"0.0.5\"]\ndef @main() { () }\n#[metadata]\n{\"root\": 1}"),
              HasSubstr("test.relay:3: the #[metadata] section is not TVM's JSON object graph"));
  EXPECT_THAT(module_error("#[version = \"0.0.5\"]\ndef @main() { () } #[metadata]\n{}"),
              HasSubstr("test.relay:2:20: error: #[metadata] must be a line of its own after the module"));
}

TEST(RelayParserLexical, TVMScriptIsUnsupported) {
  EXPECT_THAT(module_error("# from tvm.script import relax as R\n@R.function\ndef main(): pass"),
              HasSubstr("grove does not support TVMScript or Relax programs"));
  EXPECT_THAT(module_error("@R.function\ndef main(x): return x"),
              HasSubstr("test.relay:1:1: error: grove does not support TVMScript or Relax programs"));
}

TEST(RelayParserLexical, ErrorsQuoteTheLineWithACaret) {
  const std::string err = module_error("def @main(%x: float32) {\n  add(%x, %x}\n}");
  EXPECT_EQ(err,
            "test.relay:2:13: error: expected ',' or ')' in the call's arguments, found '}'\n"
            "  add(%x, %x}\n"
            "            ^");
}

// ---------------------------------------------------------------------------------------------
// Bindings and scopes
// ---------------------------------------------------------------------------------------------

TEST(RelayParserBindings, LetBindsAVarVisibleInTheBody) {
  const Let &let = as<Let>(parse("let %x = 1; %x"));
  EXPECT_EQ(as<Var>(let.var).name_hint, "x");
  EXPECT_TRUE(let.body.same_as(let.var));
  EXPECT_EQ(as<Constant>(let.value).data.element_as_int(0), 1);

  const Let &outer = as<Let>(parse("let %x = 1;\nlet %y = 2;\n()"));
  const Let &inner = as<Let>(outer.body);
  EXPECT_EQ(as<Var>(inner.var).name_hint, "y");
  EXPECT_EQ(as<Tuple>(inner.body).fields.size(), 0u);

  const Let &typed = as<Let>(parse("let %x: Tensor[(2), int32] = 1; %x"));
  EXPECT_EQ(Expr(typed.var).as<Var>()->type_annotation.as<TensorType>()->shape, Shape({2}));
}

TEST(RelayParserBindings, ShadowingAndScopes) {
  // The second %x's value refers to the first %x; the body to the second.
  const Let &first = as<Let>(parse("let %x = 1; let %x = (%x, %x); %x"));
  const Let &second = as<Let>(first.body);
  EXPECT_FALSE(first.var.same_as(second.var));
  EXPECT_TRUE(as<Tuple>(second.value).fields[0].same_as(first.var));
  EXPECT_TRUE(second.body.same_as(second.var));
  // A let inside a branch does not leak out of it (TVM's test_ifelse_scope).
  EXPECT_THAT(expr_error("if (True) {\n  let %x = ();\n  ()\n} else {\n  %x\n}"),
              HasSubstr("test.relay:5:3: error: undefined variable %x"));
  EXPECT_THAT(expr_error("(let %y = 1; %y, %y)"), HasSubstr("undefined variable %y"));
}

TEST(RelayParserBindings, LetBoundFunctionsMayRecurse) {
  const Let &let = as<Let>(parse("let %f = fn (%n: int32) -> int32 { %f(%n) }; %f(1)"));
  const Function &f = as<Function>(let.value);
  EXPECT_TRUE(as<Call>(f.body).op.same_as(let.var));
  // A non-function value sees the enclosing variable of the same name, not itself.
  EXPECT_THAT(expr_error("let %x = %x; %x"), HasSubstr("undefined variable %x"));
}

TEST(RelayParserBindings, SequenceIsALetOfAnUnnamedVar) {
  const Let &let = as<Let>(parse("(); ()"));
  EXPECT_EQ(as<Var>(let.var).name_hint, "");
  EXPECT_EQ(as<Tuple>(let.value).fields.size(), 0u);
}

TEST(RelayParserBindings, GraphBindingsShareTheNode) {
  const Tuple &t = as<Tuple>(parse("%0 = (); %1 = 1; (%0, %0, %1)"));
  ASSERT_EQ(t.fields.size(), 3u);
  EXPECT_TRUE(t.fields[0].same_as(t.fields[1]));
  EXPECT_EQ(as<Tuple>(t.fields[0]).fields.size(), 0u);
  EXPECT_EQ(as<Constant>(t.fields[2]).data.element_as_int(0), 1);
  EXPECT_EQ(as<Tuple>(parse("%1 = (); %1")).fields.size(), 0u);
  EXPECT_THAT(expr_error("%0 = (); %1"),
              HasSubstr("undefined variable %1: a graph binding '%1 = ...;' must come before its uses"));
}

TEST(RelayParserBindings, FreeVarsMustBeDeclared) {
  EXPECT_THAT(expr_error("add(%x, 1f)"), HasSubstr("test.relay:1:5: error: undefined variable %x"));
  const Call &c = as<Call>(parse("free_var %x: float32; add(%x, %x)"));
  EXPECT_TRUE(c.args[0].same_as(c.args[1]));
  EXPECT_THAT(expr_error("free_var %x; free_var %x; %x"), HasSubstr("free variable %x is declared twice"));
}

TEST(RelayParserBindings, SingleExpressionBecomesMainWithFreeVarsAsParams) {
  Module m = parse_module("#[version = \"0.0.5\"]\nfree_var %b: int32;\nfree_var %a: float32;\nadd(%a, %a)",
                          "m.relay");
  const Function &main = main_of(m);
  ASSERT_EQ(main.params.size(), 2u);
  EXPECT_EQ(as<Var>(main.params[0]).name_hint, "b");
  EXPECT_EQ(as<Var>(main.params[1]).name_hint, "a");
  EXPECT_TRUE(as<Call>(main.body).args[0].same_as(main.params[1]));
}

// ---------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------

TEST(RelayParserExprs, TuplesAndProjections) {
  EXPECT_EQ(as<Tuple>(parse("()")).fields.size(), 0u);
  EXPECT_EQ(as<Tuple>(parse("(0,)")).fields.size(), 1u);
  EXPECT_EQ(as<Tuple>(parse("(0, 1)")).fields.size(), 2u);
  EXPECT_EQ(as<Tuple>(parse("(0, 1, 2,)")).fields.size(), 3u);
  EXPECT_EQ(as<Constant>(parse("(0)")).data.element_as_int(0), 0);

  // TVM's test_tuple_proj.
  const Call &c = as<Call>(parse("free_var %x: float32; %x((%x,).0, %x)"));
  const TupleGetItem &item = as<TupleGetItem>(c.args[0]);
  EXPECT_EQ(item.index, 0);
  EXPECT_TRUE(as<Tuple>(item.tuple).fields[0].same_as(c.op));

  // Chained, and after a call.
  const TupleGetItem &outer = as<TupleGetItem>(parse("free_var %t: ((float32, float32), float32); %t.0.1"));
  EXPECT_EQ(outer.index, 1);
  EXPECT_EQ(as<TupleGetItem>(outer.tuple).index, 0);
  const TupleGetItem &split =
      as<TupleGetItem>(parse("free_var %x: Tensor[(4), float32]; split(%x, indices_or_sections=2).1"));
  EXPECT_EQ(split.index, 1);
  EXPECT_EQ(as<Op>(as<Call>(split.tuple).op).name, "split");
  EXPECT_THAT(expr_error("free_var %t: (float32,); %t.x"),
              HasSubstr("expected a tuple index (a non-negative integer without suffix), found 'x'"));
  EXPECT_THAT(expr_error("(1,).-1"),
              HasSubstr("expected a tuple index (a non-negative integer without suffix), found '-1'"));
  EXPECT_THAT(expr_error("(1,).99999999999"), HasSubstr("'99999999999' is out of range for a tuple index"));
}

TEST(RelayParserExprs, OpCallsWithAttributes) {
  const Call &c = as<Call>(
      parse("free_var %x: Tensor[(1, 3, 8, 8), float32];\nfree_var %w: Tensor[(16, 3, 3, 3), float32];\n"
            "nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3], data_layout=\"NCHW\", "
            "out_dtype=\"\", groups=1)"));
  EXPECT_EQ(as<Op>(c.op).name, "nn.conv2d");
  EXPECT_EQ(as<Op>(c.op).def, find_op("nn.conv2d"));
  ASSERT_EQ(c.args.size(), 2u);
  ASSERT_NE(c.attrs.find("padding"), nullptr);
  EXPECT_EQ(*c.attrs.find("padding"), AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(1),
                                                          AttrValue::of_int(1), AttrValue::of_int(1)}));
  EXPECT_EQ(*c.attrs.find("channels"), AttrValue::of_int(16));
  EXPECT_EQ(*c.attrs.find("data_layout"), AttrValue::of_string("NCHW"));
  EXPECT_EQ(*c.attrs.find("out_dtype"), AttrValue::of_string(""));
  EXPECT_EQ(c.attrs.entries()[0].first, "padding");  // written order kept

  const Call &bn = as<Call>(parse(
      "free_var %x: Tensor[(1, 2), float32]; free_var %g: Tensor[(2), float32];\n"
      "nn.batch_norm(%x, %g, %g, %g, %g, axis=-1, epsilon=1e-05f, center=True, scale=False, units=None, "
      "nested=[[1, 2], [], [3.5f]], t=(2))"));
  EXPECT_EQ(*bn.attrs.find("axis"), AttrValue::of_int(-1));
  EXPECT_EQ(bn.attrs.find("epsilon")->kind, AttrValue::Kind::Float);
  EXPECT_FLOAT_EQ(static_cast<float>(bn.attrs.find("epsilon")->f), 1e-05f);
  EXPECT_EQ(*bn.attrs.find("center"), AttrValue::of_bool(true));
  EXPECT_EQ(*bn.attrs.find("scale"), AttrValue::of_bool(false));
  EXPECT_EQ(bn.attrs.find("units")->kind, AttrValue::Kind::None);
  EXPECT_EQ(*bn.attrs.find("nested"),
            AttrValue::of_list({AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(2)}),
                                AttrValue::of_list({}), AttrValue::of_list({AttrValue::of_float(3.5)})}));
  EXPECT_EQ(*bn.attrs.find("t"), AttrValue::of_int(2));
}

TEST(RelayParserExprs, AttributeErrors) {
  EXPECT_THAT(expr_error("free_var %x: float32; nn.relu(%x, a=1, a=2)"),
              HasSubstr("attribute 'a' is given twice"));
  EXPECT_THAT(
      expr_error("free_var %x: float32; nn.relu(a=1, %x)"),
      HasSubstr("positional argument after keyword attributes: expected 'name=value' or ')', found '%x'"));
  EXPECT_THAT(
      expr_error("free_var %x: float32; nn.relu(%x, a=%x)"),
      HasSubstr(
          "expected an attribute value (an integer, float, bool, string, None or a [list]), found '%x'"));
  EXPECT_THAT(expr_error("free_var %f: fn (float32) -> float32; %f(a=1, 1f)"),
              HasSubstr("test.relay:1:47: error: positional argument after keyword attributes: expected "
                        "'name=value' or ')', found '1f'"));
}

// As TVM's parser does, a call of a closure, a global or a constructor keeps keyword attributes
// after its arguments as the call's attributes (TVM: a DictAttrs, or the class attrs_type_key
// names), in the order written; evaluation ignores them.
TEST(RelayParserExprs, AttributesOnCallsOfFunctions) {
  const Call &closure =
      as<Call>(parse("free_var %f: fn (float32) -> float32; %f(1f, name=\"func_call_attrs\", "
                     "attrs_type_key=\"attrs.TestAttrs\")"));
  EXPECT_NE(closure.op.as<Var>(), nullptr);
  ASSERT_EQ(closure.args.size(), 1u);
  ASSERT_EQ(closure.attrs.entries().size(), 2u);
  EXPECT_EQ(closure.attrs.entries()[0].first, "name");
  EXPECT_EQ(*closure.attrs.find("name"), AttrValue::of_string("func_call_attrs"));
  EXPECT_EQ(*closure.attrs.find("attrs_type_key"), AttrValue::of_string("attrs.TestAttrs"));

  Module m = parse_module(std::string(kList) + R"(
def @id(%x: int32) -> int32 { %x }
def @main() { (@id(1, inline=True, n=[1, 2]), Cons(1, Nil, tag=3), Nil(note="empty")) }
)",
                          "test.relay");
  const Tuple &t = as<Tuple>(main_of(m).body);
  EXPECT_EQ(*as<Call>(t.fields[0]).attrs.find("inline"), AttrValue::of_bool(true));
  EXPECT_EQ(*as<Call>(t.fields[0]).attrs.find("n"),
            AttrValue::of_list({AttrValue::of_int(1), AttrValue::of_int(2)}));
  EXPECT_EQ(*as<Call>(t.fields[1]).attrs.find("tag"), AttrValue::of_int(3));
  EXPECT_EQ(as<Call>(t.fields[2]).args.size(), 0u);
  EXPECT_EQ(*as<Call>(t.fields[2]).attrs.find("note"), AttrValue::of_string("empty"));
  EXPECT_THAT(module_error("def @f(%x: int32) { %x }\ndef @main() { @f(1, a=1, a=2) }"),
              HasSubstr("test.relay:2:26: error: attribute 'a' is given twice"));
}

TEST(RelayParserExprs, UnknownOperatorIsAnErrorAtItsLocation) {
  const std::string err = expr_error("free_var %x: float32;\n  nn.no_such_op(%x)");
  EXPECT_THAT(err, StartsWith("test.relay:2:3: error: grove does not support the operator 'nn.no_such_op'"));
  EXPECT_THAT(err, HasSubstr("\n  nn.no_such_op(%x)\n  ^"));
}

TEST(RelayParserExprs, BinaryOperatorsFollowTVMsPrecedence) {
  struct Case {
    const char *text, *op;
  };
  for (const Case &c : std::vector<Case>{{"1 * 1", "multiply"},
                                         {"1 / 1", "divide"},
                                         {"1 + 1", "add"},
                                         {"1 - 1", "subtract"},
                                         {"1 < 1", "less"},
                                         {"1 > 1", "greater"},
                                         {"1 <= 1", "less_equal"},
                                         {"1 >= 1", "greater_equal"},
                                         {"1 == 1", "equal"},
                                         {"1 != 1", "not_equal"}}) {
    const Call &call = as<Call>(parse(c.text));
    EXPECT_EQ(as<Op>(call.op).name, c.op) << c.text;
    EXPECT_EQ(call.args.size(), 2u);
  }
  // 1 * 2 + 3 < 4 == 5 is (((1 * 2) + 3) < 4) == 5, and 1 == 2 < 3 + 4 * 5 is 1 == (2 < (3 + (4 * 5))).
  const Call &eq = as<Call>(parse("1 * 2 + 3 < 4 == 5"));
  EXPECT_EQ(as<Op>(eq.op).name, "equal");
  const Call &lt = as<Call>(eq.args[0]);
  EXPECT_EQ(as<Op>(lt.op).name, "less");
  const Call &add = as<Call>(lt.args[0]);
  EXPECT_EQ(as<Op>(add.op).name, "add");
  EXPECT_EQ(as<Op>(as<Call>(add.args[0]).op).name, "multiply");
  const Call &eq2 = as<Call>(parse("1 == 2 < 3 + 4 * 5"));
  const Call &mul = as<Call>(as<Call>(as<Call>(eq2.args[1]).args[1]).args[1]);
  EXPECT_EQ(as<Op>(mul.op).name, "multiply");
  // Left associative: 1 - 2 - 3 is (1 - 2) - 3; `2-1` is a subtraction, `2 -1` too.
  const Call &sub = as<Call>(parse("1 - 2 - 3"));
  EXPECT_EQ(as<Constant>(sub.args[1]).data.element_as_int(0), 3);
  EXPECT_EQ(as<Op>(as<Call>(parse("2-1")).op).name, "subtract");
  EXPECT_EQ(as<Constant>(as<Call>(parse("1 - -1")).args[1]).data.element_as_int(0), -1);
}

TEST(RelayParserExprs, FunctionsWithTypeParamsAttrsAndReturnTypes) {
  const Function &f =
      as<Function>(parse("fn [A, B](%x: A, %y: B, Primitive=1, relay.reshape_only=1) -> A { %x }"));
  ASSERT_EQ(f.type_params.size(), 2u);
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_TRUE(Expr(f.params[0]).as<Var>()->type_annotation.same_as(f.type_params[0]));
  EXPECT_TRUE(f.ret_type.same_as(f.type_params[0]));
  EXPECT_EQ(*f.attrs.find("Primitive"), AttrValue::of_int(1));
  EXPECT_EQ(*f.attrs.find("relay.reshape_only"), AttrValue::of_int(1));
  EXPECT_TRUE(f.body.same_as(f.params[0]));
  const Function &g = as<Function>(parse("fn () { 0 }"));
  EXPECT_TRUE(g.params.empty());
  EXPECT_FALSE(g.ret_type.defined());
  EXPECT_THAT(expr_error("fn (%x, %x) { %x }"),
              HasSubstr("parameter %x is declared twice in the same function"));
  EXPECT_THAT(expr_error("fn [A, A](%x: A) { %x }"), HasSubstr("type parameter A is declared twice"));
  EXPECT_THAT(expr_error("fn (%x {virtual_device=1}) { %x }"),
              HasSubstr("grove does not support virtual device annotations on parameters"));
  EXPECT_THAT(expr_error("fn (%x, Extern=1) { %x }"), HasSubstr("grove does not support external functions"));
}

TEST(RelayParserExprs, CallsOfAnyExpression) {
  // TVM's test_call programs.
  const Let &curried = as<Let>(parse(R"(
        let %curried_mult =
            fn (%x) {
            fn (%y) {
                %x * %y
            }
            };
            %curried_mult(0);
            %curried_mult(0)(0)
  )"));
  const Let &seq = as<Let>(curried.body);
  const Call &outer = as<Call>(seq.body);
  EXPECT_TRUE(as<Call>(outer.op).op.same_as(curried.var));
  const Call &anon = as<Call>(parse("(fn (%x) { %x })(0)"));
  EXPECT_NE(anon.op.as<Function>(), nullptr);
  const Call &abs_call = as<Call>(parse("abs(1)"));
  EXPECT_EQ(as<Op>(abs_call.op).name, "abs");
  const Call &ten = as<Call>(parse("let %id = fn (%x) { %x };\n10 * %id(10)").as<Let>()->body);
  EXPECT_EQ(as<Op>(ten.op).name, "multiply");
  // An op alone, with a dotted name.
  EXPECT_EQ(as<Op>(parse("nn.relu")).name, "nn.relu");
  EXPECT_EQ(as<GlobalVar>(parse("@foo")).name, "foo");
}

TEST(RelayParserExprs, ExplicitTypeArguments) {
  Module m = parse_module("def @id[A](%x: A) -> A { %x }\ndef @main() { @id[int32](1) }", "t.relay");
  const Call &c = as<Call>(main_of(m).body);
  ASSERT_EQ(c.type_args.size(), 1u);
  EXPECT_EQ(c.type_args[0].as<TensorType>()->dtype, DType::Int32);
}

TEST(RelayParserExprs, IfAndBlocks) {
  const If &i = as<If>(parse("if (True) {\n  0\n} else {\n  1\n}"));
  EXPECT_EQ(as<Constant>(i.cond).data.dtype(), DType::Bool);
  EXPECT_EQ(as<Constant>(i.else_branch).data.element_as_int(0), 1);
  EXPECT_EQ(as<Constant>(parse("{ { 3 } }")).data.element_as_int(0), 3);
  EXPECT_THAT(expr_error("if (True) { 0 }"),
              HasSubstr("expected 'else' after the then-branch, found end of file"));
}

TEST(RelayParserExprs, References) {
  Module m = parse_module(R"(#[version = "0.0.5"]
    def @main(%x: float32) {
        %0 = ref(%x);
        ref_write(%0, 1f);
        ref_read(%0)
    })",
                          "ref.relay");
  const Let &seq = as<Let>(main_of(m).body);
  const RefWrite &w = as<RefWrite>(seq.value);
  const RefRead &r = as<RefRead>(seq.body);
  EXPECT_TRUE(w.ref.same_as(r.ref));
  EXPECT_TRUE(as<RefCreate>(w.ref).value.same_as(main_of(m).params[0]));
  EXPECT_THAT(expr_error("ref_write(1)"),
              HasSubstr("expected ',' between ref_write's reference and value, found ')'"));
}

TEST(RelayParserExprs, MetaConstants) {
  NDArray c0(DType::Float32, {2, 3});
  c0.data<float>()[4] = 7.0f;
  const std::vector<NDArray> meta{c0, NDArray::scalar(DType::Int64, 5)};
  Module m = parse_module("def @main(%x: Tensor[(2, 3), float32]) {\n  add(%x, meta[relay.Constant][0])\n}",
                          "m.relay", meta);
  const Constant &k = as<Constant>(as<Call>(main_of(m).body).args[1]);
  EXPECT_EQ(k.data.shape(), Shape({2, 3}));
  EXPECT_EQ(k.data.element_as_double(4), 7.0);
  EXPECT_EQ(k.span.line, 2);
  EXPECT_EQ(k.span.col, 11);
  EXPECT_THAT(
      module_error("def @main() { meta[relay.Constant][2] }", meta),
      HasSubstr("test.relay:1:15: error: meta[relay.Constant][2] is out of range: the program was given 2 "
                "constant(s)"));
  EXPECT_THAT(module_error("def @main() { meta[relay.attrs.Conv2DAttrs][0] }"),
              HasSubstr("grove does not support meta[relay.attrs.Conv2DAttrs] references"));
  EXPECT_THAT(module_error("def @main(%x: float32) { nn.relu(%x, meta[relay.attrs.ReluAttrs][0]) }"),
              HasSubstr("grove does not support meta[relay.attrs.ReluAttrs] references"));
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

TEST(RelayParserTypes, TensorTypes) {
  const TensorType &t = *let_type("Tensor[(1, 16), float32]").as<TensorType>();
  EXPECT_EQ(t.shape, Shape({1, 16}));
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(let_type("Tensor[(), float32]").as<TensorType>()->shape, Shape{});
  EXPECT_EQ(let_type("Tensor[(10), float32]").as<TensorType>()->shape, Shape({10}));
  EXPECT_EQ(let_type("Tensor[(10,), float32]").as<TensorType>()->shape, Shape({10}));
  EXPECT_EQ(let_type("Tensor[(?, 1), uint16]").as<TensorType>()->shape, Shape({kAnyDim, 1}));
  EXPECT_EQ(let_type("Tensor[(?, 1), uint16]").as<TensorType>()->dtype, DType::UInt16);
  EXPECT_EQ(let_type("Tensor[(1i64, 3), float32]").as<TensorType>()->shape, Shape({1, 3}));
  for (const char *d : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                        "float32", "float64", "bool"}) {
    const TensorType *s = let_type(d).as<TensorType>();
    ASSERT_NE(s, nullptr) << d;
    EXPECT_TRUE(s->shape.empty());
    EXPECT_EQ(to_string(s->dtype), std::string(d));
  }
}

TEST(RelayParserTypes, TupleFunctionRefIncompleteTypes) {
  EXPECT_EQ(let_type("()").as<TupleType>()->fields.size(), 0u);
  EXPECT_EQ(let_type("(int32,)").as<TupleType>()->fields.size(), 1u);
  EXPECT_NE(let_type("(int32)").as<TensorType>(), nullptr);  // parentheses group
  EXPECT_NE(let_type("(fn (int32) -> int32)").as<FuncType>(), nullptr);
  EXPECT_EQ(let_type("(int32, (float32, bool))").as<TupleType>()->fields.size(), 2u);
  const FuncType &f = *let_type("fn (int32, int32) -> int32").as<FuncType>();
  EXPECT_EQ(f.arg_types.size(), 2u);
  EXPECT_NE(f.ret_type.as<TensorType>(), nullptr);
  const FuncType &g = *let_type("fn [A](A) -> A").as<FuncType>();
  ASSERT_EQ(g.type_params.size(), 1u);
  EXPECT_TRUE(g.ret_type.same_as(g.type_params[0]));
  EXPECT_EQ(let_type("fn () -> int32").as<FuncType>()->arg_types.size(), 0u);
  EXPECT_NE(let_type("ref(float32)").as<RefType>(), nullptr);
  EXPECT_NE(let_type("_").as<IncompleteType>(), nullptr);
  // Types print back in the text format's syntax.
  EXPECT_EQ(to_string(let_type("fn (Tensor[(?, 3), float32], ref(int8)) -> (bool,)")),
            "fn (Tensor[(?, 3), float32], ref(int8)) -> (bool,)");
}

TEST(RelayParserTypes, TypeErrors) {
  EXPECT_THAT(expr_error("let %x: Tensor[(2), flot32] = (); ()"),
              HasSubstr("test.relay:1:21: error: unknown dtype 'flot32': expected bool, int8"));
  EXPECT_THAT(expr_error("let %x: int8x4 = (); ()"), HasSubstr("grove does not support the dtype 'int8x4'"));
  EXPECT_THAT(expr_error("let %x: bfloat16 = (); ()"),
              HasSubstr("grove does not support the dtype 'bfloat16'"));
  EXPECT_THAT(expr_error("let %x: Foo = (); ()"), HasSubstr("undefined type 'Foo'"));
  EXPECT_THAT(expr_error("let %x: Tensor[(n, 3), float32] = (); ()"),
              HasSubstr("grove does not support symbolic shape variables such as 'n'"));
  EXPECT_THAT(expr_error("let %x: Tensor[(-1, 3), float32] = (); ()"),
              HasSubstr("tensor dimension -1 is negative"));
  EXPECT_THAT(expr_error("let %x: Tensor[(1, 3)] = (); ()"),
              HasSubstr("expected ',' and the dtype after the shape, found ']'"));
  EXPECT_THAT(expr_error("let %x: = (); ()"), HasSubstr("expected a type, found '='"));
  EXPECT_THAT(expr_error("fn [A](%x: A[int32]) { %x }"),
              HasSubstr("type parameter A takes no type arguments"));
}

// ---------------------------------------------------------------------------------------------
// Syntax errors
// ---------------------------------------------------------------------------------------------

TEST(RelayParserErrors, ExpectedAndFound) {
  EXPECT_THAT(expr_error("let @x = 1; ()"),
              HasSubstr("expected a local variable %name after 'let', found '@x'"));
  EXPECT_THAT(expr_error("let x = 1; ()"),
              HasSubstr("expected a local variable %name after 'let', found 'x'"));
  EXPECT_THAT(expr_error("let %x = 1 2"), HasSubstr("expected ';' after the let binding's value, found '2'"));
  EXPECT_THAT(expr_error("(1, 2"), HasSubstr("expected ',' or ')' in the tuple, found end of file"));
  EXPECT_THAT(expr_error(""), HasSubstr("test.relay:1:1: error: expected an expression, found end of file"));
  EXPECT_THAT(expr_error("-%x"), HasSubstr("expected an expression, found '-'"));
  EXPECT_THAT(expr_error("1 2"), HasSubstr("expected the end of the expression, found '2'"));
  EXPECT_THAT(expr_error("{ 1; }"), HasSubstr("expected an expression, found '}'"));
  EXPECT_THAT(module_error("def main() { () }"),
              HasSubstr("expected a global name @name after 'def', found 'main'"));
  EXPECT_THAT(module_error("def @f(%x) -> { %x }"), HasSubstr("expected a type, found '{'"));
  EXPECT_THAT(module_error("def @f(%x) { match (%x) { _ -> 1 } }"),
              HasSubstr("expected '=>' after the pattern, found '->'"));
  EXPECT_THAT(module_error("def @f(%x) { match (%x) { 1 => 1 } }"),
              HasSubstr("expected a pattern (_, %var, a constructor or a tuple of patterns), found '1'"));
}

}  // namespace
}  // namespace grove::relay
