#pragma once
// The DAG inspector: linearizes a batch of DAGs (grids and sequences are DAGs too) into the arrays
// the compiled code reads, the same LinearizedBatch the tree inspector fills. A node's "children"
// are its predecessor slots, always exactly `slots` of them; an empty slot holds the zero node.
//
// Algorithm (O(nodes + slots) per DAG, iterative — nothing recurses on the C stack per node):
//   1. Check each DAG: non-empty, consistent slot arrays, at most `slots` predecessor slots per
//      node, every predecessor a node of the DAG other than the node itself, tokens in
//      [0, vocab_size).
//   2. Topologically sort it with Boost.Graph (edges run predecessor -> node); on a cycle, find a
//      back edge with a depth-first search to name two nodes on it.
//   3. Level of a node = the longest path to it from a source: 0 for a node without predecessors,
//      else 1 + the largest level among its predecessors, in topological order.
//   4. Counting sort by level: new ids give each level one contiguous range across the batch,
//      sources first; ties keep (DAG, node index) order. Every predecessor gets a smaller id.
//   5. Build the CSR slot arrays (zero node = num_nodes in empty slots), tokens, and the output
//      nodes: each DAG's sinks (nodes that are no one's predecessor) in node order, or all nodes.

#include <cstdint>
#include <span>
#include <string>

#include "backends/runtime/Inspector.h"
#include "datasets/Dag.h"

namespace grove {

enum class DagOutputs {
  Sinks,     // every sink of every DAG, DAG by DAG, in node order (a sequence's sink: its last token)
  AllNodes,  // every node of every DAG, DAG by DAG, in node order
};

struct DagInspectorOptions {
  int32_t slots = 2;             // predecessor slots of the model's nodes: 2 (dag), 1 (sequence)
  int64_t vocab_size = -1;       // tokens must be < vocab_size; -1: unchecked
  int64_t first_dag_number = 1;  // how errors number the DAGs (their place in the input file)
  std::string noun = "DAG";      // how errors name one input: "DAG", "grid", "sequence"
  DagOutputs outputs = DagOutputs::Sinks;
};

LinearizedBatch linearize_dags(std::span<const Dag> dags, const DagInspectorOptions &options);

}  // namespace grove
