#pragma once
// One input DAG as the readers produce it, before the DAG inspector linearizes it. A sequence is the
// chain DAG whose token t has the single predecessor t - 1.

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace grove {

// Nodes are numbered 0..size()-1 in any order. Node i has token token[i] and the ordered
// predecessor slots preds[pred_begin[i] .. pred_begin[i+1]); a slot holding kEmptySlot is empty
// (a DAG-RNN reads zeros there). A node that is no one's predecessor is a sink. The readers check
// the file's syntax only; the inspector checks the rest (indices in range, no cycle, slot count,
// token range).
struct Dag {
  static constexpr int32_t kEmptySlot = -1;

  std::vector<int32_t> token;       // per node
  std::vector<int32_t> pred_begin;  // size() + 1 entries
  std::vector<int32_t> preds;

  int32_t size() const { return static_cast<int32_t>(token.size()); }
  int32_t num_preds(int32_t node) const { return pred_begin[node + 1] - pred_begin[node]; }
  int32_t pred(int32_t node, int32_t slot) const { return preds[pred_begin[node] + slot]; }

  // Appends a node with the given predecessor slots; returns its index.
  int32_t add_node(int32_t node_token, std::initializer_list<int32_t> slots) {
    if (pred_begin.empty()) pred_begin.push_back(0);
    token.push_back(node_token);
    preds.insert(preds.end(), slots.begin(), slots.end());
    pred_begin.push_back(static_cast<int32_t>(preds.size()));
    return size() - 1;
  }
};

// The chain DAG of a sequence: token t's only predecessor is token t - 1; the first token has one
// empty slot.
inline Dag chain_dag(const std::vector<int32_t> &tokens) {
  Dag dag;
  dag.token = tokens;
  dag.pred_begin.resize(tokens.size() + 1);
  dag.preds.resize(tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    dag.pred_begin[t + 1] = static_cast<int32_t>(t + 1);
    dag.preds[t] = t == 0 ? Dag::kEmptySlot : static_cast<int32_t>(t - 1);
  }
  return dag;
}

// The number of sinks (nodes no slot names). Slots outside the DAG are ignored: the inspector
// rejects such a DAG, so this count only has to be safe on it.
inline int32_t num_sinks(const Dag &dag) {
  std::vector<char> named(dag.token.size(), 0);
  for (int32_t p : dag.preds)
    if (p >= 0 && p < dag.size()) named[p] = 1;
  int32_t sinks = 0;
  for (char n : named) sinks += !n;
  return sinks;
}

}  // namespace grove
