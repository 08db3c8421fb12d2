#pragma once
// How `mpirun -n K grove run` splits its input: one pass over the file (every input read and
// checked as the run will read it) finds K contiguous shares with about the same number of nodes
// each — nodes, not inputs, are what the compiled code's time grows with — and where each share's
// rows go in the output.
//
// Shares start at multiples of `unit` inputs (the run's batch, or its chunk when the batch is the
// chunk), so every call of the compiled code is the one a single process makes and the output is
// the same bytes. The pass keeps a bounded list of candidate cut points (at most kMaxCuts, thinned by
// half whenever full), so its memory does not grow with the file.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/runtime/DagInspector.h"  // DagOutputs
#include "datasets/InputStream.h"

namespace grove::tool {

struct Share {
  StreamPosition start;     // the first input
  int64_t end_index = 0;    // one past the last input
  uint64_t end_offset = 0;  // where input end_index starts in the file (its size at the end)
  int64_t first_row = 0, rows = 0, nodes = 0;

  int64_t inputs() const { return end_index - start.index; }
};

struct SharePlan {
  std::vector<Share> shares;  // in input order; a share may be empty
  int64_t inputs = 0, rows = 0, nodes = 0;
};

inline constexpr size_t kMaxCuts = 4096;

// Reads `stream` from its start to the end and splits it into `parts` shares cut at multiples of
// `unit` inputs. Output rows per input: one for trees and sequences; a DAG's sinks, or all its nodes
// with DagOutputs::AllNodes. A malformed input throws its UserError.
SharePlan plan_shares(InputStream &stream, int parts, int64_t unit, DagOutputs outputs);

// The plan as bytes and back, to send it from the rank that read the file to the others.
std::string to_bytes(const SharePlan &plan);
SharePlan share_plan_from_bytes(const std::string &bytes);

}  // namespace grove::tool
