#pragma once
// Independent reference implementations of grove's models, for the end-to-end correctness tests.
//
// Each function follows the equations of docs/MODELS.md (the project's model specification) to the
// letter, one node at a time, in plain C++: weights are read as float32, everything is computed and
// accumulated in double, and only the returned tensor is rounded to float32. Nothing here shares
// code with grove's front end, lowering or backends, so an agreement between the two is evidence
// that both are right.
//
// Input structures are walked iteratively (explicit stack or work list), never by recursion on the
// C stack, so a 1,000,000-node chain is fine. The references check the weights' names and shapes and
// the inputs' shape (arity, token range) with GROVE_CHECK: a failure there is a bug in the test that
// called them, reported as an InternalError naming the tensor or the node.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::reference {

enum class ModelKind { TreeFC, TreeGRU, TreeLSTM, ChildSumTreeLSTM, MVRNN, DAGRNN, LSTM, GRU };

// "TreeLSTM", "ChildSumTreeLSTM", ... (the model names of docs/MODELS.md).
std::string model_name(ModelKind model);
// "treelstm", "childsum_treelstm", ... (the model file models/<stem>.grove).
std::string model_file_stem(ModelKind model);

// One parameter of a model: its docs/MODELS.md name and shape.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// The parameters of `model` with hidden size H, input size D and vocabulary size V, in docs/MODELS.md's
// order. TreeFC and MVRNN require D = H.
std::vector<ParamSpec> model_params(ModelKind model, int64_t H, int64_t D, int64_t V);

// Every parameter of `model`, exactly named and shaped, with deterministic pseudo-random values from
// `seed` (the same on every platform): matrices uniform in [-a, a] with a = 1/sqrt(fan_in) (fan_in =
// the last dimension), `emb` uniform in [-1, 1], MV-RNN's `emb_mat` the identity plus uniform noise
// in [-a, a] with a = 1/sqrt(H), biases uniform in [-0.1, 0.1].
Weights random_model_weights(ModelKind model, int64_t H, int64_t D, int64_t V, uint64_t seed);

// --- Arithmetic ---------------------------------------------------------------------------------
// How the products of a weight matrix with a vector (W x, every one of the models') are computed:
// exactly (the float32 weight times the double vector), or as grove's schedule precision=bf16
// computes its level GEMMs: the weight and the vector each rounded to bfloat16 (to nearest, ties to
// even), the products accumulated in double. MV-RNN's per-node matrix products stay exact.
enum class Products { Exact, Bf16 };

// While alive, the references called on this thread compute their products as `products` says.
class ScopedProducts {
 public:
  explicit ScopedProducts(Products products);
  ~ScopedProducts();
  ScopedProducts(const ScopedProducts &) = delete;
  ScopedProducts &operator=(const ScopedProducts &) = delete;

 private:
  Products previous_;
};

// `x` rounded to the nearest bfloat16 (ties to even) and back: the reference's own rounding.
double round_bf16(double x);

// --- Trees: each returns the output state of `tree`'s root, [H]. --------------------------------
Tensor reference_treefc(const Weights &weights, const Tree &tree);
Tensor reference_treegru(const Weights &weights, const Tree &tree);
Tensor reference_treelstm(const Weights &weights, const Tree &tree);
Tensor reference_childsum_treelstm(const Weights &weights, const Tree &tree);
Tensor reference_mvrnn(const Weights &weights, const Tree &tree);

// The root output of one tree for any tree model (TreeFC .. MVRNN).
Tensor reference_tree(ModelKind model, const Weights &weights, const Tree &tree);

// The root outputs of all `trees`, [trees.size(), H], in input order (what CompiledModel::run
// returns).
Tensor reference_roots(ModelKind model, const Weights &weights, std::span<const Tree> trees);

// --- DAGs ---------------------------------------------------------------------------------------
// A DAG with at most two ordered predecessors per node: node i has token token[i] and predecessors
// preds[i][0], preds[i][1], where -1 is an empty slot (slot 1 may be filled while slot 0 is empty).
struct Dag {
  std::vector<int32_t> token;
  std::vector<std::array<int32_t, 2>> preds;

  int32_t size() const { return static_cast<int32_t>(token.size()); }
};

// DAG-RNN: the output `h` of every sink (a node that is no one's predecessor), in node order,
// [sinks, H]. Nodes are evaluated in a topological order found with Kahn's algorithm; a cycle is a
// GROVE_CHECK failure.
Tensor reference_dagrnn(const Weights &weights, const Dag &dag);

// --- Sequences (PyTorch nn.LSTM / nn.GRU, one layer, zero initial state) -------------------------
// Each returns the last hidden state, [H] (zeros for an empty sequence).
Tensor reference_lstm(const Weights &weights, std::span<const int32_t> tokens);
Tensor reference_gru(const Weights &weights, std::span<const int32_t> tokens);

}  // namespace grove::reference
