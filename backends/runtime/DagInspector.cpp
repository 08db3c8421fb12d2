#include "backends/runtime/DagInspector.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <limits>

#include "datasets/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// How a DAG's model reads its slots, for the slot-count message.
std::string describe_slots(int32_t slots) {
  return slots == 1 ? "a sequence model reads h[prev]" : "a dag model reads h[pred0] and h[pred1]";
}

// Step 1's checks of the slot arrays, so that indexing them is safe.
void check_shape(const Dag &dag, const DagInspectorOptions &options, int64_t number) {
  const std::string &noun = options.noun;
  int32_t n = dag.size();
  if (n == 0) user_error(msg::kDagEmpty, noun, number);
  if (dag.pred_begin.size() != static_cast<size_t>(n) + 1) {
    user_error(msg::kDagMalformed, noun, number,
               fmt::format("pred_begin has {} entries; expected {} (one more than the {} nodes)",
                           dag.pred_begin.size(), n + 1, n));
  }
  if (dag.pred_begin[0] != 0)
    user_error(msg::kDagMalformed, noun, number,
               fmt::format("pred_begin[0] is {}; expected 0", dag.pred_begin[0]));
  for (int32_t v = 0; v < n; ++v) {
    if (dag.pred_begin[v + 1] < dag.pred_begin[v]) {
      user_error(msg::kDagMalformed, noun, number,
                 fmt::format("pred_begin[{}] = {} is less than pred_begin[{}] = {}", v + 1,
                             dag.pred_begin[v + 1], v, dag.pred_begin[v]));
    }
  }
  if (static_cast<size_t>(dag.pred_begin[n]) != dag.preds.size()) {
    user_error(msg::kDagMalformed, noun, number,
               fmt::format("pred_begin[{}] = {} but there are {} predecessor slots", n, dag.pred_begin[n],
                           dag.preds.size()));
  }
}

// Step 1's checks of each node: slot count, predecessors, token.
void check_nodes(const Dag &dag, const DagInspectorOptions &options, int64_t number) {
  const std::string &noun = options.noun;
  int32_t n = dag.size();
  for (int32_t v = 0; v < n; ++v) {
    if (dag.num_preds(v) > options.slots) {
      user_error(msg::kDagTooManyPreds, noun, number, v, dag.num_preds(v), options.slots,
                 describe_slots(options.slots));
    }
    for (int32_t k = 0; k < dag.num_preds(v); ++k) {
      int32_t p = dag.pred(v, k);
      if (p == Dag::kEmptySlot) continue;
      if (p < 0 || p >= n) user_error(msg::kDagPredOutOfRange, noun, number, v, k, p, n, n - 1);
      if (p == v) user_error(msg::kDagSelfLoop, noun, number, v, k);
    }
    int32_t token = dag.token[v];
    if (token < 0) user_error(msg::kDagNegativeToken, noun, number, v, token);
    if (options.vocab_size >= 0 && token >= options.vocab_size)
      user_error(msg::kDagTokenRange, noun, number, v, token, options.vocab_size);
  }
}

// Finds a back edge of a graph that has a cycle: the edge's source descends from its target.
struct BackEdge {
  Vertex from, to;
};
struct BackEdgeFinder : boost::default_dfs_visitor {
  void back_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph &g) const {
    throw BackEdge{boost::source(e, g), boost::target(e, g)};
  }
};

// Steps 2 and 3 for one checked DAG: writes each node's level into `level` (indexed by node).
void measure(const Dag &dag, const DagInspectorOptions &options, int64_t number, int32_t *level) {
  int32_t n = dag.size();
  Graph graph(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t k = 0; k < dag.num_preds(v); ++k) {
      if (dag.pred(v, k) != Dag::kEmptySlot) boost::add_edge(dag.pred(v, k), v, graph);
    }
  }
  std::vector<Vertex> reverse_order;  // topological_sort writes the order back to front
  reverse_order.reserve(static_cast<size_t>(n));
  try {
    boost::topological_sort(graph, std::back_inserter(reverse_order));
  } catch (const boost::not_a_dag &) {
    try {
      boost::depth_first_search(graph, boost::visitor(BackEdgeFinder()));
    } catch (const BackEdge &edge) {
      // edge.from is a predecessor of edge.to and descends from it.
      user_error(msg::kDagCycle, options.noun, number, edge.from, edge.to, edge.from);
    }
    GROVE_CHECK(false, "{} {}: topological sort found a cycle but depth-first search did not", options.noun,
                number);
  }
  for (auto it = reverse_order.rbegin(); it != reverse_order.rend(); ++it) {
    auto v = static_cast<int32_t>(*it);
    int32_t l = 0;
    for (int32_t k = 0; k < dag.num_preds(v); ++k) {
      int32_t p = dag.pred(v, k);
      if (p != Dag::kEmptySlot) l = std::max(l, level[p] + 1);
    }
    level[v] = l;
  }
}

}  // namespace

LinearizedBatch linearize_dags(std::span<const Dag> dags, const DagInspectorOptions &options) {
  GROVE_CHECK(options.slots >= 1, "a DAG model reads {} predecessor slots", options.slots);
  // Each DAG's nodes occupy [offset[d], offset[d+1]) of the batch-wide arrays below, in original ids.
  std::vector<int64_t> offset(dags.size() + 1, 0);
  for (size_t d = 0; d < dags.size(); ++d) offset[d + 1] = offset[d] + dags[d].size();
  // One more id for the zero node, and `slots` int32 entries per node.
  int64_t limit = std::numeric_limits<int32_t>::max() / options.slots - 1;
  if (offset.back() > limit) user_error(msg::kBatchTooLarge, offset.back(), limit);
  auto num_nodes = static_cast<int32_t>(offset.back());

  // Steps 1 to 3.
  std::vector<int32_t> level(num_nodes);
  int32_t max_level = -1;
  for (size_t d = 0; d < dags.size(); ++d) {
    int64_t number = options.first_dag_number + static_cast<int64_t>(d);
    check_shape(dags[d], options, number);
    check_nodes(dags[d], options, number);
    int32_t *dag_level = level.data() + offset[d];
    measure(dags[d], options, number, dag_level);
    max_level = std::max(max_level, *std::max_element(dag_level, dag_level + dags[d].size()));
  }

  // Step 4: counting sort by level, stable in (DAG, node index) order.
  LinearizedBatch batch;
  batch.num_nodes = num_nodes;
  batch.zero_node = num_nodes;
  batch.max_children = options.slots;
  batch.num_levels = max_level + 1;
  batch.level_begin.assign(batch.num_levels + 1, 0);
  for (int32_t l : level) ++batch.level_begin[l + 1];
  for (int32_t l = 0; l < batch.num_levels; ++l) batch.level_begin[l + 1] += batch.level_begin[l];
  batch.num_leaves = batch.num_levels > 0 ? batch.level_begin[1] : 0;
  std::vector<int32_t> next_id(batch.level_begin.begin(), batch.level_begin.end() - 1);
  std::vector<int32_t> new_id(num_nodes);  // by batch-wide original index
  std::vector<int32_t> origin(num_nodes);  // by new id: batch-wide original index
  for (int32_t i = 0; i < num_nodes; ++i) {
    int32_t id = next_id[level[i]]++;
    new_id[i] = id;
    origin[id] = i;
  }

  // Step 5: CSR slots, tokens and output nodes in the new numbering.
  std::vector<size_t> dag_of(num_nodes);
  for (size_t d = 0; d < dags.size(); ++d)
    std::fill(dag_of.begin() + offset[d], dag_of.begin() + offset[d + 1], d);
  batch.child_begin.resize(static_cast<size_t>(num_nodes) + 1);
  batch.children.reserve(static_cast<size_t>(num_nodes) * options.slots);
  batch.token.resize(num_nodes);
  for (int32_t id = 0; id < num_nodes; ++id) {
    batch.child_begin[id] = static_cast<int32_t>(batch.children.size());
    int32_t i = origin[id];
    const Dag &dag = dags[dag_of[i]];
    auto v = static_cast<int32_t>(i - offset[dag_of[i]]);
    for (int32_t k = 0; k < options.slots; ++k) {
      int32_t p = k < dag.num_preds(v) ? dag.pred(v, k) : Dag::kEmptySlot;
      batch.children.push_back(p == Dag::kEmptySlot ? batch.zero_node : new_id[offset[dag_of[i]] + p]);
    }
    batch.token[id] = dag.token[v];
  }
  batch.child_begin[num_nodes] = static_cast<int32_t>(batch.children.size());

  std::vector<bool> has_successor;
  for (size_t d = 0; d < dags.size(); ++d) {
    const Dag &dag = dags[d];
    if (options.outputs == DagOutputs::AllNodes) {
      for (int32_t v = 0; v < dag.size(); ++v) batch.roots.push_back(new_id[offset[d] + v]);
      continue;
    }
    has_successor.assign(dag.size(), false);
    for (int32_t p : dag.preds) {
      if (p != Dag::kEmptySlot) has_successor[p] = true;
    }
    for (int32_t v = 0; v < dag.size(); ++v) {
      if (!has_successor[v]) batch.roots.push_back(new_id[offset[d] + v]);
    }
  }
  return batch;
}

}  // namespace grove
