#include "training/Trainer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "support/Error.h"
#include "training/Messages.h"
#include "training/Random.h"

namespace grove::training {

namespace msg = training_messages;

namespace {

// The trees of `order[begin, end)` and their labels, as one batch.
struct Batch {
  std::vector<Tree> trees;
  std::vector<std::vector<int32_t>> labels;
};

Batch gather(const LabelledTrees &set, const std::vector<int64_t> &order, size_t begin, size_t end) {
  Batch batch;
  for (size_t i = begin; i < end; ++i) {
    batch.trees.push_back(set.trees[order[i]]);
    batch.labels.push_back(set.labels[order[i]]);
  }
  return batch;
}

void check_labels(const LabelledTrees &set, int64_t classes, const std::string &what) {
  for (int64_t t = 0; t < set.size(); ++t) {
    for (size_t n = 0; n < set.labels[t].size(); ++n) {
      if (set.labels[t][n] >= classes)
        user_error(msg::kLabelTooHigh, what, t + 1, n, set.labels[t][n], classes);
    }
  }
}

}  // namespace

Trainer::Trainer(GradientModel &model, Weights weights, Weights head, const TrainerOptions &options)
    : model_(model),
      weights_(std::move(weights)),
      head_(std::move(head)),
      options_(options),
      optimizer_(options.optimizer, model.embedding()) {
  GROVE_CHECK(options_.batch >= 1 && options_.eval_batch >= 1, "batch {}, eval batch {}", options_.batch,
              options_.eval_batch);
  classes_ = head_.at(kHeadBias).size();
  model_.set_weights(weights_);
}

ParamRefs Trainer::params() {
  ParamRefs refs;
  for (auto &[name, tensor] : weights_) refs[name] = &tensor;
  for (auto &[name, tensor] : head_) refs[name] = &tensor;
  return refs;
}

void Trainer::resume(const Checkpoint &checkpoint, const std::string &file) {
  for (const ParamInfo &p : model_.params()) {
    auto it = checkpoint.model.find(p.name);
    if (it == checkpoint.model.end() || it->second.shape != p.shape)
      user_error(msg::kResumeParam, file, p.name, shape_string(p.shape));
  }
  if (checkpoint.model.size() != model_.params().size()) {
    for (const auto &[name, tensor] : checkpoint.model) {
      if (std::none_of(model_.params().begin(), model_.params().end(),
                       [&](const ParamInfo &p) { return p.name == name; }))
        user_error(msg::kCheckpointUnknown, file, name);
    }
  }
  const int64_t width = head_.at(kHeadWeight).shape[1];
  if (check_head(checkpoint.head, width, file) != classes_)
    user_error(msg::kHeadClasses, file, checkpoint.head.at(kHeadBias).size(), classes_);
  weights_ = checkpoint.model;
  head_ = checkpoint.head;
  optimizer_.load_state(checkpoint.optimizer, params(), file);
  state_ = checkpoint.trainer;
  model_.set_weights(weights_);
}

Checkpoint Trainer::checkpoint() const { return Checkpoint{weights_, head_, optimizer_.state(), state_}; }

double Trainer::train_epoch(const LabelledTrees &train, const TrainerCallbacks &callbacks,
                            PhaseSeconds &phases) {
  const std::vector<int64_t> order =
      shuffled_order(train.size(), options_.seed, static_cast<uint64_t>(state_.epoch + 1));
  const HeadOptions head_options{options_.loss, options_.dropout, options_.seed, options_.average,
                                 model_.threads()};
  const ParamRefs refs = params();
  double loss_sum = 0.0;
  int64_t labelled = 0;
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(options_.batch)) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(options_.batch));
    auto t = std::chrono::steady_clock::now();
    // The seconds since the last lap, added to `phase`.
    auto lap = [&t](double &phase) {
      const auto now = std::chrono::steady_clock::now();
      phase += std::chrono::duration<double>(now - t).count();
      t = now;
    };
    Batch batch = gather(train, order, begin, end);
    lap(phases.gather);
    const NodeStates &states = model_.forward(batch.trees);
    lap(phases.forward);
    // The step this batch's update will be: the dropout mask's key.
    const auto step = static_cast<uint64_t>(optimizer_.steps() + 1);
    HeadResult head = head_loss(states, batch.trees, batch.labels, head_, head_options, step);
    lap(phases.head);
    Gradients grads = model_.backward(head.d_rows);
    lap(phases.backward);
    grads.dense[kHeadWeight] = std::move(head.d_weight);
    grads.dense[kHeadBias] = std::move(head.d_bias);
    optimizer_.step(refs, grads, model_.threads());
    model_.recycle(std::move(grads));
    lap(phases.update);
    model_.set_weights(weights_);
    lap(phases.set_weights);
    loss_sum += head.sum;
    labelled += head.labelled;
    if (callbacks.step) {
      callbacks.step(optimizer_.steps(), std::vector<int64_t>(order.begin() + begin, order.begin() + end),
                     head.loss);
    }
    if (callbacks.batch) callbacks.batch(static_cast<int64_t>(end), train.size());
  }
  return labelled == 0 ? 0.0 : loss_sum / static_cast<double>(labelled);
}

std::vector<EpochReport> Trainer::train(const LabelledTrees &train, const LabelledTrees &dev,
                                        const TrainerCallbacks &callbacks) {
  if (train.size() == 0) user_error(msg::kNoTrees, "the training set");
  check_labels(train, classes_, "the training set");
  check_labels(dev, classes_, "the dev set");
  std::vector<EpochReport> reports;
  while (state_.epoch < options_.epochs) {
    if (options_.patience > 0 && state_.bad_epochs >= options_.patience) break;
    EpochReport report;
    const auto start = std::chrono::steady_clock::now();
    report.train_loss = train_epoch(train, callbacks, report.phases);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.sentences_per_s = seconds > 0.0 ? static_cast<double>(train.size()) / seconds : 0.0;
    report.epoch = ++state_.epoch;
    if (dev.size() > 0) {
      report.dev = evaluate(dev);
      if (report.dev.roots_correct > state_.best_correct) {
        state_.best_correct = report.dev.roots_correct;
        state_.best_epoch = state_.epoch;
        state_.bad_epochs = 0;
        report.best = true;
      } else {
        ++state_.bad_epochs;
      }
    }
    if (!options_.out.empty()) {
      const Checkpoint now = checkpoint();
      const std::filesystem::path dir(options_.out);
      if (report.best) write_checkpoint((dir / "best.safetensors").string(), now, options_.inputs);
      write_checkpoint((dir / "last.safetensors").string(), now, options_.inputs);
    }
    if (callbacks.epoch) callbacks.epoch(report);
    reports.push_back(report);
  }
  return reports;
}

Accuracy Trainer::evaluate(const LabelledTrees &set) {
  Accuracy accuracy;
  std::vector<float> probabilities;
  for (int64_t begin = 0; begin < set.size(); begin += options_.eval_batch) {
    const int64_t end = std::min(set.size(), begin + options_.eval_batch);
    std::span<const Tree> trees(set.trees.data() + begin, static_cast<size_t>(end - begin));
    const NodeStates &states = model_.forward(trees);
    std::vector<int32_t> predicted = head_predict(states, head_, &probabilities);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t offset = states.tree_offset[t - begin];
      const Tree &tree = set.trees[t];
      const std::vector<int32_t> &labels = set.labels[t];
      for (int32_t n = 0; n < tree.size(); ++n) {
        if (labels[n] < 0) continue;
        ++accuracy.nodes;
        accuracy.nodes_correct += predicted[offset + n] == labels[n];
      }
      const int32_t label = labels[tree.root];
      if (label < 0) continue;
      ++accuracy.roots;
      accuracy.roots_correct += predicted[offset + tree.root] == label;
      if (classes_ == 5 && label != 2) {
        const float *p = probabilities.data() + (offset + tree.root) * classes_;
        const bool positive = p[3] + p[4] > p[0] + p[1];
        ++accuracy.binary;
        accuracy.binary_correct += positive == (label > 2);
      }
    }
  }
  return accuracy;
}

}  // namespace grove::training
