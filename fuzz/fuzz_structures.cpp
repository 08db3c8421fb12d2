// Fuzzes the readers of non-tree input structures (datasets/DagReader.h). The first byte of an input
// picks the reader: 'd' DAG JSON, 'g' grids (the byte after it picks the sweep), anything else
// sequences of integer ids; the rest of the input is the file's text.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "datasets/DagReader.h"
#include "fuzz/FuzzCommon.h"

namespace {

using grove::fuzz::require;

// The shape guarantees every reader gives: pred_begin has size() + 1 non-decreasing entries
// spanning preds.
void check_dag(const grove::Dag &dag) {
  require(dag.pred_begin.size() == static_cast<size_t>(dag.size()) + 1, "pred_begin has size() + 1 entries");
  require(dag.pred_begin.front() == 0 && dag.pred_begin.back() == static_cast<int32_t>(dag.preds.size()),
          "pred_begin spans preds");
  for (int32_t i = 0; i < dag.size(); ++i) require(dag.num_preds(i) >= 0, "pred_begin is non-decreasing");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const std::string_view text(reinterpret_cast<const char *>(data) + 2, size - 2);
  return grove::fuzz::run_reader([&] {
    if (data[0] == 'd') {
      for (const grove::Dag &dag : grove::read_dag_text(text, "fuzz.json")) check_dag(dag);
    } else if (data[0] == 'g') {
      const auto sweep = static_cast<grove::Sweep>(data[1] % 4);
      for (const grove::Dag &dag : grove::read_grid_text(text, sweep, "fuzz-grids.txt")) {
        check_dag(dag);
        for (int32_t p : dag.preds)
          require(p == grove::Dag::kEmptySlot || (p >= 0 && p < dag.size()),
                  "a grid cell's predecessors are cells of the grid");
      }
    } else {
      for (const auto &sequence : grove::read_sequence_text(text, nullptr, "fuzz-sequences.txt"))
        for (int32_t t : sequence) require(t >= 0, "a sequence token is an id");
    }
  });
}
