// `mpirun -n K grove run`: the output is the bytes one process writes (with the same --threads: the
// team size, like the batch size, changes results by float rounding), for trees, sequences and DAGs
// (rows per input not one); a bad input in one rank's share stops the job with the single-process
// message and leaves no output. Skipped, with the reason, where grove was built without Open MPI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/stream/StreamTestUtil.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;

#ifdef GROVE_HAVE_MPI
constexpr bool kHaveMpi = true;
#else
constexpr bool kHaveMpi = false;
#endif

// Under `make test-sanitize`, the ranks' leak check is off: Open MPI unloads its components at
// MPI_Finalize, and their allocations then show as leaks from "<unknown module>" that no
// suppression can name. Every single-process run of grove keeps the check.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char *kRankSanitizer = "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 ";
#else
constexpr const char *kRankSanitizer = "";
#endif

// mpirun with K ranks on this machine, allowed to run as root (CI runs as root) and to put more
// ranks than cores on it.
std::string mpirun(int ranks) {
  return fmt::format(
      "{}OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
      "{} -n {} --oversubscribe",
      kRankSanitizer, MPIEXEC, ranks);
}

class MpiRun : public StreamFixture {
 protected:
  void SetUp() override {
    if (!kHaveMpi)
      GTEST_SKIP() << "grove was built without MPI (install Debian's libopenmpi-dev and rebuild)";
    StreamFixture::SetUp();
  }
};

TEST_F(MpiRun, TwoAndThreeRanksWriteTheBytesOfOneProcess) {
  std::string trees = dir_.file("trees.txt");
  write_repeated_sst(trees, 2);
  std::string single = dir_.file("single.npy");
  CliResult one = run_trees(trees, single, "--batch 10 --chunk 300 --threads 1");
  ASSERT_EQ(one.status, 0) << one.output;
  for (int ranks : {2, 3}) {
    std::string out = dir_.file(fmt::format("ranks{}.npy", ranks));
    CliResult r = run_trees(trees, out, "--batch 10 --chunk 300 --threads 1 --stats", mpirun(ranks));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(fmt::format("ranks     {} (", ranks)));
    EXPECT_THAT(r.output, HasSubstr(fmt::format("rank {}  ", ranks - 1)));
    EXPECT_TRUE(same_bytes(out, single)) << ranks << " ranks";
  }
}

TEST_F(MpiRun, SequencesAndDagsWithManySinks) {
  std::string fixtures = std::string(GROVE_SOURCE_DIR) + "/tests/fixtures/";
  std::string seqs = dir_.file("seqs.txt");
  std::string text = read_bytes(fixtures + "sequences.txt");
  write_bytes(seqs, text + text + text + text);
  std::string seq_args =
      " --weights " + fixtures + "lstm.safetensors --sequences " + seqs + " --batch 2 --chunk 2 --threads 1";
  ASSERT_EQ(run_grove("run " + model_path("lstm") + seq_args + " --out " + dir_.file("s1.npy")).status, 0);
  CliResult r = run_shell(mpirun(3) + " " + GROVE_BINARY + " run " + model_path("lstm") + seq_args +
                          " --out " + dir_.file("s3.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(same_bytes(dir_.file("s3.npy"), dir_.file("s1.npy")));

  std::string weights = dir_.file("dagrnn.safetensors"), dags = dir_.file("dags.json");
  ASSERT_EQ(
      run_grove("init-weights " + model_path("dagrnn") + " --sizes H=8,D=8,V=10 --seed 3 --out " + weights)
          .status,
      0);
  std::string json = "[";
  for (int d = 0; d < 30; ++d)
    json += fmt::format("{}{{\"nodes\": [{{\"token\": {}}}, {{\"token\": 1, \"preds\": [0, null]}}{}]}}",
                        d ? ", " : "", d % 10, d % 4 == 0 ? ", {\"token\": 5}, {\"token\": 6}" : "");
  write_bytes(dags, json + "]");
  std::string dag_args =
      " run " + model_path("dagrnn") + " --weights " + weights + " --dags " + dags + " --batch 2 --threads 1";
  ASSERT_EQ(run_grove(dag_args + " --out " + dir_.file("d1.npy")).status, 0);
  r = run_shell(mpirun(2) + " " + GROVE_BINARY + dag_args + " --out " + dir_.file("d2.npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(same_bytes(dir_.file("d2.npy"), dir_.file("d1.npy")));
}

TEST_F(MpiRun, ABadTreeInTheLastSharesStopsTheJobAndWritesNothing) {
  // Token ids: tree 1900 of 2000 (in rank 2's share of 3) holds a token past the vocabulary.
  std::string trees = dir_.file("ids.txt");
  write_lines(trees, 2000,
              [](int64_t k) { return fmt::format("(0 (0 {}) (0 {}))", k % 100, k == 1900 ? 50000 : k % 7); });
  std::string out = dir_.file("out.npy");
  write_bytes(out, "precious");
  std::string args = std::string(GROVE_BINARY) + " run " + model_path("treefc") + " --weights " + weights_ +
                     " --trees " + trees + " --out " + out + " --batch 4 --chunk 64";
  CliResult single = run_shell(args);
  ASSERT_EQ(single.status, 1) << single.output;
  CliResult r = run_shell(mpirun(3) + " " + args);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tree 1900, node 1: token 50000 is out of range")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(rank 2 of 3;")) << r.output;
  EXPECT_EQ(read_bytes(out), "precious");
  EXPECT_EQ(dir_.entries().size(), 3u) << "a temporary was left behind";
}

TEST_F(MpiRun, AMalformedFileIsReportedOnceBeforeAnyRankRuns) {
  std::string trees = dir_.file("bad.txt");
  write_lines(trees, 300,
              [](int64_t k) { return k == 250 ? std::string("(2 (2 a) (2 b)))") : "(2 (2 a) (2 b))"; });
  CliResult r = run_trees(trees, dir_.file("out.npy"), "--batch 10", mpirun(2));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(trees + ":250:"));
  EXPECT_FALSE(std::filesystem::exists(dir_.file("out.npy")));
}

TEST(MpiWithoutSupport, ALauncherIsRefusedWhenGroveHasNoMpi) {
  if (kHaveMpi) GTEST_SKIP() << "grove was built with MPI; this checks the build without it";
  TempDir dir;
  write_bytes(dir.file("w.safetensors"), "never read");
  CliResult r = run_shell("OMPI_COMM_WORLD_SIZE=2 " + std::string(GROVE_BINARY) + " run " +
                          model_path("treefc") + " --weights " + dir.file("w.safetensors") + " --trees " +
                          sst("test.txt") + " --out " + dir.file("o.npy"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("built without MPI"));
}

}  // namespace
}  // namespace grove::testing
