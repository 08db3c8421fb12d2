#include "tools/TrainCommand.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "backends/cpu/CompiledModel.h"
#include "backends/cpu/TrainableModel.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Safetensors.h"
#include "tools/Messages.h"
#include "tools/Progress.h"
#include "training/Checkpoint.h"
#include "training/Glove.h"
#include "training/Head.h"
#include "training/Trainer.h"

namespace grove::tool {

namespace msg = tool_messages;
using training::Checkpoint;
using training::GradientModel;

namespace {

// SST's five classes: 0 very negative ... 4 very positive.
constexpr int32_t kClasses = 5;

void check_options(const TrainCommand &c) {
  if (c.epochs < 1) user_error(msg::kTrainPositive, "--epochs", c.epochs);
  if (c.batch < 1) user_error(msg::kTrainPositive, "--batch", c.batch);
  if (c.patience < 0) user_error(msg::kTrainNonNegative, "--patience", c.patience);
  if (c.threads < 0) user_error(msg::kTrainNonNegative, "--threads", c.threads);
  auto non_negative = [](const char *name, double value) {
    if (!std::isfinite(value) || value < 0.0) user_error(msg::kTrainRate, name, value);
  };
  non_negative("--lr", c.lr);
  non_negative("--emb-lr", c.emb_lr);
  non_negative("--weight-decay", c.weight_decay);
  non_negative("--clip", c.clip);
  if (!std::isfinite(c.dropout) || c.dropout < 0.0 || c.dropout >= 1.0)
    user_error(msg::kTrainDropout, c.dropout);
  if (c.optimizer != "adagrad" && c.optimizer != "adam" && c.optimizer != "sgd")
    user_error(msg::kTrainOptimizer, c.optimizer);
  if (c.emb_optimizer != "sgd" && c.emb_optimizer != "same")
    user_error(msg::kTrainEmbOptimizer, c.emb_optimizer);
  if (c.loss != "all" && c.loss != "root") user_error(msg::kTrainLoss, c.loss);
  if (c.average != "nodes" && c.average != "trees") user_error(msg::kTrainAverage, c.average);
  if (!c.init.empty() && !c.resume.empty()) user_error(msg::kTrainInitAndResume);
  if (!c.sizes.empty() && (!c.init.empty() || !c.resume.empty()))
    user_error(msg::kTrainSizesWithWeights, c.sizes, c.init.empty() ? c.resume : c.init);
  if (!c.embeddings.empty() && c.vocab.empty()) user_error(msg::kTrainEmbeddingsNeedVocab);
  if (!c.embeddings.empty() && !c.resume.empty()) user_error(msg::kTrainEmbeddingsAndResume);
}

// The vocabulary, with an `<unk>` line appended when the file has none, so that dev words the
// training set never saw have an id (its embedding row is trained only where the training trees
// have unknown words, and is otherwise left at its initial value).
Vocab vocabulary(const std::string &path) {
  Vocab vocab = Vocab::load(path);
  if (vocab.has_unknown()) return vocab;
  std::string text;
  for (int32_t id = 0; id < vocab.size(); ++id) text += vocab.token(id) + "\n";
  text += Vocab::kUnknownToken;
  return Vocab::parse(text, path);
}

int64_t max_token(const LabelledTrees &set) {
  int64_t top = -1;
  for (const Tree &t : set.trees)
    for (int32_t token : t.token) top = std::max<int64_t>(top, token);
  return top;
}

// The output directory (created) and the checkpoint paths in it, checked against every input.
void prepare_out(const TrainCommand &c) {
  std::error_code ec;
  std::filesystem::create_directories(c.out, ec);
  if (!std::filesystem::is_directory(c.out))
    user_error(msg::kTrainOutNotDir, c.out, ec ? ec.message() : "it is a file");
  for (const char *name : {"best.safetensors", "last.safetensors"}) {
    const std::string path = (std::filesystem::path(c.out) / name).string();
    for (const std::string &input : {c.model, c.trees, c.dev, c.vocab, c.init, c.embeddings, c.resume}) {
      if (!input.empty() && same_file(path, input)) user_error(msg::kTrainOutIsInput, path, input);
    }
  }
}

std::string percent(double ratio) { return fmt::format("{:.2f}%", 100.0 * ratio); }

}  // namespace

int train(const TrainCommand &c) {
  check_options(c);
  prepare_out(c);
  ilir::Program program = dsl::parse_model_file(c.model);

  // 1. The labelled trees.
  std::unique_ptr<Vocab> vocab;
  if (!c.vocab.empty()) vocab = std::make_unique<Vocab>(vocabulary(c.vocab));
  LabelledTrees train = read_labelled_ptb_trees(c.trees, vocab.get(), kClasses);
  LabelledTrees dev = read_labelled_ptb_trees(c.dev, vocab.get(), kClasses);

  // 2. The initial weights: a checkpoint to resume, --init, or seeded random ones.
  Checkpoint start;
  std::string weights_file;
  if (!c.resume.empty()) {
    start = training::read_checkpoint(c.resume);
    weights_file = c.resume;
  } else if (!c.init.empty()) {
    start = training::split_checkpoint(read_safetensors(c.init));
    start.optimizer.clear();
    weights_file = c.init;
  } else {
    std::map<std::string, int64_t> sizes = parse_sizes(c.sizes);
    const bool has_v =
        std::find(program.size_vars.begin(), program.size_vars.end(), "V") != program.size_vars.end();
    if (has_v) {
      // V: the vocabulary's size, or without one the largest token id + 1.
      const int64_t v = vocab ? vocab->size() : std::max(max_token(train), max_token(dev)) + 1;
      auto given = sizes.find("V");
      if (given != sizes.end() && given->second != v)
        user_error(msg::kTrainVocabSize, given->second,
                   vocab ? "the vocabulary's size (with <unk>)" : "the trees' largest token id + 1", v);
      sizes["V"] = v;
    }
    check_sizes(program, sizes, true);
    start.model = random_weights(program, sizes, c.seed);
    weights_file = "the random weights";
  }

  // 3. The compiled training program.
  cpu::CompileOptions options;
  options.target = c.target;
  options.weights_file = weights_file;
  options.schedule = c.schedule;
  if (c.threads > 0)
    options.schedule += fmt::format("{}threads={}", c.schedule.empty() ? "" : ",", c.threads);
  std::unique_ptr<cpu::TrainableModel> compiled = cpu::TrainableModel::compile(program, start.model, options);
  const cpu::TrainableModel &stats_of = *compiled;
  std::unique_ptr<GradientModel> model = std::move(compiled);

  // 4. GloVe vectors into the embedding.
  if (!c.embeddings.empty()) {
    if (model->embedding().empty()) user_error(msg::kTrainNoEmbedding, program.name);
    training::GloveStats stats =
        training::load_glove(c.embeddings, *vocab, c.seed, start.model.at(model->embedding()));
    std::fprintf(stderr, "grove: %s: %lld of %lld vocabulary words have a vector\n", c.embeddings.c_str(),
                 static_cast<long long>(stats.found), static_cast<long long>(vocab->size()));
  }

  // 5. The head: from the checkpoint or --init if it has one, else seeded; its width is the states'.
  model->set_weights(start.model);
  const int64_t width = model->forward(std::span<const Tree>(train.trees.data(), 1)).width;
  Weights head = start.head.empty() ? training::init_head(width, kClasses, c.seed) : start.head;
  if (training::check_head(head, width, weights_file) != kClasses)
    user_error(msg::kTrainHeadClasses, weights_file, head.at(training::kHeadBias).size(), kClasses);

  training::TrainerOptions t;
  t.epochs = c.epochs;
  t.batch = c.batch;
  t.patience = c.patience;
  t.seed = c.seed;
  t.loss = c.loss == "root" ? training::LossNodes::Root : training::LossNodes::All;
  t.dropout = c.dropout;
  t.average = c.average == "trees" ? training::Average::Trees : training::Average::Nodes;
  t.optimizer.kind = c.optimizer == "sgd"    ? training::OptimizerKind::Sgd
                     : c.optimizer == "adam" ? training::OptimizerKind::Adam
                                             : training::OptimizerKind::Adagrad;
  t.optimizer.lr = !c.lr_given && t.optimizer.kind == training::OptimizerKind::Adam ? 0.001 : c.lr;
  t.optimizer.emb_lr = c.emb_lr;
  t.optimizer.embedding_same = c.emb_optimizer == "same";
  t.optimizer.weight_decay = c.weight_decay;
  t.optimizer.clip = c.clip;
  t.out = c.out;
  t.inputs = {c.model, c.trees, c.dev, c.vocab, c.init, c.embeddings, c.resume};
  // A copy of the weights: resume() below reads `start` again.
  training::Trainer trainer(*model, start.model, std::move(head), t);
  if (!c.resume.empty()) trainer.resume(start, c.resume);

  // 6. The epochs: a progress line on a terminal, one line per epoch on standard output.
  const bool progress = progress_wanted(c.quiet);
  std::unique_ptr<Progress> line;
  training::TrainerCallbacks callbacks;
  // --stats: the model's figures when the epoch's steps start and end (evaluating the dev set runs
  // forwards in between).
  using Stats = cpu::TrainableModel::Stats;
  Stats steps_start = stats_of.stats(), steps_end;
  callbacks.batch = [&](int64_t done, int64_t total) {
    if (!line) {
      line = std::make_unique<Progress>(fmt::format("train epoch {}", trainer.state().epoch + 1), "trees",
                                        progress);
      line->set_total(total);
    }
    line->update(done);
    if (done == total) steps_end = stats_of.stats();
  };
  callbacks.epoch = [&](const training::EpochReport &r) {
    line.reset();
    if (c.stats) {
      // The model's own figures over the epoch's steps: from the end of the last evaluation to the
      // end of the last batch.
      const training::PhaseSeconds &p = r.phases;
      auto seconds = [&](double cpu::TrainableModel::Stats::*ms) {
        return (steps_end.*ms - steps_start.*ms) / 1e3;
      };
      std::fprintf(stderr,
                   "grove: epoch %lld took %.2f s: forward %.2f s (compiled code %.2f s), head %.2f s, "
                   "backward %.2f s (compiled code %.2f s), update %.2f s, set_weights %.2f s, batching %.2f "
                   "s; the inspector %.2f s of the forward and backward\n",
                   static_cast<long long>(r.epoch), p.total(), p.forward, seconds(&Stats::forward_ms), p.head,
                   p.backward, seconds(&Stats::backward_ms), p.update, p.set_weights, p.gather,
                   seconds(&Stats::inspector_ms));
      steps_start = stats_of.stats();
    }
    std::printf("epoch %lld  train loss %.4f  dev root %s  binary %s  all nodes %s  %.0f sentences/s%s\n",
                static_cast<long long>(r.epoch), r.train_loss, percent(r.dev.root()).c_str(),
                percent(r.dev.binary_root()).c_str(), percent(r.dev.all_nodes()).c_str(), r.sentences_per_s,
                r.best ? "  (best)" : "");
    std::fflush(stdout);
  };
  // The per-step log (--step-log): the batch's tree indices (0-based lines of --trees) and its loss.
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> step_log(nullptr, std::fclose);
  if (!c.step_log.empty()) {
    for (const std::string &input : t.inputs) {
      if (!input.empty() && same_file(c.step_log, input))
        user_error(msg::kTrainStepLogIsInput, c.step_log, input);
    }
    step_log.reset(std::fopen(c.step_log.c_str(), "w"));
    if (!step_log) user_error(msg::kTrainStepLog, c.step_log, std::strerror(errno));
    callbacks.step = [&](int64_t step, const std::vector<int64_t> &trees, double loss) {
      std::string text = fmt::format("{{\"step\": {}, \"epoch\": {}, \"trees\": [{}], \"loss\": {:.17g}}}\n",
                                     step, trainer.state().epoch + 1, fmt::join(trees, ", "), loss);
      std::fputs(text.c_str(), step_log.get());
    };
  }
  std::vector<training::EpochReport> reports = trainer.train(train, dev, callbacks);
  if (reports.empty())
    std::fprintf(stderr, "grove: %s\n", fmt::format(msg::kTrainNothingLeft, trainer.state().epoch).c_str());
  return 0;
}

}  // namespace grove::tool
