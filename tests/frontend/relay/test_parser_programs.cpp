// The Relay text format reader (Parser.h) on whole programs: modules with definitions in any order,
// ADTs and match, TVM's parser test programs (tvm:tests/python/relay/test_ir_parser.py, unchanged),
// spans, deep programs (100,000 lets or graph bindings: no recursion per binding), nesting limits,
// files with their constants sidecar, the fuzzer's seeds, and round trips through the printer.
#include <fmt/format.h>
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
#include "tests/UserError.h"
#include "tests/relay/ParserTestUtil.h"

namespace grove::relay {
namespace {

using namespace parser_test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// Modules, ADTs, match
// ---------------------------------------------------------------------------------------------

TEST(RelayParserModules, DefinitionsMayReferToEachOtherInAnyOrder) {
  Module m = parse_module(R"(#[version = "0.0.5"]
def @main(%n: int32) -> bool { @is_even(%n) }
def @is_even(%n: int32) -> bool { if (%n == 0) { True } else { @is_odd(%n - 1) } }
def @is_odd(%n: int32) -> bool { if (%n == 0) { False } else { @is_even(%n - 1) } }
)",
                          "even.relay");
  ASSERT_EQ(m.functions().size(), 3u);
  EXPECT_EQ(m.functions()[0].first, "main");
  EXPECT_EQ(m.functions()[2].first, "is_odd");
  const Call &c = as<Call>(main_of(m).body);
  EXPECT_EQ(as<GlobalVar>(c.op).name, "is_even");
  EXPECT_THAT(module_error("def @main() { @nope() }"),
              HasSubstr("test.relay:1:15: error: undefined global function @nope"));
  EXPECT_THAT(module_error("def @f() { () }\ndef @f() { () }"),
              HasSubstr("test.relay:2:5: error: @f is defined twice "
                        "(first at line 1)"));
  EXPECT_THAT(module_error("def @f() { () }\n() "), HasSubstr("expected a definition"));
  EXPECT_THAT(module_error("extern type T[A]"), HasSubstr("grove does not support extern type or function"));
  EXPECT_THAT(module_error("def @f = meta[ExternalFunc][0]"),
              HasSubstr("grove does not support 'def @f = meta[...]'"));
}

TEST(RelayParserModules, ListADT) {
  Module m = parse_module(std::string(kList) + R"(
def @make_singleton(%x: int32) -> List[int32] {
  Cons(%x, Nil)
}
)",
                          "list.relay");
  const TypeData *list = m.find_type("List");
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->type_vars.size(), 1u);
  ASSERT_EQ(list->constructors.size(), 2u);
  const Constructor &cons = as<Constructor>(list->constructors[0]);
  const Constructor &nil = as<Constructor>(list->constructors[1]);
  EXPECT_EQ(cons.name, "Cons");
  EXPECT_EQ(cons.tag, 0);
  EXPECT_EQ(nil.tag, 1);
  EXPECT_TRUE(cons.inputs[0].same_as(list->type_vars[0]));
  const TypeCall &rec = *cons.inputs[1].as<TypeCall>();
  EXPECT_TRUE(rec.func.same_as(list->header));
  EXPECT_TRUE(rec.args[0].same_as(list->type_vars[0]));
  EXPECT_TRUE(cons.belongs_to.same_as(list->header));

  const Function &f = *m.find_function("make_singleton")->as<Function>();
  const Call &call = as<Call>(f.body);
  EXPECT_TRUE(call.op.same_as(list->constructors[0]));
  // `Nil` written bare is the call Nil().
  const Call &nil_call = as<Call>(call.args[1]);
  EXPECT_TRUE(nil_call.op.same_as(list->constructors[1]));
  EXPECT_TRUE(nil_call.args.empty());
  EXPECT_TRUE(f.ret_type.as<TypeCall>()->func.same_as(list->header));
}

TEST(RelayParserModules, ADTErrorsAndForwardReferences) {
  // Constructors and types may be used before their definition.
  Module m = parse_module("def @main() -> Box { Box(1) }\ntype Box { Box(int32) }", "b.relay");
  EXPECT_NE(main_of(m).ret_type.as<GlobalTypeVar>(), nullptr);  // no params: the bare GlobalTypeVar
  EXPECT_THAT(module_error(std::string(kList) + kList),
              HasSubstr("type List is defined twice (first at line 2)"));
  EXPECT_THAT(module_error("type Ayy { Lmao }\ntype Haha { Lmao }"),
              HasSubstr("test.relay:2:13: error: constructor Lmao is defined twice (first at line 1)"));
  EXPECT_THAT(module_error(std::string(kList) + "def @f() { Cons(1) }"),
              HasSubstr("constructor Cons takes 2 argument(s), found 1"));
  EXPECT_THAT(module_error(std::string(kList) + "def @f(%x: List) { () }"),
              HasSubstr("type List takes 1 type argument(s), found 0"));
}

// TVM's test_match, for both match keywords.
TEST(RelayParserModules, MatchWithConstructorPatterns) {
  for (const std::string keyword : {"match", "match?"}) {
    Module m = parse_module(std::string(kList) + R"(
            def @length[A](%xs: List[A]) -> int32 {
              )" + keyword + R"( (%xs) {
                Cons(_, %rest : List[A]) => {
                  ();
                  1 + @length(%rest)
                },
                Nil => 0,
              }
            }
)",
                            "length.relay");
    const Function &f = *m.find_function("length")->as<Function>();
    const Match &match = as<Match>(f.body);
    EXPECT_EQ(match.complete, keyword == "match");
    EXPECT_TRUE(match.data.same_as(f.params[0]));
    ASSERT_EQ(match.clauses.size(), 2u);
    const Pattern &cons = match.clauses[0].lhs;
    EXPECT_EQ(cons->kind, PatternKind::Constructor);
    EXPECT_EQ(cons->patterns[0]->kind, PatternKind::Wildcard);
    EXPECT_EQ(cons->patterns[1]->kind, PatternKind::Var);
    const Expr rest = cons->patterns[1]->var;
    EXPECT_TRUE(rest.as<Var>()->type_annotation.as<TypeCall>()->args[0].same_as(f.type_params[0]));
    const Let &seq = as<Let>(match.clauses[0].rhs);
    const Call &add = as<Call>(seq.body);
    EXPECT_TRUE(as<Call>(add.args[1]).args[0].same_as(rest));
    EXPECT_EQ(match.clauses[1].lhs->patterns.size(), 0u);
  }
}

TEST(RelayParserModules, TupleVarAndNestedPatterns) {
  Module m = parse_module(std::string(kList) + R"(
def @f(%p: (List[int32], int32)) -> int32 {
  match (%p) {
    (Cons(%h, Cons(_, _)), %n) => %h + %n,
    (Nil(), _) => 0,
    %other => 1
  }
}
)",
                          "p.relay");
  const Match &match = as<Match>(m.find_function("f")->as<Function>()->body);
  ASSERT_EQ(match.clauses.size(), 3u);
  const Pattern &t = match.clauses[0].lhs;
  EXPECT_EQ(t->kind, PatternKind::Tuple);
  EXPECT_EQ(t->patterns[0]->patterns[1]->kind, PatternKind::Constructor);
  EXPECT_EQ(match.clauses[2].lhs->kind, PatternKind::Var);
  const Call &add = as<Call>(match.clauses[0].rhs);
  EXPECT_TRUE(add.args[0].same_as(t->patterns[0]->patterns[0]->var));

  EXPECT_THAT(module_error(std::string(kList) + "def @f(%l: List[int32]) { match (%l) { Cons(%h) => 0 } }"),
              HasSubstr("constructor Cons has 2 field(s), but this pattern gives 1"));
  EXPECT_THAT(
      module_error(std::string(kList) + "def @f(%l: List[int32]) { match (%l) { Con(%h, %t) => 0 } }"),
      HasSubstr("undefined constructor 'Con' in a pattern; to bind a variable, write '%Con'"));
  EXPECT_THAT(
      module_error(std::string(kList) + "def @f(%l: List[int32]) { match (%l) { Cons(%h, %h) => 0 } }"),
      HasSubstr("this pattern binds %h twice"));
  EXPECT_THAT(
      module_error(std::string(kList) + "def @f(%l: List[int32]) { match (%l) { Cons(%h, %t) => 0 }; %h }"),
      HasSubstr("undefined variable %h"));
}

TEST(RelayParserModules, ParseExprTakesADTsFromAModule) {
  Module m = parse_module(kList, "list.relay");
  Expr e = parse_expr("Cons(1, Nil)", "e.relay", &m);
  EXPECT_TRUE(as<Call>(e).op.same_as(m.find_type("List")->constructors[0]));
  EXPECT_THAT(expr_error("Cons(1, Nil)"), HasSubstr("grove does not support the operator 'Cons'"));
}

// TVM's test_adt_defn, test_adt_any, test_empty_adt_defn, test_multiple_type_param_defn,
// test_tuple_return_value, test_parse_if_in_binding, test_op_string_attr.
TEST(RelayParserModules, TVMTestSuitePrograms) {
  EXPECT_EQ(parse_module("type Ayy { Nil }", "t").types()[0].constructors.size(), 1u);
  EXPECT_EQ(parse_module("type Ayy { }", "t").types()[0].constructors.size(), 0u);
  Module any = parse_module("type my_dtype {\n    my_cons(Tensor[(?, 1), uint16]),\n}", "t");
  EXPECT_EQ(any.types()[0].constructors[0].as<Constructor>()->inputs[0].as<TensorType>()->shape,
            Shape({kAnyDim, 1}));
  Module either = parse_module("type Either[A, B] {\n  Left(A),\n  Right(B),\n}", "t");
  EXPECT_EQ(either.types()[0].type_vars.size(), 2u);
  EXPECT_TRUE(
      either.types()[0].constructors[1].as<Constructor>()->inputs[0].same_as(either.types()[0].type_vars[1]));

  Module box = parse_module(R"(
    type Box[T] {
        constructor(T)
    }

    def @example() {
        %0 = ();
        %1 = constructor(%0);
        %2 = constructor(0f);
        (%1, %2,)
    }
  )",
                            "t");
  EXPECT_EQ(as<Tuple>(box.find_function("example")->as<Function>()->body).fields.size(), 2u);

  Module ifb = parse_module(R"(
    def @example(%b: bool) {
        %0 = if (%b) {
            1
        } else {
            0
        };
        %0
    }
  )",
                            "t");
  EXPECT_NE(ifb.find_function("example")->as<Function>()->body.as<If>(), nullptr);

  const Call &conv = as<Call>(parse(R"(
        free_var %x: Tensor[(1, 32, 32, 3), float32];
        free_var %y: Tensor[(1, 1, 3, 3), float32];
        nn.conv2d(%x, %y, data_layout="NHWC", kernel_layout="HWIO")
  )"));
  EXPECT_EQ(*conv.attrs.find("kernel_layout"), AttrValue::of_string("HWIO"));

  // test_incomplete_type and test_function_type.
  EXPECT_NE(let_type("_").as<IncompleteType>(), nullptr);
  const Let &typed = as<Let>(parse("let %_: fn (int32) -> int32 = fn (%x: int32) -> int32 { 0 }; ()"));
  EXPECT_EQ(as<Function>(typed.value).params.size(), 1u);
}

// The style of TVM's hand-written standard library (relay/std/prelude.rly): constructors as
// function values, tuple scrutinees, parenthesized function types, a constructor named None.
TEST(RelayParserModules, PreludeStyleProgram) {
  Module m = parse_module(std::string(kList) + R"(
type Option[A] {
  Some(A),
  None,
}
def @twice[A](%f: fn(A) -> A) -> (fn(A) -> A) {
  fn (%x: A) -> A { %f(%f(%x)) }
}
def @pairs[A, B](%xs: List[A], %ys: List[B]) -> List[(A, B)] {
  match(%xs, %ys) {
    (Cons(%x, %xr), Cons(%y, %yr)) => Cons((%x, %y), @pairs(%xr, %yr)),
    _ => Nil,
  }
}
def @first[A](%xs: List[A]) -> Option[A] {
  match (%xs) {
    Cons(%x, _) => Some(%x),
    Nil => None,
  }
}
def @apply_all(%fs: List[fn(int32) -> int32]) -> List[fn(int32) -> int32] {
  @pairs(%fs, Cons(@twice, Nil));
  Cons(@twice[int32](fn (%i: int32) { %i * 2 }), %fs)
}
)",
                          "prelude.relay");
  EXPECT_NE(m.find_function("twice")->as<Function>()->ret_type.as<FuncType>(), nullptr);
  const Match &zip = as<Match>(m.find_function("pairs")->as<Function>()->body);
  EXPECT_EQ(as<Tuple>(zip.data).fields.size(), 2u);
  const Match &first = as<Match>(m.find_function("first")->as<Function>()->body);
  EXPECT_EQ(as<Constructor>(as<Call>(first.clauses[1].rhs).op).name, "None");
}

// A TVM-printed module: fused primitive functions, graph bindings, /* ty=... */ comments.
TEST(RelayParserModules, TVMPrintedFusedModule) {
  Module m = parse_module(R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 16), float32] /* ty=Tensor[(1, 16), float32] */, %w: Tensor[(8, 16), float32]) -> Tensor[(1, 8), float32] {
  %1 = fn (%p0: Tensor[(1, 16), float32], %p1: Tensor[(8, 16), float32], Primitive=1) -> Tensor[(1, 8), float32] {
    %0 = nn.dense(%p0, %p1, units=None) /* ty=Tensor[(1, 8), float32] */;
    nn.relu(%0) /* ty=Tensor[(1, 8), float32] */
  } /* ty=fn (Tensor[(1, 16), float32], Tensor[(8, 16), float32]) -> Tensor[(1, 8), float32] */;
  %1(%data, %w) /* ty=Tensor[(1, 8), float32] */
}
)",
                          "fused.relay");
  const Call &call = as<Call>(main_of(m).body);
  const Function &fused = as<Function>(call.op);
  EXPECT_EQ(*fused.attrs.find("Primitive"), AttrValue::of_int(1));
  EXPECT_EQ(as<Op>(as<Call>(fused.body).op).name, "nn.relu");
  EXPECT_EQ(fused.span.line, 3);
  EXPECT_EQ(fused.span.col, 8);
}

// ---------------------------------------------------------------------------------------------
// Spans
// ---------------------------------------------------------------------------------------------

TEST(RelayParserSpans, EveryNodeCarriesFileLineAndColumn) {
  Module m = parse_module("def @main(%x: float32) {\n  let %y = add(%x, 1f);\n  (%y, %y.0)\n}", "span.relay");
  const Function &f = main_of(m);
  EXPECT_EQ(*f.span.file, "span.relay");
  EXPECT_EQ(f.span.line, 1);
  EXPECT_EQ(f.span.col, 1);
  EXPECT_EQ(f.params[0]->span.col, 11);
  const Let &let = as<Let>(f.body);
  EXPECT_EQ(let.span.line, 2);
  EXPECT_EQ(let.span.col, 3);
  EXPECT_EQ(let.var->span.col, 7);
  const Call &add = as<Call>(let.value);
  EXPECT_EQ(add.span.col, 12);
  EXPECT_EQ(add.op->span.col, 12);
  EXPECT_EQ(add.args[1]->span.col, 20);
  const Tuple &t = as<Tuple>(let.body);
  EXPECT_EQ(t.span.line, 3);
  EXPECT_EQ(t.span.col, 3);
  EXPECT_EQ(t.fields[1]->span.col, 10);  // the '.' of %y.0
  EXPECT_EQ(to_string(t.span), "span.relay:3:3");
}

// ---------------------------------------------------------------------------------------------
// Deep programs and nesting limits
// ---------------------------------------------------------------------------------------------

TEST(RelayParserDeep, HundredThousandLets) {
  constexpr int kN = 100000;
  std::string text = "def @main(%x0: float32) -> float32 {\n";
  for (int i = 1; i <= kN; ++i) text += fmt::format("  let %x{} = add(%x{}, 1f);\n", i, i - 1);
  text += "  %x" + std::to_string(kN) + "\n}\n";
  Module m = parse_module(text, "deep.relay");
  Expr e = main_of(m).body;
  int n = 0;
  while (const Let *let = e.as<Let>()) {
    ++n;
    e = let->body;
  }
  EXPECT_EQ(n, kN);
  EXPECT_EQ(as<Var>(e).name_hint, "x100000");
}

TEST(RelayParserDeep, HundredThousandGraphBindings) {
  constexpr int kN = 100000;
  std::string text = "free_var %x: float32;\n%0 = add(%x, 1f);\n";
  for (int i = 1; i < kN; ++i) text += fmt::format("%{} = add(%{}, 1f);\n", i, i - 1);
  text += fmt::format("%{}\n", kN - 1);
  Module m = parse_module(text, "graph.relay");
  Expr e = main_of(m).body;
  int n = 0;
  while (const Call *c = e.as<Call>()) {
    ++n;
    e = c->args[0];
  }
  EXPECT_EQ(n, kN);
  EXPECT_TRUE(e.same_as(main_of(m).params[0]));
}

TEST(RelayParserDeep, LongOperatorChainsAndSequences) {
  std::string sum = "1";
  for (int i = 0; i < 100000; ++i) sum += " + 1";
  EXPECT_EQ(as<Op>(as<Call>(parse(sum)).op).name, "add");
  std::string seq;
  for (int i = 0; i < 100000; ++i) seq += "(); let %a = 1; ";
  seq += "()";
  EXPECT_NE(parse(seq).as<Let>(), nullptr);
}

TEST(RelayParserDeep, NestingBeyondTheLimitIsAnError) {
  std::string parens(1000, '(');
  parens += "1" + std::string(1000, ')');
  EXPECT_THAT(expr_error(parens), HasSubstr("expression nested too deeply (more than 500 levels)"));
  std::string calls;
  for (int i = 0; i < 1000; ++i) calls += "abs(";
  calls += "1" + std::string(1000, ')');
  EXPECT_THAT(expr_error(calls), HasSubstr("expression nested too deeply"));
  std::string fns;
  for (int i = 0; i < 1000; ++i) fns += "fn () { ";
  fns += "1" + std::string(1000, '}');
  EXPECT_THAT(expr_error(fns), HasSubstr("expression nested too deeply"));
  std::string types = "let %x: " + std::string(1000, '(') + std::string(1000, ')') + " = (); ()";
  EXPECT_THAT(expr_error(types), HasSubstr("expression nested too deeply"));
  std::string matches;
  for (int i = 0; i < 1000; ++i) matches += "match ";
  EXPECT_THAT(expr_error(matches), HasSubstr("expression nested too deeply"));
  // 400 levels are fine.
  std::string ok(400, '(');
  ok += "1" + std::string(400, ')');
  EXPECT_EQ(as<Constant>(parse(ok)).data.element_as_int(0), 1);
}

// ---------------------------------------------------------------------------------------------
// Files and the constants sidecar
// ---------------------------------------------------------------------------------------------

TEST(RelayParserFiles, MetaPathReplacesTheExtension) {
  EXPECT_EQ(meta_path("prog.relay"), "prog.meta.safetensors");
  EXPECT_EQ(meta_path("dir.v2/model.txt"), "dir.v2/model.meta.safetensors");
  EXPECT_EQ(meta_path("noext"), "noext.meta.safetensors");
}

class RelayParserFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("grove_relay_parser_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string &name, const std::string &text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string file_error(const std::string &path) {
    return grove::testing::user_error_of([&] { parse_relay_file(path); });
  }
  std::filesystem::path dir_;
};

TEST_F(RelayParserFileTest, ReadsConstantsFromTheSidecar) {
  const std::string path =
      write("prog.relay",
            "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(3), float32]) {\n"
            "  multiply(add(%x, meta[relay.Constant][0]), meta[relay.Constant][1])\n}\n");
  NDArray c0(DType::Float32, {3});
  c0.data<float>()[2] = 2.5f;
  write_meta_constants(meta_path(path), {c0, NDArray::scalar(DType::Float32, 4.0)});
  Module m = parse_relay_file(path);
  const Call &mul = as<Call>(main_of(m).body);
  EXPECT_EQ(as<Constant>(as<Call>(mul.args[0]).args[1]).data.element_as_double(2), 2.5);
  EXPECT_EQ(as<Constant>(mul.args[1]).data.element_as_double(0), 4.0);
  EXPECT_EQ(*main_of(m).span.file, path);
}

TEST_F(RelayParserFileTest, MissingOrShortSidecarIsAnError) {
  const std::string path = write("prog.relay", "def @main() {\n  meta[relay.Constant][1]\n}\n");
  const std::string sidecar = meta_path(path);
  EXPECT_THAT(file_error(path),
              HasSubstr(path + ":2:3: error: meta[relay.Constant][1] needs the constants sidecar '" +
                        sidecar + "', which does not exist"));
  write_meta_constants(sidecar, {NDArray::scalar(DType::Float32, 1.0)});
  EXPECT_THAT(file_error(path),
              HasSubstr(path + ":2:3: error: meta[relay.Constant][1] is out of range: the sidecar '" +
                        sidecar + "' holds 1 constant(s)"));
  // A program without meta references needs no sidecar.
  const std::string plain = write("plain.relay", "def @main() { 1f }");
  EXPECT_NO_THROW(parse_relay_file(plain));
  EXPECT_THAT(file_error((dir_ / "absent.relay").string()), HasSubstr("cannot read Relay file"));
}

// The fuzzer's seed programs are valid programs (the error_* ones aside).
TEST(RelayParserFiles, SeedCorpusParses) {
  int parsed = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(std::string(GROVE_SOURCE_DIR) + "/fuzz/corpus/relay")) {
    if (entry.path().filename().string().rfind("error_", 0) == 0) continue;
    EXPECT_NO_THROW(parse_relay_file(entry.path().string())) << entry.path();
    ++parsed;
  }
  EXPECT_GE(parsed, 12);
  EXPECT_THAT(grove::testing::user_error_of([] {
                parse_relay_file(std::string(GROVE_SOURCE_DIR) + "/fuzz/corpus/relay/error_meta.relay");
              }),
              HasSubstr("error_meta.relay:2:11: error: meta[relay.Constant][0] needs the constants sidecar"));
}

// ---------------------------------------------------------------------------------------------
// Round trips through the printer (Printer.h): parse, print, parse again, structurally equal
// ---------------------------------------------------------------------------------------------

void expect_round_trip(const Module &m, const std::string &what) {
  const PrintedModule printed = print_module(m);
  Module again = parse_module(printed.text, "printed.relay", printed.meta);
  const EqualResult eq = structural_equal(m, again);
  EXPECT_TRUE(eq.equal) << what << ": differs at " << eq.path << ": " << eq.lhs << " vs " << eq.rhs << "\n"
                        << printed.text;
  EXPECT_EQ(print_module(again).text, printed.text) << what;
}

TEST(RelayParserRoundTrip, SeedProgramsSurvivePrintAndParse) {
  for (const auto &entry :
       std::filesystem::directory_iterator(std::string(GROVE_SOURCE_DIR) + "/fuzz/corpus/relay")) {
    if (entry.path().filename().string().rfind("error_", 0) == 0) continue;
    expect_round_trip(parse_relay_file(entry.path().string()), entry.path().filename().string());
  }
}

TEST(RelayParserRoundTrip, ConstantsLetsAndSharing) {
  NDArray c(DType::Float32, {2, 2});
  c.data<float>()[3] = 1.5f;
  Module m = parse_module(R"(
def @main(%x: Tensor[(2, 2), float32], %i: int64) {
  %0 = add(%x, meta[relay.Constant][0]);
  let %y = (%0, %0, -7i64, 255u8, True, 0.1f, 1e-05f, 2f64);
  let %f = fn (%a, Primitive=1) { %a };
  (%y.0, %f(%i), %0)
}
)",
                          "c.relay", {c});
  expect_round_trip(m, "constants");
}

}  // namespace
}  // namespace grove::relay
