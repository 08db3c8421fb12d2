#pragma once
// Seeded random DAGs and sequences for the DAG tests, and the conversion to the reference's DAG type.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "datasets/Dag.h"
#include "tests/reference/Reference.h"

namespace grove::testing {

// A random DAG of `n` nodes: a random topological order, each node's two slots each filled (with an
// earlier node of that order) with probability 2/3 and empty otherwise, so sources, sinks, empty
// slot 0 before a filled slot 1 and both slots naming one node all occur. Node indices are shuffled,
// so predecessors are as often later nodes of the file as earlier ones.
inline Dag random_dag(uint64_t seed, int32_t n, int32_t vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> index(n);  // topological position -> node index
  std::iota(index.begin(), index.end(), 0);
  std::shuffle(index.begin(), index.end(), rng);
  std::vector<int32_t> position(n);
  for (int32_t p = 0; p < n; ++p) position[index[p]] = p;
  Dag dag;
  dag.pred_begin.push_back(0);
  for (int32_t v = 0; v < n; ++v) {
    dag.token.push_back(static_cast<int32_t>(rng() % vocab));
    for (int slot = 0; slot < 2; ++slot) {
      int32_t p = position[v];
      bool filled = p > 0 && rng() % 3 != 0;
      dag.preds.push_back(filled ? index[rng() % p] : Dag::kEmptySlot);
    }
    dag.pred_begin.push_back(static_cast<int32_t>(dag.preds.size()));
  }
  return dag;
}

inline std::vector<int32_t> random_sequence(uint64_t seed, int32_t length, int32_t vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> tokens(length);
  for (int32_t &t : tokens) t = static_cast<int32_t>(rng() % vocab);
  return tokens;
}

inline reference::Dag to_reference(const Dag &dag) {
  reference::Dag out;
  out.token = dag.token;
  for (int32_t v = 0; v < dag.size(); ++v) {
    std::array<int32_t, 2> slots{-1, -1};
    for (int32_t k = 0; k < dag.num_preds(v); ++k) slots[k] = dag.pred(v, k);
    out.preds.push_back(slots);
  }
  return out;
}

}  // namespace grove::testing
