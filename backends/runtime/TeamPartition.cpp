#include "backends/runtime/TeamPartition.h"

#include <algorithm>
#include <numeric>

#include "support/Error.h"

namespace grove {

void partition_for_team(LinearizedBatch &batch, int threads, int unroll) {
  GROVE_CHECK(threads >= 1 && unroll >= 1, "bad team: {} threads, unroll {}", threads, unroll);
  GROVE_CHECK(batch.zero_node < 0, "team partitions are for trees, not DAGs");
  const int32_t n = batch.num_nodes, levels = batch.num_levels;
  std::vector<int32_t> level(n), parent(n, -1);
  for (int32_t l = 0; l < levels; l++)
    std::fill(level.begin() + batch.level_begin[l], level.begin() + batch.level_begin[l + 1], l);
  for (int32_t p = 0; p < n; p++)
    for (int32_t k = batch.child_begin[p]; k < batch.child_begin[p + 1]; k++) parent[batch.children[k]] = p;
  auto same_block = [&](int32_t a, int32_t b) { return level[a] / unroll == level[b] / unroll; };

  // Weight of each node: itself and its descendants in its block (children have smaller ids).
  std::vector<int64_t> weight(n, 1);
  for (int32_t v = 0; v < n; v++)
    if (parent[v] >= 0 && same_block(v, parent[v])) weight[parent[v]] += weight[v];

  // Block roots, longest first onto the least-loaded thread; then everyone else inherits.
  std::vector<int32_t> owner(n, -1);
  for (int32_t first = 0; first < levels; first += unroll) {
    int32_t last = std::min(levels, first + unroll);
    std::vector<int32_t> roots;
    for (int32_t v = batch.level_begin[first]; v < batch.level_begin[last]; v++)
      if (parent[v] < 0 || !same_block(v, parent[v])) roots.push_back(v);
    std::stable_sort(roots.begin(), roots.end(), [&](int32_t a, int32_t b) { return weight[a] > weight[b]; });
    std::vector<int64_t> load(threads, 0);
    for (int32_t v : roots) {
      int t = int(std::min_element(load.begin(), load.end()) - load.begin());
      owner[v] = t;
      load[t] += weight[v];
    }
  }
  for (int32_t v = n; v-- > 0;)  // parents first
    if (owner[v] < 0) owner[v] = owner[parent[v]];

  // Within each level, the nodes by owner (stable): old id of each new id, and the thread ranges.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  batch.team_begin.assign(size_t(levels) * (threads + 1), 0);
  for (int32_t l = 0; l < levels; l++) {
    auto begin = order.begin() + batch.level_begin[l], end = order.begin() + batch.level_begin[l + 1];
    std::stable_sort(begin, end, [&](int32_t a, int32_t b) { return owner[a] < owner[b]; });
    int32_t *range = &batch.team_begin[size_t(l) * (threads + 1)];
    for (int t = 0; t <= threads; t++)
      range[t] =
          int32_t(std::partition_point(begin, end, [&](int32_t v) { return owner[v] < t; }) - order.begin());
  }

  std::vector<int32_t> new_id(n);
  for (int32_t i = 0; i < n; i++) new_id[order[i]] = i;
  std::vector<int32_t> child_begin(n + 1, 0), children, token(n);
  children.reserve(batch.children.size());
  for (int32_t i = 0; i < n; i++) {
    int32_t v = order[i];
    for (int32_t k = batch.child_begin[v]; k < batch.child_begin[v + 1]; k++)
      children.push_back(new_id[batch.children[k]]);
    child_begin[i + 1] = int32_t(children.size());
    token[i] = batch.token[v];
  }
  batch.child_begin = std::move(child_begin);
  batch.children = std::move(children);
  batch.token = std::move(token);
  for (int32_t &r : batch.roots) r = new_id[r];
}

}  // namespace grove
