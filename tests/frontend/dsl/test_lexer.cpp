// The lexer: token kinds, locations, glued size coefficients, comments, and its two errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/dsl/Lexer.h"
#include "tests/UserError.h"

namespace grove::dsl {
namespace {

using ::testing::HasSubstr;

std::vector<Token> lex_text(const std::string &text) { return lex(SourceFile("t.grove", text)); }

std::string lex_error(const std::string &text) {
  return grove::testing::user_error_of([&] { lex_text(text); });
}

TEST(Lexer, KeywordsNamesNumbersAndPunctuation) {
  auto tokens = lex_text("param W_iou [3H, D]\nx = a @ b[left] # comment\n");
  std::vector<Tok> kinds;
  for (const Token &t : tokens) kinds.push_back(t.kind);
  EXPECT_EQ(kinds,
            (std::vector<Tok>{Tok::Param, Tok::Ident, Tok::LBracket, Tok::Number, Tok::Ident, Tok::Comma,
                              Tok::Ident, Tok::RBracket, Tok::Ident, Tok::Assign, Tok::Ident, Tok::At,
                              Tok::Ident, Tok::LBracket, Tok::Left, Tok::RBracket, Tok::End}));
  EXPECT_EQ(tokens[1].text, "W_iou");
  EXPECT_EQ(tokens[8].loc.line, 2);
  EXPECT_EQ(tokens[8].loc.col, 1);
  EXPECT_EQ(tokens[11].loc.col, 7);
}

TEST(Lexer, SizeCoefficientIsGluedToItsVariable) {
  auto tokens = lex_text("3H 3 H");
  EXPECT_EQ(tokens[0].integer, 3);
  EXPECT_TRUE(tokens[0].is_integer);
  EXPECT_TRUE(tokens[1].glued);
  EXPECT_FALSE(tokens[3].glued);
}

TEST(Lexer, Numbers) {
  auto tokens = lex_text("12 0.5 1e-3 .25 2E2");
  EXPECT_TRUE(tokens[0].is_integer);
  EXPECT_EQ(tokens[0].integer, 12);
  EXPECT_FALSE(tokens[1].is_integer);
  EXPECT_DOUBLE_EQ(tokens[1].number, 0.5);
  EXPECT_DOUBLE_EQ(tokens[2].number, 1e-3);
  EXPECT_DOUBLE_EQ(tokens[3].number, 0.25);
  EXPECT_DOUBLE_EQ(tokens[4].number, 200);
}

TEST(Lexer, BadCharacterSaysWhereAndWhatIsExpected) {
  std::string message = lex_error("model M\nx = a $ b\n");
  EXPECT_THAT(message, HasSubstr("t.grove:2:7: error: unexpected character '$'"));
  EXPECT_THAT(message, HasSubstr("expected a name, a number or one of"));
  EXPECT_THAT(message, HasSubstr("\nx = a $ b\n      ^"));
}

TEST(Lexer, BadNumber) {
  EXPECT_THAT(lex_error("x = 1e+ y"), HasSubstr("t.grove:1:5: error: malformed number '1e+'"));
  EXPECT_THAT(lex_error("x = 1.2.3"), HasSubstr("t.grove:1:5: error: malformed number '1.2.3'"));
  EXPECT_THAT(lex_error("x = 1."),
              HasSubstr("malformed number '1.': expected digits such as 12, 0.5 or 1e-3"));
  EXPECT_THAT(lex_error("x [99999999999999999999]"),
              HasSubstr("1:4: error: number '99999999999999999999' is too large"));
}

TEST(Lexer, CaretLinesUpUnderTabs) {
  std::string message = lex_error("\tx = ?");
  EXPECT_THAT(message, HasSubstr("t.grove:1:6: error"));
  EXPECT_THAT(message, HasSubstr("\n\tx = ?\n\t    ^"));
}

}  // namespace
}  // namespace grove::dsl
