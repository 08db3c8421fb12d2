// How `mpirun -n K grove run` cuts its input (tools/Shares.h): contiguous shares that cover every
// input once, cut at multiples of the unit, with node counts near equal, rows placed in order.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/Shares.h"

namespace grove::tool {
namespace {

// `n` PTB trees; tree k (from 0) has 1 + 2 * (k % 9) nodes, a left comb.
std::string comb_trees(int64_t n) {
  std::string text;
  for (int64_t k = 0; k < n; ++k) {
    std::string tree = "(1 7)";
    for (int64_t j = 0; j < k % 9; ++j) tree = "(1 " + tree + " (1 3))";
    text += tree + "\n";
  }
  return text;
}

InputStream stream_of(const std::string &text, InputFormat format) {
  return InputStream(std::make_unique<std::istringstream>(text), "test", format);
}

// Every share starts where the previous ended, the first at 0 and the last at the end, at
// multiples of `unit`; rows follow one another.
void expect_cover(const SharePlan &plan, int64_t unit) {
  int64_t index = 0, row = 0, nodes = 0;
  for (const Share &s : plan.shares) {
    EXPECT_EQ(s.start.index, index);
    EXPECT_EQ(s.first_row, row);
    if (s.start.index != plan.inputs) EXPECT_EQ(s.start.index % unit, 0) << s.start.index;
    EXPECT_GE(s.end_index, s.start.index);
    index = s.end_index;
    row += s.rows;
    nodes += s.nodes;
  }
  EXPECT_EQ(index, plan.inputs);
  EXPECT_EQ(row, plan.rows);
  EXPECT_EQ(nodes, plan.nodes);
}

TEST(Shares, CoverTheInputInBalancedSharesCutAtTheUnit) {
  const std::string text = comb_trees(1000);
  InputStream stream = stream_of(text, InputFormat::Trees);
  SharePlan plan = plan_shares(stream, 3, 10, DagOutputs::Sinks);
  ASSERT_EQ(plan.shares.size(), 3u);
  EXPECT_EQ(plan.inputs, 1000);
  EXPECT_EQ(plan.rows, 1000);
  int64_t nodes = 0;
  for (int64_t k = 0; k < 1000; ++k) nodes += 1 + 2 * (k % 9);
  EXPECT_EQ(plan.nodes, nodes);
  expect_cover(plan, 10);
  // Cuts every 10 trees of at most 17 nodes each: a share is within 10 * 17 nodes of a third.
  for (const Share &s : plan.shares) EXPECT_NEAR(double(s.nodes), nodes / 3.0, 170.0);

  // A share's start is a position a fresh stream can seek to: it reads the same trees from there.
  for (const Share &s : plan.shares) {
    InputStream again = stream_of(text, InputFormat::Trees);
    again.seek(s.start);
    InputChunk chunk = again.next(1);
    InputStream from_start = stream_of(text, InputFormat::Trees);
    if (s.start.index > 0) from_start.next(size_t(s.start.index));
    InputChunk expected = from_start.next(1);
    ASSERT_EQ(chunk.trees.size(), 1u);
    EXPECT_EQ(chunk.trees[0].size(), expected.trees[0].size());
    EXPECT_EQ(s.start.line, s.start.index + 1);
  }
}

TEST(Shares, MorePartsThanUnitsLeavesEmptySharesAtTheEnd) {
  InputStream stream = stream_of(comb_trees(25), InputFormat::Trees);
  SharePlan plan = plan_shares(stream, 8, 10, DagOutputs::Sinks);
  ASSERT_EQ(plan.shares.size(), 8u);
  expect_cover(plan, 10);
  int nonempty = 0;
  for (const Share &s : plan.shares) nonempty += s.inputs() > 0;
  EXPECT_LE(nonempty, 3);
}

TEST(Shares, ManyInputsThinTheCutsAndStayBalanced) {
  // 3 * kMaxCuts units: the cut list is thinned twice; shares stay balanced to a few units.
  std::string text;
  const int64_t n = 3 * int64_t(kMaxCuts) * 2;
  for (int64_t k = 0; k < n; ++k) text += "1 2 3\n";
  InputStream stream = stream_of(text, InputFormat::Sequences);
  SharePlan plan = plan_shares(stream, 4, 2, DagOutputs::Sinks);
  expect_cover(plan, 2);
  EXPECT_EQ(plan.nodes, 3 * n);
  for (const Share &s : plan.shares) EXPECT_NEAR(double(s.inputs()), n / 4.0, 16.0);
}

TEST(Shares, DagRowsAreSinksOrAllNodes) {
  // DAG 1: 0 -> 2 <- 1, node 3 alone: sinks 2 and 3. DAG 2: a chain 0 -> 1: sink 1.
  const std::string json =
      R"([{"nodes": [{"token": 1}, {"token": 2}, {"token": 3, "preds": [0, 1]}, {"token": 4}]},
                               {"nodes": [{"token": 1}, {"token": 2, "preds": [0]}]}])";
  InputStream sinks = stream_of(json, InputFormat::Dags);
  SharePlan plan = plan_shares(sinks, 2, 1, DagOutputs::Sinks);
  EXPECT_EQ(plan.rows, 3);
  expect_cover(plan, 1);
  EXPECT_EQ(plan.shares[1].first_row, 2);
  InputStream all = stream_of(json, InputFormat::Dags);
  EXPECT_EQ(plan_shares(all, 2, 1, DagOutputs::AllNodes).rows, 6);
}

TEST(Shares, PlanSurvivesItsBytes) {
  InputStream stream = stream_of(comb_trees(100), InputFormat::Trees);
  SharePlan plan = plan_shares(stream, 3, 4, DagOutputs::Sinks);
  SharePlan back = share_plan_from_bytes(to_bytes(plan));
  ASSERT_EQ(back.shares.size(), plan.shares.size());
  EXPECT_EQ(back.rows, plan.rows);
  for (size_t i = 0; i < plan.shares.size(); ++i) {
    EXPECT_EQ(back.shares[i].start, plan.shares[i].start);
    EXPECT_EQ(back.shares[i].end_index, plan.shares[i].end_index);
    EXPECT_EQ(back.shares[i].end_offset, plan.shares[i].end_offset);
    EXPECT_EQ(back.shares[i].first_row, plan.shares[i].first_row);
  }
}

}  // namespace
}  // namespace grove::tool
