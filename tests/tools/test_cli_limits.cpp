// The limits of README.md's "Limits", through the `grove` program: a 1,000,000-node chain runs end
// to end, hostile weight files are refused without allocating what they claim, NaN and Inf weights
// flow through the arithmetic, and no failed run loses an existing output file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "support/Npy.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class CliLimits : public ::testing::Test {
 protected:
  std::string weights() const { return dir_.file("w.safetensors"); }
  std::string trees() const { return dir_.file("trees.txt"); }
  std::string out() const { return dir_.file("out.npy"); }
  CliResult run_treefc(const std::string &extra = "") const {
    return run_grove("run " + model_path("treefc") + " --weights " + weights() + " --trees " + trees() +
                     " --out " + out() + " " + extra);
  }

  TempDir dir_;
};

// TreeFC on one node: h = tanh(W @ [left; right] + b), in double.
std::vector<double> treefc_internal(const Weights &w, const std::vector<double> &left,
                                    const std::vector<double> &right) {
  const Tensor &W = w.at("W"), &b = w.at("b");
  const int64_t h = b.shape[0];
  std::vector<double> result(h);
  for (int64_t i = 0; i < h; ++i) {
    double s = b.data[i];
    for (int64_t k = 0; k < h; ++k)
      s += W.data[i * 2 * h + k] * left[k] + W.data[i * 2 * h + h + k] * right[k];
    result[i] = std::tanh(s);
  }
  return result;
}

std::vector<double> embedding(const Weights &w, int64_t token) {
  const Tensor &emb = w.at("emb");
  const int64_t h = emb.shape[1];
  return std::vector<double>(emb.data.begin() + token * h, emb.data.begin() + (token + 1) * h);
}

TEST_F(CliLimits, MillionNodeChainRunsEndToEnd) {
  // A left-deep chain: every internal node's right child is a leaf. 500,001 leaves and 500,000
  // internal nodes, nested 500,000 levels deep on one line.
  constexpr int64_t kLeaves = 500'001;
  const Weights w = treefc_weights(4, 8);
  write_safetensors(weights(), w);
  std::string line;
  line.reserve(14 * kLeaves);
  for (int64_t i = 1; i < kLeaves; ++i) line += "(0 ";
  line += "(1 0)";
  std::vector<double> expected = embedding(w, 0);
  for (int64_t i = 1; i < kLeaves; ++i) {
    const int64_t token = i % 8;
    line += " (1 " + std::to_string(token) + "))";
    expected = treefc_internal(w, expected, embedding(w, token));
  }
  write_bytes(trees(), "(0 5)\n" + line + "\n");

  CliResult r = run_treefc("--stats");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1000002 nodes"));
  Tensor roots = read_npy(out());
  ASSERT_EQ(roots.shape, (std::vector<int64_t>{2, 4}));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(roots.data[i], w.at("emb").data[5 * 4 + i]);
    EXPECT_NEAR(roots.data[4 + i], expected[i], 1e-4) << "element " << i;
  }
}

TEST_F(CliLimits, SixteenByteWeightFileClaimingAHugeHeaderAllocatesNothing) {
  // The length field claims 2^60 bytes. Outside AddressSanitizer (which reserves terabytes of
  // address space itself) the run gets 2 GB of address space, so allocating the claim would fail.
  write_bytes(weights(), std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8) + "{\"a\": 1}");
  write_bytes(trees(), "(0 1)\n");
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 2000000; ";
#endif
  CliResult r = run_shell(limit + GROVE_BINARY + " run " + model_path("treefc") + " --weights " + weights() +
                          " --trees " + trees() + " --out " + out());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(weights() + ": not a safetensors file: the header length field says "
                                              "1152921504606846976 bytes but only 8 bytes follow it"));
}

// TreeFC weights (H = 4, V = 8) whose embedding row 0 is NaN and row 5 is +Inf.
Weights nan_and_inf_weights() {
  Weights w = treefc_weights(4, 8);
  for (int64_t i = 0; i < 4; ++i) {
    w["emb"].data[0 * 4 + i] = std::numeric_limits<float>::quiet_NaN();
    w["emb"].data[5 * 4 + i] = std::numeric_limits<float>::infinity();
  }
  return w;
}

TEST_F(CliLimits, NanAndInfWeightsRunWithoutCrashing) {
  const Weights w = nan_and_inf_weights();
  write_safetensors(weights(), w);
  write_bytes(trees(), "(0 (1 0) (1 3))\n(0 0)\n(0 5)\n(0 (1 5) (1 3))\n(0 (1 2) (1 3))\n");

  CliResult r = run_treefc();
  ASSERT_EQ(r.status, 0) << r.output;
  Tensor roots = read_npy(out());
  ASSERT_EQ(roots.shape, (std::vector<int64_t>{5, 4}));
  auto row = [&](int64_t tree, int64_t i) { return roots.data[tree * 4 + i]; };
  const std::vector<double> finite = treefc_internal(w, embedding(w, 2), embedding(w, 3));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isnan(row(1, i))) << "a NaN leaf is its own output, element " << i;
    EXPECT_EQ(row(2, i), std::numeric_limits<float>::infinity())
        << "an Inf leaf is its own output, element " << i;
    // tanh of a sum with Inf in it is ±1 or NaN (0 * Inf); either way the row was computed.
    EXPECT_TRUE(std::isnan(row(3, i)) || std::abs(row(3, i)) <= 1.0f) << "element " << i;
    EXPECT_NEAR(row(4, i), finite[i], 1e-5) << "trees without NaN or Inf are unaffected, element " << i;
  }
}

// NaN weights give NaN outputs: tanh and sigmoid of NaN are NaN (the lowering's approximations pass a
// NaN argument through rather than letting Halide's polynomial exp turn it into 0).
TEST_F(CliLimits, NanWeightsGiveNanOutputs) {
  write_safetensors(weights(), nan_and_inf_weights());
  write_bytes(trees(), "(0 (1 0) (1 3))\n");
  CliResult r = run_treefc();
  ASSERT_EQ(r.status, 0) << r.output;
  Tensor roots = read_npy(out());
  ASSERT_EQ(roots.shape, (std::vector<int64_t>{1, 4}));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_TRUE(std::isnan(roots.data[i])) << "element " << i << " is " << roots.data[i];
}

TEST_F(CliLimits, FailedRunLeavesTheExistingOutputUntouched) {
  write_safetensors(weights(), treefc_weights(4, 8));
  write_bytes(out(), "the previous run's output");
  write_bytes(trees(), "(0 1)\n(0 2)\n(0 (1 1) (1 2))\n(0 3)\n(0 (1 1) (1 2)\n");
  CliResult r = run_treefc();
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(trees() + ":5:15: missing ')'"));
  EXPECT_EQ(read_bytes(out()), "the previous run's output");
  EXPECT_THAT(dir_.entries(), UnorderedElementsAre("w.safetensors", "trees.txt", "out.npy"));

  // A token out of range fails later, after the model is compiled: still nothing written.
  write_bytes(trees(), "(0 1)\n(0 (1 1) (1 9))\n");
  r = run_treefc();
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tree 2, node 1: token 9 is out of range"));
  EXPECT_EQ(read_bytes(out()), "the previous run's output");
  EXPECT_THAT(dir_.entries(), UnorderedElementsAre("w.safetensors", "trees.txt", "out.npy"));
}

TEST_F(CliLimits, SuccessfulRunReplacesTheOutputWholeAndLeavesNoTemporary) {
  write_safetensors(weights(), treefc_weights(4, 8));
  write_bytes(out(), "the previous run's output");
  write_bytes(trees(), "(0 1)\n(0 (1 1) (1 2))\n");
  CliResult r = run_treefc();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_npy(out()).shape, (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(dir_.entries(), UnorderedElementsAre("w.safetensors", "trees.txt", "out.npy"));
}

}  // namespace
}  // namespace grove::testing
