// The parser: declarations, precedence, postfix indexing, sum(k in children), and syntax errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/dsl/Parser.h"
#include "tests/UserError.h"

namespace grove::dsl {
namespace {

using ::testing::HasSubstr;

ModelAst parse_text(const std::string &text) {
  SourceFile source("p.grove", text);
  return parse(source, lex(source));
}

std::string parse_error(const std::string &text) {
  return grove::testing::user_error_of([&] { parse_text(text); });
}

// The tree as an s-expression, so that tests state the expected structure in one line.
std::string sexpr(const ExprAst &e) {
  auto operands = [&e] {
    std::string s;
    for (const ExprPtr &operand : e.operands) {
      s += ' ';
      s += sexpr(*operand);
    }
    return s;
  };
  switch (e.kind) {
    case ExprAstKind::Number:
      return fmt::format("{}", e.number);
    case ExprAstKind::Name:
      return e.name;
    case ExprAstKind::Neg:
      return "(neg" + operands() + ")";
    case ExprAstKind::Call:
      return fmt::format("(call{})", operands());
    case ExprAstKind::Binary:
      return fmt::format("({}{})", to_string(e.op), operands());
    case ExprAstKind::Concat:
      return "(concat" + operands() + ")";
    case ExprAstKind::Slice:
      return fmt::format("(slice{} {} {})", operands(), e.lo.value.to_string(), e.hi.value.to_string());
    case ExprAstKind::Token:
      return e.name + "[token]";
    case ExprAstKind::Child:
      return e.name + "[" +
             (e.slot == ChildSlot::Left    ? "left"
              : e.slot == ChildSlot::Right ? "right"
                                           : e.child_var) +
             "]";
    case ExprAstKind::SumChildren:
      return "(sum " + e.name + operands() + ")";
  }
  return "?";
}

// The expression of the first statement of `leaf { x = <expr> }`.
std::string parse_expression(const std::string &expr) {
  ModelAst model = parse_text("model M\nleaf {\n  x = " + expr + "\n}\n");
  return sexpr(*model.leaf->body.at(0).value);
}

TEST(Parser, Declarations) {
  ModelAst model = parse_text(
      "model TreeFC\nstructure binary_tree\nparam W [H, 2H+1]\nstate h [H]\n"
      "leaf { h = emb[token] }\ninternal { h = h[left] }\noutput h\n");
  EXPECT_EQ(model.name, "TreeFC");
  EXPECT_EQ(model.structure, ilir::StructureKind::BinaryTree);
  ASSERT_EQ(model.tensors.size(), 2u);
  EXPECT_EQ(model.tensors[0].name, "W");
  EXPECT_EQ(model.tensors[0].kind, ilir::TensorKind::Param);
  EXPECT_EQ(model.tensors[0].dims[1].value, Size::variable("H", 2) + Size::constant(1));
  EXPECT_EQ(model.tensors[1].kind, ilir::TensorKind::State);
  EXPECT_EQ(model.output, "h");
  EXPECT_EQ(model.output_loc.line, 7);
  EXPECT_EQ(model.internal->body.at(0).target, "h");
  EXPECT_EQ(parse_text("model M structure tree").structure, ilir::StructureKind::Tree);
}

TEST(Parser, SizesAreLinearForms) {
  ModelAst model = parse_text("model M param A [3H, 2*D, H+H-1, 4]");
  const std::vector<SizeAst> &dims = model.tensors[0].dims;
  EXPECT_EQ(dims[0].value, Size::variable("H", 3));
  EXPECT_EQ(dims[1].value, Size::variable("D", 2));
  EXPECT_EQ(dims[2].value, Size::variable("H", 2) - Size::constant(1));
  EXPECT_EQ(dims[3].value, Size::constant(4));
  EXPECT_EQ(dims[2].vars.size(), 2u);
  EXPECT_EQ(dims[2].vars[1].second.col, 29);
}

TEST(Parser, PrecedenceLoosestFirstAddThenMulThenNegThenPostfix) {
  EXPECT_EQ(parse_expression("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(parse_expression("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(parse_expression("W @ x + b"), "(+ (@ W x) b)");
  EXPECT_EQ(parse_expression("A @ B @ x"), "(@ (@ A B) x)");
  EXPECT_EQ(parse_expression("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(parse_expression("-a[0:H]"), "(neg (slice a 0 H))");
  EXPECT_EQ(parse_expression("(a + b) / 2"), "(/ (+ a b) 2)");
  EXPECT_EQ(parse_expression("sigmoid(W @ x)[H:2H]"), "(slice (call (@ W x)) H 2H)");
}

TEST(Parser, IndexingAndConcatenation) {
  EXPECT_EQ(parse_expression("[h[left]; h[right]]"), "(concat h[left] h[right])");
  EXPECT_EQ(parse_expression("emb[token]"), "emb[token]");
  EXPECT_EQ(parse_expression("[a; b; c][H:3H]"), "(slice (concat a b c) H 3H)");
  EXPECT_EQ(parse_expression("P[right] @ p[left]"), "(@ P[right] p[left])");
}

TEST(Parser, SumBodyExtendsAsFarRightAsPossible) {
  EXPECT_EQ(parse_expression("a + sum(k in children) f * c[k] + d"), "(+ a (sum k (+ (* f c[k]) d)))");
  EXPECT_EQ(parse_expression("(sum(k in children) h[k]) + d"), "(+ (sum k h[k]) d)");
}

TEST(Parser, StatementsNeedNoSeparator) {
  ModelAst model = parse_text("model M leaf { a = x b = -y c = [a; b] }");
  ASSERT_EQ(model.leaf->body.size(), 3u);
  EXPECT_EQ(sexpr(*model.leaf->body[1].value), "(neg y)");
}

TEST(Parser, SyntaxErrorsSayWhatWasExpected) {
  EXPECT_THAT(parse_error("model M\nparam W [H, D\nstate h [H]"),
              HasSubstr("p.grove:3:1: error: expected ']' after the dimensions of 'W', found 'state'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x = (a + b\n}"),
              HasSubstr("p.grove:4:1: error: expected ')' to close '(', found '}'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x = [a; b\n}"),
              HasSubstr("p.grove:4:1: error: expected ']' after the parts of '[a; b]', found '}'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x = a[0:H\n}"),
              HasSubstr("p.grove:4:1: error: expected ']' to close '[', found '}'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x a\n}"),
              HasSubstr("p.grove:3:5: error: expected '=' after 'x', found 'a'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x = a +\n}"),
              HasSubstr("p.grove:4:1: error: expected an expression here, found '}'"));
  EXPECT_THAT(parse_error("model M\nleaf {\n  x = a\n"),
              HasSubstr("p.grove:4:1: error: expected a statement 'name = expression' or '}' in the leaf "
                        "case, found end of file"));
  EXPECT_THAT(
      parse_error("model M\nleaf { x = a[0 H] }"),
      HasSubstr("p.grove:2:16: error: expected ':' between the bounds of a slice 'lo:hi', found 'H'"));
  EXPECT_THAT(parse_error("model M\nleaf { x = sum(k in kids) h[k] }"),
              HasSubstr("p.grove:2:21: error: expected 'children' in 'sum(k in children)', found 'kids'"));
  EXPECT_THAT(parse_error("model\n"),
              HasSubstr("p.grove:2:1: error: expected a name after 'model', found end of file"));
}

TEST(Parser, ModelMustComeFirst) {
  EXPECT_THAT(
      parse_error("# comment\nstructure tree\n"),
      HasSubstr("p.grove:2:1: error: expected 'model NAME' at the start of the file, found 'structure'"));
}

TEST(Parser, UnknownDeclarationKeyword) {
  EXPECT_THAT(
      parse_error("model M\nweight W [H]\n"),
      HasSubstr("p.grove:2:1: error: expected a declaration (structure, param, state, leaf, internal, "
                "node, output or schedule), found 'weight'"));
}

TEST(Parser, UnknownStructure) {
  EXPECT_THAT(parse_error("model M\nstructure graph\n"),
              HasSubstr("p.grove:2:11: error: unknown structure 'graph': expected binary_tree, tree, dag or "
                        "sequence"));
}

TEST(Parser, SectionsAppearOnce) {
  EXPECT_THAT(
      parse_error("model M\nleaf { }\nleaf { }\n"),
      HasSubstr("p.grove:3:1: error: second 'leaf' section (the first is at line 2); expected exactly one"));
  EXPECT_THAT(parse_error("model M\nstructure tree\nstructure tree\n"),
              HasSubstr("3:1: error: second 'structure' section"));
  EXPECT_THAT(parse_error("model M\noutput h\noutput c\n"), HasSubstr("3:1: error: second 'output' section"));
  EXPECT_THAT(parse_error("model M\nmodel N\n"),
              HasSubstr("2:1: error: second 'model' section (the first is at line 1)"));
}

TEST(Parser, SizeErrors) {
  EXPECT_THAT(parse_error("model M\nparam W [H*D]\n"),
              HasSubstr("p.grove:2:12: error: size expression is not linear: 'H' times 'D'; expected sums of "
                        "terms like 3H"));
  EXPECT_THAT(parse_error("model M\nparam W [1.5H]\n"),
              HasSubstr("p.grove:2:10: error: size coefficient '1.5' must be a whole number"));
  EXPECT_THAT(
      parse_error("model M\nparam W [H, ]\n"),
      HasSubstr(
          "p.grove:2:13: error: expected a size such as H, 3H, 2 or H+1 as a dimension of 'W', found ']'"));
}

TEST(Parser, IndexErrors) {
  EXPECT_THAT(parse_error("model M\nleaf { x = a[+] }"),
              HasSubstr("p.grove:2:14: error: expected 'lo:hi', 'token', 'left', 'right', 'pred0', 'pred1', "
                        "'prev' or a children variable inside '[ ]', found '+'"));
  EXPECT_THAT(parse_error("model M\nleaf { x = (a + b)[left] }"),
              HasSubstr("p.grove:2:19: error: '[left]' must follow a tensor name, as in h[left]"));
}

TEST(Parser, UnknownFunction) {
  EXPECT_THAT(
      parse_error("model M\nleaf { x = softmax(a) }"),
      HasSubstr("p.grove:2:12: error: unknown function 'softmax': expected sigmoid, tanh, exp or relu"));
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "model M\nleaf { x = " + std::string(5000, '(') + "a" + std::string(5000, ')') + " }";
  EXPECT_THAT(parse_error(deep), HasSubstr("error: expression nested too deeply (more than 100 levels)"));
  std::string negs = "model M\nleaf { x = " + std::string(5000, '-') + "a }";
  EXPECT_THAT(parse_error(negs), HasSubstr("error: expression nested too deeply"));
}

}  // namespace
}  // namespace grove::dsl
