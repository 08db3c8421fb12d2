// The model file's `schedule { key = value ... }` block: its settings land in Program::schedule in
// file order; syntax errors and duplicate keys are model-file errors at file:line:col; unknown keys
// and bad values are reported by the scheduling layer, naming the model's schedule block.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <tuple>

#include "frontend/dsl/Frontend.h"
#include "scheduling/Schedule.h"
#include "tests/UserError.h"

namespace grove::dsl {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;

// TreeFC, then `extra` from line 14 on.
std::string model_with(const std::string &extra) {
  return "model M\nstructure binary_tree\nparam emb [V, H]\nparam W [H, 2H]\nparam b [H]\nstate h [H]\n"
         "leaf {\n  h = emb[token]\n}\ninternal {\n  h = tanh(W @ [h[left]; h[right]] + b)\n}\noutput h\n" +
         extra;
}

std::string error_of(const std::string &text) {
  return user_error_of([&] { parse_model(text, "s.grove"); });
}

// The model parses; the message is the scheduling layer's.
std::string schedule_error_of(const std::string &text) {
  ilir::Program program = parse_model(text, "s.grove");
  return user_error_of([&] { scheduling::default_schedule(program); });
}

TEST(ScheduleBlock, SettingsLandInTheProgramInFileOrder) {
  EXPECT_EQ(parse_model(model_with("schedule {\n  fuse = off\n  vector = 8\n  batch = on\n}\n"), "s.grove")
                .schedule,
            (Settings{{"fuse", "off"}, {"vector", "8"}, {"batch", "on"}}));
}

TEST(ScheduleBlock, IsOptionalAndMayBeEmpty) {
  EXPECT_TRUE(parse_model(model_with(""), "s.grove").schedule.empty());
  EXPECT_TRUE(parse_model(model_with("schedule {}"), "s.grove").schedule.empty());
}

TEST(ScheduleBlock, MayComeAnywhereAmongTheDeclarations) {
  std::string text =
      "model M\nschedule { gemm = off node_block = 4 }\nstructure binary_tree\nparam emb [V, H]\n"
      "param W [H, 2H]\nstate h [H]\nleaf { h = emb[token] }\n"
      "internal { h = W @ [h[left]; h[right]] }\noutput h\n";
  EXPECT_EQ(parse_model(text, "s.grove").schedule, (Settings{{"gemm", "off"}, {"node_block", "4"}}));
}

TEST(ScheduleBlock, ValuesAreKeptAsWritten) {
  EXPECT_EQ(
      parse_model(model_with("schedule { threads = -1 parallel = true panel = 064 }"), "s.grove").schedule,
      (Settings{{"threads", "-1"}, {"parallel", "true"}, {"panel", "064"}}));
}

TEST(ScheduleBlock, DefaultScheduleAppliesTheBlock) {
  ilir::Program p =
      parse_model(model_with("schedule { fuse = off vector = 8 panel = 16 threads = 2 }"), "s.grove");
  scheduling::Schedule s = scheduling::default_schedule(p);
  EXPECT_FALSE(s.fuse);
  EXPECT_EQ(s.vector, 8);
  EXPECT_EQ(s.panel, 16);
  EXPECT_EQ(s.threads, 2);
  EXPECT_TRUE(s.batch);  // not mentioned: the default
}

TEST(ScheduleBlock, DefaultBlockingFollowsTheTargetsVectorWidth) {
  ilir::Program p = parse_model(model_with(""), "s.grove");
  // AVX-512: 16 floats a register, two per panel row set, 8 nodes; AVX2: 8, 16, 4; SSE/NEON: 4, 8, 4.
  for (auto [bytes, vector, panel, block] : {std::tuple{64, 16, 32, 8}, {32, 8, 16, 4}, {16, 4, 8, 4}}) {
    scheduling::Schedule s = scheduling::default_schedule(p, bytes);
    EXPECT_EQ(s.vector, vector) << bytes;
    EXPECT_EQ(s.panel, panel) << bytes;
    EXPECT_EQ(s.node_block, block) << bytes;
  }
  // The model's block still wins.
  ilir::Program q = parse_model(model_with("schedule { node_block = 2 }"), "s.grove");
  EXPECT_EQ(scheduling::default_schedule(q, 32).node_block, 2);
}

TEST(ScheduleBlock, DuplicateKeyIsAModelFileError) {
  std::string message = error_of(model_with("schedule {\n  fuse = off\n  vector = 8\n    fuse = on\n}\n"));
  EXPECT_THAT(message, HasSubstr("s.grove:17:5: error: schedule key 'fuse' is set twice (first at line 15)"));
  EXPECT_THAT(message, HasSubstr("\n    fuse = on\n    ^"));
}

TEST(ScheduleBlock, SecondBlockIsAnError) {
  EXPECT_THAT(error_of(model_with("schedule { fuse = off }\nschedule { gemm = off }\n")),
              HasSubstr("s.grove:15:1: error: second 'schedule' section (the first is at line 14); expected "
                        "exactly one"));
}

TEST(ScheduleBlock, ValueMustBeANameOrAWholeNumber) {
  EXPECT_THAT(
      error_of(model_with("schedule { vector = 1.5 }")),
      HasSubstr("s.grove:14:21: error: schedule key 'vector' needs a value such as on, off or a whole "
                "number, found '1.5'"));
  EXPECT_THAT(error_of(model_with("schedule { panel = 32H }")),
              HasSubstr("s.grove:14:20: error: schedule key 'panel' needs a value such as on, off or a whole "
                        "number, found '32H'"));
  EXPECT_THAT(error_of(model_with("schedule { fuse = }")),
              HasSubstr("s.grove:14:19: error: schedule key 'fuse' needs a value such as on, off or a whole "
                        "number, found '}'"));
  EXPECT_THAT(error_of(model_with("schedule { fuse = left }")),
              HasSubstr("schedule key 'fuse' needs a value such as on, off or a whole number, found 'left'"));
  EXPECT_THAT(error_of(model_with("schedule { fuse = -off }")),
              HasSubstr("s.grove:14:19: error: schedule key 'fuse' needs a value such as on, off or a whole "
                        "number, found '-' then 'off'"));
}

TEST(ScheduleBlock, Syntax) {
  EXPECT_THAT(error_of(model_with("schedule fuse = off")),
              HasSubstr("s.grove:14:10: error: expected '{' after 'schedule', found 'fuse'"));
  EXPECT_THAT(error_of(model_with("schedule { fuse off }")),
              HasSubstr("s.grove:14:17: error: expected '=' after schedule key 'fuse', found 'off'"));
  EXPECT_THAT(
      error_of(model_with("schedule { 3 = on }")),
      HasSubstr("s.grove:14:12: error: expected a setting 'key = value' or '}' in the schedule block, "
                "found '3'"));
  EXPECT_THAT(error_of(model_with("schedule { fuse = off")),
              HasSubstr("expected a setting 'key = value' or '}' in the schedule block, found end of file"));
}

TEST(ScheduleBlock, ScheduleIsAKeyword) {
  EXPECT_THAT(
      error_of("model M\nstructure binary_tree\nparam emb [V, H]\nstate h [H]\n"
               "leaf {\n  schedule = emb[token]\n}\n"),
      HasSubstr("s.grove:6:3: error: expected a statement 'name = expression' or '}' in the leaf case, "
                "found 'schedule'"));
}

TEST(ScheduleBlock, UnknownKeyIsReportedByScheduling) {
  std::string message = schedule_error_of(model_with("schedule { fusion = off }"));
  EXPECT_THAT(message, HasSubstr("schedule block of model M: unknown schedule key 'fusion' (known: batch, "));
  EXPECT_THAT(message, HasSubstr("node_block"));
}

TEST(ScheduleBlock, BadValuesAreReportedByScheduling) {
  EXPECT_THAT(schedule_error_of(model_with("schedule { fuse = maybe }")),
              HasSubstr("schedule block of model M: schedule key 'fuse' takes on or off, got 'maybe'"));
  EXPECT_THAT(
      schedule_error_of(model_with("schedule { threads = -1 }")),
      HasSubstr("schedule block of model M: schedule key 'threads' takes an integer in [0, 1024], got '-1'"));
  EXPECT_THAT(
      schedule_error_of(model_with("schedule { vector = on }")),
      HasSubstr("schedule block of model M: schedule key 'vector' takes an integer in [1, 64], got 'on'"));
  EXPECT_THAT(schedule_error_of(model_with("schedule { panel = 24 }")),
              HasSubstr("schedule block of model M: schedule panel=24 must be a multiple of vector=16"));
}

// The example of docs/DSL.md's "The schedule block" section parses, and its settings apply.
TEST(ScheduleBlock, TheDocumentedExample) {
  std::ifstream file(std::string(GROVE_SOURCE_DIR) + "/docs/DSL.md");
  std::stringstream text;
  text << file.rdbuf();
  std::string doc = text.str();
  size_t section = doc.find("## The schedule block");
  ASSERT_NE(section, std::string::npos);
  size_t begin = doc.find("```\n", section);
  ASSERT_NE(begin, std::string::npos);
  begin += 4;
  size_t end = doc.find("```", begin);
  ASSERT_NE(end, std::string::npos);
  ilir::Program p = parse_model(doc.substr(begin, end - begin), "DSL.md");
  EXPECT_EQ(p.name, "TreeFC");
  EXPECT_EQ(p.schedule, (Settings{{"parallel", "off"}, {"vector", "8"}, {"panel", "16"}}));
  scheduling::Schedule s = scheduling::default_schedule(p);
  EXPECT_FALSE(s.parallel);
  EXPECT_EQ(s.vector, 8);
  EXPECT_EQ(s.panel, 16);
}

}  // namespace
}  // namespace grove::dsl
