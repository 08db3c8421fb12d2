#include "training/Checkpoint.h"

#include <cmath>

#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Safetensors.h"
#include "training/Messages.h"

namespace grove::training {

namespace msg = training_messages;

namespace {

constexpr int64_t kTrainerFields = 4;
constexpr double kExactInFloat = 16777216.0;  // 2^24

}  // namespace

void write_checkpoint(const std::string &path, const Checkpoint &checkpoint,
                      std::span<const std::string> inputs) {
  for (const std::string &input : inputs) {
    if (!input.empty() && same_file(path, input)) user_error(msg::kCheckpointOverInput, path, input);
  }
  Weights all = checkpoint.model;
  for (const auto &[name, tensor] : checkpoint.head) {
    GROVE_CHECK(name.starts_with("head."), "head tensor {}", name);
    all[name] = tensor;
  }
  for (const auto &[name, tensor] : checkpoint.optimizer) {
    GROVE_CHECK(name.starts_with("optimizer.") && name != kTrainerStateTensor, "optimizer tensor {}", name);
    all[name] = tensor;
  }
  const TrainerState &t = checkpoint.trainer;
  Tensor state({kTrainerFields});
  state.data = {static_cast<float>(t.epoch), static_cast<float>(t.best_epoch),
                static_cast<float>(t.best_correct), static_cast<float>(t.bad_epochs)};
  all[kTrainerStateTensor] = std::move(state);
  write_safetensors(path, all);
}

Checkpoint split_checkpoint(Weights weights) {
  Checkpoint checkpoint;
  for (auto &[name, tensor] : weights) {
    if (name.starts_with("head."))
      checkpoint.head[name] = std::move(tensor);
    else if (name.starts_with("optimizer."))
      checkpoint.optimizer[name] = std::move(tensor);
    else
      checkpoint.model[name] = std::move(tensor);
  }
  return checkpoint;
}

Checkpoint read_checkpoint(const std::string &path) {
  Checkpoint checkpoint = split_checkpoint(read_safetensors(path));
  auto it = checkpoint.optimizer.find(kTrainerStateTensor);
  if (it == checkpoint.optimizer.end()) user_error(msg::kCheckpointNoTrainer, path, kTrainerStateTensor);
  const std::vector<float> &v = it->second.data;
  bool ok = it->second.shape == std::vector<int64_t>{kTrainerFields};
  for (size_t i = 0; ok && i < v.size(); ++i) {
    const double min = i == 2 ? -1.0 : 0.0;
    ok = v[i] >= min && v[i] < kExactInFloat && v[i] == std::floor(v[i]);
  }
  if (!ok)
    user_error(msg::kCheckpointTrainer, path, kTrainerStateTensor,
               "epoch, best epoch, best correct, bad epochs");
  checkpoint.trainer = {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                        static_cast<int64_t>(v[3])};
  checkpoint.optimizer.erase(it);
  return checkpoint;
}

}  // namespace grove::training
