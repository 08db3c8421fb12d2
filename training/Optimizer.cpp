#include "training/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "support/Error.h"
#include "support/Parallel.h"
#include "training/Messages.h"
#include "training/TargetClones.h"

namespace grove::training {

namespace msg = training_messages;

namespace {

constexpr float kAdagradEps = 1e-10f;
constexpr float kAdamEps = 1e-8f;
constexpr char kStepTensor[] = "optimizer.step";
constexpr int64_t kStepRadix = int64_t{1} << 24;

// In eight partial sums (a vector of doubles), in a fixed order.
double sum_of_squares(const std::vector<float> &data) {
  constexpr size_t kParts = 8;
  double part[kParts] = {};
  size_t i = 0;
  for (; i + kParts <= data.size(); i += kParts)
    for (size_t j = 0; j < kParts; ++j) part[j] += static_cast<double>(data[i + j]) * data[i + j];
  for (; i < data.size(); ++i) part[i % kParts] += static_cast<double>(data[i]) * data[i];
  double sum = 0.0;
  for (double p : part) sum += p;
  return sum;
}

void scale(std::vector<float> &data, float factor) {
  for (float &v : data) v *= factor;
}

}  // namespace

const char *optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd:
      return "sgd";
    case OptimizerKind::Adagrad:
      return "adagrad";
    case OptimizerKind::Adam:
      return "adam";
  }
  GROVE_CHECK(false, "optimizer kind {}", static_cast<int>(kind));
}

double gradient_norm(const Gradients &grads) {
  double sum = sum_of_squares(grads.embedding_grad.data);
  for (const auto &[name, g] : grads.dense) sum += sum_of_squares(g.data);
  return std::sqrt(sum);
}

double clip_gradients(Gradients &grads, double clip) {
  const double norm = gradient_norm(grads);
  if (clip <= 0.0) return norm;
  // torch.nn.utils.clip_grad_norm_: the factor max_norm / (norm + 1e-6), clamped to at most 1.
  const double factor = clip / (norm + 1e-6);
  if (factor >= 1.0) return norm;
  const auto f = static_cast<float>(factor);
  scale(grads.embedding_grad.data, f);
  for (auto &[name, g] : grads.dense) scale(g.data, f);
  return norm;
}

Optimizer::Optimizer(const OptimizerOptions &options, std::string embedding)
    : options_(options), embedding_(std::move(embedding)) {}

Optimizer::Slots &Optimizer::slots_of(const std::string &name, const Tensor &param) {
  auto it = slots_.find(name);
  if (it != slots_.end()) return it->second;
  Slots &slots = slots_[name];
  if (options_.kind != OptimizerKind::Sgd) slots.first = Tensor(param.shape);
  if (options_.kind == OptimizerKind::Adam) slots.second = Tensor(param.shape);
  return slots;
}

// One parameter's (or embedding row's) update of step 3, its n values from `slot_offset` of its slots.
// Elementwise loops, also built for AVX-512 (TargetClones.h): wider vectors, the same bits (sqrt and
// division are correctly rounded in every width, and nothing is contracted into an FMA).
GROVE_ALSO_X86_64_V4 void Optimizer::update(OptimizerKind kind, const std::string &name, float *theta,
                                            const float *grad, int64_t n, Slots &slots, int64_t slot_offset,
                                            double lr, bool decay) {
  const auto wd = static_cast<float>(decay ? options_.weight_decay : 0.0);
  const auto neg_lr = static_cast<float>(-lr);
  switch (kind) {
    case OptimizerKind::Sgd:
      for (int64_t i = 0; i < n; ++i) {
        const float g = wd != 0.0f ? grad[i] + wd * theta[i] : grad[i];
        theta[i] += neg_lr * g;
      }
      return;
    case OptimizerKind::Adagrad: {
      float *sum = slots.first.data.data() + slot_offset;
      for (int64_t i = 0; i < n; ++i) {
        const float g = wd != 0.0f ? grad[i] + wd * theta[i] : grad[i];
        sum[i] += g * g;
        theta[i] += neg_lr * (g / (std::sqrt(sum[i]) + kAdagradEps));
      }
      return;
    }
    case OptimizerKind::Adam: {
      float *m = slots.first.data.data() + slot_offset;
      float *v = slots.second.data.data() + slot_offset;
      const auto t = static_cast<double>(steps_);
      const double correction1 = 1.0 - std::pow(options_.beta1, t);
      const double correction2 = 1.0 - std::pow(options_.beta2, t);
      const auto neg_step = static_cast<float>(-lr / correction1);
      const auto root2 = static_cast<float>(std::sqrt(correction2));
      const auto w1 = static_cast<float>(1.0 - options_.beta1);
      const auto b2 = static_cast<float>(options_.beta2), w2 = static_cast<float>(1.0 - options_.beta2);
      for (int64_t i = 0; i < n; ++i) {
        const float g = wd != 0.0f ? grad[i] + wd * theta[i] : grad[i];
        m[i] += w1 * (g - m[i]);  // PyTorch's lerp_(g, 1 − β1) for a weight below 0.5
        v[i] = v[i] * b2 + w2 * (g * g);
        theta[i] += neg_step * (m[i] / (std::sqrt(v[i]) / root2 + kAdamEps));
      }
      return;
    }
  }
  GROVE_CHECK(false, "optimizer kind {} for {}", static_cast<int>(kind), name);
}

void Optimizer::step(const ParamRefs &params, Gradients &grads, int threads) {
  if (options_.clip > 0.0) clip_gradients(grads, options_.clip);
  ++steps_;
  // The updates, checked and their slots made here, then run as tasks of at most kChunk elements
  // (or rows of the embedding) each.
  constexpr int64_t kChunk = 16384;
  std::vector<std::function<void()>> tasks;
  for (const auto &[name, param] : params) {
    if (name == embedding_) continue;
    auto g = grads.dense.find(name);
    GROVE_CHECK(g != grads.dense.end(), "no gradient for parameter {}", name);
    GROVE_CHECK(g->second.shape == param->shape, "gradient of {} is {}, the parameter {}", name,
                shape_string(g->second.shape), shape_string(param->shape));
    Slots &slots = slots_of(name, *param);
    float *theta = param->data.data();
    const float *grad = g->second.data.data();
    for (int64_t at = 0; at < param->size(); at += kChunk) {
      const int64_t n = std::min(kChunk, param->size() - at);
      tasks.push_back([this, &name, theta, grad, &slots, at, n] {
        update(options_.kind, name, theta + at, grad + at, n, slots, at, options_.lr, true);
      });
    }
  }
  if (!embedding_.empty() && !grads.embedding_rows.empty()) {
    auto it = params.find(embedding_);
    GROVE_CHECK(it != params.end(), "no embedding parameter {}", embedding_);
    Tensor &table = *it->second;
    GROVE_CHECK(table.shape.size() == 2, "embedding {} is {}", embedding_, shape_string(table.shape));
    const int64_t rows = table.shape[0], width = table.shape[1];
    GROVE_CHECK(grads.embedding_grad.size() == static_cast<int64_t>(grads.embedding_rows.size()) * width,
                "embedding gradient {} for {} rows of {}", shape_string(grads.embedding_grad.shape),
                grads.embedding_rows.size(), width);
    for (int32_t row : grads.embedding_rows)
      GROVE_CHECK(row >= 0 && row < rows, "embedding row {} of {}", row, rows);
    // Plain SGD at emb_lr unless the embedding follows the optimizer; the rows are distinct.
    const OptimizerKind kind = options_.embedding_same ? options_.kind : OptimizerKind::Sgd;
    Slots *slots = options_.embedding_same ? &slots_of(embedding_, table) : nullptr;
    const int64_t count = static_cast<int64_t>(grads.embedding_rows.size());
    const int64_t per_task = std::max<int64_t>(1, kChunk / std::max<int64_t>(width, 1));
    for (int64_t first = 0; first < count; first += per_task) {
      const int64_t last = std::min(count, first + per_task);
      tasks.push_back([this, kind, slots, &table, &grads, width, first, last] {
        Slots none;
        for (int64_t r = first; r < last; ++r) {
          const int64_t row = grads.embedding_rows[static_cast<size_t>(r)];
          update(kind, embedding_, table.data.data() + row * width,
                 grads.embedding_grad.data.data() + r * width, width, slots ? *slots : none, row * width,
                 options_.emb_lr, false);
        }
      });
    }
  }
  parallel_jobs(tasks, threads);
}

Weights Optimizer::state() const {
  Weights state;
  Tensor step({2});
  step.data = {static_cast<float>(steps_ / kStepRadix), static_cast<float>(steps_ % kStepRadix)};
  state[kStepTensor] = std::move(step);
  const std::string prefix = fmt::format("optimizer.{}.", optimizer_name(options_.kind));
  for (const auto &[name, slots] : slots_) {
    if (options_.kind == OptimizerKind::Adagrad) state[prefix + name] = slots.first;
    if (options_.kind == OptimizerKind::Adam) {
      state[prefix + name + ".m"] = slots.first;
      state[prefix + name + ".v"] = slots.second;
    }
  }
  return state;
}

void Optimizer::load_state(const Weights &state, const ParamRefs &params, const std::string &file) {
  std::map<std::string, std::pair<std::string, int>> expected;  // tensor -> (param, slot)
  const std::string prefix = fmt::format("optimizer.{}.", optimizer_name(options_.kind));
  for (const auto &[name, param] : params) {
    if (name == embedding_ && !options_.embedding_same) continue;
    if (options_.kind == OptimizerKind::Adagrad) expected[prefix + name] = {name, 0};
    if (options_.kind == OptimizerKind::Adam) {
      expected[prefix + name + ".m"] = {name, 0};
      expected[prefix + name + ".v"] = {name, 1};
    }
  }
  auto step = state.find(kStepTensor);
  if (step == state.end()) user_error(msg::kOptimizerNoStep, file, kStepTensor);
  const std::vector<float> &t = step->second.data;
  if (t.size() != 2 || !(t[0] >= 0 && t[0] < kStepRadix && t[1] >= 0 && t[1] < kStepRadix) ||
      t[0] != std::floor(t[0]) || t[1] != std::floor(t[1])) {
    user_error(msg::kOptimizerBadStep, file, kStepTensor);
  }
  std::map<std::string, Slots> slots;
  for (const auto &[name, tensor] : state) {
    if (name == kStepTensor) continue;
    auto it = expected.find(name);
    if (it == expected.end()) user_error(msg::kOptimizerExtra, file, name, optimizer_name(options_.kind));
    const Tensor &param = *params.at(it->second.first);
    if (tensor.shape != param.shape) {
      user_error(msg::kOptimizerShape, file, name, shape_string(tensor.shape), shape_string(param.shape));
    }
    Slots &s = slots[it->second.first];
    (it->second.second == 0 ? s.first : s.second) = tensor;
  }
  // Every parameter the saved steps updated has its state; a step count of 0 has none.
  const auto saved_steps = static_cast<int64_t>(t[0]) * kStepRadix + static_cast<int64_t>(t[1]);
  if (saved_steps > 0) {
    for (const auto &[name, where] : expected) {
      if (!state.count(name)) user_error(msg::kOptimizerMissing, file, name);
    }
  }
  steps_ = saved_steps;
  slots_ = std::move(slots);
}

}  // namespace grove::training
