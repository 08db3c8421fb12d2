#pragma once
// What the streaming and MPI run tests share: input files made from the SST trees, and `grove run`
// over them with a model and weights written once per test.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "support/Safetensors.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {

inline std::string sst(const std::string &name) { return std::string(GROVE_SST_DIR) + "/" + name; }

// The SST test trees, `times` times over, written to `path`; returns the number of trees.
inline int64_t write_repeated_sst(const std::string &path, int times) {
  std::string text = read_bytes(sst("test.txt"));
  if (!text.empty() && text.back() != '\n') text += '\n';
  std::ofstream out(path, std::ios::binary);
  for (int t = 0; t < times; ++t) out << text;
  return int64_t(std::count(text.begin(), text.end(), '\n')) * times;
}

// Whether files `a` and `b` hold the same bytes; on failure, where they first differ (never the
// bytes themselves: outputs are megabytes of floats).
inline ::testing::AssertionResult same_bytes(const std::string &a, const std::string &b) {
  std::string x = read_bytes(a), y = read_bytes(b);
  if (x == y) return ::testing::AssertionSuccess();
  auto [i, j] = std::mismatch(x.begin(), x.end(), y.begin(), y.end());
  return ::testing::AssertionFailure() << a << " (" << x.size() << " bytes) and " << b << " (" << y.size()
                                       << " bytes) first differ at byte " << (i - x.begin());
}

// A file of `lines` lines, line k holding `make(k)` (k from 1).
template <typename F>
void write_lines(const std::string &path, int64_t lines, F make) {
  std::ofstream out(path, std::ios::binary);
  for (int64_t k = 1; k <= lines; ++k) out << make(k) << '\n';
}

// A scratch directory with TreeFC weights for the SST vocabulary (H = 16).
class StreamFixture : public ::testing::Test {
 protected:
  void SetUp() override { write_safetensors(weights_, treefc_weights(16, kSstVocab)); }
  // `grove run` of TreeFC over `trees` with the SST vocabulary and `options`.
  CliResult run_trees(const std::string &trees, const std::string &out, const std::string &options,
                      const std::string &launcher = "") const {
    return run_shell(launcher + " " + std::string(GROVE_BINARY) + " run " + model_path("treefc") +
                     " --weights " + weights_ + " --trees " + trees + " --vocab " + sst("vocab.txt") +
                     " --out " + out + " " + options);
  }

  static constexpr int64_t kSstVocab = 21702;
  TempDir dir_;
  std::string weights_ = dir_.file("treefc.safetensors");
};

}  // namespace grove::testing
