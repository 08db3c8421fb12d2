// A schedule option that cannot take effect is reported as a note, never dropped silently: each rule
// of Schedule::notes, nothing for defaults or for options that apply, and the note as the grove
// program prints it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduling/Schedule.h"
#include "tests/tools/CliRunner.h"

namespace grove::scheduling {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> notes_of(const std::string &overrides, ilir::StructureKind structure) {
  Schedule s;
  s.threads = 4;  // a team, whatever machine the test runs on, unless the overrides say otherwise
  s.apply(overrides, "test");
  return s.notes(structure);
}

TEST(ScheduleNotes, DefaultsAndOptionsThatApplyGiveNone) {
  EXPECT_THAT(Schedule().notes(ilir::StructureKind::BinaryTree), IsEmpty());
  EXPECT_THAT(notes_of("epilogue=on,unroll=2,region=on,persist=on,panel=16,node_block=4",
                       ilir::StructureKind::BinaryTree),
              IsEmpty());
  // Off needs nothing: switching an optimization off always takes effect.
  EXPECT_THAT(notes_of("batch=off,epilogue=off,region=off", ilir::StructureKind::BinaryTree), IsEmpty());
}

TEST(ScheduleNotes, EpilogueAndGemmBlockingNeedLevelGemms) {
  EXPECT_THAT(notes_of("batch=off,epilogue=on", ilir::StructureKind::BinaryTree),
              ElementsAre("epilogue=on does nothing here: epilogue fusion works on level GEMMs, which need "
                          "batch=on"));
  EXPECT_THAT(notes_of("gemm=off,specialize=off,panel=16,node_block=4", ilir::StructureKind::Tree),
              ElementsAre(HasSubstr("panel=16 does nothing here: it blocks the level GEMMs, which need "
                                    "specialize=on and gemm=on"),
                          HasSubstr("node_block=4 does nothing here")));
  EXPECT_THAT(notes_of("gemm=off,persist=on", ilir::StructureKind::Dag),
              ElementsAre(HasSubstr("persist=on does nothing here")));
}

TEST(ScheduleNotes, RegionAndUnrollNeedATeam) {
  EXPECT_THAT(
      notes_of("threads=1,region=on", ilir::StructureKind::BinaryTree),
      ElementsAre("region=on does nothing here: one parallel region for the recursion needs more than "
                  "one thread"));
  EXPECT_THAT(notes_of("parallel=off,unroll=4", ilir::StructureKind::BinaryTree),
              ElementsAre(HasSubstr("unroll=4 does nothing here: recursive unrolling runs in one parallel "
                                    "region, which needs parallel=on")));
  EXPECT_THAT(notes_of("region=off,unroll=4", ilir::StructureKind::BinaryTree),
              ElementsAre(HasSubstr("which needs region=on")));
  EXPECT_THAT(notes_of("unroll=4", ilir::StructureKind::Sequence),
              ElementsAre("unroll=4 does nothing here: recursive unrolling applies to tree models, not to a "
                          "sequence model"));
}

TEST(ScheduleNotes, TheProgramPrintsThemOnStandardError) {
  testing::CliResult r = testing::run_grove(
      "dump " + testing::model_path("treelstm") +
      " --stage loops --sizes H=8,D=8,V=10 --schedule batch=off,epilogue=on 2>&1 >/dev/null");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("grove: note: epilogue=on does nothing here"));
  testing::CliResult quiet = testing::run_grove("dump " + testing::model_path("treelstm") +
                                                " --stage loops --sizes H=8,D=8,V=10 2>&1 >/dev/null");
  EXPECT_EQ(quiet.output, "");
}

}  // namespace
}  // namespace grove::scheduling
