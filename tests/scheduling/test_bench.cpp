// `grove bench` (tools/Bench.h) and the random weights it shares with `grove init-weights`
// (backends/runtime/RandomWeights.h): the protocol's arithmetic, the JSON report, and the user errors.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/runtime/RandomWeights.h"
#include "frontend/dsl/Frontend.h"
#include "scheduling/Schedule.h"
#include "tests/UserError.h"
#include "tools/Bench.h"
#include "tools/Tune.h"

namespace grove::tool {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

std::string model_path(const std::string &stem) {
  return std::string(GROVE_SOURCE_DIR) + "/models/" + stem + ".grove";
}

TEST(Percentile, InterpolatesLikeNumpy) {
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 10), 1.3);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile({5}, 90), 5);
}

TEST(RandomWeights, AreSeededShapedAndBoundedByFanIn) {
  ilir::Program p = dsl::parse_model_file(model_path("treelstm"));
  std::map<std::string, int64_t> sizes{{"H", 8}, {"D", 4}, {"V", 5}};
  Weights a = random_weights(p, sizes, 3), b = random_weights(p, sizes, 3), c = random_weights(p, sizes, 4);
  EXPECT_EQ(a.at("U_iou").shape, (std::vector<int64_t>{24, 16}));
  EXPECT_EQ(a.at("emb").shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(a.at("U_iou").data, b.at("U_iou").data);
  EXPECT_NE(a.at("U_iou").data, c.at("U_iou").data);
  for (float x : a.at("U_iou").data) EXPECT_LE(std::abs(x), 1.0f / std::sqrt(16.0f));
  for (float x : a.at("b_iou").data) EXPECT_LE(std::abs(x), 0.1f);
}

TEST(RandomWeightsErrors, NameTheMissingOrUnknownSize) {
  ilir::Program p = dsl::parse_model_file(model_path("treefc"));
  EXPECT_THAT(user_error_of([&] {
                random_weights(p, {{"H", 8}}, 1);
              }),
              HasSubstr("model TreeFC needs a value for size variable 'V'"));
  EXPECT_THAT(user_error_of([&] {
                random_weights(p, {{"H", 8}, {"V", 3}, {"D", 8}}, 1);
              }),
              HasSubstr("model TreeFC has no size variable 'D'"));
  EXPECT_THAT(user_error_of([] { parse_sizes("H=256,D"); }), HasSubstr("expected NAME=VALUE pairs"));
}

class BenchCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("grove-bench-test-{}", ::getpid());
    std::filesystem::create_directories(dir_);
    trees_ = (dir_ / "trees.txt").string();
    std::ofstream(trees_) << "(0 (0 1) (0 (0 2) (0 3)))\n(0 4)\n(0 (0 0) (0 1))\n(0 (0 2) (0 3))\n(0 1)\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  BenchCommand command() const {
    BenchCommand c;
    c.model = model_path("treefc");
    c.inputs.trees = trees_;
    c.random_weights = true;
    c.sizes = "H=16,V=5";
    c.batch = 2;
    c.repeat = 3;
    c.json = true;
    return c;
  }

  std::filesystem::path dir_;
  std::string trees_;
};

TEST_F(BenchCommandTest, JsonReportsTheProtocolsFigures) {
  std::ostringstream out;
  ASSERT_EQ(bench(command(), out), 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["model"], "TreeFC");
  EXPECT_EQ(j["trees"], 5);
  EXPECT_EQ(j["calls"], 3);  // 2 + 2 + 1 trees
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["sizes"]["H"], 16);
  // 4 internal nodes of 2·16·32 FLOPs, over 3 calls.
  EXPECT_NEAR(j["flops_per_batch"].get<double>(), 4 * 2.0 * 16 * 32 / 3, 1e-6);
  EXPECT_GT(j["median_ms_per_batch"].get<double>(), 0);
  EXPECT_LE(j["p10_ms"].get<double>(), j["median_ms_per_batch"].get<double>());
  EXPECT_GE(j["p90_ms"].get<double>(), j["median_ms_per_batch"].get<double>());
  EXPECT_GT(j["compile_ms"].get<double>(), 0);
  EXPECT_GE(j["inspector_ms"].get<double>(), 0);
  EXPECT_THAT(j["schedule"].get<std::string>(), HasSubstr("batch=on"));
  EXPECT_EQ(j["precision"], "fp32");
}

// The precision that ran: bf16 where this CPU has bf16 kernels, else fp32 (and the schedule says so).
TEST_F(BenchCommandTest, ReportsThePrecisionThatRan) {
  BenchCommand c = command();
  c.schedule = "precision=bf16";
  std::ostringstream out;
  ASSERT_EQ(bench(c, out), 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  const bool bf16 = j["schedule"].get<std::string>().find("precision=bf16") != std::string::npos;
  EXPECT_EQ(j["precision"], bf16 ? "bf16" : "fp32");
  c.json = false;
  std::ostringstream text;
  ASSERT_EQ(bench(c, text), 0);
  EXPECT_THAT(text.str(), HasSubstr(bf16 ? "precision bf16 level GEMMs" : "precision fp32"));
}

TEST_F(BenchCommandTest, ThreadsAndLimitReachTheScheduleAndTheTrees) {
  BenchCommand c = command();
  c.threads = 1;
  c.schedule = "fuse=off";
  c.limit = 3;
  std::ostringstream out;
  ASSERT_EQ(bench(c, out), 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_THAT(j["schedule"].get<std::string>(), HasSubstr("fuse=off"));
  EXPECT_THAT(j["schedule"].get<std::string>(), HasSubstr("threads=1"));
  EXPECT_EQ(j["trees"], 3);
  EXPECT_EQ(j["calls"], 2);
}

TEST_F(BenchCommandTest, TextReportNamesEveryFigure) {
  BenchCommand c = command();
  c.json = false;
  std::ostringstream out;
  ASSERT_EQ(bench(c, out), 0);
  EXPECT_THAT(out.str(), HasSubstr("ms per batch (median of 3 passes after 1 warm-up"));
  EXPECT_THAT(out.str(), HasSubstr("GFLOP/s"));
  EXPECT_THAT(out.str(), HasSubstr("trees     5 from " + trees_));
  EXPECT_THAT(out.str(), HasSubstr("3 call(s) of up to 2"));
}

TEST_F(BenchCommandTest, ErrorsSayWhatIsMissing) {
  std::ostringstream out;
  BenchCommand neither = command();
  neither.random_weights = false;
  EXPECT_THAT(user_error_of([&] { bench(neither, out); }),
              HasSubstr("give exactly one of --weights FILE and --random-weights"));
  BenchCommand both = command();
  both.weights = trees_;
  EXPECT_THAT(user_error_of([&] { bench(both, out); }),
              HasSubstr("give exactly one of --weights FILE and --random-weights"));
  BenchCommand zero = command();
  zero.batch = 0;
  EXPECT_THAT(user_error_of([&] { bench(zero, out); }), HasSubstr("--batch must be positive, got 0"));
  BenchCommand missing = command();
  missing.sizes = "H=16";
  EXPECT_THAT(user_error_of([&] { bench(missing, out); }), HasSubstr("needs a value for size variable 'V'"));
}

TEST_F(BenchCommandTest, SequencesAndGridsRunWithTheSameProtocol) {
  // LSTM (H = D = 16): 2·4H·D + 2·4H·H = 4096 FLOPs per token; 5 tokens in one call of 2 sequences.
  const std::string sequences = (dir_ / "sequences.txt").string();
  std::ofstream(sequences) << "1 2 3\n4 5\n";
  BenchCommand c = command();
  c.model = model_path("lstm");
  c.inputs = InputFiles{};
  c.inputs.sequences = sequences;
  c.sizes = "H=16,D=16,V=6";
  std::ostringstream out;
  ASSERT_EQ(bench(c, out), 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["inputs"], "sequences");
  EXPECT_EQ(j["trees"], 2);
  EXPECT_EQ(j["calls"], 1);
  EXPECT_EQ(j["nodes"], 5);
  EXPECT_DOUBLE_EQ(j["flops_per_batch"].get<double>(), 5 * 4096.0);

  // DAG-RNN over two 2×3 grids (H = D = 16: 3·2·16·16 FLOPs per cell), one grid per call.
  const std::string grids = (dir_ / "grids.txt").string();
  std::ofstream(grids) << "2 3 0 1 2 3 4 5\n2 3 5 4 3 2 1 0\n";
  c.model = model_path("dagrnn");
  c.inputs = InputFiles{};
  c.inputs.grids = grids;
  c.batch = 1;
  std::ostringstream out2;
  ASSERT_EQ(bench(c, out2), 0);
  j = nlohmann::json::parse(out2.str());
  EXPECT_EQ(j["inputs"], "grids");
  EXPECT_EQ(j["calls"], 2);
  EXPECT_DOUBLE_EQ(j["flops_per_batch"].get<double>(), 6 * 3 * 2.0 * 16 * 16);

  c.inputs.trees = trees_;  // two inputs
  EXPECT_THAT(
      user_error_of([&] { bench(c, out); }),
      HasSubstr("bench needs exactly one input: --trees, --dags, --grids or --sequences; got --trees and "
                "--grids"));
}

TEST_F(BenchCommandTest, TuneCachesAScheduleThatBenchTunedUses) {
  // A cache that holds another entry, which tuning must keep.
  const std::string cache = (dir_ / "cache" / "schedules.json").string();
  std::filesystem::create_directories(dir_ / "cache");
  std::ofstream(cache) << R"({"other key": {"schedule": "fuse=off"}})";
  TuneCommand t{command()};
  t.bench.repeat = 1;
  t.bench.json = false;
  t.bench.cache = cache;
  std::ostringstream out;
  ASSERT_EQ(tune(t, out), 0);
  EXPECT_THAT(out.str(), HasSubstr("(default)"));
  EXPECT_THAT(out.str(), HasSubstr("unroll=2"));
  EXPECT_THAT(out.str(), HasSubstr("best      "));

  std::ifstream in(cache);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["other key"]["schedule"], "fuse=off");
  const std::string key =
      "TreeFC H=16,V=5 batch=2 threads=" + std::to_string(scheduling::Schedule().team_size()) +
      " target=host";
  ASSERT_TRUE(j.contains(key)) << j.dump(2);
  const std::string found = j[key]["schedule"].get<std::string>();
  scheduling::Schedule s;
  s.apply(found, "the cache");  // a valid override string
  EXPECT_LE(j[key]["median_ms_per_batch"].get<double>(), j[key]["default_ms_per_batch"].get<double>());

  // bench --tuned starts from it; with no entry for its key it says so.
  BenchCommand b = command();
  b.tuned = true;
  b.cache = cache;
  std::ostringstream report;
  ASSERT_EQ(bench(b, report), 0);
  // The host's default schedule (its vector width follows the CPU) with the cached overrides.
  scheduling::Schedule used;
  used.apply(nlohmann::json::parse(report.str())["schedule"].get<std::string>(), "the report");
  scheduling::Schedule expected = used;
  expected.apply(found, "expected");
  EXPECT_EQ(used.to_string(), expected.to_string());
  b.batch = 3;
  EXPECT_THAT(user_error_of([&] { bench(b, report); }),
              HasSubstr("no tuned schedule for 'TreeFC H=16,V=5 batch=3 threads="));
}

TEST_F(BenchCommandTest, BadScheduleInTheTuneCacheNamesTheCacheAndEntry) {
  const std::string cache = (dir_ / "cache.json").string();
  const std::string key =
      "TreeFC H=16,V=5 batch=2 threads=" + std::to_string(scheduling::Schedule().team_size()) +
      " target=host";
  std::ofstream(cache) << nlohmann::json{{key, {{"schedule", "node_block=99"}}}}.dump();
  BenchCommand b = command();
  b.tuned = true;
  b.cache = cache;
  std::ostringstream out;
  EXPECT_THAT(user_error_of([&] { bench(b, out); }),
              HasSubstr("tuning cache " + cache + ", entry '" + key +
                        "': schedule key 'node_block' takes an integer in [1, 32], got '99'"));
}

TEST_F(BenchCommandTest, MalformedTuneCacheIsAnErrorNamingTheFile) {
  const std::string cache = (dir_ / "bad.json").string();
  std::ofstream(cache) << "{not json";
  BenchCommand b = command();
  b.tuned = true;
  b.cache = cache;
  std::ostringstream out;
  EXPECT_THAT(user_error_of([&] { bench(b, out); }), HasSubstr("tuning cache " + cache + " is malformed"));
  TuneCommand t{command()};
  t.bench.cache = cache;
  EXPECT_THAT(user_error_of([&] { tune(t, out); }), HasSubstr("tuning cache " + cache + " is malformed"));
  std::ifstream in(cache);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{not json");  // the user's file is left as it was
}

}  // namespace
}  // namespace grove::tool
