// Property: a schedule never changes the numbers a model computes (scheduling/Schedule.h). Every
// tree model of models/ is compiled under every schedule of the sweep (ScheduleSweep.h: the default,
// each primitive turned off alone, several combinations, the naive baseline, other vector / panel /
// node_block widths, epilogue fusion) and run on random trees; every root output must match the
// independent reference (tests/reference, docs/MODELS.md in double precision) within
// 1e-4·|x| + 1e-5 (float32 against double).
//
// Sizes are small (H = 16, 32, 48) so that each of the many compilations is quick; H = 20 is not a
// multiple of the vector width or of a panel, so the remainder paths run too. Trees come in calls
// of 3 (narrow levels, every node-block remainder) and all at once (wide levels).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "Halide.h"
#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/Team.h"
#include "datasets/Generators.h"
#include "frontend/dsl/Frontend.h"
#include "tests/reference/Reference.h"
#include "tests/scheduling/ScheduleSweep.h"

namespace grove {
namespace {

using reference::ModelKind;

constexpr int32_t kVocab = 30;

std::vector<Tree> trees_for(ModelKind model) {
  std::vector<Tree> trees;
  if (model == ModelKind::ChildSumTreeLSTM) {
    for (int32_t i = 0; i < 24; ++i) trees.push_back(random_tree(300 + i, 1 + (i * 13) % 50, 4, kVocab));
    trees.push_back(unary_chain(20, kVocab, 7));
  } else {
    for (int32_t i = 0; i < 24; ++i) trees.push_back(random_binary_tree(400 + i, 1 + (i * 7) % 33, kVocab));
    trees.push_back(perfect_binary_tree(5, kVocab, 1));
    trees.push_back(binary_chain(40, kVocab, 2));
  }
  return trees;
}

struct Case {
  ModelKind model;
  int64_t H;
  std::string schedule;  // overrides over the default
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << reference::model_name(c.model) << " H=" << c.H << " --schedule '" << c.schedule << "'";
}

// The root outputs with trees in calls of 3 and all in one call, from one compilation.
struct Outputs {
  Tensor by_three, all;
};

Outputs run(ModelKind model, int64_t H, const std::string &schedule, const std::string &target = "host") {
  Weights weights = reference::random_model_weights(model, H, H, kVocab, 7);
  ilir::Program program = dsl::parse_model_file(
      fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model)));
  cpu::CompileOptions options;
  options.schedule = schedule;
  options.target = target;
  cpu::CompiledModel compiled = cpu::CompiledModel::compile(program, weights, options);
  std::vector<Tree> trees = trees_for(model);
  return {compiled.run(trees, {.batch = 3}), compiled.run(trees, {.batch = 0})};
}

// The reference's root outputs, computed once per (model, H): the same for calls of 3 and one call.
const Tensor &expected(ModelKind model, int64_t H) {
  static std::map<std::tuple<ModelKind, int64_t>, Tensor> cache;
  auto key = std::make_tuple(model, H);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache
             .emplace(key,
                      reference::reference_roots(
                          model, reference::random_model_weights(model, H, H, kVocab, 7), trees_for(model)))
             .first;
  return it->second;
}

class EverySchedule : public ::testing::TestWithParam<Case> {};

TEST_P(EverySchedule, MatchesTheReference) {
  const Case &c = GetParam();
  Outputs got = run(c.model, c.H, c.schedule);
  const Tensor &want = expected(c.model, c.H);
  {
    SCOPED_TRACE("trees in calls of 3");
    testing::expect_matches_reference(got.by_three, want);
  }
  SCOPED_TRACE("all trees in one call");
  testing::expect_matches_reference(got.all, want);
}

// `fused`: whether epilogue fusion applies to `model` (ScheduleSweep.h).
std::vector<Case> cases(ModelKind model, int64_t H, int64_t odd_H, bool fused = false) {
  std::vector<Case> out;
  for (const std::string &s : testing::kSweepSchedules) out.push_back({model, H, s});
  for (const std::string &s : testing::kTreeSweepSchedules) out.push_back({model, H, s});
  if (fused)
    for (const std::string &s : testing::kEpilogueSchedules) out.push_back({model, H, s});
  for (const std::string &s : testing::kOddSizeSchedules) out.push_back({model, odd_H, s});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  return testing::sweep_case_name(info.param.H, info.param.schedule);
}

// The default schedule of a narrower target (AVX2's blocking: vector 8, panel 16, 4 nodes) computes
// the reference's numbers too, on this machine if it runs AVX2.
TEST(DefaultSchedule, Avx2TargetMatchesTheReference) {
  if (!Halide::get_host_target().has_feature(Halide::Target::AVX2))
    GTEST_SKIP() << "this machine does not run AVX2 code";
  for (ModelKind model : {ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM}) {
    SCOPED_TRACE(reference::model_name(model));
    Outputs got = run(model, 32, "", "x86-64-linux-avx-avx2-fma-f16c-sse41");
    const Tensor &want = expected(model, 32);
    testing::expect_matches_reference(got.by_three, want);
    testing::expect_matches_reference(got.all, want);
  }
}

// Two application threads running the same compiled model at once (each call a parallel region of
// its own, both on Halide's one thread pool): no deadlock, and each gets the reference's numbers. With
// unroll, calls of the barrier-based region take turns (RegionLock).
TEST(ParallelRegion, ConcurrentCallsMatchTheReference) {
  const ModelKind model = ModelKind::TreeLSTM;
  for (const char *schedule : {"threads=2", "threads=3", "unroll=2,threads=2"}) {
    SCOPED_TRACE(schedule);
    Weights weights = reference::random_model_weights(model, 48, 48, kVocab, 7);
    ilir::Program program = dsl::parse_model_file(
        fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model)));
    cpu::CompileOptions options;
    options.schedule = schedule;
    cpu::CompiledModel compiled = cpu::CompiledModel::compile(program, weights, options);
    std::vector<Tree> trees = trees_for(model);
    std::vector<Tensor> results(4);
    std::vector<std::thread> callers;
    for (size_t t = 0; t < results.size(); t++)
      callers.emplace_back([&, t] {
        for (int repeat = 0; repeat < 5; repeat++) results[t] = compiled.run(trees, {.batch = 3});
      });
    for (std::thread &c : callers) c.join();
    for (const Tensor &r : results) testing::expect_matches_reference(r, expected(model, 48));
  }
}

// The size of the JIT's thread pool, which every JIT-compiled model in the process shares
// (grow_thread_pool never shrinks it, so asking for 1 only reads it).
int jit_thread_pool_size() {
  for (const Halide::Internal::JITModule &m :
       Halide::Internal::JITSharedRuntime::get(nullptr, Halide::get_host_target(), false))
    if (auto symbol = m.find_symbol_by_name("halide_set_num_threads"); symbol.address)
      return grow_thread_pool(reinterpret_cast<int (*)(int)>(symbol.address), 1);
  return 0;
}

// Each compiled model keeps its own thread count: compiling a model of 1 thread after one of 3
// used to set the shared pool to 1 for both. Now the pool only grows, and each model's code runs
// at most its own count of tasks per dispatch (golden: tests/scheduling/golden/threads.test). Both
// models, run at once from two application threads, compute the reference's numbers.
TEST(ThreadCounts, ModelsOfDifferentCountsInOneProcessKeepTheirOwn) {
  const ModelKind model = ModelKind::TreeLSTM;
  Weights weights = reference::random_model_weights(model, 48, 48, kVocab, 7);
  ilir::Program program = dsl::parse_model_file(
      fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model)));
  auto compile = [&](const char *schedule) {
    cpu::CompileOptions options;
    options.schedule = schedule;
    return cpu::CompiledModel::compile(program, weights, options);
  };
  cpu::CompiledModel three = compile("threads=3");
  ASSERT_GE(jit_thread_pool_size(), 3);
  cpu::CompiledModel one = compile("threads=1");
  EXPECT_GE(jit_thread_pool_size(), 3) << "compiling a 1-thread model shrank the pool under a 3-thread one";
  cpu::CompiledModel two_dispatched = compile("threads=2,region=off");
  EXPECT_GE(jit_thread_pool_size(), 3);
  EXPECT_EQ(three.abi().threads, 3);
  EXPECT_EQ(one.abi().threads, 1);
  std::vector<Tree> trees = trees_for(model);
  std::vector<Tensor> results(3);
  std::vector<std::thread> callers;
  for (size_t t = 0; t < results.size(); t++)
    callers.emplace_back([&, t] {
      const cpu::CompiledModel &m = t == 0 ? three : t == 1 ? one : two_dispatched;
      for (int repeat = 0; repeat < 5; repeat++) results[t] = m.run(trees, {.batch = 3});
    });
  for (std::thread &c : callers) c.join();
  for (const Tensor &r : results) testing::expect_matches_reference(r, expected(model, 48));
}

INSTANTIATE_TEST_SUITE_P(TreeFC, EverySchedule, ::testing::ValuesIn(cases(ModelKind::TreeFC, 32, 20)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(TreeGRU, EverySchedule, ::testing::ValuesIn(cases(ModelKind::TreeGRU, 16, 20)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(TreeLSTM, EverySchedule,
                         ::testing::ValuesIn(cases(ModelKind::TreeLSTM, 48, 20, true)), case_name);
INSTANTIATE_TEST_SUITE_P(ChildSumTreeLSTM, EverySchedule,
                         ::testing::ValuesIn(cases(ModelKind::ChildSumTreeLSTM, 32, 20, true)), case_name);
INSTANTIATE_TEST_SUITE_P(MVRNN, EverySchedule, ::testing::ValuesIn(cases(ModelKind::MVRNN, 16, 20)),
                         case_name);

}  // namespace
}  // namespace grove
