// The PTB tree reader and vocabularies: tree shapes in post-order, token lookup, the SST test split.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "tests/TestFiles.h"

namespace grove {
namespace {

using ::testing::ElementsAre;

std::string sst_file(const std::string &name) { return std::string(GROVE_SST_DIR) + "/" + name; }

// Writes a tree back as brackets without labels, leaves as `(token)`: the reader's output must
// reproduce the input line with its labels removed. Bottom-up over the post-order ids, so no
// recursion.
std::string unlabelled(const Tree &tree, const Vocab &vocab) {
  std::vector<std::string> text(tree.size());
  for (int32_t v = 0; v < tree.size(); ++v) {
    if (tree.num_children(v) == 0) {
      text[v] = "(" + vocab.token(tree.token[v]) + ")";
      continue;
    }
    text[v] = "(";
    for (int32_t k = 0; k < tree.num_children(v); ++k) {
      int32_t child = tree.child(v, k);
      EXPECT_LT(child, v) << "children come before their parent in post-order";
      text[v] += (k > 0 ? " " : "") + text[child];
      text[child].clear();
    }
    text[v] += ")";
  }
  return text[tree.root];
}

std::string strip_labels(const std::string &line) {
  static const std::regex label(R"(\([^ ()]+ )");
  return std::regex_replace(line, label, "(");
}

TEST(PtbReader, SentenceIsReadInPostOrder) {
  Vocab vocab = Vocab::parse("It\n's\ngood\n", "v.txt");
  Tree tree = parse_ptb_tree("(3 (2 It) (4 (2 's) (4 good)))", &vocab, "t.txt", 1);
  // Post-order: It, 's, good, ('s good), root.
  EXPECT_THAT(tree.token, ElementsAre(0, 1, 2, -1, -1));
  EXPECT_THAT(tree.child_begin, ElementsAre(0, 0, 0, 0, 2, 4));
  EXPECT_THAT(tree.children, ElementsAre(1, 2, 0, 3));
  EXPECT_EQ(tree.root, 4);
}

TEST(PtbReader, IntegerTokensWithoutVocabulary) {
  Tree tree = parse_ptb_tree("(0 (1 5) (1 2147483647))", nullptr, "t.txt", 1);
  EXPECT_THAT(tree.token, ElementsAre(5, 2147483647, -1));
  EXPECT_THAT(tree.children, ElementsAre(0, 1));
  EXPECT_EQ(tree.root, 2);
}

TEST(PtbReader, SingleLeafTree) {
  Tree tree = parse_ptb_tree("(4 007)", nullptr, "t.txt", 1);
  EXPECT_THAT(tree.token, ElementsAre(7));
  EXPECT_THAT(tree.child_begin, ElementsAre(0, 0));
  EXPECT_EQ(tree.root, 0);
}

TEST(PtbReader, AnyLabelsAnyArityAndExtraSpaces) {
  Tree tree = parse_ptb_tree("  (S (NP  (DT 1) (NN 2) (JJ 3) )(VP (V 4)) )  ", nullptr, "t.txt", 1);
  // Post-order: 1 2 3 NP 4 VP S.
  EXPECT_THAT(tree.token, ElementsAre(1, 2, 3, -1, 4, -1, -1));
  EXPECT_THAT(tree.child_begin, ElementsAre(0, 0, 0, 0, 3, 3, 4, 6));
  EXPECT_THAT(tree.children, ElementsAre(0, 1, 2, 4, 3, 5));
  EXPECT_EQ(tree.root, 6);
}

TEST(PtbReader, UnknownTokensMapToUnk) {
  Vocab vocab = Vocab::parse("good\n<unk>\n", "v.txt");
  Tree tree = parse_ptb_tree("(3 (2 very) (4 good))", &vocab, "t.txt", 1);
  EXPECT_THAT(tree.token, ElementsAre(1, 0, -1));
}

TEST(PtbReader, NoBreakSpaceIsPartOfAToken) {
  const std::string token = "8\u00a01\\/2";
  Vocab vocab = Vocab::parse("x\n" + token + "\n", "v.txt");
  Tree tree = parse_ptb_tree("(2 (2 x) (2 " + token + "))", &vocab, "t.txt", 1);
  EXPECT_THAT(tree.token, ElementsAre(0, 1, -1));

  Vocab sst = Vocab::load(sst_file("vocab.txt"));
  Tree leaf = parse_ptb_tree("(2 8\u00a01\\/2)", &sst, "t.txt", 1);
  ASSERT_EQ(leaf.size(), 1);
  EXPECT_EQ(sst.token(leaf.token[0]), token);
  EXPECT_NE(leaf.token[0], *sst.lookup("<unk>"));
}

TEST(PtbReader, ReadsLinesOfAFile) {
  grove::testing::TempDir dir;
  std::string path = dir.file("trees.txt");
  grove::testing::write_bytes(path, "(0 1)\n(0 (0 2) (0 3))\n");
  std::vector<Tree> trees = read_ptb_trees(path, nullptr);
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_THAT(trees[0].token, ElementsAre(1));
  EXPECT_THAT(trees[1].token, ElementsAre(2, 3, -1));

  // The final newline is optional.
  EXPECT_EQ(read_ptb_tree_text("(0 1)\n(0 2)", nullptr, "t.txt").size(), 2u);
}

TEST(PtbReader, LineNestedAMillionDeep) {
  const int32_t depth = 1000000;
  std::string line;
  line.reserve(8 * depth);
  for (int32_t i = 1; i < depth; ++i) line += "(0 ";
  line += "(0 42)";
  line.append(depth - 1, ')');
  Tree tree = parse_ptb_tree(line, nullptr, "deep.txt", 1);
  ASSERT_EQ(tree.size(), depth);
  EXPECT_EQ(tree.root, depth - 1);
  EXPECT_EQ(tree.token[0], 42);
  EXPECT_EQ(tree.num_children(0), 0);
  for (int32_t v = 1; v < depth; ++v) {
    ASSERT_EQ(tree.num_children(v), 1) << v;
    ASSERT_EQ(tree.child(v, 0), v - 1) << v;
    ASSERT_EQ(tree.token[v], -1) << v;
  }
}

TEST(PtbReader, SstTestSplit) {
  Vocab vocab = Vocab::load(sst_file("vocab.txt"));
  std::vector<Tree> trees = read_ptb_trees(sst_file("test.txt"), &vocab);
  ASSERT_EQ(trees.size(), 2210u);
  int64_t nodes = 0, leaves = 0;
  int32_t unk = *vocab.lookup("<unk>");
  for (const Tree &tree : trees) {
    nodes += tree.size();
    EXPECT_EQ(tree.root, tree.size() - 1);
    for (int32_t v = 0; v < tree.size(); ++v) {
      int32_t arity = tree.num_children(v);
      if (arity == 0) {
        ++leaves;
        EXPECT_GE(tree.token[v], 0);
        EXPECT_NE(tree.token[v], unk) << "the vocabulary covers every split";
      } else {
        EXPECT_EQ(arity, 2) << "SST trees are binary";
        EXPECT_EQ(tree.token[v], -1);
      }
    }
  }
  // The README's statistics for test.txt.
  EXPECT_EQ(nodes, 82600);
  EXPECT_EQ(leaves, 42405);

  // Every tree reproduces its line, labels removed.
  std::ifstream in(sst_file("test.txt"));
  std::string line;
  for (size_t i = 0; std::getline(in, line); ++i) {
    ASSERT_LT(i, trees.size());
    ASSERT_EQ(unlabelled(trees[i], vocab), strip_labels(line)) << "line " << i + 1;
  }
}

TEST(Vocab, SstVocabulary) {
  Vocab vocab = Vocab::load(sst_file("vocab.txt"));
  // 21,701 distinct tokens over all three splits, then <unk>.
  EXPECT_EQ(vocab.size(), 21702);
  EXPECT_TRUE(vocab.has_unknown());
  EXPECT_EQ(vocab.token(21701), "<unk>");
  EXPECT_EQ(vocab.lookup("<unk>"), 21701);
  // First appearance order: train.txt opens with "The Rock is destined ...".
  EXPECT_EQ(vocab.lookup("The"), 0);
  EXPECT_EQ(vocab.lookup("Rock"), 1);
  EXPECT_EQ(vocab.lookup("no-such-token-in-sst"), 21701);
  EXPECT_EQ(vocab.path(), sst_file("vocab.txt"));
}

TEST(Vocab, LookupWithoutUnk) {
  Vocab vocab = Vocab::parse("a\nb\n\xc3\xa9t\xc3\xa9", "v.txt");  // no final newline; UTF-8 "été"
  EXPECT_EQ(vocab.size(), 3);
  EXPECT_FALSE(vocab.has_unknown());
  EXPECT_EQ(vocab.lookup("a"), 0);
  EXPECT_EQ(vocab.lookup("b"), 1);
  EXPECT_EQ(vocab.lookup("\xc3\xa9t\xc3\xa9"), 2);
  EXPECT_EQ(vocab.lookup("c"), std::nullopt);
  EXPECT_EQ(vocab.lookup(""), std::nullopt);
  EXPECT_EQ(vocab.token(1), "b");
}

TEST(Utf8, FindsTheFirstIllFormedSequence) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("\xc2\xa0 \xe2\x82\xac \xf0\x9f\x8c\xb3 \xf4\x8f\xbf\xbf"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("ab\xff"), 2u);
  EXPECT_EQ(find_invalid_utf8("a\xc0\x80"), 1u);         // overlong NUL
  EXPECT_EQ(find_invalid_utf8("a\xe0\x80\xaf"), 1u);     // overlong '/'
  EXPECT_EQ(find_invalid_utf8("ab\xed\xa0\x80"), 2u);    // a UTF-16 surrogate
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("abc\xe2\x82"), 3u);       // cut short at the end
  EXPECT_EQ(find_invalid_utf8("\xc3(\xc3\xa9"), 0u);     // a lead byte without its continuation
  EXPECT_EQ(find_invalid_utf8("\x80"), 0u);              // a lone continuation byte
}

TEST(Utf8, ColumnsCountCharacters) {
  std::string line = "(2 \xc3\xa9t\xc3\xa9) x";
  EXPECT_EQ(utf8_column(line, 0), 1);
  EXPECT_EQ(utf8_column(line, 3), 4);
  EXPECT_EQ(utf8_column(line, line.find(")")), 7);
}

}  // namespace
}  // namespace grove
