// GloVe's text format: known words' rows get their vectors, every other row the seeded uniform
// initialization in ±0.05, and every malformed line is a user error at file:line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/TestFiles.h"
#include "tests/UserError.h"
#include "training/Glove.h"

namespace grove::training {
namespace {

using grove::testing::user_error_of;

TEST(Glove, KnownWordsGetTheirVectorsOthersUniform) {
  Vocab vocab = Vocab::parse("the\ngood\nmovie\n<unk>\n", "v.txt");
  Tensor table({4, 3});
  GloveStats stats =
      parse_glove("good 1 2 3\nzebra 4 5 6\n. . . 0.5 -1e-3 7\nthe 0.25 0.5 -0.125\ngood 9 9 9\n", "g.txt",
                  vocab, 1, table);
  EXPECT_EQ(stats.lines, 5);
  EXPECT_EQ(stats.found, 2);
  EXPECT_EQ(std::vector<float>(table.data.begin(), table.data.begin() + 3),
            (std::vector<float>{0.25f, 0.5f, -0.125f}));
  // The first vector of a repeated word.
  EXPECT_EQ(std::vector<float>(table.data.begin() + 3, table.data.begin() + 6),
            (std::vector<float>{1, 2, 3}));
  // movie and <unk> (zebra is not written into <unk>'s row): uniform in ±0.05, from the seed.
  for (int64_t i = 6; i < 12; ++i) {
    EXPECT_LE(std::abs(table.data[i]), 0.05f);
    EXPECT_NE(table.data[i], 0.0f);
  }
  Tensor again({4, 3}), other_seed({4, 3});
  parse_glove("good 1 2 3\n", "g.txt", vocab, 1, again);
  parse_glove("good 1 2 3\n", "g.txt", vocab, 2, other_seed);
  EXPECT_EQ(std::vector<float>(again.data.begin() + 6, again.data.end()),
            std::vector<float>(table.data.begin() + 6, table.data.end()));
  EXPECT_NE(other_seed.data[6], again.data[6]);
}

TEST(Glove, WordsWithSpaces) {
  Vocab vocab = Vocab::parse("a\n", "v.txt");
  Tensor table({1, 2});
  // The last D fields are the vector: the word here is "a b", not in the vocabulary.
  EXPECT_EQ(parse_glove("a b 1 2\n", "g.txt", vocab, 1, table).found, 0);
  EXPECT_EQ(parse_glove("a 1 2", "g.txt", vocab, 1, table).found, 1);
}

TEST(Glove, Errors) {
  Vocab vocab = Vocab::parse("a\nb\n", "v.txt");
  auto error = [&](const std::string &text) {
    Tensor table({2, 3});
    return user_error_of([&] { parse_glove(text, "g.txt", vocab, 1, table); });
  };
  EXPECT_EQ(error(""),
            "g.txt: the file is empty; expected GloVe's text format, a word and then D numbers per line");
  EXPECT_EQ(error("a 1 2 3\n\nb 1 2 3\n"), "g.txt:2: empty line; expected a word and then 3 numbers");
  EXPECT_EQ(error("a 1 2 3\nb\n"), "g.txt:2: the word 'b' has no numbers after it; expected 3 numbers");
  EXPECT_EQ(error("a 1 2\n"),
            "g.txt:1: the word 'a' has 2 numbers; expected 3 (the width D of the model's embedding)");
  EXPECT_EQ(error("a 1 x 3\n"), "g.txt:1: 'x' is not a finite number (component 2 of 'a')");
  EXPECT_EQ(error("a 1 nan 3\n"), "g.txt:1: 'nan' is not a finite number (component 2 of 'a')");
  EXPECT_EQ(error("a 1 1e99 3\n"), "g.txt:1: '1e99' is not a finite number (component 2 of 'a')");
  EXPECT_EQ(error("a 1 2  3\n"), "g.txt:1: '' is not a finite number (component 2 of 'a 1')");
  EXPECT_EQ(error("a 1 2 3\r\n"),
            "g.txt:1: carriage return (CR) in the line; GloVe files must use LF line endings");
  EXPECT_THAT(user_error_of([&] {
                Tensor table({2, 3});
                load_glove("/nonexistent/glove.txt", vocab, 1, table);
              }),
              ::testing::HasSubstr("cannot read GloVe file '/nonexistent/glove.txt'"));
}

TEST(Glove, FileAndTextAgree) {
  grove::testing::TempDir dir;
  const std::string text = "b -0.5 0.25 2\na 1 2 3\n";
  std::ofstream(dir.file("g.txt")) << text;
  Vocab vocab = Vocab::parse("a\nb\nc\n", "v.txt");
  Tensor from_file({3, 3}), from_text({3, 3});
  load_glove(dir.file("g.txt"), vocab, 4, from_file);
  parse_glove(text, dir.file("g.txt"), vocab, 4, from_text);
  EXPECT_EQ(from_file.data, from_text.data);
  Tensor bad({3, 3});
  std::ofstream(dir.file("bad.txt")) << "a 1 2 3\nb 1 2\n";
  EXPECT_EQ(user_error_of([&] { load_glove(dir.file("bad.txt"), vocab, 4, bad); }),
            dir.file("bad.txt") +
                ":2: the word 'b' has 2 numbers; expected 3 (the width D of the model's embedding)");
}

}  // namespace
}  // namespace grove::training
