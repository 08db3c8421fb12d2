#pragma once
// The training loop over a GradientModel: the model's weights and the classifier head trained by an
// optimizer on labelled trees, evaluated on a dev set after every epoch, with checkpoints.
//
// Per epoch e (from 1):
//   1. The training trees in an order shuffled from (seed, e) (training/Random.h: the same on every
//      platform), cut into batches of `batch` trees (the last one shorter).
//   2. Per batch, step t (from 1, counted across epochs): forward → head_loss (dropout keyed by t)
//      → backward → the head's gradients joined to the model's → Optimizer::step (clip, decay,
//      update, the embedding sparse) → set_weights.
//   3. The dev set evaluated without dropout: root fine-grained accuracy, binary accuracy on roots
//      whose label is not neutral (with 5 classes: 0, 1 negative, 3, 4 positive; the prediction is
//      positive when p3 + p4 > p0 + p1), and the accuracy over every labelled node.
//   4. `last.safetensors` in `out` (and `best.safetensors` when the dev root accuracy is the best so
//      far, strictly), each with the head, the optimizer's and the trainer's state; then early
//      stopping when `patience` > 0 epochs went by without a better dev root accuracy.
// Everything is a function of the seed, the inputs and the options: the same seed gives bit-identical
// weights (given a deterministic model), and a run resumed from a checkpoint after epoch e gives the
// weights of the uninterrupted run.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "datasets/PTBReader.h"
#include "training/Checkpoint.h"
#include "training/GradientModel.h"
#include "training/Head.h"
#include "training/Optimizer.h"

namespace grove::training {

struct TrainerOptions {
  int64_t epochs = 10;
  int64_t batch = 25;
  int64_t patience = 0;  // 0: no early stopping
  uint64_t seed = 1;
  LossNodes loss = LossNodes::All;
  Average average = Average::Nodes;  // the loss over a batch's labelled nodes or its trees (Head.h)
  double dropout = 0.0;
  OptimizerOptions optimizer;
  std::string out;                  // the checkpoint directory ("": none written)
  std::vector<std::string> inputs;  // files a checkpoint must never replace
  int64_t eval_batch = 256;         // trees per forward when evaluating
};

struct Accuracy {
  int64_t roots = 0, roots_correct = 0;
  int64_t binary = 0, binary_correct = 0;  // roots with a non-neutral label (5 classes only)
  int64_t nodes = 0, nodes_correct = 0;    // every labelled node
  static double ratio(int64_t correct, int64_t total) {
    return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
  }
  double root() const { return ratio(roots_correct, roots); }
  double binary_root() const { return ratio(binary_correct, binary); }
  double all_nodes() const { return ratio(nodes_correct, nodes); }
};

// Seconds an epoch's steps spent in each phase (step 2 above): the batches' gathering, the model's
// forward, the head (loss and its gradients), the model's backward, the optimizer's update and
// set_weights.
struct PhaseSeconds {
  double gather = 0.0, forward = 0.0, head = 0.0, backward = 0.0, update = 0.0, set_weights = 0.0;
  double total() const { return gather + forward + head + backward + update + set_weights; }
};

struct EpochReport {
  int64_t epoch = 0;
  double train_loss = 0.0;  // mean cross-entropy per labelled node over the epoch
  Accuracy dev;
  double sentences_per_s = 0.0;  // training trees per second of steps 1-2
  PhaseSeconds phases;
  bool best = false;  // the dev root accuracy improved (best.safetensors written)
};

struct TrainerCallbacks {
  std::function<void(const EpochReport &)> epoch;          // after each epoch
  std::function<void(int64_t done, int64_t total)> batch;  // after each batch: trees done in the epoch
  // After each step: its number t (from 1, across epochs), the batch's trees (indices into the
  // training set, in batch order) and its loss (HeadResult::loss, before the update).
  std::function<void(int64_t step, const std::vector<int64_t> &trees, double loss)> step;
};

class Trainer {
 public:
  // `weights`: every model parameter; `head`: head.weight [C, H] and head.bias [C] (init_head).
  Trainer(GradientModel &model, Weights weights, Weights head, const TrainerOptions &options);

  // Continues from a checkpoint: its weights, head, optimizer state and trainer state; a UserError
  // naming `file` when they do not fit the model or these options' optimizer.
  void resume(const Checkpoint &checkpoint, const std::string &file);

  // Epochs after those done, up to options.epochs or until early stopping; one report per epoch run.
  std::vector<EpochReport> train(const LabelledTrees &train, const LabelledTrees &dev,
                                 const TrainerCallbacks &callbacks = {});

  // The accuracies of the current weights on `trees` (no dropout).
  Accuracy evaluate(const LabelledTrees &trees);

  const Weights &weights() const { return weights_; }
  const Weights &head() const { return head_; }
  const TrainerState &state() const { return state_; }
  const Optimizer &optimizer() const { return optimizer_; }
  Checkpoint checkpoint() const;

 private:
  ParamRefs params();
  double train_epoch(const LabelledTrees &train, const TrainerCallbacks &callbacks, PhaseSeconds &phases);

  GradientModel &model_;
  Weights weights_, head_;
  TrainerOptions options_;
  Optimizer optimizer_;
  TrainerState state_;
  int64_t classes_;
};

}  // namespace grove::training
