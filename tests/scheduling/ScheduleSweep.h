#pragma once
// The schedule sweep shared by the tree models (test_schedules.cpp) and the DAG and sequence models
// (tests/dag/test_dag_schedules.cpp): the schedules every model is compiled under, and the check
// of a compiled model's outputs against the independent reference (tests/reference).
//
// Tolerance, per element: |grove - reference| <= 1e-4 * |reference| + 1e-5. grove computes in
// float32, the reference in double; the margin is float rounding over the sweeps' small sizes and
// depths (at most ~60 levels), nothing more.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "support/Tensor.h"

namespace grove::testing {

// The default; each primitive off alone; the naive baseline; combinations; other widths (panel a
// multiple of vector, Schedule.h); epilogue fusion (off by default).
inline const std::vector<std::string> kSweepSchedules = {
    "",
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
    "vector=4,panel=8,node_block=1,fuse=off",
    "epilogue=on",
};

// Epilogue fusion with the primitives that change the loops around its GEMMs, for the models whose
// GEMM outputs it fuses (TreeLSTM, the child-sum TreeLSTM's leaves, LSTM; plan/FuseProducts.h);
// elsewhere epilogue=on changes nothing, which the case above checks.
inline const std::vector<std::string> kEpilogueSchedules = {
    "epilogue=on,region=off,persist=off",
    "epilogue=on,vector=8,panel=16,node_block=4,hoist=off",
};

// Recursive unrolling, which only trees have (Schedule::uses_unroll): the tree sweep runs these too.
inline const std::vector<std::string> kTreeSweepSchedules = {
    "unroll=2,threads=2",  // a barrier every other level
    "unroll=3,threads=3,node_block=4",
    "unroll=2,region=off",  // unroll needs a region: ignored
};

// The schedules also run at a second, odd size (not a multiple of the vector width or a panel):
// those whose loop shapes depend on it most, and epilogue=on, which then leaves the GEMM outputs
// alone (their readers cannot run as micro-kernels).
inline const std::vector<std::string> kOddSizeSchedules = {
    "batch=off", "gemm=off", "vector=8,panel=16,node_block=4", "persist=off,fuse=off", "epilogue=on"};

// A test-name-safe form of "H<H>_<schedule>".
inline std::string sweep_case_name(int64_t H, const std::string &schedule) {
  std::string s = fmt::format("H{}_{}", H, schedule.empty() ? "default" : schedule);
  for (char &ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Expects every element of `got` within the tolerance above of `want`; names the row (tree, sink
// or sequence) and element of the first few that are not.
inline void expect_matches_reference(const Tensor &got, const Tensor &want) {
  ASSERT_EQ(got.shape, want.shape);
  const int64_t width = want.shape.size() > 1 ? want.size() / want.shape[0] : 1;
  int failures = 0;
  for (int64_t k = 0; k < want.size(); ++k) {
    const double g = got.data[k], w = want.data[k];
    if (std::abs(g - w) <= 1e-4 * std::abs(w) + 1e-5) continue;  // false on NaN
    ADD_FAILURE() << fmt::format("row {} element {}: grove {:.9g}, reference {:.9g}", k / width, k % width, g,
                                 w);
    if (++failures == 10) return;
  }
}

}  // namespace grove::testing
