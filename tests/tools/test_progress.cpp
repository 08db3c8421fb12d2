// The progress line of long commands (tools/Progress.h): its text for known inputs, how often it
// is drawn and that it is erased, and, through the `grove` program, that `grove bench` shows it on
// a terminal (a pseudo-terminal here) and never in a pipe or with --quiet.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/tools/CliRunner.h"
#include "tools/Progress.h"

namespace grove::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using tool::Progress;

constexpr char kErase[] = "\r\x1b[K";

// What was written to `f` so far.
std::string contents(std::FILE *f) {
  std::fflush(f);
  std::string text;
  std::rewind(f);
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) text.append(buffer.data(), n);
  std::fseek(f, 0, SEEK_END);
  return text;
}

// How often `part` occurs in `text`.
size_t count(const std::string &text, const std::string &part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Expected figures are worked by hand: rate = done / elapsed, time left = elapsed · (1 − f) / f.
TEST(ProgressLine, WithATotal) {
  Progress p("run", "trees", false);
  p.set_total(5'000'000);
  // f = 0.24, 100,000 trees/s, 12 · 0.76 / 0.24 = 38 s left.
  EXPECT_EQ(p.line(1'200'000, std::nullopt, 12.0),
            "run: 1,200,000 of 5,000,000 trees (24%)  100,000 trees/s  38 s left");
  // The total wins over a fraction the caller passes.
  EXPECT_EQ(p.line(1'200'000, 0.9, 12.0),
            "run: 1,200,000 of 5,000,000 trees (24%)  100,000 trees/s  38 s left");
}

TEST(ProgressLine, WithAFractionTheTotalIsAnEstimate) {
  Progress p("run", "trees", false);
  // 1,204,000 / 0.2408 = 5,000,000; 81,351.4 trees/s; 14.8 · 0.7592 / 0.2408 = 46.7 s left.
  EXPECT_EQ(p.line(1'204'000, 0.2408, 14.8),
            "run: 1,204,000 of ~5,000,000 trees (24%)  81,351 trees/s  47 s left");
  // Three significant digits: 1,000 / 0.3 = 3,333.3.
  EXPECT_EQ(p.line(1'000, 0.3, 2.0), "run: 1,000 of ~3,330 trees (30%)  500 trees/s  5 s left");
  // Neither a total nor a fraction: the count and the rate only.
  EXPECT_EQ(p.line(12'345, std::nullopt, 5.0), "run: 12,345 trees  2,469 trees/s");
}

TEST(ProgressLine, NoRateBeforeTimeHasPassedOrWorkIsDone) {
  Progress p("bench TreeFC", "passes", false);
  p.set_total(6);
  EXPECT_EQ(p.line(0, std::nullopt, 0.0), "bench TreeFC: 0 of 6 passes (0%)");
  EXPECT_EQ(p.line(3, std::nullopt, 0.0), "bench TreeFC: 3 of 6 passes (50%)");
  EXPECT_EQ(p.line(0, std::nullopt, 5.0), "bench TreeFC: 0 of 6 passes (0%)");
  // A rate over less than a second is noise.
  EXPECT_EQ(p.line(3, std::nullopt, 0.5), "bench TreeFC: 3 of 6 passes (50%)");
  EXPECT_EQ(p.line(3, std::nullopt, 1.0), "bench TreeFC: 3 of 6 passes (50%)  3.00 passes/s  1 s left");
  Progress stream("run", "trees", false);
  EXPECT_EQ(stream.line(0, 0.0, 0.0), "run: 0 trees");
  EXPECT_EQ(stream.line(0, 0.0, 3.0), "run: 0 trees");
}

TEST(ProgressLine, SlowRatesAndLongWaits) {
  Progress p("bench TreeFC", "passes", false);
  p.set_total(6);
  // 2 / 200 = 0.01 passes/s; 200 · (4/6) / (2/6) = 400 s.
  EXPECT_EQ(p.line(2, std::nullopt, 200.0),
            "bench TreeFC: 2 of 6 passes (33%)  0.01 passes/s  6 min 40 s left");
  // 12 / 1 s: one decimal from 10 up.
  EXPECT_EQ(p.line(12, std::nullopt, 1.0), "bench TreeFC: 12 of 6 passes (100%)  12.0 passes/s  0 s left");
  Progress q("tune", "schedules", false);
  q.set_total(100);
  // 100 · 0.99 / 0.01 = 9,900 s = 2 h 45 min.
  EXPECT_EQ(q.line(1, std::nullopt, 100.0),
            "tune: 1 of 100 schedules (1%)  0.01 schedules/s  2 h 45 min left");
}

TEST(ProgressDrawing, DrawsAtMostEvery200MsAndFinishErases) {
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p("run", "trees", true, f);
    auto start = std::chrono::steady_clock::now();
    p.update(1);
    p.update(2);
    // The check needs both calls inside the 200 ms window; a machine that stalls longer cannot tell.
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(150)) {
      std::fclose(f);
      GTEST_SKIP() << "the two updates were more than 150 ms apart";
    }
    std::string drawn = contents(f);
    EXPECT_EQ(drawn, std::string(kErase) + "run: 1 trees");
    // clear() erases, and the next update draws again at once.
    p.clear();
    EXPECT_EQ(contents(f), drawn + kErase);
    p.update(3);
    EXPECT_THAT(contents(f), EndsWith(std::string(kErase) + "run: 3 trees"));
    p.finish();
    std::string finished = contents(f);
    EXPECT_THAT(finished, EndsWith(std::string("run: 3 trees") + kErase));
    // After finish() nothing more is drawn, and the destructor does not erase twice.
    p.update(4);
    p.finish();
    EXPECT_EQ(contents(f), finished);
  }
  EXPECT_EQ(count(contents(f), kErase), 4u);  // draw 1, clear, draw 3, finish
  std::fclose(f);
}

TEST(ProgressDrawing, DisabledOrNeverDrawnWritesNothing) {
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress off("run", "trees", false, f);
    off.set_total(10);
    off.update(1);
    off.update(5, 0.5);
    off.clear();
    off.finish();
    Progress unused("run", "trees", true, f);  // enabled but never updated: nothing to erase
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
  EXPECT_FALSE(tool::progress_wanted(true));
  EXPECT_EQ(tool::progress_wanted(false), bool(::isatty(::fileno(stderr))));
}

// `grove bench` on a few small trees, its stdout to a file, and what it wrote to standard error.
class BenchProgress : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(trees()) << "(0 (0 1) (0 (0 2) (0 3)))\n(0 4)\n(0 (0 0) (0 1))\n"; }
  std::string trees() const { return dir_.file("trees.txt"); }
  std::string report() const { return dir_.file("report.txt"); }
  std::string args(const std::string &extra) const {
    return "bench " + model_path("treefc") + " --trees " + trees() +
           " --random-weights --sizes H=8,V=5 --batch 2 --repeat 3 " + extra;
  }

  // Runs `grove ARGS` with standard error on a pseudo-terminal (stdin too; stdout to report()).
  // Returns what arrived on the terminal; `status` gets the exit status.
  std::string on_terminal(const std::string &extra, int *status) const {
    return grove_on_terminal(args(extra), status);
  }

  // The same for any `grove ARGS`.
  std::string grove_on_terminal(const std::string &grove_args, int *status) const {
    std::string command = std::string(GROVE_BINARY) + " " + grove_args + " > " + report();
    winsize size{};
    size.ws_row = 24;
    size.ws_col = 200;
    int master = -1;
    pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
    if (pid < 0) {
      ADD_FAILURE() << "forkpty failed";
      return "";
    }
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
      ::_exit(127);
    }
    std::string text;
    std::array<char, 4096> buffer;
    ssize_t n;
    // The read fails (EIO) once the child has exited and the terminal's last writer is gone.
    while ((n = ::read(master, buffer.data(), buffer.size())) > 0) text.append(buffer.data(), size_t(n));
    ::close(master);
    int wait_status = 0;
    ::waitpid(pid, &wait_status, 0);
    *status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
    return without_sanitizer_warnings(text);
  }

  // The terminal's text without the lines a sanitizer prints there ("==PID==WARNING: ASan doesn't
  // fully support makecontext/swapcontext ..." under `make test-sanitize`): not grove's output.
  static std::string without_sanitizer_warnings(const std::string &text) {
    std::string kept;
    size_t begin = 0;
    while (begin < text.size()) {
      size_t end = text.find('\n', begin);
      end = end == std::string::npos ? text.size() : end + 1;
      if (text.compare(begin, 2, "==") != 0 || text.find("WARNING", begin) >= end)
        kept += text.substr(begin, end - begin);
      begin = end;
    }
    return kept;
  }

  TempDir dir_;
};

TEST_F(BenchProgress, ShownOnATerminalAndErasedBeforeTheReport) {
  int status = -1;
  std::string terminal = on_terminal("", &status);
  ASSERT_EQ(status, 0) << terminal;
  // The first update always draws: the warm-up pass and 3 timed ones.
  EXPECT_THAT(terminal, HasSubstr(std::string(kErase) + "bench TreeFC: 0 of 4 passes (0%)"));
  EXPECT_THAT(terminal, EndsWith(kErase));  // erased: the terminal is left clean
  EXPECT_THAT(read_bytes(report()), HasSubstr("median of 3 passes"));
  EXPECT_THAT(read_bytes(report()), Not(HasSubstr("passes (")));  // none of it on stdout
}

TEST_F(BenchProgress, NotShownWithQuietOrInAPipe) {
  int status = -1;
  std::string terminal = on_terminal("--quiet", &status);
  ASSERT_EQ(status, 0) << terminal;
  EXPECT_EQ(terminal, "");
  CliResult piped = run_grove(args(""));  // stdout and stderr into one pipe
  ASSERT_EQ(piped.status, 0) << piped.output;
  EXPECT_THAT(piped.output, HasSubstr("median of 3 passes"));
  EXPECT_THAT(piped.output, Not(HasSubstr("of 4 passes")));
  EXPECT_THAT(piped.output, Not(HasSubstr("\x1b[K")));
}

// `grove run` streams: its line counts the trees run so far against an estimate of the total from
// the bytes read ("of ~N trees"), and is erased at the end.
TEST_F(BenchProgress, RunShowsTreesDoneAndErasesTheLine) {
  std::string weights = dir_.file("w.safetensors");
  ASSERT_EQ(
      run_grove("init-weights " + model_path("treefc") + " --sizes H=8,V=21702 --out " + weights).status, 0);
  int status = -1;
  std::string terminal =
      grove_on_terminal("run " + model_path("treefc") + " --weights " + weights + " --trees " +
                            std::string(GROVE_SST_DIR) + "/test.txt --vocab " + std::string(GROVE_SST_DIR) +
                            "/vocab.txt --out " + dir_.file("out.npy") + " --batch 10 --chunk 200",
                        &status);
  ASSERT_EQ(status, 0) << terminal;
  EXPECT_THAT(terminal, HasSubstr(std::string(kErase) + "run: 200 of ~"));
  EXPECT_THAT(terminal, HasSubstr(" trees ("));
  EXPECT_THAT(terminal, EndsWith(kErase));
}

}  // namespace
}  // namespace grove::testing
