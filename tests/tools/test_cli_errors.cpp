// Every documented user-facing error of the `grove` command line: the message says what is wrong,
// where and what was expected, and the program exits with status 1 (2 is reserved for grove's bugs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;

// A scratch directory with TreeFC weights (H = 4, V = 8) and a good tree file.
class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(weights(), treefc_weights(4, 8));
    write_bytes(trees(), "(0 (1 0) (1 (2 1) (2 7)))\n(0 3)\n");
  }
  std::string weights() const { return dir_.file("w.safetensors"); }
  std::string trees() const { return dir_.file("trees.txt"); }
  std::string out() const { return dir_.file("out.npy"); }
  // `grove run` of TreeFC with these weights, trees and output, and `extra` arguments.
  CliResult run_treefc(const std::string &extra = "") const {
    return run_grove("run " + model_path("treefc") + " --weights " + weights() + " --trees " + trees() +
                     " --out " + out() + " " + extra);
  }
  // `grove run` with a weight file holding `w`.
  CliResult run_with_weights(const Weights &w) const {
    write_safetensors(weights(), w);
    return run_treefc();
  }
  // `grove run` with a tree file holding `text`.
  CliResult run_with_trees(const std::string &text, const std::string &extra = "") const {
    write_bytes(trees(), text);
    return run_treefc(extra);
  }

  TempDir dir_;
};

// grove's own user errors: "grove: error: MESSAGE" (or "grove: FILE:LINE:COL: error: MESSAGE" for
// messages that carry their own location), status 1.
void expect_user_error(const CliResult &r, const std::string &message) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("grove: "), HasSubstr("error: "), HasSubstr(message)));
  EXPECT_THAT(r.output, Not(HasSubstr("error: error:"))) << r.output;
}

// Errors CLI11 finds while checking options (a missing file, a value out of range) print CLI11's
// message; like grove's own user errors they exit with status 1.
void expect_option_error(const CliResult &r, const std::string &message) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(message));
}

TEST_F(CliErrors, SizesNotNameValuePairs) {
  CliResult r = run_grove("init-weights " + model_path("treefc") + " --sizes H4 --out " + weights());
  expect_user_error(r, "--sizes: expected NAME=VALUE pairs separated by commas (H=256,D=256), got 'H4'");
}

TEST_F(CliErrors, SizeNotAPositiveInteger) {
  expect_user_error(run_grove("init-weights " + model_path("treefc") + " --sizes H=0,V=8 --out " + weights()),
                    "--sizes: H must be a positive integer, got '0'");
  expect_user_error(
      run_grove("init-weights " + model_path("treefc") + " --sizes H=4x,V=8 --out " + weights()),
      "--sizes: H must be a positive integer, got '4x'");
}

TEST_F(CliErrors, UnknownSizeVariable) {
  CliResult r = run_grove("init-weights " + model_path("treefc") + " --sizes H=4,V=8,D=4 --out " + weights());
  expect_user_error(r, "--sizes: model TreeFC has no size variable 'D' (its size variables are: V, H)");
  r = run_grove("dump " + model_path("treefc") + " --stage loops --sizes Q=3");
  expect_user_error(r, "model TreeFC has no size variable 'Q'");
}

TEST_F(CliErrors, UnknownDumpStage) {
  // The message lists the stages there are.
  expect_option_error(run_grove("dump " + model_path("treefc") + " --stage plans"),
                      "--stage: plans not in {ilir,plan,loops,llvm,asm,cuda,ptx}");
}

TEST_F(CliErrors, MissingSizeVariable) {
  CliResult r = run_grove("init-weights " + model_path("treefc") + " --sizes H=4 --out " + weights());
  expect_user_error(r, "--sizes: model TreeFC needs a value for size variable 'V'");
}

TEST_F(CliErrors, MissingModelFile) {
  CliResult r = run_grove("run " + dir_.file("absent.grove") + " --weights " + weights() + " --trees " +
                          trees() + " --out " + out());
  expect_option_error(r, "File does not exist: " + dir_.file("absent.grove"));
  EXPECT_FALSE(std::filesystem::exists(out()));
}

TEST_F(CliErrors, MalformedModelFile) {
  const std::string model = dir_.file("bad.grove");
  write_bytes(model, "model Bad\nstructure binary_tree\nparam emb [V, H\n");
  CliResult r =
      run_grove("run " + model + " --weights " + weights() + " --trees " + trees() + " --out " + out());
  expect_user_error(r, model + ":4:1: error: ");
  EXPECT_THAT(r.output, HasSubstr("expected"));
}

TEST_F(CliErrors, EmptyModelFile) {
  const std::string model = dir_.file("empty.grove");
  write_bytes(model, "");
  expect_user_error(run_grove("dump " + model),
                    model + ":1:1: error: expected 'model NAME' at the start of the file, found end of file");
}

TEST_F(CliErrors, ModelFileNotUtf8) {
  const std::string model = dir_.file("latin1.grove");
  write_bytes(model, "model Caf\xe9\n");
  expect_user_error(run_grove("dump " + model), model + ":1:10: error: unexpected character '\\xe9'");
}

TEST_F(CliErrors, EmptyWeightFile) {
  write_bytes(weights(), "");
  expect_user_error(run_treefc(), weights() + ": not a safetensors file: it is 0 bytes long");
}

TEST_F(CliErrors, NotASafetensorsFile) {
  write_bytes(weights(), std::string("\xff\xff\xff\xff\xff\xff\xff\x0f", 8) + "01234567");
  expect_user_error(run_treefc(), weights() + ": not a safetensors file: the header length field says " +
                                      "1152921504606846975 bytes but only 8 bytes follow it");
}

TEST_F(CliErrors, MissingWeightTensor) {
  Weights w = treefc_weights(4, 8);
  w.erase("b");
  expect_user_error(run_with_weights(w),
                    weights() + ": missing tensor 'b' (the model expects shape [H] = [4])");
}

TEST_F(CliErrors, ExtraWeightTensor) {
  Weights w = treefc_weights(4, 8);
  w.emplace("U_f", Tensor({4, 4}));
  expect_user_error(run_with_weights(w),
                    weights() + ": tensor 'U_f' is not a parameter of model 'TreeFC' (its parameters are: ");
}

TEST_F(CliErrors, MisshapenWeightTensor) {
  Weights w = treefc_weights(4, 8);
  w["b"] = Tensor({5});
  CliResult r = run_with_weights(w);
  expect_user_error(r, weights() + ": ");
  EXPECT_THAT(r.output, AllOf(HasSubstr("tensor 'b'"), HasSubstr("[5]"), HasSubstr("[H]")));
  w["b"] = Tensor({4, 1});
  expect_user_error(
      run_with_weights(w),
      weights() + ": tensor 'b' has shape [4, 1] (rank 2) but the model expects shape [H] (rank 1)");
}

TEST_F(CliErrors, BadTreeLineGivesFileLineAndColumn) {
  CliResult r = run_with_trees("(0 1)\n(0 2)\n(0 (1 1) (1 2))\n(0 3)\n(0 (1 1) (1 2)\n(0 4)\n");
  expect_user_error(r, trees() + ":5:15: missing ')': expected ')' to close the node opened at column 1");
}

TEST_F(CliErrors, EmptyTreeFile) {
  expect_user_error(run_with_trees(""), trees() + ": the file is empty; expected one tree per line");
}

TEST_F(CliErrors, EmptyTreeLine) {
  expect_user_error(run_with_trees("(0 1)\n\n(0 2)\n"),
                    trees() + ":2: empty line; expected one tree per line");
}

TEST_F(CliErrors, TrailingGarbageAfterATree) {
  expect_user_error(run_with_trees("(0 (1 1) (1 2)) x\n"),
                    trees() + ":1:17: unexpected 'x' after the end of the tree; expected one tree per line");
}

TEST_F(CliErrors, InvalidUtf8InTrees) {
  expect_user_error(run_with_trees("(0 1)\n(0 \xff)\n"), trees() + ":2:4: invalid UTF-8: byte 0xFF");
}

TEST_F(CliErrors, TokenNotAnInteger) {
  expect_user_error(run_with_trees("(0 (1 1) (1 -2))\n"),
                    trees() + ":1:13: token '-2' is not an integer id; without a vocabulary");
}

TEST_F(CliErrors, TokenOutOfRange) {
  expect_user_error(run_with_trees("(0 1)\n(0 (1 0) (1 (2 1) (2 8)))\n"),
                    "tree 2, node 2: token 8 is out of range: the vocabulary has 8 entries");
}

TEST_F(CliErrors, TokenNotInTheVocabulary) {
  const std::string vocab = dir_.file("vocab.txt");
  write_bytes(vocab, "the\nfilm\n");
  expect_user_error(run_with_trees("(0 (1 the) (1 movie))\n", "--vocab " + vocab),
                    trees() + ":1:15: token 'movie' is not in the vocabulary '" + vocab + "'");
}

TEST_F(CliErrors, WrongArity) {
  expect_user_error(run_with_trees("(0 (1 1) (1 2) (1 3))\n"),
                    "tree 1: node 3 has 3 children; this model takes 2");
}

TEST_F(CliErrors, OutputIsAnInput) {
  const std::string vocab = dir_.file("vocab.txt");
  write_bytes(vocab, "a\nb\n");
  const std::string base = "run " + model_path("treefc") + " --weights " + weights() + " --trees " + trees();
  expect_user_error(run_grove(base + " --out " + trees()),
                    "--out " + trees() + " is also the trees file: grove never overwrites its own inputs");
  expect_user_error(run_grove(base + " --out " + weights()), "is also the weights file");
  expect_user_error(run_grove(base + " --out " + model_path("treefc")), "is also the model file");
  write_bytes(trees(), "(0 (1 a) (1 b))\n");
  expect_user_error(run_grove(base + " --vocab " + vocab + " --out " + vocab), "is also the vocabulary file");
}

TEST_F(CliErrors, OutputIsAnInputThroughALink) {
  const std::string original = read_bytes(trees());
  const std::string symlink = dir_.file("link-to-trees.npy"), hardlink = dir_.file("hardlink-to-trees.npy");
  std::filesystem::create_symlink(trees(), symlink);
  std::filesystem::create_hard_link(trees(), hardlink);
  const std::string base = "run " + model_path("treefc") + " --weights " + weights() + " --trees " + trees();
  expect_user_error(run_grove(base + " --out " + symlink), "--out " + symlink + " is also the trees file");
  expect_user_error(run_grove(base + " --out " + hardlink), "--out " + hardlink + " is also the trees file");
  // The same file reached through a different spelling of its directory.
  expect_user_error(
      run_grove(base + " --out " + dir_.file("./../") +
                std::filesystem::path(trees()).parent_path().filename().string() + "/trees.txt"),
      "is also the trees file");
  EXPECT_EQ(read_bytes(trees()), original);
  EXPECT_TRUE(std::filesystem::is_symlink(symlink));
}

TEST_F(CliErrors, TunedWithoutACachedSchedule) {
  // An empty cache: no entry for this model, sizes, batch and threads; it names the key and file.
  const std::string cache = dir_.file("schedules.json");
  write_bytes(cache, "{}");
  expect_user_error(run_treefc("--batch 2 --tuned --cache " + cache),
                    "--tuned: no tuned schedule for 'TreeFC H=4,V=8 batch=2 threads=");
  EXPECT_FALSE(std::filesystem::exists(out()));
}

TEST_F(CliErrors, TunedWithAMalformedCache) {
  const std::string cache = dir_.file("schedules.json");
  write_bytes(cache, "[1, 2");
  expect_user_error(run_treefc("--tuned --cache " + cache), "tuning cache " + cache + " is malformed");
  EXPECT_EQ(read_bytes(cache), "[1, 2");
}

TEST_F(CliErrors, UnrollOutOfRange) {
  expect_user_error(run_treefc("--schedule unroll=0"),
                    "schedule key 'unroll' takes an integer in [1, 64], got '0'");
}

TEST_F(CliErrors, NegativeBatch) {
  expect_option_error(run_treefc("--batch -1"), "--batch: Value -1 not in range 0");
  EXPECT_FALSE(std::filesystem::exists(out()));
}

}  // namespace
}  // namespace grove::testing
