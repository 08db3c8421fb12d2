#pragma once
// The optimizers of the training driver, as PyTorch's torch.optim defines them, over a model's
// parameters and its classifier head's.
//
// One step, given the batch's gradients g (the loss's, already averaged over the batch):
//   1. Clipping (`clip` > 0), as torch.nn.utils.clip_grad_norm_: the global norm ‖g‖ over every
//      gradient, the embedding's touched rows included; if clip / (‖g‖ + 1e-6) < 1, every gradient
//      is multiplied by it.
//   2. Weight decay λ on every parameter but the embedding, added to the gradient: g += λθ (the
//      gradient of 0.5·λ·‖θ‖², torch.optim's `weight_decay`, applied after clipping as there).
//   3. The update, per parameter, with t the step count from 1:
//        sgd:      θ −= lr·g
//        adagrad:  s += g²;  θ −= lr·g / (√s + 1e-10)            (initial accumulator 0)
//        adam:     m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;
//                  θ −= (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + 1e-8)   (β1 0.9, β2 0.999)
//   4. The embedding only at the rows the batch touched (sparse; every other row and its state stay
//      bit-identical): by plain SGD at `emb_lr` (the recipe), or with `embedding_same` by the
//      optimizer of step 3 at `emb_lr`, its state kept per row and advanced only where touched
//      (as PyTorch's sparse Adagrad and SparseAdam, with the global step t).
// The arithmetic is in float as PyTorch's; the state is serializable (state(), load_state()).

#include <cstdint>
#include <map>
#include <string>

#include "support/Tensor.h"
#include "training/GradientModel.h"

namespace grove::training {

enum class OptimizerKind { Sgd, Adagrad, Adam };

// "sgd", "adagrad", "adam".
const char *optimizer_name(OptimizerKind kind);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::Adagrad;
  double lr = 0.05;
  double emb_lr = 0.1;
  bool embedding_same = false;  // the embedding by `kind` too, not plain SGD
  double weight_decay = 0.0;
  double clip = 0.0;  // 0: no clipping
  double beta1 = 0.9, beta2 = 0.999;
};

// The parameters an optimizer updates, by name: the model's and the head's, in place.
using ParamRefs = std::map<std::string, Tensor *>;

// The global L2 norm of `grads` (dense and embedding rows), in double.
double gradient_norm(const Gradients &grads);
// Step 1 above: scales `grads` in place when their norm exceeds `clip`; returns the norm before.
double clip_gradients(Gradients &grads, double clip);

class Optimizer {
 public:
  // `embedding` names the parameter updated sparsely ("" if none).
  Optimizer(const OptimizerOptions &options, std::string embedding);

  // Steps 1-4 on `params` with `grads`, which must hold a gradient for every parameter but the
  // embedding (whose gradient is sparse); `grads` is clipped in place (its norm is computed only
  // when clipping). The updates (elementwise) are split among `threads`; the result does not depend
  // on it.
  void step(const ParamRefs &params, Gradients &grads, int threads = 1);

  int64_t steps() const { return steps_; }
  const OptimizerOptions &options() const { return options_; }

  // The state as tensors: "optimizer.step" (the step count t as [t / 2^24, t mod 2^24], both exact
  // in float), and per parameter θ "optimizer.adagrad.θ" (the sum s), or "optimizer.adam.θ.m" and
  // "optimizer.adam.θ.v"; the embedding's only when it follows the optimizer. SGD has no state but
  // the step.
  Weights state() const;
  // Restores a state() for the parameters `params`; a UserError naming `file` when a tensor is
  // missing, extra (another optimizer's) or of another shape.
  void load_state(const Weights &state, const ParamRefs &params, const std::string &file);

 private:
  struct Slots {
    Tensor first, second;  // adagrad: sum; adam: m, v
  };
  Slots &slots_of(const std::string &name, const Tensor &param);
  void update(OptimizerKind kind, const std::string &name, float *theta, const float *g, int64_t n,
              Slots &slots, int64_t slot_offset, double lr, bool decay);

  OptimizerOptions options_;
  std::string embedding_;
  int64_t steps_ = 0;
  std::map<std::string, Slots> slots_;
};

}  // namespace grove::training
