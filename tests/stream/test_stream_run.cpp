// `grove run` streams its input: chunk sizes change nothing in the output's bytes, memory does not
// grow with the input, and an error anywhere in the stream names the input in the file and leaves
// the output as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "support/Npy.h"
#include "tests/stream/StreamTestUtil.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;

// The peak resident memory `grove run --stats` reports, in MiB.
double peak_mib(const std::string &output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("peak resident ([0-9.]+) MiB"))) return -1;
  return std::stod(m[1]);
}

TEST_F(StreamFixture, ChunkSizeDoesNotChangeTheOutputBytes) {
  std::string trees = dir_.file("trees.txt");
  int64_t count = write_repeated_sst(trees, 2);
  std::string whole = dir_.file("whole.npy");
  CliResult first = run_trees(trees, whole, "--batch 10 --chunk 100000 --stats");
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr(fmt::format("trees     {} from", count)));
  EXPECT_THAT(first.output, HasSubstr("1 chunk(s)"));
  // 1 and 37 are rounded up to whole calls of 10 trees: 10 and 40.
  for (const char *chunk : {"1", "37", "1000"}) {
    std::string out = dir_.file(std::string("chunk") + chunk + ".npy");
    CliResult r = run_trees(trees, out, std::string("--batch 10 --stats --chunk ") + chunk);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(same_bytes(out, whole)) << "--chunk " << chunk;
  }
  Tensor rows = read_npy(whole);
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{count, 16}));
}

TEST_F(StreamFixture, MemoryDoesNotGrowWithTheInput) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer, freed memory waits in its quarantine, so resident memory grows "
                  "with the input by design";
#endif
  // 10x the trees in the same chunk size: the peak resident memory stays within a few MiB (the
  // model, one chunk being read, one being run), where reading the whole file would add ~40 MiB.
  std::string small = dir_.file("small.txt"), large = dir_.file("large.txt");
  write_repeated_sst(small, 3);
  write_repeated_sst(large, 30);
  CliResult a = run_trees(small, dir_.file("small.npy"), "--batch 10 --chunk 500 --stats");
  CliResult b = run_trees(large, dir_.file("large.npy"), "--batch 10 --chunk 500 --stats");
  ASSERT_EQ(a.status, 0) << a.output;
  ASSERT_EQ(b.status, 0) << b.output;
  ASSERT_GT(peak_mib(a.output), 0) << a.output;
  EXPECT_LT(peak_mib(b.output), peak_mib(a.output) + 12) << a.output << b.output;
}

TEST_F(StreamFixture, SyntaxErrorDeepInTheStreamNamesItsLineAndKeepsTheOutput) {
  std::string trees = dir_.file("trees.txt");
  write_lines(trees, 1500, [](int64_t k) {
    return k == 1234 ? std::string("(2 (2 good) (2 bad)") : "(2 (2 good) (2 bad))";
  });
  std::string out = dir_.file("out.npy");
  write_bytes(out, "precious");
  for (const char *chunk : {"7", "100000"}) {
    CliResult r = run_trees(trees, out, std::string("--batch 5 --chunk ") + chunk);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(trees + ":1234:")) << "--chunk " << chunk;
    EXPECT_EQ(read_bytes(out), "precious");
    EXPECT_EQ(dir_.entries().size(), 3u) << "a temporary was left behind";
  }
}

TEST_F(StreamFixture, ModelErrorDeepInTheStreamNamesTheTreeInTheFile) {
  // Token ids without a vocabulary: tree 1777 holds a token past the embedding's 21702 rows.
  std::string trees = dir_.file("ids.txt");
  write_lines(trees, 2000,
              [](int64_t k) { return fmt::format("(0 (0 {}) (0 {}))", k % 100, k == 1777 ? 50000 : k % 7); });
  std::string out = dir_.file("out.npy");
  CliResult r = run_shell(std::string(GROVE_BINARY) + " run " + model_path("treefc") + " --weights " +
                          weights_ + " --trees " + trees + " --out " + out + " --batch 4 --chunk 64");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tree 1777, node 1: token 50000 is out of range")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(dir_.entries().size(), 2u) << "a temporary was left behind";
}

TEST(StreamRun, SequencesStreamedMatchPyTorchAndEachOther) {
  // tests/fixtures: an LSTM's weights, 8 sequences and PyTorch's last hidden states (1e-4 relative).
  TempDir dir;
  std::string fixtures = std::string(GROVE_SOURCE_DIR) + "/tests/fixtures/";
  std::string seqs = dir.file("seqs.txt");
  std::string one = read_bytes(fixtures + "sequences.txt");
  write_bytes(seqs, one + one + one);
  Tensor expected = read_npy(fixtures + "lstm_expected.npy");
  std::string first_out;
  for (const char *chunk : {"1", "5", "1000"}) {
    std::string out = dir.file(std::string("out") + chunk + ".npy");
    CliResult r =
        run_grove("run " + model_path("lstm") + " --weights " + fixtures + "lstm.safetensors --sequences " +
                  seqs + " --out " + out + " --batch 1 --chunk " + chunk);
    ASSERT_EQ(r.status, 0) << r.output;
    Tensor got = read_npy(out);
    ASSERT_EQ(got.shape[0], 3 * expected.shape[0]);
    for (size_t i = 0; i < got.data.size(); ++i) {
      float e = expected.data[i % expected.data.size()];
      ASSERT_NEAR(got.data[i], e, 1e-4 * std::abs(e) + 1e-6) << "element " << i << ", --chunk " << chunk;
    }
    if (first_out.empty()) first_out = out;
    EXPECT_TRUE(same_bytes(out, first_out)) << "--chunk " << chunk;
  }
}

// DAGs with several sinks each (and --all-nodes): the rows of a chunk are not one per input.
TEST(StreamRun, DagsStreamedInChunksGiveTheSameBytes) {
  TempDir dir;
  std::string weights = dir.file("dagrnn.safetensors"), dags = dir.file("dags.json");
  ASSERT_EQ(
      run_grove("init-weights " + model_path("dagrnn") + " --sizes H=8,D=8,V=10 --seed 3 --out " + weights)
          .status,
      0);
  std::string text = "[";
  for (int d = 0; d < 40; ++d) {
    // Node 0 and 1 are sources; 2 takes both; 3 takes 0 only: sinks 2 and 3 (and 1 more every 3rd DAG).
    text += fmt::format(
        "{}{{\"nodes\": [{{\"token\": {}}}, {{\"token\": {}}}, {{\"token\": 2, \"preds\": [0, 1]}}, "
        "{{\"token\": 3, \"preds\": [0, null]}}{}]}}",
        d ? ", " : "", d % 10, (d * 3) % 10, d % 3 == 0 ? ", {\"token\": 4}" : "");
  }
  write_bytes(dags, text + "]");
  for (const char *outputs : {"", " --all-nodes"}) {
    std::string whole = dir.file("whole.npy");
    ASSERT_EQ(run_grove("run " + model_path("dagrnn") + " --weights " + weights + " --dags " + dags +
                        " --out " + whole + " --batch 2 --chunk 1000" + outputs)
                  .status,
              0);
    int64_t rows = read_npy(whole).shape[0];
    EXPECT_EQ(rows, *outputs ? 40 * 4 + 14 : 40 * 2 + 14);
    for (const char *chunk : {"2", "6"}) {
      std::string out = dir.file("out.npy");
      CliResult r = run_grove("run " + model_path("dagrnn") + " --weights " + weights + " --dags " + dags +
                              " --out " + out + " --batch 2 --chunk " + chunk + outputs);
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_TRUE(same_bytes(out, whole)) << "--chunk " << chunk << outputs;
    }
  }
}

TEST_F(StreamFixture, ChunkMustBePositive) {
  CliResult r = run_trees(sst("test.txt"), dir_.file("out.npy"), "--chunk 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--chunk"));
}

}  // namespace
}  // namespace grove::testing
