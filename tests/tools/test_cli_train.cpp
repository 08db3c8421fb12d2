// `grove train` as a user runs it: every bad option or input is a user error with its message
// (status 1) before anything is trained; a short run prints one line per epoch and writes checkpoints
// that `grove run --weights` takes unchanged, the same bytes for the same seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class CliTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(trees(), "(3 (2 0) (4 (2 1) (4 2)))\n(1 (0 3) (2 1))\n(4 (4 2) (3 2))\n");
    write_text(dev(), "(1 (0 3) (2 1))\n");
  }
  static void write_text(const std::string &path, const std::string &text) { std::ofstream(path) << text; }
  std::string trees() const { return dir_.file("train.txt"); }
  std::string dev() const { return dir_.file("dev.txt"); }
  std::string out() const { return dir_.file("out"); }
  // `grove train` of TreeFC on these trees with `extra` arguments.
  CliResult train(const std::string &extra) const {
    return run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() + " --out " +
                     out() + " --quiet " + extra);
  }

  TempDir dir_;
};

void expect_user_error(const CliResult &r, const std::string &message) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("grove: "), HasSubstr("error: "), HasSubstr(message)));
  EXPECT_THAT(r.output, Not(HasSubstr("error: error:"))) << r.output;
}

TEST_F(CliTrain, BadOptions) {
  expect_user_error(train("--sizes H=4 --epochs 0"), "train: --epochs must be at least 1, got 0");
  expect_user_error(train("--sizes H=4 --batch 0"), "train: --batch must be at least 1, got 0");
  expect_user_error(train("--sizes H=4 --patience -1"), "train: --patience must be at least 0, got -1");
  expect_user_error(train("--sizes H=4 --lr -0.1"), "train: --lr must be a finite number >= 0, got -0.1");
  expect_user_error(train("--sizes H=4 --emb-lr nan"),
                    "train: --emb-lr must be a finite number >= 0, got nan");
  expect_user_error(train("--sizes H=4 --weight-decay -1"),
                    "train: --weight-decay must be a finite number >= 0");
  expect_user_error(train("--sizes H=4 --clip -5"), "train: --clip must be a finite number >= 0, got -5");
  expect_user_error(train("--sizes H=4 --dropout 1"), "train: --dropout must be in [0, 1), got 1");
  expect_user_error(train("--sizes H=4 --optimizer rmsprop"),
                    "train: --optimizer must be adagrad, adam or sgd, got 'rmsprop'");
  expect_user_error(train("--sizes H=4 --emb-optimizer adam"),
                    "train: --emb-optimizer must be sgd (plain SGD at --emb-lr, the recipe) or same");
  expect_user_error(train("--sizes H=4 --average batch"), "train: --average must be nodes");
  expect_user_error(train("--sizes H=4 --loss leaves"),
                    "train: --loss must be all (every labelled node) or root, got 'leaves'");
}

TEST_F(CliTrain, ConflictingWeightOptions) {
  write_safetensors(dir_.file("w.safetensors"), treefc_weights(4, 4));
  const std::string w = dir_.file("w.safetensors");
  expect_user_error(train("--init " + w + " --resume " + w),
                    "train: give --init (initial weights) or --resume (a checkpoint to continue), not both");
  expect_user_error(train("--init " + w + " --sizes H=4"),
                    "train: --sizes H=4 applies to random initial weights only; the sizes come from " + w);
  write_text(dir_.file("glove.txt"), "a 1 2 3 4\n");
  expect_user_error(train("--sizes H=4 --embeddings " + dir_.file("glove.txt")),
                    "train: --embeddings needs --vocab: GloVe vectors are looked up by word");
}

TEST_F(CliTrain, OutputNeverAnInput) {
  write_text(dir_.file("file"), "x");
  expect_user_error(run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() +
                              " --out " + dir_.file("file") + " --sizes H=4"),
                    "train: --out " + dir_.file("file") + " is not a directory grove can create or use");
  std::filesystem::create_directories(out());
  write_safetensors(out() + "/last.safetensors", treefc_weights(4, 4));
  expect_user_error(train("--init " + out() + "/last.safetensors"),
                    "train: the checkpoint " + out() + "/last.safetensors would replace the input " + out() +
                        "/last.safetensors");
}

TEST_F(CliTrain, LabelAndSizeErrors) {
  write_text(trees(), "(3 (2 0) (4 1))\n(1 (7 3) (2 1))\n");
  expect_user_error(
      train("--sizes H=4"),
      "train.txt:2:5: label '7' is not a class; labels of labelled trees must be integers in [0, 4]");
  write_text(trees(), "(3 (2 0) (4 1))\n");
  // Without --vocab, V is the trees' largest token id + 1 (here 4, from the dev tree).
  expect_user_error(train("--sizes H=4,V=9"),
                    "train: --sizes V=9 disagrees with the trees' largest token id + 1, 4");
  write_text(dir_.file("vocab.txt"), "a\nb\n");
  write_text(trees(), "(3 (2 a) (4 zebra))\n");
  write_text(dev(), "(3 (2 a) (4 b))\n");
  // A vocabulary without <unk> gets one as its last id: V = 3.
  expect_user_error(train("--vocab " + dir_.file("vocab.txt") + " --sizes H=4,V=2"),
                    "train: --sizes V=2 disagrees with the vocabulary's size (with <unk>), 3");
}

TEST_F(CliTrain, TrainsAndWritesCheckpointsGroveRunTakes) {
  CliResult r = train("--sizes H=4 --epochs 2 --batch 2 --seed 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("epoch 1  train loss "));
  EXPECT_THAT(r.output, HasSubstr("epoch 2  train loss "));
  EXPECT_THAT(r.output, HasSubstr("dev root "));
  ASSERT_TRUE(std::filesystem::exists(out() + "/last.safetensors"));
  ASSERT_TRUE(std::filesystem::exists(out() + "/best.safetensors"));
  CliResult run = run_grove("run " + model_path("treefc") + " --weights " + out() +
                            "/last.safetensors --trees " + dev() + " --out " + dir_.file("roots.npy"));
  EXPECT_EQ(run.status, 0) << run.output;
  // The same seed, the same checkpoint, byte for byte.
  const std::string again = dir_.file("again");
  CliResult second = run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() +
                               " --out " + again + " --quiet --sizes H=4 --epochs 2 --batch 2 --seed 3");
  ASSERT_EQ(second.status, 0) << second.output;
  auto bytes = [](const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(out() + "/last.safetensors"), bytes(again + "/last.safetensors"));
  // Interrupted after epoch 1 and resumed to epoch 2: the uninterrupted run's checkpoint, byte for byte.
  const std::string first = dir_.file("first"), rest = dir_.file("rest");
  ASSERT_EQ(run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() +
                      " --out " + first + " --quiet --sizes H=4 --epochs 1 --batch 2 --seed 3")
                .status,
            0);
  CliResult resumed =
      run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() + " --out " +
                rest + " --quiet --resume " + first + "/last.safetensors --epochs 2 --batch 2 --seed 3");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, AllOf(HasSubstr("epoch 2  train loss "), Not(HasSubstr("epoch 1 "))));
  EXPECT_EQ(bytes(out() + "/last.safetensors"), bytes(rest + "/last.safetensors"));
  // Resuming with another optimizer is refused.
  expect_user_error(run_grove("train " + model_path("treefc") + " --trees " + trees() + " --dev " + dev() +
                              " --out " + dir_.file("other") + " --quiet --resume " + first +
                              "/last.safetensors --epochs 2 --optimizer adam"),
                    "is not state of the adam optimizer");
  // A malformed GloVe file is a user error at its line.
  write_text(dir_.file("vocab.txt"), "a\nb\nc\nd\n");
  write_text(trees(), "(3 (2 a) (4 b))\n");
  write_text(dev(), "(3 (2 c) (4 d))\n");
  write_text(dir_.file("glove.txt"), "a 1 2 3 4\nb 1 2\n");
  expect_user_error(
      train("--sizes H=4 --vocab " + dir_.file("vocab.txt") + " --embeddings " + dir_.file("glove.txt")),
      "glove.txt:2: the word 'b' has 2 numbers; expected 4 (the width D of the model's embedding)");
}

TEST_F(CliTrain, StatsSayWhereEachEpochsTimeWent) {
  CliResult r = train("--sizes H=4 --epochs 2 --batch 2 --seed 3 --stats");
  ASSERT_EQ(r.status, 0) << r.output;
  // One line per epoch; the compiled code's seconds are part of their phase's, the phases of the total.
  const std::regex line(
      "grove: epoch ([0-9]+) took ([0-9.]+) s: forward ([0-9.]+) s \\(compiled code ([0-9.]+) s\\), head "
      "([0-9.]+) s, backward ([0-9.]+) s \\(compiled code ([0-9.]+) s\\), update ([0-9.]+) s, set_weights "
      "([0-9.]+) s, batching ([0-9.]+) s; the inspector ([0-9.]+) s of the forward and backward");
  int epochs = 0;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line); it != std::sregex_iterator();
       ++it) {
    const std::smatch &m = *it;
    EXPECT_EQ(std::stoi(m[1]), ++epochs);
    auto at = [&](int i) { return std::stod(m[size_t(i)]); };
    EXPECT_LE(at(4), at(3) + 0.01) << m[0];
    EXPECT_LE(at(7), at(6) + 0.01) << m[0];
    EXPECT_LE(at(3) + at(5) + at(6) + at(8) + at(9) + at(10), at(2) + 0.06) << m[0];
  }
  EXPECT_EQ(epochs, 2) << r.output;
}

TEST_F(CliTrain, StepLogHasEveryStepsTreesAndLoss) {
  // 3 trees in batches of 2, 2 epochs: 4 steps, each epoch's trees a permutation of 0, 1, 2.
  const std::string log = dir_.file("steps.jsonl");
  CliResult r = train("--sizes H=4 --epochs 2 --batch 2 --seed 3 --step-log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], HasSubstr("{\"step\": " + std::to_string(i + 1) +
                                    ", \"epoch\": " + std::to_string(i / 2 + 1) + ", \"trees\": ["));
    EXPECT_THAT(lines[i], HasSubstr("], \"loss\": "));
  }
  auto trees_of = [](const std::string &line) {
    const size_t begin = line.find('[') + 1;
    return line.substr(begin, line.find(']') - begin);
  };
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    std::string all = trees_of(lines[2 * epoch]) + ", " + trees_of(lines[2 * epoch + 1]);
    std::vector<char> seen;
    for (char ch : all)
      if (ch >= '0' && ch <= '9') seen.push_back(ch);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::string(seen.begin(), seen.end()), "012") << all;
  }
  // Never over an input.
  expect_user_error(train("--sizes H=4 --step-log " + trees()),
                    "--step-log " + trees() + " would replace the input");
}

}  // namespace
}  // namespace grove::testing
