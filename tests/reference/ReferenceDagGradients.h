#pragma once
// Independent reference gradients of grove's DAG and sequence models (DAGRNN, LSTM, GRU), for
// checking a compiled backward pass over DAGs and for training without the compiled engine.
//
// Reverse mode written out by hand from the equations of docs/MODELS.md (and models/dagrnn.grove,
// models/lstm.grove, models/gru.grove), one node at a time, in the style of ReferenceGradients.h:
// weights are read as float32 (or given in double), everything is computed and accumulated in
// double, and only the float API's results are rounded to float32. Products are always exact
// (ScopedProducts does not apply here). Nothing here shares code with grove's front end, lowering,
// differentiation, DAG inspector or backends.
//
// Inputs are grove::Dag (datasets/Dag.h): per node a token and ordered predecessor slots, where
// Dag::kEmptySlot (-1) is an empty slot that reads zeros, and so is a slot the node does not have.
// DAGRNN reads up to two slots (h_p0, h_p1); LSTM and GRU read up to one (h[prev], and for LSTM
// c[prev]): a sequence is its chain DAG (chain_dag(tokens)). A node's state may be read by any number
// of successors (a grid cell is read by the cell below and the cell to its right; a node may fill
// both of one successor's slots): the backward gathers every reader's contribution into it.
//
// Every DAG is ordered with Kahn's algorithm (a work list, never recursion on the C stack, so a
// 10,000-node chain or a 100×100 grid is fine); the backward visits the nodes in the reverse of
// that order, so a node's adjoint is complete (its d_rows row plus every successor's share) before it
// is propagated to its predecessors.
//
// The loss the gradients are of: given d_rows (d loss / d h for every node of every DAG), the
// gradient is that of L = Σ_nodes Σ_j d_rows[node, j] · h[node, j] with d_rows held fixed. Rows
// (states and d_rows) are DAG by DAG in input order, and within a DAG in the DAG's own node
// numbering: row dag_offset[k] + i is node i of DAG k. The per-node state is `h` (LSTM's `h`, not
// `c`). Every node reads its embedding row E[token], so the embedding rows a batch touches are the
// tokens of all its nodes.
//
// Wrong weights (a missing, extra or misshapen tensor), a DAG the model cannot take (malformed slot
// arrays, more slots than the model reads, a predecessor outside the DAG or the node itself, a
// cycle, a token outside [0, V)) or d_rows of the wrong size are GROVE_CHECK failures
// (InternalError): a bug in the test that called them. An empty DAG (no node) has no rows.

#include <cstdint>
#include <span>
#include <vector>

#include "datasets/Dag.h"
#include "support/Tensor.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceGradients.h"
#include "training/GradientModel.h"

namespace grove::reference {

// DAGRNN, LSTM and GRU: the models these references take.
bool is_dag_model(ModelKind model);

// How many rows (nodes) `dags` have in all: d_rows has nodes × H entries.
int64_t total_dag_nodes(std::span<const grove::Dag> dags);

// --- Double precision (for finite differences) --------------------------------------------------

// Every node's output state in double: rows [dag_offset.back(), width], DAG by DAG.
struct DagStates64 {
  int64_t width = 0;
  std::vector<int64_t> dag_offset;  // dags + 1 entries
  std::vector<double> rows;
  int64_t nodes() const { return dag_offset.empty() ? 0 : dag_offset.back(); }
};

// The forward in double: every node's output state.
DagStates64 reference_dag_states64(ModelKind model, const Weights64 &weights,
                                   std::span<const grove::Dag> dags);

// L = Σ_nodes Σ_j d_rows[node, j] · h[node, j], computed in double: the scalar whose derivatives
// reference_dag_gradients64 returns, for central finite differences.
double reference_dag_loss64(ModelKind model, const Weights64 &weights, std::span<const grove::Dag> dags,
                            std::span<const double> d_rows);

// dL/d(parameter) for every parameter, in double, each shaped as the parameter — `emb` dense too
// ([V, D], rows no node reads exactly zero). If `states` is given, it receives the forward's states.
Weights64 reference_dag_gradients64(ModelKind model, const Weights64 &weights,
                                    std::span<const grove::Dag> dags, std::span<const double> d_rows,
                                    DagStates64 *states = nullptr);

// --- Float32 API ----------------------------------------------------------------------------------

// The forward: every node's output state, computed in double and rounded to float.
struct DagStates {
  int64_t width = 0;
  std::vector<int64_t> dag_offset;  // dags + 1 entries
  std::vector<float> rows;          // [dag_offset.back(), width]
  int64_t nodes() const { return dag_offset.empty() ? 0 : dag_offset.back(); }
};
DagStates reference_dag_states(ModelKind model, const Weights &weights, std::span<const grove::Dag> dags);

// What a backward returns, and the states of the forward it ran (rows as DagStates's).
struct ReferenceDagBackward {
  std::vector<int64_t> dag_offset;  // dags + 1 entries
  std::vector<float> rows;          // [dag_offset.back(), width]: every node's h
  int64_t width = 0;
  training::Gradients gradients;
};

// The forward and the backward of `dags` given d_rows ([nodes, H], float): every parameter's gradient
// computed in double and rounded to float. `gradients.dense` holds every parameter but `emb`;
// `emb`'s gradient is sparse as training::Gradients says: embedding_rows are the distinct tokens the
// batch's nodes read, ascending, and embedding_grad is [rows, D].
ReferenceDagBackward reference_dag_backward(ModelKind model, const Weights &weights,
                                            std::span<const grove::Dag> dags, std::span<const float> d_rows);

}  // namespace grove::reference
