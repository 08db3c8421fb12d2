#pragma once
// What a training loop needs of a tree model: every node's output state for a batch of trees, and
// the gradient of a loss on those states with respect to every parameter.
//
// The compiled implementation (backends/cpu/TrainableModel.h) runs a forward program that keeps
// what the backward needs and a backward program derived from the model's ILIR
// (plan/Differentiate.h); tests drive the same interface with the independent reference gradients
// of tests/reference. The training driver (training/Trainer.h) owns the weights and the optimizer,
// and sees a model only through this interface.
//
// Node rows: a batch's rows are tree by tree in input order, and within a tree in the tree's own
// node numbering (row tree_offset[t] + i is node i of tree t, Tree.h), whatever order the compiled
// code computes them in.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::training {

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
};

// The output state of every node of the last forward's trees.
struct NodeStates {
  int64_t width = 0;  // the output state's size (H)
  std::vector<int64_t>
      tree_offset;          // trees + 1 entries; tree t's rows are [tree_offset[t], tree_offset[t + 1])
  std::vector<float> rows;  // [tree_offset.back(), width]
  int64_t nodes() const { return tree_offset.empty() ? 0 : tree_offset.back(); }
};

// Parameter gradients of one backward. `dense` holds every parameter but the embedding, each shaped
// as the parameter. The embedding's gradient is sparse: `embedding_rows` lists the distinct rows
// (token ids) the batch's leaves read, ascending, and `embedding_grad` is [rows, D], row r the
// gradient of row embedding_rows[r]. Every other row's gradient is exactly zero.
struct Gradients {
  Weights dense;
  std::vector<int32_t> embedding_rows;
  Tensor embedding_grad;
};

class GradientModel {
 public:
  virtual ~GradientModel() = default;

  // Every parameter, in the model's declaration order, shapes bound.
  virtual const std::vector<ParamInfo> &params() const = 0;
  // The parameter indexed by a leaf's token ("emb"), or "" if none.
  virtual const std::string &embedding() const = 0;

  // The weights of the next forward and backward: every parameter, exactly shaped. Cheap enough to
  // call after every optimizer step (it repacks the weight panels). A model may read the tensors in
  // place rather than copy them: they must stay alive, at the same addresses, until the next
  // set_weights or the model's end (an optimizer updating them in place calls set_weights again).
  virtual void set_weights(const Weights &weights) = 0;

  // Runs the model over `trees` and returns every node's output state; keeps what backward() needs
  // until the next forward(). Throws UserError on a tree the model cannot take.
  virtual const NodeStates &forward(std::span<const Tree> trees) = 0;

  // Given d(loss)/d(output state) for every row of the last forward ([nodes, width]), returns
  // d(loss)/d(parameter) for every parameter, through the whole recursion. An internal error without
  // a forward first.
  virtual Gradients backward(std::span<const float> d_rows) = 0;

  // Hands back a backward's gradients once the caller is done with them (after the optimizer's
  // step), so that the next backward fills their buffers in place instead of allocating and
  // clearing new ones. Optional: a model may ignore it, and a caller need not call it.
  virtual void recycle(Gradients &&spent) { (void)spent; }

  // The threads the model's compiled code runs on; the trainer's own loops (the head, the optimizer's
  // update) take as many.
  virtual int threads() const { return 1; }
};

}  // namespace grove::training
