// The labelled PTB reader: labels in the trees' node numbering, and every label error at file:line:col.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "datasets/PTBReader.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using grove::testing::user_error_of;

TEST(LabelledPtb, LabelsFollowTheNodeNumbering) {
  Vocab vocab = Vocab::parse("It\n's\ngood\n<unk>\n", "v.txt");
  LabelledTrees set =
      read_labelled_ptb_tree_text("(3 (2 It) (4 (2 's) (4 good)))\n(1 (0 bad) (2 It))\n", &vocab, 5, "t.txt");
  ASSERT_EQ(set.size(), 2);
  // Post-order: It, 's, good, ('s good), root.
  EXPECT_EQ(set.trees[0].token, (std::vector<int32_t>{0, 1, 2, -1, -1}));
  EXPECT_EQ(set.labels[0], (std::vector<int32_t>{2, 2, 4, 4, 3}));
  // An unknown word takes the vocabulary's <unk> id.
  EXPECT_EQ(set.trees[1].token, (std::vector<int32_t>{3, 0, -1}));
  EXPECT_EQ(set.labels[1], (std::vector<int32_t>{0, 2, 1}));
  // The same trees as the plain reader's.
  EXPECT_EQ(read_ptb_tree_text("(3 (2 It) (4 (2 's) (4 good)))", &vocab, "t.txt")[0].children,
            set.trees[0].children);
  LabelledTree one = parse_labelled_ptb_tree("(1 (0 5) (4 7))", nullptr, 5, "f.txt", 3);
  EXPECT_EQ(one.labels, (std::vector<int32_t>{0, 4, 1}));
  EXPECT_EQ(one.tree.token, (std::vector<int32_t>{5, 7, -1}));
}

TEST(LabelledPtb, LabelErrors) {
  auto error = [](const std::string &text) {
    return user_error_of([&] { read_labelled_ptb_tree_text(text, nullptr, 5, "t.txt"); });
  };
  EXPECT_EQ(error("(5 1)"),
            "t.txt:1:2: label '5' is not a class; labels of labelled trees must be integers in [0, 4]");
  EXPECT_EQ(error("(0 1)\n(2 (x 1) (1 2))"),
            "t.txt:2:5: label 'x' is not a class; labels of labelled trees must be integers in [0, 4]");
  EXPECT_EQ(error("(-1 1)"),
            "t.txt:1:2: label '-1' is not a class; labels of labelled trees must be integers in [0, 4]");
  EXPECT_EQ(error("(2.5 1)"),
            "t.txt:1:2: label '2.5' is not a class; labels of labelled trees must be integers in [0, 4]");
  EXPECT_EQ(
      error("(99999999999 1)"),
      "t.txt:1:2: label '99999999999' is not a class; labels of labelled trees must be integers in [0, 4]");
  // Columns count characters.
  EXPECT_EQ(
      user_error_of([] { parse_labelled_ptb_tree("(0 (\xc3\xa9 1) (0 2))", nullptr, 2, "f.txt", 7); }),
      "f.txt:7:5: label '\xc3\xa9' is not a class; labels of labelled trees must be integers in [0, 1]");
  // The reader's other errors are unchanged.
  EXPECT_EQ(error(""), "t.txt: the file is empty; expected one tree per line such as '(3 (2 It) (4 good))'");
  EXPECT_EQ(error("(0 1)\n\n(0 2)"),
            "t.txt:2: empty line; expected one tree per line such as '(3 (2 It) (4 good))'");
  EXPECT_THAT(error("(0 1"), ::testing::HasSubstr("t.txt:1:5: missing ')'"));
  EXPECT_THAT(user_error_of([] { read_labelled_ptb_trees("/nonexistent/t.txt", nullptr, 5); }),
              ::testing::HasSubstr("cannot read tree file '/nonexistent/t.txt'"));
}

TEST(LabelledPtb, SstTestSplit) {
  Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  LabelledTrees set = read_labelled_ptb_trees(GROVE_SST_DIR "/test.txt", &vocab, 5);
  EXPECT_EQ(set.size(), 2210);
  int64_t nodes = 0;
  for (int64_t t = 0; t < set.size(); ++t) {
    ASSERT_EQ(static_cast<int64_t>(set.labels[t].size()), set.trees[t].size());
    nodes += set.trees[t].size();
  }
  EXPECT_EQ(set.labels[0].back(), 2);  // (2 (3 (3 Effective) ...
  EXPECT_GT(nodes, 50000);
}

}  // namespace
}  // namespace grove
