// support/PassRunner.h: what the timed pass runner prints at each debug level, and that it returns
// the pass's result unchanged.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/PassRunner.h"

namespace grove {
namespace {

std::string show(int x) { return "ir " + std::to_string(x); }
bool same(int a, int b) { return a == b; }

std::string run(int level, int input, int (*pass)(int), int *result) {
  std::ostringstream out;
  *result = run_timed_pass("relay", "double", level, input, pass, show, same, &out);
  return out.str();
}

TEST(PassRunner, LevelZeroPrintsNothing) {
  int result = 0;
  EXPECT_EQ(run(
                0, 3, [](int x) { return 2 * x; }, &result),
            "");
  EXPECT_EQ(result, 6);
}

TEST(PassRunner, LevelOnePrintsTheTimeOnly) {
  int result = 0;
  const std::string out = run(
      1, 3, [](int x) { return 2 * x; }, &result);
  EXPECT_EQ(result, 6);
  EXPECT_EQ(out.rfind("[grove] relay pass double ", 0), 0u) << out;
  EXPECT_NE(out.find(" ms\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("after"), std::string::npos) << out;
}

TEST(PassRunner, LevelTwoShowsTheIrOnlyWhenThePassChangedIt) {
  int result = 0;
  const std::string changed = run(
      2, 3, [](int x) { return 2 * x; }, &result);
  EXPECT_NE(changed.find("[grove] after double:\nir 6\n"), std::string::npos) << changed;
  const std::string unchanged = run(
      2, 0, [](int x) { return 2 * x; }, &result);
  EXPECT_EQ(unchanged.find("after"), std::string::npos) << unchanged;
  EXPECT_EQ(result, 0);
}

TEST(PassRunner, APassToAnotherIrAlwaysShowsItsResultAtLevelTwo) {
  std::ostringstream out;
  const std::string s = run_timed_pass(
      "", "print", 2, 7, [](int x) { return std::to_string(x); }, [](const std::string &x) { return x; },
      [](int, int) { return true; }, &out);
  EXPECT_EQ(s, "7");
  EXPECT_EQ(out.str().rfind("[grove] pass print ", 0), 0u) << out.str();
  EXPECT_NE(out.str().find("[grove] after print:\n7\n"), std::string::npos) << out.str();
}

TEST(PassRunner, DebugLevelReadsGroveDebug) {
  ::setenv("GROVE_DEBUG", "2", 1);
  EXPECT_EQ(debug_level(), 2);
  ::unsetenv("GROVE_DEBUG");
  EXPECT_EQ(debug_level(), 0);
}

}  // namespace
}  // namespace grove
