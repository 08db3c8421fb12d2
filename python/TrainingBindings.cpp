// Training from Python (python/TrainingBindings.h). Both classes own a cpu::TrainableModel compiled
// with the GIL released, and the weights it reads in place (GradientModel::set_weights). Every call
// into compiled code releases the GIL and holds the object's mutex, so Python threads may share an
// object (their calls run one at a time). Results are copied out into NumPy arrays.
//
// grove.Trainer keeps the state of training::Trainer itself (the weights, the head, the optimizer and
// the trainer state), so that step() can run one batch as Trainer's epoch loop does (forward, head
// loss with dropout keyed by the step, backward, optimizer step, set_weights) and train() can run
// whole epochs through training::Trainer: that trainer is made for the call, resumed from this state
// as from a checkpoint, and its state is taken back when it returns. Both paths compute the same
// numbers as `grove train` for the same options, inputs and seed.

#include "python/TrainingBindings.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/cpu/TrainableModel.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "python/Inputs.h"
#include "python/Messages.h"
#include "python/TrainingMessages.h"
#include "support/Error.h"
#include "support/Safetensors.h"
#include "training/Checkpoint.h"
#include "training/Head.h"
#include "training/Optimizer.h"
#include "training/Random.h"
#include "training/Trainer.h"

namespace grove::python {

namespace py = pybind11;
namespace msg = python_messages;

namespace {

bool is_path(py::handle value) { return py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"); }

std::string path_string(py::handle value) {
  return py::str(py::module_::import("os").attr("fspath")(value)).cast<std::string>();
}

// A NumPy array over the tensor's own buffer; the array's base capsule owns the tensor.
py::array to_numpy(Tensor &&tensor) {
  auto owned = std::make_unique<Tensor>(std::move(tensor));
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  float *data = owned->data.data();
  py::capsule base(owned.get(), [](void *p) { delete static_cast<Tensor *>(p); });
  owned.release();
  return py::array(py::dtype::of<float>(), shape, data, base);
}

py::dict to_dict(Weights &&weights) {
  py::dict d;
  for (auto &[name, tensor] : weights) d[py::str(name)] = to_numpy(std::move(tensor));
  return d;
}

py::array_t<int32_t> to_int_array(const std::vector<int32_t> &values) {
  py::array_t<int32_t> a(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), a.mutable_data());
  return a;
}

struct LoadedWeights {
  Weights weights;
  std::string file;  // names them in messages
};

// A safetensors path or a dict of arrays.
LoadedWeights load_weights(py::handle weights) {
  if (is_path(weights)) {
    std::string path = path_string(weights);
    return {read_safetensors(path), path};
  }
  if (py::isinstance<py::dict>(weights)) return {to_weights(weights), "weights"};
  throw py::type_error(fmt::format(msg::kWeightsType, type_name(weights)));
}

// The model's parameters of `weights` (a checkpoint also holds head.* and optimizer.*).
Weights only_params(Weights weights, const std::vector<training::ParamInfo> &params) {
  Weights out;
  for (const training::ParamInfo &p : params) {
    auto it = weights.find(p.name);
    if (it != weights.end()) out.emplace(p.name, std::move(it->second));
  }
  return out;
}

cpu::CompileOptions compile_options(const std::string &weights_file,
                                    const std::optional<std::string> &schedule,
                                    std::optional<int64_t> threads,
                                    const std::optional<std::string> &target) {
  cpu::CompileOptions options;
  options.weights_file = weights_file;
  if (target) options.target = *target;
  if (schedule) options.schedule = *schedule;
  if (threads) {
    if (*threads < 1) user_error(msg::kThreads, *threads);
    options.schedule += fmt::format("{}threads={}", options.schedule.empty() ? "" : ",", *threads);
  }
  return options;
}

py::dict params_dict(const std::vector<training::ParamInfo> &params) {
  py::dict d;
  for (const training::ParamInfo &p : params) d[py::str(p.name)] = py::tuple(py::cast(p.shape));
  return d;
}

// ---- grove.TrainableModel ----------------------------------------------------------------------

class TrainableModelBinding {
 public:
  TrainableModelBinding(const std::string &model_path, py::handle weights, py::handle sizes, uint64_t seed,
                        std::optional<std::string> schedule, std::optional<int64_t> threads,
                        std::optional<std::string> target, py::handle vocab) {
    program_ = dsl::parse_model_file(model_path);
    std::map<std::string, int64_t> size_values = to_sizes(sizes);
    LoadedWeights w;
    if (weights.is_none()) {
      if (size_values.empty()) user_error(msg::kTrainNeedWeightsOrSizes, model_path);
      check_sizes(program_, size_values, true);
      w = {random_weights(program_, size_values, seed), "the random weights"};
    } else {
      w = load_weights(weights);
      std::map<std::string, int64_t> bound = bind_weights(program_, w.weights, w.file);
      if (!size_values.empty()) {
        check_sizes(program_, size_values, false);
        for (const auto &[name, value] : size_values)
          if (bound.at(name) != value) user_error(msg::kSizeDisagrees, name, value, name, bound.at(name));
      }
    }
    vocab_ = to_vocab(vocab);
    file_ = w.file;
    cpu::CompileOptions options = compile_options(w.file, schedule, threads, target);
    // The model reads its weights in place: they live in weights_ from here on.
    weights_ = std::move(w.weights);
    for (auto it = weights_.begin(); it != weights_.end();)
      it = is_training_state(it->first) ? weights_.erase(it) : std::next(it);
    py::gil_scoped_release release;
    model_ = cpu::TrainableModel::compile(program_, weights_, options);
  }

  py::dict params() const { return params_dict(model_->params()); }
  const std::string &embedding() const { return model_->embedding(); }
  const std::string &name() const { return program_.name; }

  void set_weights(py::handle weights) {
    LoadedWeights w = load_weights(weights);
    bind_weights(program_, w.weights, w.file);  // names every missing, extra or misshapen tensor
    Weights next = only_params(std::move(w.weights), model_->params());
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    model_->set_weights(next);
    weights_ = std::move(next);  // the map's nodes move: the tensors stay where the model reads them
  }

  py::dict weights() {
    Weights copy;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      copy = weights_;
    }
    return to_dict(std::move(copy));
  }

  py::array forward(py::handle trees, py::handle vocab) {
    std::shared_ptr<const InputVocab> v = vocab.is_none() ? vocab_ : to_vocab(vocab);
    std::vector<Tree> inputs = to_trees(trees, v.get());
    Tensor rows;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      has_forward_ = false;
      const training::NodeStates &states = model_->forward(inputs);
      rows.shape = {states.nodes(), states.width};
      rows.data = states.rows;
      tree_offset_ = states.tree_offset;
      width_ = states.width;
      has_forward_ = true;
    }
    return to_numpy(std::move(rows));
  }

  // (dense gradients by name, the embedding's rows, their gradients [rows, D]).
  py::tuple backward(py::handle d_rows) {
    py::array a = py::array::ensure(d_rows);
    if (!a || a.dtype().kind() == 'O') {
      PyErr_Clear();
      throw py::type_error(fmt::format(msg::kDRowsType, width_, type_name(d_rows)));
    }
    if (a.dtype().kind() != 'f') user_error(msg::kDRowsDtype, py::str(a.dtype()).cast<std::string>());
    auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    if (!f) throw py::error_already_set();
    std::vector<int64_t> shape(f.shape(), f.shape() + f.ndim());
    training::Gradients grads;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      if (!has_forward_) user_error(msg::kBackwardFirst);
      const int64_t nodes = tree_offset_.back();
      if (shape != std::vector<int64_t>{nodes, width_})
        user_error(msg::kDRowsShape, nodes, width_, shape_string(shape));
      grads = model_->backward(std::span<const float>(f.data(), static_cast<size_t>(f.size())));
    }
    py::array rows = to_int_array(grads.embedding_rows);
    return py::make_tuple(to_dict(std::move(grads.dense)), rows, to_numpy(std::move(grads.embedding_grad)));
  }

  py::array_t<int64_t> tree_offset() {
    std::vector<int64_t> offsets;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      offsets = tree_offset_;
    }
    py::array_t<int64_t> a(static_cast<py::ssize_t>(offsets.size()));
    std::copy(offsets.begin(), offsets.end(), a.mutable_data());
    return a;
  }

  py::dict stats() {
    cpu::TrainableModel::Stats s;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      s = model_->stats();
    }
    py::dict d;
    d["forwards"] = s.forwards;
    d["backwards"] = s.backwards;
    d["inspector_ms"] = s.inspector_ms;
    d["forward_ms"] = s.forward_ms;
    d["backward_ms"] = s.backward_ms;
    d["runtime_ms"] = s.runtime_ms;
    d["set_weights_ms"] = s.set_weights_ms;
    return d;
  }

  std::string backward_ilir() const { return model_->backward_ilir(); }
  std::string backward_plan() const { return model_->backward_plan(); }

 private:
  ilir::Program program_;
  std::string file_;
  Weights weights_;
  std::shared_ptr<const InputVocab> vocab_;
  std::unique_ptr<cpu::TrainableModel> model_;
  std::mutex mutex_;
  bool has_forward_ = false;
  std::vector<int64_t> tree_offset_{0};
  int64_t width_ = 0;
};

// ---- grove.LabelledTrees -----------------------------------------------------------------------

struct LabelledSet {
  LabelledTrees set;
  int32_t classes = 5;

  int64_t max_token() const {
    int64_t top = -1;
    for (const Tree &t : set.trees)
      for (int32_t token : t.token) top = std::max<int64_t>(top, token);
    return top;
  }

  LabelledSet select(const std::vector<int64_t> &indices) const {
    LabelledSet out{{}, classes};
    for (int64_t i : indices) {
      out.set.trees.push_back(set.trees[static_cast<size_t>(i)]);
      out.set.labels.push_back(set.labels[static_cast<size_t>(i)]);
    }
    return out;
  }

  // A slice, a sequence of indices (negative from the end) or one index.
  LabelledSet getitem(py::handle key) const {
    const int64_t n = set.size();
    std::vector<int64_t> indices;
    if (py::isinstance<py::slice>(key)) {
      py::ssize_t start, stop, step, length;
      if (!py::reinterpret_borrow<py::slice>(key).compute(static_cast<py::ssize_t>(n), &start, &stop, &step,
                                                          &length))
        throw py::error_already_set();
      for (py::ssize_t i = 0; i < length; ++i) indices.push_back(start + i * step);
      return select(indices);
    }
    auto index = [&](py::handle v) {
      int64_t i = py::cast<int64_t>(v);
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw py::index_error(fmt::format("LabelledTrees index {} out of range", i));
      return i;
    };
    if (PyIndex_Check(key.ptr()) && !py::isinstance<py::array>(key)) return select({index(key)});
    for (py::handle v : py::reinterpret_borrow<py::iterable>(key)) indices.push_back(index(v));
    return select(indices);
  }
};

// The vocabulary of `grove train`: the file's, with an `<unk>` line appended when it has none, so that
// words the file lacks have an id (tools/TrainCommand.cpp).
std::shared_ptr<const Vocab> train_vocab(py::handle vocab) {
  if (vocab.is_none()) return nullptr;
  if (!is_path(vocab)) throw py::type_error(fmt::format(msg::kVocabType, type_name(vocab)));
  const std::string path = path_string(vocab);
  Vocab v = Vocab::load(path);
  if (v.has_unknown()) return std::make_shared<const Vocab>(std::move(v));
  std::string text;
  for (int32_t id = 0; id < v.size(); ++id) text += v.token(id) + "\n";
  text += Vocab::kUnknownToken;
  return std::make_shared<const Vocab>(Vocab::parse(text, path));
}

// A labelled PTB file, a list of labelled PTB strings, or a LabelledTrees (whose classes must agree).
LabelledSet read_labelled(py::handle source, const Vocab *vocab, int32_t classes, const std::string &what) {
  if (py::isinstance<LabelledSet>(source)) {
    const LabelledSet &s = source.cast<const LabelledSet &>();
    if (s.classes != classes) user_error(msg::kLabelledClasses, what, s.classes, classes, classes);
    return s;
  }
  LabelledSet out{{}, classes};
  if (is_path(source)) {
    out.set = read_labelled_ptb_trees(path_string(source), vocab, classes);
    return out;
  }
  if (!py::isinstance<py::list>(source) && !py::isinstance<py::tuple>(source))
    throw py::type_error(fmt::format(msg::kLabelledType, what, type_name(source)));
  int64_t number = 0;
  for (py::handle line : source) {
    ++number;
    if (!py::isinstance<py::str>(line))
      throw py::type_error(fmt::format(msg::kLabelledLineType, what, number, type_name(line)));
    LabelledTree t = parse_labelled_ptb_tree(line.cast<std::string>(), vocab, classes, what, number);
    out.set.trees.push_back(std::move(t.tree));
    out.set.labels.push_back(std::move(t.labels));
  }
  return out;
}

int32_t check_classes(int64_t classes) {
  if (classes < 2 || classes > (int64_t(1) << 24)) user_error(msg::kTrainClasses, classes);
  return static_cast<int32_t>(classes);
}

LabelledSet read_labelled_trees(py::handle source, py::handle vocab, int64_t classes) {
  std::shared_ptr<const Vocab> v = train_vocab(vocab);
  return read_labelled(source, v.get(), check_classes(classes), "trees");
}

// ---- grove.Trainer -----------------------------------------------------------------------------

struct TrainerArgs {
  int64_t epochs = 10, batch = 25, patience = 0, eval_batch = 256;
  std::string optimizer = "adagrad", emb_optimizer = "sgd", loss = "all", average = "nodes";
  std::optional<double> lr;
  double emb_lr = 0.1, weight_decay = 1e-4, dropout = 0.5, clip = 0.0;
  uint64_t seed = 1;
  std::string out;
};

training::TrainerOptions trainer_options(const TrainerArgs &a) {
  if (a.epochs < 1) user_error(msg::kTrainPositive, "epochs", a.epochs);
  if (a.batch < 1) user_error(msg::kTrainPositive, "batch", a.batch);
  if (a.eval_batch < 1) user_error(msg::kTrainPositive, "eval_batch", a.eval_batch);
  if (a.patience < 0) user_error(msg::kTrainNonNegative, "patience", a.patience);
  auto rate = [](const char *name, double value) {
    if (!std::isfinite(value) || value < 0.0) user_error(msg::kTrainRate, name, value);
  };
  if (a.lr) rate("lr", *a.lr);
  rate("emb_lr", a.emb_lr);
  rate("weight_decay", a.weight_decay);
  rate("clip", a.clip);
  if (!std::isfinite(a.dropout) || a.dropout < 0.0 || a.dropout >= 1.0)
    user_error(msg::kTrainDropout, a.dropout);
  training::TrainerOptions t;
  if (a.optimizer == "sgd")
    t.optimizer.kind = training::OptimizerKind::Sgd;
  else if (a.optimizer == "adam")
    t.optimizer.kind = training::OptimizerKind::Adam;
  else if (a.optimizer == "adagrad")
    t.optimizer.kind = training::OptimizerKind::Adagrad;
  else
    user_error(msg::kTrainChoice, "optimizer", "'adagrad', 'adam' or 'sgd'", a.optimizer);
  if (a.emb_optimizer != "sgd" && a.emb_optimizer != "same")
    user_error(msg::kTrainChoice, "emb_optimizer",
               "'sgd' (plain SGD at emb_lr, the recipe) or 'same' (the optimizer's rule)", a.emb_optimizer);
  if (a.loss != "all" && a.loss != "root")
    user_error(msg::kTrainChoice, "loss", "'all' (every labelled node) or 'root'", a.loss);
  if (a.average != "nodes" && a.average != "trees")
    user_error(msg::kTrainChoice, "average", "'nodes' (the mean over labelled nodes) or 'trees'", a.average);
  t.epochs = a.epochs;
  t.batch = a.batch;
  t.patience = a.patience;
  t.eval_batch = a.eval_batch;
  t.seed = a.seed;
  t.loss = a.loss == "root" ? training::LossNodes::Root : training::LossNodes::All;
  t.average = a.average == "trees" ? training::Average::Trees : training::Average::Nodes;
  t.dropout = a.dropout;
  // As `grove train`: Adam without an lr takes PyTorch's default 0.001.
  t.optimizer.lr = a.lr ? *a.lr : t.optimizer.kind == training::OptimizerKind::Adam ? 0.001 : 0.05;
  t.optimizer.emb_lr = a.emb_lr;
  t.optimizer.embedding_same = a.emb_optimizer == "same";
  t.optimizer.weight_decay = a.weight_decay;
  t.optimizer.clip = a.clip;
  t.out = a.out;
  return t;
}

py::dict report_dict(const training::EpochReport &r) {
  py::dict d;
  d["epoch"] = r.epoch;
  d["train_loss"] = r.train_loss;
  d["dev_root"] = r.dev.root();
  d["dev_binary"] = r.dev.binary_root();
  d["dev_all_nodes"] = r.dev.all_nodes();
  d["sentences_per_s"] = r.sentences_per_s;
  d["best"] = r.best;
  return d;
}

py::dict accuracy_dict(const training::Accuracy &a) {
  py::dict d;
  d["root"] = a.root();
  d["binary"] = a.binary_root();
  d["all_nodes"] = a.all_nodes();
  d["roots"] = a.roots;
  d["roots_correct"] = a.roots_correct;
  d["binary_roots"] = a.binary;
  d["binary_correct"] = a.binary_correct;
  d["nodes"] = a.nodes;
  d["nodes_correct"] = a.nodes_correct;
  return d;
}

constexpr char kTrainerName[] = "the Python trainer";

class TrainerBinding {
 public:
  TrainerBinding(const std::string &model_path, py::handle init, py::handle sizes, py::handle vocab,
                 int64_t classes, py::handle trees, const TrainerArgs &args,
                 std::optional<std::string> schedule, std::optional<int64_t> threads,
                 std::optional<std::string> target) {
    options_ = trainer_options(args);
    classes_ = check_classes(classes);
    program_ = dsl::parse_model_file(model_path);
    vocab_ = train_vocab(vocab);
    if (!vocab.is_none()) inputs_.push_back(path_string(vocab));
    inputs_.push_back(model_path);

    // The initial weights: `init` (which may hold a head), or seeded random ones.
    training::Checkpoint start;
    std::map<std::string, int64_t> size_values = to_sizes(sizes);
    if (!init.is_none()) {
      LoadedWeights w = load_weights(init);
      if (!size_values.empty()) user_error(msg::kTrainSizesWithInit, w.file);
      if (is_path(init)) inputs_.push_back(w.file);
      file_ = w.file;
      start = training::split_checkpoint(std::move(w.weights));
      bind_weights(program_, start.model, file_);
    } else {
      const bool has_v =
          std::find(program_.size_vars.begin(), program_.size_vars.end(), "V") != program_.size_vars.end();
      if (has_v) {
        std::optional<int64_t> v;
        std::string from;
        if (vocab_) {
          v = vocab_->size();
          from = "the vocabulary's size (with <unk>)";
        } else if (!trees.is_none()) {
          int64_t top = -1;
          for (py::handle s : trees) top = std::max(top, s.cast<const LabelledSet &>().max_token());
          v = top + 1;
          from = "the trees' largest token id + 1";
        }
        auto given = size_values.find("V");
        if (v && given != size_values.end() && given->second != *v)
          user_error(msg::kTrainVocabSize, given->second, from, *v);
        if (!v && given == size_values.end()) user_error(msg::kTrainSizeV, model_path);
        if (v) size_values["V"] = *v;
      }
      check_sizes(program_, size_values, true);
      start.model = random_weights(program_, size_values, options_.seed);
      file_ = "the random weights";
    }
    options_.inputs = inputs_;
    cpu::CompileOptions compile = compile_options(file_, schedule, threads, target);
    weights_ = std::move(start.model);
    {
      py::gil_scoped_release release;
      model_ = cpu::TrainableModel::compile(program_, weights_, compile);
      // The head's width is the states': a forward of one leaf says it.
      const std::vector<int32_t> parent{-1};
      const Tree leaf = tree_from_parents(parent, {0});
      width_ = model_->forward(std::span<const Tree>(&leaf, 1)).width;
    }
    head_ = start.head.empty() ? training::init_head(width_, classes_, options_.seed) : std::move(start.head);
    if (training::check_head(head_, width_, file_) != classes_)
      user_error(msg::kTrainHeadClasses, file_, head_.at(training::kHeadBias).size(), classes_);
    optimizer_ = std::make_unique<training::Optimizer>(options_.optimizer, model_->embedding());
  }

  LabelledSet read(py::handle source, const std::string &what) const {
    return read_labelled(source, vocab_.get(), classes_, what);
  }

  // One optimizer step on `batch` (as one step of Trainer's epoch loop); the batch's loss.
  double step(py::handle batch) {
    LabelledSet b = read(batch, "batch");
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    training::HeadResult head;
    training::Gradients grads = loss_and_grad_locked(b, head);
    optimizer_->step(refs(), grads, model_->threads());
    model_->recycle(std::move(grads));
    model_->set_weights(weights_);
    return head.loss;
  }

  // The loss and every gradient (the model's and the head's) on `batch` with the dropout mask the next
  // step() would use; nothing is updated.
  py::tuple loss_and_grad(py::handle batch) {
    LabelledSet b = read(batch, "batch");
    training::HeadResult head;
    training::Gradients grads;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      grads = loss_and_grad_locked(b, head);
    }
    py::array rows = to_int_array(grads.embedding_rows);
    return py::make_tuple(head.loss, to_dict(std::move(grads.dense)), rows,
                          to_numpy(std::move(grads.embedding_grad)));
  }

  // Epochs through training::Trainer: `epochs` more, or up to the options' epochs in all.
  py::list train(py::handle train, py::handle dev, std::optional<int64_t> epochs, py::object on_epoch) {
    LabelledSet tr = read(train, "train");
    LabelledSet dv = dev.is_none() ? LabelledSet{{}, classes_} : read(dev, "dev");
    training::TrainerOptions o = options_;
    if (epochs) {
      if (*epochs < 1) user_error(msg::kTrainPositive, "epochs", *epochs);
      o.epochs = state_.epoch + *epochs;
    }
    std::vector<training::EpochReport> reports;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      training::TrainerCallbacks callbacks;
      if (!on_epoch.is_none()) {
        callbacks.epoch = [&](const training::EpochReport &r) {
          py::gil_scoped_acquire acquire;
          on_epoch(report_dict(r));
        };
      }
      with_trainer(
          o, [&](training::Trainer &t) { reports = t.train(tr.set, dv.set, callbacks); }, true);
    }
    py::list out;
    for (const training::EpochReport &r : reports) out.append(report_dict(r));
    return out;
  }

  py::dict evaluate(py::handle trees) {
    LabelledSet s = read(trees, "trees");
    training::Accuracy accuracy;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      with_trainer(options_, [&](training::Trainer &t) { accuracy = t.evaluate(s.set); });
    }
    return accuracy_dict(accuracy);
  }

  // Continues from a checkpoint of `grove train` or save(): weights, head, optimizer and trainer state.
  void resume(py::handle path) {
    if (!is_path(path)) throw py::type_error(fmt::format(msg::kWeightsType, type_name(path)));
    const std::string file = path_string(path);
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    const training::Checkpoint checkpoint = training::read_checkpoint(file);
    with_trainer(options_, [&](training::Trainer &t) { t.resume(checkpoint, file); });
  }

  // A checkpoint as `grove train` writes one (atomically, never over an input).
  void save(py::handle path) {
    if (!is_path(path)) throw py::type_error(fmt::format(msg::kWeightsType, type_name(path)));
    const std::string file = path_string(path);
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    training::write_checkpoint(file, checkpoint(), inputs_);
  }

  py::dict weights() {
    return copy_out([&] { return weights_; });
  }
  py::dict head() {
    return copy_out([&] { return head_; });
  }

  py::dict state() {
    training::TrainerState s;
    int64_t steps = 0;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      s = state_;
      steps = optimizer_->steps();
    }
    py::dict d;
    d["epoch"] = s.epoch;
    d["steps"] = steps;
    d["best_epoch"] = s.best_epoch;
    d["best_correct"] = s.best_correct;
    d["bad_epochs"] = s.bad_epochs;
    return d;
  }

  py::dict params() const { return params_dict(model_->params()); }
  const std::string &embedding() const { return model_->embedding(); }
  int32_t classes() const { return classes_; }
  int64_t width() const { return width_; }
  const std::string &name() const { return program_.name; }

 private:
  training::ParamRefs refs() {
    training::ParamRefs r;
    for (auto &[name, tensor] : weights_) r[name] = &tensor;
    for (auto &[name, tensor] : head_) r[name] = &tensor;
    return r;
  }

  training::Checkpoint checkpoint() const {
    return training::Checkpoint{weights_, head_, optimizer_->state(), state_};
  }

  training::Gradients loss_and_grad_locked(const LabelledSet &b, training::HeadResult &head) {
    if (b.set.size() == 0) user_error(msg::kTrainNoLabelledTrees, "batch");
    const training::NodeStates &states = model_->forward(b.set.trees);
    const auto step = static_cast<uint64_t>(optimizer_->steps() + 1);
    const training::HeadOptions head_options{options_.loss, options_.dropout, options_.seed, options_.average,
                                             model_->threads()};
    head = training::head_loss(states, b.set.trees, b.set.labels, head_, head_options, step);
    training::Gradients grads = model_->backward(head.d_rows);
    grads.dense[training::kHeadWeight] = std::move(head.d_weight);
    grads.dense[training::kHeadBias] = std::move(head.d_bias);
    return grads;
  }

  // Runs `body` on a training::Trainer resumed from this state, then takes its state back. When `body`
  // throws, the state it reached is kept with `keep_on_error` (train(): the epochs before an on_epoch
  // callback raised), else this state stays as it was. The model reads the weights of the trainer
  // while it lives, and weights_ again after.
  template <typename Body>
  void with_trainer(const training::TrainerOptions &o, Body &&body, bool keep_on_error = false) {
    training::Trainer t(*model_, weights_, head_, o);
    auto take_back = [&] {
      weights_ = t.weights();
      head_ = t.head();
      state_ = t.state();
      optimizer_->load_state(t.optimizer().state(), refs(), kTrainerName);
      model_->set_weights(weights_);
    };
    try {
      t.resume(checkpoint(), kTrainerName);
      body(t);
    } catch (...) {
      try {
        if (keep_on_error)
          take_back();
        else
          model_->set_weights(weights_);
      } catch (...) {
      }
      throw;
    }
    take_back();
  }

  template <typename Get>
  py::dict copy_out(Get &&get) {
    Weights copy;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      copy = get();
    }
    return to_dict(std::move(copy));
  }

  ilir::Program program_;
  training::TrainerOptions options_;
  int32_t classes_ = 5;
  int64_t width_ = 0;
  std::shared_ptr<const Vocab> vocab_;
  std::vector<std::string> inputs_;
  std::string file_;
  Weights weights_, head_;
  std::unique_ptr<cpu::TrainableModel> model_;
  std::unique_ptr<training::Optimizer> optimizer_;
  training::TrainerState state_;
  std::mutex mutex_;
};

}  // namespace

void register_training(py::module_ &m) {
  py::class_<TrainableModelBinding>(m, "TrainableModel")
      .def(py::init<const std::string &, py::handle, py::handle, uint64_t, std::optional<std::string>,
                    std::optional<int64_t>, std::optional<std::string>, py::handle>(),
           py::arg("model"), py::arg("weights") = py::none(), py::arg("sizes") = py::none(),
           py::arg("seed") = 1, py::arg("schedule") = py::none(), py::arg("threads") = py::none(),
           py::arg("target") = py::none(), py::arg("vocab") = py::none())
      .def_property_readonly("params", &TrainableModelBinding::params)
      .def_property_readonly("embedding", &TrainableModelBinding::embedding)
      .def_property_readonly("name", &TrainableModelBinding::name)
      .def_property_readonly("tree_offset", &TrainableModelBinding::tree_offset)
      .def_property_readonly("stats", &TrainableModelBinding::stats)
      .def_property_readonly("backward_ilir", &TrainableModelBinding::backward_ilir)
      .def_property_readonly("backward_plan", &TrainableModelBinding::backward_plan)
      .def("set_weights", &TrainableModelBinding::set_weights, py::arg("weights"))
      .def("weights", &TrainableModelBinding::weights)
      .def("forward", &TrainableModelBinding::forward, py::arg("trees"), py::arg("vocab") = py::none())
      .def("backward", &TrainableModelBinding::backward, py::arg("d_rows"));

  py::class_<LabelledSet>(m, "LabelledTrees")
      .def("__len__", [](const LabelledSet &s) { return s.set.size(); })
      .def("__getitem__", &LabelledSet::getitem)
      .def_property_readonly("classes", [](const LabelledSet &s) { return s.classes; })
      .def_property_readonly("max_token", &LabelledSet::max_token)
      .def_property_readonly("nodes", [](const LabelledSet &s) {
        int64_t n = 0;
        for (const Tree &t : s.set.trees) n += t.size();
        return n;
      });
  m.def(
      "shuffled_order",
      [](int64_t n, uint64_t seed, uint64_t epoch) {
        if (n < 0) user_error(msg::kTrainNonNegative, "n", n);
        return training::shuffled_order(n, seed, epoch);
      },
      py::arg("n"), py::arg("seed"), py::arg("epoch"),
      "The order of the n training trees in epoch `epoch` (from 1) of a trainer seeded `seed`");
  m.def("read_labelled_trees", &read_labelled_trees, py::arg("source"), py::arg("vocab") = py::none(),
        py::arg("classes") = 5);

  py::class_<TrainerBinding>(m, "Trainer")
      .def(
          py::init([](const std::string &model, py::handle init, py::handle sizes, py::handle vocab,
                      int64_t classes, py::handle trees, int64_t epochs, int64_t batch, std::string optimizer,
                      std::optional<double> lr, double emb_lr, std::string emb_optimizer, double weight_decay,
                      double dropout, double clip, std::string loss, std::string average, uint64_t seed,
                      int64_t patience, std::optional<std::string> out, int64_t eval_batch,
                      std::optional<std::string> schedule, std::optional<int64_t> threads,
                      std::optional<std::string> target) {
            TrainerArgs a;
            a.epochs = epochs;
            a.batch = batch;
            a.optimizer = std::move(optimizer);
            a.lr = lr;
            a.emb_lr = emb_lr;
            a.emb_optimizer = std::move(emb_optimizer);
            a.weight_decay = weight_decay;
            a.dropout = dropout;
            a.clip = clip;
            a.loss = std::move(loss);
            a.average = std::move(average);
            a.seed = seed;
            a.patience = patience;
            a.out = out ? *out : "";
            a.eval_batch = eval_batch;
            return std::make_unique<TrainerBinding>(model, init, sizes, vocab, classes, trees, a, schedule,
                                                    threads, target);
          }),
          py::arg("model"), py::arg("init") = py::none(), py::arg("sizes") = py::none(),
          py::arg("vocab") = py::none(), py::arg("classes") = 5, py::arg("trees") = py::none(),
          py::arg("epochs") = 10, py::arg("batch") = 25, py::arg("optimizer") = "adagrad",
          py::arg("lr") = py::none(), py::arg("emb_lr") = 0.1, py::arg("emb_optimizer") = "sgd",
          py::arg("weight_decay") = 1e-4, py::arg("dropout") = 0.5, py::arg("clip") = 0.0,
          py::arg("loss") = "all", py::arg("average") = "nodes", py::arg("seed") = 1, py::arg("patience") = 0,
          py::arg("out") = py::none(), py::arg("eval_batch") = 256, py::arg("schedule") = py::none(),
          py::arg("threads") = py::none(), py::arg("target") = py::none())
      .def("read", &TrainerBinding::read, py::arg("source"), py::arg("what") = "trees")
      .def("step", &TrainerBinding::step, py::arg("batch"))
      .def("loss_and_grad", &TrainerBinding::loss_and_grad, py::arg("batch"))
      .def("train", &TrainerBinding::train, py::arg("train"), py::arg("dev") = py::none(),
           py::arg("epochs") = py::none(), py::arg("on_epoch") = py::none())
      .def("evaluate", &TrainerBinding::evaluate, py::arg("trees"))
      .def("resume", &TrainerBinding::resume, py::arg("path"))
      .def("save", &TrainerBinding::save, py::arg("path"))
      .def("weights", &TrainerBinding::weights)
      .def("head", &TrainerBinding::head)
      .def_property_readonly("state", &TrainerBinding::state)
      .def_property_readonly("params", &TrainerBinding::params)
      .def_property_readonly("embedding", &TrainerBinding::embedding)
      .def_property_readonly("classes", &TrainerBinding::classes)
      .def_property_readonly("width", &TrainerBinding::width)
      .def_property_readonly("name", &TrainerBinding::name);
}

}  // namespace grove::python
