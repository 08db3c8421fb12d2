#include "tools/Shares.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "support/Error.h"

namespace grove::tool {

namespace {

// A place the input may be cut, with what comes before it.
struct Cut {
  StreamPosition position;
  int64_t rows = 0, nodes = 0;
};

int64_t output_rows(const InputChunk &chunk, DagOutputs outputs) {
  if (chunk.dags.empty()) return int64_t(chunk.count());
  int64_t rows = 0;
  for (const Dag &dag : chunk.dags) rows += outputs == DagOutputs::AllNodes ? dag.size() : num_sinks(dag);
  return rows;
}

}  // namespace

// Steps:
//   1. Read the stream in steps that end at multiples of `stride` inputs (`stride` starts at
//      `unit`), recording a cut after each step with the rows and nodes before it.
//   2. When more than kMaxCuts cuts are kept, keep every other one and double `stride`.
//   3. At the end, add the end of the file as the last cut.
//   4. Cut r of the K - 1 inner boundaries is the cut whose nodes before it are nearest r / K of all
//      nodes (never before the previous boundary).
SharePlan plan_shares(InputStream &stream, int parts, int64_t unit, DagOutputs outputs) {
  GROVE_CHECK(parts >= 1 && unit >= 1, "{} parts of {} inputs", parts, unit);
  std::vector<Cut> cuts{{stream.position(), 0, 0}};
  int64_t stride = unit, rows = 0, nodes = 0;
  while (true) {
    const int64_t index = stream.position().index;
    InputChunk chunk = stream.next(size_t((index / stride + 1) * stride - index));
    if (chunk.empty()) break;
    rows += output_rows(chunk, outputs);
    nodes += chunk.nodes();
    cuts.push_back({stream.position(), rows, nodes});
    if (cuts.size() > kMaxCuts) {
      std::erase_if(cuts, [&](const Cut &c) { return c.position.index % (2 * stride) != 0; });
      stride *= 2;
    }
  }
  if (cuts.back().position != stream.position()) cuts.push_back({stream.position(), rows, nodes});

  SharePlan plan;
  plan.inputs = cuts.back().position.index;
  plan.rows = rows;
  plan.nodes = nodes;
  std::vector<size_t> boundary{0};
  for (int r = 1; r < parts; ++r) {
    const double target = double(nodes) * r / parts;
    size_t best = boundary.back();
    for (size_t c = boundary.back(); c < cuts.size(); ++c)
      if (std::abs(double(cuts[c].nodes) - target) < std::abs(double(cuts[best].nodes) - target)) best = c;
    boundary.push_back(best);
  }
  boundary.push_back(cuts.size() - 1);
  for (int r = 0; r < parts; ++r) {
    const Cut &begin = cuts[boundary[r]], &end = cuts[boundary[r + 1]];
    plan.shares.push_back(Share{begin.position, end.position.index, end.position.offset, begin.rows,
                                end.rows - begin.rows, end.nodes - begin.nodes});
  }
  return plan;
}

std::string to_bytes(const SharePlan &plan) {
  nlohmann::json shares = nlohmann::json::array();
  for (const Share &s : plan.shares)
    shares.push_back({s.start.index, s.start.offset, s.start.line, s.end_index, s.end_offset, s.first_row,
                      s.rows, s.nodes});
  return nlohmann::json{
      {"inputs", plan.inputs}, {"rows", plan.rows}, {"nodes", plan.nodes}, {"shares", shares}}
      .dump();
}

SharePlan share_plan_from_bytes(const std::string &bytes) {
  nlohmann::json j = nlohmann::json::parse(bytes);
  SharePlan plan;
  plan.inputs = j.at("inputs");
  plan.rows = j.at("rows");
  plan.nodes = j.at("nodes");
  for (const nlohmann::json &s : j.at("shares"))
    plan.shares.push_back(Share{StreamPosition{s[0], s[1], s[2]}, s[3], s[4], s[5], s[6], s[7]});
  return plan;
}

}  // namespace grove::tool
