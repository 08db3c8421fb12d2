// Property: a schedule never changes the numbers a model computes (scheduling/Schedule.h). Every
// tree model of models/ is compiled under many schedules — each primitive turned off alone, several
// combinations, the naive baseline (batch=off), and other vector / panel / node_block widths — and
// run on random trees; every root output must match the default schedule's within
// 1e-4·|x| + 1e-5 (float rounding order may differ, nothing else).
//
// Sizes are small (H = 16, 20, 32, 48) so that each of the many compilations is quick; H = 20 is
// not a multiple of the vector width or of a panel, so the remainder paths run too. Trees come in
// calls of 3 (narrow levels, every node-block remainder) and all at once (wide levels).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "Halide.h"
#include "backends/cpu/CompiledModel.h"
#include "datasets/Generators.h"
#include "frontend/dsl/Frontend.h"
#include "tests/reference/Reference.h"

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

// The default schedule's outputs, computed once per (model, H).
const Outputs &expected(ModelKind model, int64_t H) {
  static std::map<std::tuple<ModelKind, int64_t>, Outputs> cache;
  auto key = std::make_tuple(model, H);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, run(model, H, "")).first;
  return it->second;
}

void expect_close(const Tensor &got, const Tensor &want) {
  ASSERT_EQ(got.shape, want.shape);
  const int64_t width = want.size() / want.shape[0];
  int failures = 0;
  for (int64_t k = 0; k < want.size(); ++k) {
    const double g = got.data[k], w = want.data[k];
    if (std::abs(g - w) <= 1e-4 * std::abs(w) + 1e-5) continue;  // false on NaN
    ADD_FAILURE() << fmt::format("tree {} element {}: {:.9g}, default schedule {:.9g}", k / width, k % width,
                                 g, w);
    if (++failures == 10) return;
  }
}

class SameNumbers : public ::testing::TestWithParam<Case> {};

TEST_P(SameNumbers, AsTheDefaultSchedule) {
  const Case &c = GetParam();
  Outputs got = run(c.model, c.H, c.schedule);
  const Outputs &want = expected(c.model, c.H);
  {
    SCOPED_TRACE("trees in calls of 3");
    expect_close(got.by_three, want.by_three);
  }
  SCOPED_TRACE("all trees in one call");
  expect_close(got.all, want.all);
}

// Each primitive off alone; the naive baseline; combinations; other widths. The widths keep
// panel a multiple of vector (Schedule.h).
const std::vector<std::string> kSchedules = {
    "batch=off",
    "specialize=off",
    "fuse=off",
    "gemm=off",
    "hoist=off",
    "persist=off",
    "parallel=off",
    "region=off",
    "batch=off,specialize=off,fuse=off,gemm=off,hoist=off,persist=off,parallel=off,region=off",
    "fuse=off,gemm=off",
    "specialize=off,persist=off",
    "gemm=off,parallel=off,vector=8",
    "vector=8,panel=16,node_block=4",
    "panel=64,node_block=2,threads=1",
    "threads=3",              // a region's team larger than the machine's 2 cores
    "persist=off,threads=2",  // a region splitting node blocks instead of panels
    "unroll=2,threads=2",     // recursive unrolling: a barrier every other level
    "unroll=3,threads=3,node_block=4",
    "unroll=2,region=off",  // unroll needs a region: ignored
    "vector=4,panel=8,node_block=1,fuse=off",
};

std::vector<Case> cases(ModelKind model, int64_t H, int64_t odd_H) {
  std::vector<Case> out;
  for (const std::string &s : kSchedules) out.push_back({model, H, s});
  // The odd size on the schedules whose loop shapes depend on it most.
  for (const char *s : {"batch=off", "gemm=off", "vector=8,panel=16,node_block=4", "persist=off,fuse=off"})
    out.push_back({model, odd_H, s});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  std::string s = fmt::format("H{}_{}", info.param.H, info.param.schedule);
  for (char &ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// The default schedule of a narrower target (AVX2's blocking: vector 8, panel 16, 4 nodes) computes
// the same numbers, on this machine if it runs AVX2.
TEST(DefaultSchedule, Avx2TargetComputesTheSameNumbers) {
  if (!Halide::get_host_target().has_feature(Halide::Target::AVX2))
    GTEST_SKIP() << "this machine does not run AVX2 code";
  for (ModelKind model : {ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM}) {
    SCOPED_TRACE(reference::model_name(model));
    Outputs got = run(model, 32, "", "x86-64-linux-avx-avx2-fma-f16c-sse41");
    const Outputs &want = expected(model, 32);
    expect_close(got.by_three, want.by_three);
    expect_close(got.all, want.all);
  }
}

// Two application threads running the same compiled model at once (each call a parallel region of
// its own, both on Halide's one thread pool): no deadlock, and each gets the default's numbers. With
// unroll, calls of the barrier-based region take turns (RegionLock).
TEST(ParallelRegion, ConcurrentCallsComputeTheSameNumbers) {
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
    for (const Tensor &r : results) expect_close(r, expected(model, 48).by_three);
  }
}

INSTANTIATE_TEST_SUITE_P(TreeFC, SameNumbers, ::testing::ValuesIn(cases(ModelKind::TreeFC, 32, 20)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(TreeGRU, SameNumbers, ::testing::ValuesIn(cases(ModelKind::TreeGRU, 16, 20)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(TreeLSTM, SameNumbers, ::testing::ValuesIn(cases(ModelKind::TreeLSTM, 48, 20)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(ChildSumTreeLSTM, SameNumbers,
                         ::testing::ValuesIn(cases(ModelKind::ChildSumTreeLSTM, 32, 20)), case_name);
INSTANTIATE_TEST_SUITE_P(MVRNN, SameNumbers, ::testing::ValuesIn(cases(ModelKind::MVRNN, 16, 20)), case_name);

}  // namespace
}  // namespace grove
