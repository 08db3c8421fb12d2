#pragma once
// Training checkpoints: one safetensors file holding
//   * the model's parameters under their own names — `grove run --weights ckpt.safetensors` and
//     Python load it unchanged (the weight checks skip the rest, backends/runtime/BindWeights.h's
//     is_training_state);
//   * the classifier head, head.weight [C, H] and head.bias [C];
//   * the optimizer's state (Optimizer::state(): optimizer.step, optimizer.<kind>.<param>...) and the
//     trainer's, optimizer.trainer = [epochs done, best epoch, best dev root correct, epochs
//     without improvement] (each exact in float).
// Written atomically (a temporary renamed into place) and never over one of the run's inputs.

#include <cstdint>
#include <span>
#include <string>

#include "support/Tensor.h"

namespace grove::training {

// Where the training loop stands after `epoch` epochs.
struct TrainerState {
  int64_t epoch = 0;          // epochs done
  int64_t best_epoch = 0;     // 0: none yet
  int64_t best_correct = -1;  // dev roots right at best_epoch
  int64_t bad_epochs = 0;     // epochs since best_epoch
};

struct Checkpoint {
  Weights model;      // every model parameter
  Weights head;       // head.*
  Weights optimizer;  // optimizer.* but optimizer.trainer
  TrainerState trainer;
};

inline constexpr char kTrainerStateTensor[] = "optimizer.trainer";

// Writes `checkpoint` to `path` atomically; a UserError if `path` is one of `inputs` (same_file).
void write_checkpoint(const std::string &path, const Checkpoint &checkpoint,
                      std::span<const std::string> inputs);

// Reads a checkpoint, split by the names' prefixes; a UserError naming `path` when the trainer state
// is missing or malformed.
Checkpoint read_checkpoint(const std::string &path);

// The same split of tensors already read (an --init file may hold a head, or no optimizer state).
Checkpoint split_checkpoint(Weights weights);

}  // namespace grove::training
