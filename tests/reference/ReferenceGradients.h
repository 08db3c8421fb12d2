#pragma once
// Independent reference gradients of grove's tree models, for checking the compiled backward pass
// (backends/cpu/TrainableModel.h) and for running the trainer without the compiled engine.
//
// Reverse mode written out by hand from the equations of docs/MODELS.md, one node at a time, for
// TreeFC, TreeGRU, TreeLSTM, ChildSumTreeLSTM and MVRNN. Like Reference.h, nothing here shares code
// with grove's front end, lowering, differentiation or backends: weights are read as float32 (or
// given in double), everything is computed and accumulated in double, and only the float API's
// results are rounded to float32. Products are always exact (ScopedProducts does not apply here).
//
// Trees are walked iteratively (an explicit stack for the post-order; the backward visits the nodes
// in the reverse of that order, parents before children), never by recursion on the C stack, so a
// 10,000-deep chain is fine.
//
// The loss the gradients are of: given d_rows (d loss / d h for every node of every tree), the
// gradient is that of L = Σ_nodes Σ_j d_rows[node, j] · h[node, j] with d_rows held fixed — exactly
// what GradientModel::backward(d_rows) returns for any loss whose derivative at the states is d_rows.
//
// Rows (states and d_rows) are tree by tree in input order, and within a tree in the tree's own
// node numbering: row tree_offset[t] + i is node i of tree t (training/GradientModel.h). A model's
// output state `h` is its per-node vector: TreeLSTM's and ChildSumTreeLSTM's `h` (not `c`), MVRNN's
// vector `p` (leaves: `a = E[w]`), TreeFC's and TreeGRU's `h`.
//
// Wrong weights (a missing, extra or misshapen tensor) or a tree the model cannot take (not a tree,
// a binary model's node with one or more than two children, a token outside [0, V)) are GROVE_CHECK
// failures (InternalError) in the free functions; ReferenceGradientModel reports them as UserError.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "datasets/Tree.h"
#include "support/Tensor.h"
#include "tests/reference/Reference.h"
#include "training/GradientModel.h"

namespace grove::reference {

// --- Double precision (for finite differences) --------------------------------------------------

// A dense float64 tensor, row-major, shaped as the float32 parameter it stands for.
struct Tensor64 {
  std::vector<int64_t> shape;
  std::vector<double> data;  // product(shape) elements

  Tensor64() = default;
  explicit Tensor64(std::vector<int64_t> s);
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// A model's parameters in double, by docs/MODELS.md name.
using Weights64 = std::map<std::string, Tensor64>;

// The float32 weights widened to double (exactly).
Weights64 to_weights64(const Weights &weights);

// Every node's output state in double: rows [tree_offset.back(), width], tree by tree.
struct NodeStates64 {
  int64_t width = 0;
  std::vector<int64_t> tree_offset;  // trees + 1 entries
  std::vector<double> rows;
  int64_t nodes() const { return tree_offset.empty() ? 0 : tree_offset.back(); }
};

// How many rows (nodes) `trees` have in all: d_rows has nodes × H entries.
int64_t total_nodes(std::span<const Tree> trees);

// The forward in double: every node's output state.
NodeStates64 reference_node_states64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees);

// L = Σ_nodes Σ_j d_rows[node, j] · h[node, j], computed in double: the scalar whose derivatives
// reference_gradients64 returns, for central finite differences.
double reference_loss64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees,
                        std::span<const double> d_rows);

// dL/d(parameter) for every parameter, in double, each shaped as the parameter — `emb` dense too
// ([V, D], rows no leaf reads exactly zero). If `states` is given, it receives the forward's states.
Weights64 reference_gradients64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees,
                                std::span<const double> d_rows, NodeStates64 *states = nullptr);

// --- Float32 API (training::GradientModel's types) -----------------------------------------------

// The forward: every node's output state, computed in double and rounded to float.
training::NodeStates reference_node_states(ModelKind model, const Weights &weights,
                                           std::span<const Tree> trees);

// What a backward returns, and the states of the forward it ran.
struct ReferenceBackward {
  training::NodeStates states;
  training::Gradients gradients;
};

// The forward and the backward of `trees` given d_rows ([nodes, H], float): every parameter's
// gradient computed in double and rounded to float. `gradients.dense` holds every parameter but
// `emb`; `emb`'s gradient is sparse as training::Gradients says: embedding_rows are the distinct
// tokens the batch's leaves read, ascending, and embedding_grad is [rows, D].
ReferenceBackward reference_backward(ModelKind model, const Weights &weights, std::span<const Tree> trees,
                                     std::span<const float> d_rows);

// --- A GradientModel without the compiled engine ------------------------------------------------

// training::GradientModel over the reference above: set_weights stores the weights (checked against
// model_params, UserError naming the tensor), forward computes and keeps the node states (UserError
// on a tree the model cannot take), backward the gradients of the last forward's trees.
class ReferenceGradientModel : public training::GradientModel {
 public:
  // A tree model (TreeFC .. MVRNN) of hidden size H, input size D and vocabulary V; its weights are
  // set with set_weights before the first forward.
  ReferenceGradientModel(ModelKind model, int64_t H, int64_t D, int64_t V);

  const std::vector<training::ParamInfo> &params() const override;
  const std::string &embedding() const override;
  void set_weights(const Weights &weights) override;
  const training::NodeStates &forward(std::span<const Tree> trees) override;
  training::Gradients backward(std::span<const float> d_rows) override;

 private:
  ModelKind model_;
  int64_t H_, D_, V_;
  std::vector<training::ParamInfo> params_;
  std::string embedding_ = "emb";
  Weights weights_;
  bool has_weights_ = false;
  std::vector<Tree> trees_;  // the last forward's trees
  Weights forward_weights_;  // and the weights it ran with
  bool has_forward_ = false;
  training::NodeStates states_;
};

}  // namespace grove::reference
