// Every error of the PTB tree reader and of vocabulary files, matched on its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

std::string tree_error(const std::string &text, const Vocab *vocab = nullptr) {
  return user_error_of([&] { read_ptb_tree_text(text, vocab, "t.txt"); });
}

std::string vocab_error(const std::string &text) {
  return user_error_of([&] { Vocab::parse(text, "v.txt"); });
}

TEST(PtbReaderErrors, EmptyFileAndEmptyLines) {
  EXPECT_EQ(tree_error(""),
            "t.txt: the file is empty; expected one tree per line such as '(3 (2 It) (4 good))'");
  EXPECT_EQ(tree_error("\n"),
            "t.txt:1: empty line; expected one tree per line such as '(3 (2 It) (4 good))'");
  EXPECT_THAT(tree_error("(0 1)\n\n(0 2)\n"), HasSubstr("t.txt:2: empty line"));
  EXPECT_THAT(tree_error("(0 1)\n\n"), HasSubstr("t.txt:2: empty line"));
  EXPECT_THAT(user_error_of([] { parse_ptb_tree("", nullptr, "f.txt", 7); }),
              HasSubstr("f.txt:7: empty line"));
}

TEST(PtbReaderErrors, ExpectedOpen) {
  EXPECT_EQ(tree_error("x (0 1)"), "t.txt:1:1: expected '(' to start a tree, found 'x'");
  EXPECT_EQ(tree_error("(0 1)\n)"), "t.txt:2:1: expected '(' to start a tree, found ')'");
  EXPECT_EQ(tree_error("   "), "t.txt:1:4: expected '(' to start a tree, found end of line");
}

TEST(PtbReaderErrors, EmptyNode) {
  EXPECT_EQ(tree_error("(0 ())"),
            "t.txt:1:4: empty node '()'; expected '(label token)' or '(label child...)'");
  EXPECT_THAT(tree_error("()"), HasSubstr("t.txt:1:1: empty node '()'"));
}

TEST(PtbReaderErrors, NodeWithoutLabel) {
  EXPECT_EQ(tree_error("((0 1))"), "t.txt:1:2: the node has no label: expected a label after '(', found '('");
}

TEST(PtbReaderErrors, LabelWithoutTokenOrChildren) {
  EXPECT_EQ(tree_error("(0 (1) (2 3))"),
            "t.txt:1:4: node '(1)' has a label but no token or children; expected '(label token)' or "
            "'(label child...)'");
}

TEST(PtbReaderErrors, MissingClose) {
  EXPECT_EQ(tree_error("(0 (1 2) (1 3)"),
            "t.txt:1:15: missing ')': expected ')' to close the node opened at column 1, found end of line");
  EXPECT_THAT(tree_error("(0 1)\n(0 (1 2"),
              HasSubstr("t.txt:2:8: missing ')': expected ')' to close the node "
                        "opened at column 4"));
  EXPECT_THAT(tree_error("(0 (1 "), HasSubstr("t.txt:1:7: missing ')'"));
  EXPECT_THAT(tree_error("(0"), HasSubstr("t.txt:1:3: missing ')'"));
}

TEST(PtbReaderErrors, MissingCloseOnAMillionOpenNodes) {
  std::string line;
  for (int i = 0; i < 1000000; ++i) line += "(0 ";
  EXPECT_THAT(tree_error(line),
              HasSubstr("t.txt:1:3000001: missing ')': expected ')' to close the node opened "
                        "at column 2999998"));
}

TEST(PtbReaderErrors, TokenNotFollowedByClose) {
  EXPECT_EQ(tree_error("(0 1 2)"),
            "t.txt:1:6: expected ')' after the token '1', found '2'; a leaf is '(label token)'");
  EXPECT_THAT(tree_error("(0 1 (1 2))"), HasSubstr("t.txt:1:6: expected ')' after the token '1', found '('"));
}

TEST(PtbReaderErrors, TokenAfterChildren) {
  EXPECT_EQ(tree_error("(0 (1 2) 3)"),
            "t.txt:1:10: expected '(' or ')' after a child node, found the token '3'; a node has either one "
            "token or child nodes, not both");
}

TEST(PtbReaderErrors, TrailingText) {
  EXPECT_EQ(tree_error("(0 1))"),
            "t.txt:1:6: unexpected ')' after the end of the tree; expected one tree per line");
  EXPECT_THAT(tree_error("(0 1) (0 2)"), HasSubstr("t.txt:1:7: unexpected '(' after the end of the tree"));
  EXPECT_THAT(tree_error("(0 1) x"), HasSubstr("t.txt:1:7: unexpected 'x' after the end of the tree"));
}

TEST(PtbReaderErrors, ControlCharacters) {
  EXPECT_EQ(tree_error("(0 1)\r\n(0 2)\r\n"),
            "t.txt:1:6: carriage return (CR) in the line; tree files must use LF line endings");
  EXPECT_EQ(tree_error("(0\t1)"), "t.txt:1:3: unexpected control character 0x09; expected printable text");
  EXPECT_THAT(tree_error("(0 a\x7f)"), HasSubstr("t.txt:1:5: unexpected control character 0x7F"));
}

TEST(PtbReaderErrors, UnknownTokenWithoutUnk) {
  Vocab vocab = Vocab::parse("It\ngood\n", "v.txt");
  EXPECT_EQ(tree_error("(0 (1 It) (1 bad))", &vocab),
            "t.txt:1:14: token 'bad' is not in the vocabulary 'v.txt', which has no '<unk>' line");
  // Columns count characters, not bytes.
  EXPECT_THAT(tree_error("(0 (1 It) (1 \xc3\xa9t\xc3\xa9) (1 bad))", &vocab),
              HasSubstr("t.txt:1:14: token '\xc3\xa9t\xc3\xa9' is not in the vocabulary"));
}

TEST(PtbReaderErrors, NonIntegerTokenWithoutVocabulary) {
  const std::string expected_tail =
      "is not an integer id; without a vocabulary, tokens must be integers in [0, 2147483647]";
  EXPECT_EQ(tree_error("(0 (1 x1))"), "t.txt:1:7: token 'x1' " + expected_tail);
  EXPECT_THAT(tree_error("(0 -1)"), HasSubstr("t.txt:1:4: token '-1' is not an integer id"));
  EXPECT_THAT(tree_error("(0 +1)"), HasSubstr("token '+1' is not an integer id"));
  EXPECT_THAT(tree_error("(0 1.5)"), HasSubstr("token '1.5' is not an integer id"));
  EXPECT_THAT(tree_error("(0 2147483648)"), HasSubstr("token '2147483648' is not an integer id"));
  EXPECT_THAT(tree_error("(0 8\u00a01\\/2)"), HasSubstr("token '8\u00a01\\/2' is not an integer id"));
}

TEST(PtbReaderErrors, InvalidUtf8) {
  EXPECT_EQ(tree_error("(0 1)\n(0 \xff)\n"),
            "t.txt:2:4: invalid UTF-8: byte 0xFF at byte offset 9 of the file; the text must be UTF-8");
  EXPECT_EQ(user_error_of([] { parse_ptb_tree("(0 (0 \xc3\xa9) (0 \xc3))", nullptr, "f.txt", 3); }),
            "f.txt:3:13: invalid UTF-8: byte 0xC3 at byte offset 13 of the line; the text must be UTF-8");
  EXPECT_THAT(tree_error("(0 \xed\xa0\x80)"),
              HasSubstr("t.txt:1:4: invalid UTF-8: byte 0xED at byte offset 3"));
}

TEST(PtbReaderErrors, UnreadableFile) {
  EXPECT_EQ(user_error_of([] { read_ptb_trees("/nonexistent/trees.txt", nullptr); }),
            "cannot read tree file '/nonexistent/trees.txt': No such file or directory");
  grove::testing::TempDir dir;
  EXPECT_THAT(user_error_of([&] { read_ptb_trees(dir.file(""), nullptr); }), HasSubstr("it is a directory"));
  std::string empty = dir.file("empty.txt");
  grove::testing::write_bytes(empty, "");
  EXPECT_EQ(user_error_of([&] { read_ptb_trees(empty, nullptr); }),
            empty + ": the file is empty; expected one tree per line such as '(3 (2 It) (4 good))'");
}

TEST(VocabErrors, UnreadableFile) {
  EXPECT_EQ(user_error_of([] { Vocab::load("/nonexistent/vocab.txt"); }),
            "cannot read vocabulary file '/nonexistent/vocab.txt': No such file or directory");
}

TEST(VocabErrors, EmptyFileAndLines) {
  EXPECT_EQ(vocab_error(""), "v.txt: the vocabulary file is empty; expected one token per line");
  EXPECT_EQ(vocab_error("\n"), "v.txt:1: empty line in the vocabulary; expected one token per line");
  EXPECT_THAT(vocab_error("a\n\nb\n"), HasSubstr("v.txt:2: empty line in the vocabulary"));
  EXPECT_THAT(vocab_error("a\nb\n\n"), HasSubstr("v.txt:3: empty line in the vocabulary"));
}

TEST(VocabErrors, DuplicateToken) {
  EXPECT_EQ(vocab_error("a\nb\nc\nb\n"), "v.txt:4: token 'b' is also on line 2; each token must appear once");
}

TEST(VocabErrors, CarriageReturn) {
  EXPECT_EQ(vocab_error("ab\r\nc\r\n"),
            "v.txt:1:3: carriage return (CR) in the vocabulary; the file must use LF line endings");
}

TEST(VocabErrors, SpacesAndParentheses) {
  EXPECT_EQ(
      vocab_error("ok\na b\n"),
      "v.txt:2:2: token 'a b' contains an ASCII space; tokens cannot contain ASCII spaces or parentheses, "
      "because the tree reader splits on them");
  EXPECT_THAT(vocab_error("-LRB-\n(\n"), HasSubstr("v.txt:2:1: token '(' contains '('"));
  EXPECT_THAT(vocab_error("x)\n"), HasSubstr("v.txt:1:2: token 'x)' contains ')'"));
}

TEST(VocabErrors, ControlCharacter) {
  EXPECT_EQ(vocab_error("a\tb\n"),
            "v.txt:1:2: control character 0x09 in token 'a\tb'; expected printable text");
}

TEST(VocabErrors, InvalidUtf8) {
  EXPECT_EQ(vocab_error("a\n\xc3\xa9\xff\n"),
            "v.txt:2:2: invalid UTF-8: byte 0xFF at byte offset 4 of the file; the text must be UTF-8");
}

}  // namespace
}  // namespace grove
