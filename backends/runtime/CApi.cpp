// The C API (include/grove/grove.h) over the runtime: a grove_model is an Executor and whatever
// keeps its compiled code alive (a dlopen handle, or a JIT-compiled model from the compiler).
//
// Every extern "C" function runs its body through `guarded`, which turns grove's exceptions into a
// status and the calling thread's last-error message: an ApiMisuse is GROVE_ERROR_INVALID_ARGUMENT
// (or the status it carries), a UserError GROVE_ERROR_USER, std::bad_alloc and a CUDA device out of
// memory (cuda::DeviceOutOfMemory, with the driver's message) GROVE_ERROR_OUT_OF_MEMORY, anything
// else GROVE_ERROR_INTERNAL. A grove_model runs a CPU library or JIT model through the Executor and
// a CUDA library through the device runner (backends/runtime/CudaRunner.h), the same calls for both. Nothing
// escapes into C.
//
// Inputs arrive as flat arrays over the batch with global node ids. Each run function:
//   1. checks the arrays against each other (API misuse: null pointers, negative counts, offsets
//      that do not start at 0 or decrease, ids outside their input), naming the argument and index;
//   2. converts them to the runtime's per-input types (Tree, Dag) with local node ids;
//   3. knows the number of output rows before running, so a short output buffer is refused before
//      any work, and `out == NULL` answers with the row count alone;
//   4. runs the Executor, which checks the rest (tree shape, arity, tokens, cycles) as user errors;
//   5. copies the rows out only once everything succeeded.
//
// A grove_relay is a Relay program the back end opened (RelayHook.h): the functions here check the C
// arguments, the back end checks them against @main.

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "backends/runtime/CompiledLibrary.h"
#include "backends/runtime/CompilerHook.h"
#include "backends/runtime/CudaDriver.h"
#include "backends/runtime/Messages.h"
#include "backends/runtime/RelayHook.h"
#include "datasets/DagReader.h"
#include "include/grove/grove.h"
#include "support/Error.h"
#include "support/Safetensors.h"

struct grove_model {
  std::shared_ptr<void> owner;                       // the library handle or the compiled code; freed last
  std::unique_ptr<grove::ModelRunner> own_executor;  // a library's runner (null for a compiled model)
  grove::ModelRunner *executor = nullptr;            // the CPU's Executor or the CUDA device runner
  // False while a model compiled from sizes alone still holds its placeholder weights.
  std::atomic<bool> weights_bound{true};
  std::string structure;  // grove_model_info's spelling: "binary tree", not the ABI's "binary_tree"
};

struct grove_relay {
  std::unique_ptr<grove::RelayForCApi> program;
};

struct grove_relay_result {
  grove::RelayResultForCApi result;
};

namespace grove {
namespace {

namespace msg = runtime_messages;

thread_local std::string last_error;

// API misuse, or another status that is not a UserError's.
class ApiMisuse : public std::runtime_error {
 public:
  ApiMisuse(grove_status status, const std::string &message) : std::runtime_error(message), status(status) {}
  grove_status status;
};

template <typename... Args>
[[noreturn]] void misuse(fmt::format_string<Args...> format, Args &&...args) {
  throw ApiMisuse(GROVE_ERROR_INVALID_ARGUMENT, fmt::format(format, std::forward<Args>(args)...));
}

// `index` is one of `count` things, or a misuse saying so with `format` (index, count, the range).
void check_index(fmt::format_string<int32_t &, int64_t &, std::string> format, int32_t index, int64_t count) {
  if (index < 0 || index >= count)
    misuse(format, index, count, count > 0 ? fmt::format(" (0 to {})", count - 1) : std::string());
}

grove_status fail(grove_status status, const char *message) noexcept {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

template <typename Body>
grove_status guarded(Body &&body) noexcept {
  try {
    body();
    return GROVE_OK;
  } catch (const ApiMisuse &e) {
    return fail(e.status, e.what());
  } catch (const cuda::DeviceOutOfMemory &e) {
    return fail(GROVE_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const UserError &e) {
    return fail(GROVE_ERROR_USER, e.what());
  } catch (const std::bad_alloc &) {
    return fail(GROVE_ERROR_OUT_OF_MEMORY, msg::kCApiOutOfMemory);
  } catch (const InternalError &e) {
    return fail(GROVE_ERROR_INTERNAL, e.what());
  } catch (const std::exception &e) {
    try {
      return fail(GROVE_ERROR_INTERNAL, fmt::format(msg::kCApiUnknownError, e.what()).c_str());
    } catch (...) {
      return fail(GROVE_ERROR_INTERNAL, e.what());
    }
  } catch (...) {
    return fail(GROVE_ERROR_INTERNAL, "an unexpected error of unknown type");
  }
}

void require(const void *pointer, const char *function, const char *argument) {
  if (!pointer) misuse(msg::kCApiNull, function, argument);
}

void require_count(int64_t count, const char *function, const char *argument) {
  if (count < 0) misuse(msg::kCApiNegative, function, argument, count);
}

// Checks `count + 1` offsets start at 0 and never decrease; returns the last, the entries they span.
int64_t check_offsets(const int64_t *begin, int64_t count, const char *function, const char *argument) {
  require(begin, function, argument);
  if (begin[0] != 0) misuse(msg::kCApiFirstOffset, function, argument, begin[0]);
  for (int64_t k = 0; k < count; ++k)
    if (begin[k + 1] < begin[k])
      misuse(msg::kCApiDecreasing, function, argument, k + 1, begin[k + 1], argument, k, begin[k]);
  return begin[count];
}

// Node ids are int32 inside the runtime.
void check_int32_total(int64_t total, const char *function, const char *what) {
  if (total > INT32_MAX) misuse(msg::kCApiTooManyEntries, function, what, total);
}

// One input of a batch, for checking the global ids its arrays hold.
struct InputNodes {
  const char *function, *array;  // e.g. "grove_model_run_trees", "trees->parent"
  const char *noun, *allowed;    // "tree", " or -1 for the root"
  int64_t number, begin, end;    // input `number` owns global nodes [begin, end)
};

// The id stored at array[index], read for global node `node`, must be one of the input's nodes.
void check_local(const InputNodes &in, int64_t index, int64_t node, int64_t id) {
  if (id < in.begin || id >= in.end)
    misuse(msg::kCApiNodeOutOfRange, in.function, in.array, index, id, node, in.noun, in.number, in.begin,
           in.end - 1, in.noun, in.allowed);
}

// A C caller may store any int in an enum field; in C++ a value outside the enumerators is undefined
// behaviour to load as the enum type, so the value is read as the int it is.
template <typename Enum>
int enum_value(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

RunOptions run_options(const grove_run_options *options, const char *function) {
  RunOptions run;
  if (options) {
    require_count(options->batch, function, "options->batch");
    run.batch = options->batch;
  }
  return run;
}

void require_model(const grove_model *model, const char *function) { require(model, function, "model"); }

void check_weights_bound(const grove_model *model) {
  if (!model->weights_bound.load()) user_error(msg::kNoWeights, model->executor->abi().model);
}

// The row count and where it goes. Checked before running: the caller's buffer stays untouched
// unless the whole call succeeds.
struct Output {
  const char *function;
  float *out;
  int64_t capacity;
  int64_t *rows;
};

// Returns false when only the row count was asked for (and sets it).
bool check_output(const Output &o, int64_t rows, int64_t width) {
  if (!o.out && !o.rows) misuse(msg::kCApiNothingToDo, o.function);
  if (!o.out) {
    *o.rows = rows;
    return false;
  }
  require_count(o.capacity, o.function, "capacity");
  if (width > 0 && rows > o.capacity / width)
    misuse(msg::kCApiCapacity, o.function, rows * width, rows, width, o.capacity);
  return true;
}

void write_output(const Output &o, const Tensor &result, int64_t rows, int64_t width) {
  GROVE_CHECK(int64_t(result.data.size()) == rows * width, "{} produced {} floats, expected {} rows of {}",
              o.function, result.data.size(), rows, width);
  std::copy(result.data.begin(), result.data.end(), o.out);
  if (o.rows) *o.rows = rows;
}

// Runs `body`, placing the inspector's "tree 3: ..." messages in the caller's arrays.
template <typename Body>
Tensor run_placed(Body &&body, const char *noun, const int64_t *input_begin, int64_t num_inputs,
                  const char *elements) {
  try {
    return body();
  } catch (const UserError &e) {
    std::string message = e.what(), prefix = std::string(noun) + " ";
    if (!message.starts_with(prefix)) throw;
    size_t pos = prefix.size();
    int64_t number = 0;
    while (pos < message.size() && message[pos] >= '0' && message[pos] <= '9' && number < INT64_MAX / 10)
      number = number * 10 + (message[pos++] - '0');
    if (number < 1 || number > num_inputs) throw;
    throw UserError(
        fmt::format(msg::kCApiInputNumbering, message, number - 1, input_begin[number - 1], elements));
  }
}

const ModelAbi &abi_of(const grove_model *model) { return model->executor->abi(); }

void require_input_kind(const grove_model *model, bool dags, const char *function) {
  const ModelAbi &abi = abi_of(model);
  if (abi.runs_dags() == dags) return;
  throw ApiMisuse(GROVE_ERROR_INVALID_ARGUMENT,
                  fmt::format(msg::kCApiWrongInputs, function, abi.model, model->structure,
                              dags ? "grove_model_run_trees" : "grove_model_run_dags, _grids or _sequences"));
}

// ---- Trees ------------------------------------------------------------------------------------------

constexpr const char *kRunTrees = "grove_model_run_trees";

// Parent form: the global parent ids of tree k checked and made local, then grove::tree_from_parents
// (datasets/Tree.h): node i's children are the nodes whose parent is i, in id order. A second root
// is unreachable from the first: the inspector says so.
Tree tree_from_parents(const grove_trees &t, int64_t k) {
  int64_t b = t.node_begin[k], e = t.node_begin[k + 1];
  std::vector<int32_t> local(e - b);
  bool has_root = false;
  InputNodes range{kRunTrees, "trees->parent", "tree", " or -1 for the root", k, b, e};
  for (int64_t i = b; i < e; ++i) {
    int32_t p = t.parent[i];
    if (p == -1) {
      has_root = true;
    } else {
      check_local(range, i, i, p);
    }
    local[i - b] = p == -1 ? -1 : int32_t(p - b);
  }
  if (e > b && !has_root) user_error(msg::kCApiTreeNoRootParent, k + 1);
  return grove::tree_from_parents(local, std::vector<int32_t>(t.token + b, t.token + e));
}

// Child form: the global CSR arrays restricted to tree k, ids made local; the root is the one node
// that is no one's child (the first such, if several: the inspector reports the others unreachable).
Tree tree_from_children(const grove_trees &t, int64_t k) {
  int64_t b = t.node_begin[k], e = t.node_begin[k + 1];
  int32_t n = int32_t(e - b);
  int64_t first = t.child_begin[b];
  Tree tree;
  tree.token.assign(t.token + b, t.token + e);
  tree.child_begin.resize(n + 1);
  tree.children.resize(t.child_begin[e] - first);
  std::vector<char> is_child(n, 0);
  InputNodes range{kRunTrees, "trees->children", "tree", "", k, b, e};
  for (int64_t i = b; i < e; ++i) {
    tree.child_begin[i - b] = int32_t(t.child_begin[i] - first);
    for (int64_t j = t.child_begin[i]; j < t.child_begin[i + 1]; ++j) {
      int32_t c = t.children[j];
      check_local(range, j, i, c);
      tree.children[j - first] = int32_t(c - b);
      is_child[c - b] = 1;
    }
  }
  tree.child_begin[n] = int32_t(t.child_begin[e] - first);
  int32_t root = -1;
  for (int32_t v = 0; v < n && root < 0; ++v)
    if (!is_child[v]) root = v;
  if (n > 0 && root < 0) user_error(msg::kCApiTreeNoRootChildren, k + 1);
  tree.root = std::max(root, 0);
  return tree;
}

void run_trees(const grove_model *model, const grove_trees *trees, const grove_run_options *options,
               const Output &output) {
  require_model(model, kRunTrees);
  require(trees, kRunTrees, "trees");
  RunOptions run = run_options(options, kRunTrees);
  require_input_kind(model, false, kRunTrees);
  const grove_trees &t = *trees;
  require_count(t.num_trees, kRunTrees, "trees->num_trees");
  int64_t nodes = check_offsets(t.node_begin, t.num_trees, kRunTrees, "trees->node_begin");
  check_int32_total(nodes, kRunTrees, "the number of nodes, trees->node_begin[num_trees]");
  if (nodes > 0) require(t.token, kRunTrees, "trees->token");
  bool parents = t.parent != nullptr, csr = t.child_begin != nullptr || t.children != nullptr;
  if (parents == csr) misuse(msg::kCApiTreeForm, parents ? "both" : "neither");
  if (csr) {
    int64_t entries = check_offsets(t.child_begin, nodes, kRunTrees, "trees->child_begin");
    check_int32_total(entries, kRunTrees, "the number of children, trees->child_begin[N]");
    if (entries > 0) require(t.children, kRunTrees, "trees->children");
  }

  int64_t width = abi_of(model).output_elements();
  if (!check_output(output, t.num_trees, width)) return;
  std::vector<Tree> converted;
  converted.reserve(t.num_trees);
  for (int64_t k = 0; k < t.num_trees; ++k)
    converted.push_back(parents ? tree_from_parents(t, k) : tree_from_children(t, k));
  check_weights_bound(model);
  Tensor result = run_placed([&] { return model->executor->run(converted, run); }, "tree", t.node_begin,
                             t.num_trees, "nodes");
  write_output(output, result, t.num_trees, width);
}

// ---- DAGs, grids, sequences -------------------------------------------------------------------------

constexpr const char *kRunDags = "grove_model_run_dags";
constexpr const char *kRunGrids = "grove_model_run_grids";
constexpr const char *kRunSequences = "grove_model_run_sequences";

void run_dags(const grove_model *model, const grove_dags *dags, const grove_run_options *options,
              const Output &output) {
  require_model(model, kRunDags);
  require(dags, kRunDags, "dags");
  RunOptions run = run_options(options, kRunDags);
  require_input_kind(model, true, kRunDags);
  const grove_dags &d = *dags;
  require_count(d.num_dags, kRunDags, "dags->num_dags");
  int outputs = enum_value(d.outputs);
  if (outputs != GROVE_OUTPUTS_SINKS && outputs != GROVE_OUTPUTS_ALL_NODES)
    misuse(msg::kCApiEnum, kRunDags, "dags->outputs", outputs,
           "GROVE_OUTPUTS_SINKS, GROVE_OUTPUTS_ALL_NODES");
  int64_t nodes = check_offsets(d.node_begin, d.num_dags, kRunDags, "dags->node_begin");
  check_int32_total(nodes, kRunDags, "the number of nodes, dags->node_begin[num_dags]");
  int64_t slots = check_offsets(d.pred_begin, nodes, kRunDags, "dags->pred_begin");
  check_int32_total(slots, kRunDags, "the number of predecessor slots, dags->pred_begin[N]");
  if (nodes > 0) require(d.token, kRunDags, "dags->token");
  if (slots > 0) require(d.preds, kRunDags, "dags->preds");

  // Steps 2 and 3: local ids, and the sinks (nodes no slot names) counted as the output rows.
  std::vector<Dag> converted(d.num_dags);
  int64_t rows = 0;
  for (int64_t k = 0; k < d.num_dags; ++k) {
    int64_t b = d.node_begin[k], e = d.node_begin[k + 1], first = d.pred_begin[b];
    Dag &dag = converted[k];
    dag.token.assign(d.token + b, d.token + e);
    dag.pred_begin.resize(e - b + 1);
    dag.preds.resize(d.pred_begin[e] - first);
    std::vector<char> is_pred(e - b, 0);
    InputNodes range{kRunDags, "dags->preds", "DAG", " or -1 for an empty slot", k, b, e};
    for (int64_t i = b; i < e; ++i) {
      dag.pred_begin[i - b] = int32_t(d.pred_begin[i] - first);
      for (int64_t j = d.pred_begin[i]; j < d.pred_begin[i + 1]; ++j) {
        int32_t p = d.preds[j];
        if (p != Dag::kEmptySlot) {
          check_local(range, j, i, p);
          is_pred[p - b] = 1;
        }
        dag.preds[j - first] = p == Dag::kEmptySlot ? p : int32_t(p - b);
      }
    }
    dag.pred_begin[e - b] = int32_t(d.pred_begin[e] - first);
    for (char p : is_pred) rows += outputs == GROVE_OUTPUTS_ALL_NODES || !p;
  }
  int64_t width = abi_of(model).output_elements();
  if (!check_output(output, rows, width)) return;
  check_weights_bound(model);
  run.outputs = outputs == GROVE_OUTPUTS_ALL_NODES ? DagOutputs::AllNodes : DagOutputs::Sinks;
  Tensor result = run_placed([&] { return model->executor->run_dags(converted, run); }, "DAG", d.node_begin,
                             d.num_dags, "nodes");
  write_output(output, result, rows, width);
}

Sweep to_sweep(const grove_sweep &field) {
  int sweep = enum_value(field);
  switch (sweep) {
    case GROVE_SWEEP_SOUTHEAST:
      return Sweep::SouthEast;
    case GROVE_SWEEP_SOUTHWEST:
      return Sweep::SouthWest;
    case GROVE_SWEEP_NORTHEAST:
      return Sweep::NorthEast;
    case GROVE_SWEEP_NORTHWEST:
      return Sweep::NorthWest;
  }
  misuse(msg::kCApiEnum, kRunGrids, "grids->sweep", sweep,
         "GROVE_SWEEP_SOUTHEAST, GROVE_SWEEP_SOUTHWEST, GROVE_SWEEP_NORTHEAST, GROVE_SWEEP_NORTHWEST");
}

void run_grids(const grove_model *model, const grove_grids *grids, const grove_run_options *options,
               const Output &output) {
  require_model(model, kRunGrids);
  require(grids, kRunGrids, "grids");
  RunOptions run = run_options(options, kRunGrids);
  require_input_kind(model, true, kRunGrids);
  const grove_grids &g = *grids;
  require_count(g.num_grids, kRunGrids, "grids->num_grids");
  Sweep sweep = to_sweep(g.sweep);
  int64_t tokens = check_offsets(g.token_begin, g.num_grids, kRunGrids, "grids->token_begin");
  if (g.num_grids > 0) {
    require(g.rows, kRunGrids, "grids->rows");
    require(g.cols, kRunGrids, "grids->cols");
  }
  if (tokens > 0) require(g.tokens, kRunGrids, "grids->tokens");
  for (int64_t k = 0; k < g.num_grids; ++k) {
    if (g.rows[k] < 1) misuse(msg::kCApiGridSize, "rows", k, g.rows[k], "row");
    if (g.cols[k] < 1) misuse(msg::kCApiGridSize, "cols", k, g.cols[k], "column");
    int64_t cells = int64_t(g.rows[k]) * g.cols[k];
    // Two predecessor slots per cell, indexed by int32.
    if (cells > INT32_MAX / 2) misuse(msg::kCApiGridTooLarge, k, g.rows[k], g.cols[k]);
    if (g.token_begin[k + 1] - g.token_begin[k] != cells)
      misuse(msg::kCApiGridTokens, k, g.rows[k], g.cols[k], cells, g.token_begin[k + 1] - g.token_begin[k]);
  }
  int64_t width = abi_of(model).output_elements();
  if (!check_output(output, g.num_grids, width)) return;  // a swept grid has one sink: its last cell
  std::vector<Dag> converted;
  converted.reserve(g.num_grids);
  for (int64_t k = 0; k < g.num_grids; ++k)
    converted.push_back(
        grid_dag(g.rows[k], g.cols[k],
                 std::vector<int32_t>(g.tokens + g.token_begin[k], g.tokens + g.token_begin[k + 1]), sweep));
  check_weights_bound(model);
  run.noun = "grid";
  Tensor result = run_placed([&] { return model->executor->run_dags(converted, run); }, "grid", g.token_begin,
                             g.num_grids, "tokens");
  write_output(output, result, g.num_grids, width);
}

void run_sequences(const grove_model *model, const grove_sequences *sequences,
                   const grove_run_options *options, const Output &output) {
  require_model(model, kRunSequences);
  require(sequences, kRunSequences, "sequences");
  RunOptions run = run_options(options, kRunSequences);
  require_input_kind(model, true, kRunSequences);
  const grove_sequences &s = *sequences;
  require_count(s.num_sequences, kRunSequences, "sequences->num_sequences");
  int64_t tokens = check_offsets(s.token_begin, s.num_sequences, kRunSequences, "sequences->token_begin");
  check_int32_total(tokens, kRunSequences, "the number of tokens, sequences->token_begin[num_sequences]");
  if (tokens > 0) require(s.tokens, kRunSequences, "sequences->tokens");
  int64_t width = abi_of(model).output_elements();
  if (!check_output(output, s.num_sequences, width)) return;
  std::vector<std::vector<int32_t>> converted;
  converted.reserve(s.num_sequences);
  for (int64_t k = 0; k < s.num_sequences; ++k)
    converted.emplace_back(s.tokens + s.token_begin[k], s.tokens + s.token_begin[k + 1]);
  check_weights_bound(model);
  Tensor result = run_placed([&] { return model->executor->run_sequences(converted, run); }, "sequence",
                             s.token_begin, s.num_sequences, "tokens");
  write_output(output, result, s.num_sequences, width);
}

// ---- Weights ----------------------------------------------------------------------------------------

constexpr const char *kBindWeights = "grove_model_bind_weights";

void bind_views(grove_model *model, const grove_tensor_view *tensors, size_t count, int copy) {
  require_model(model, kBindWeights);
  if (count > 0) require(tensors, kBindWeights, "tensors");
  // 1. Every view must be readable before anything reads it.
  std::map<std::string, size_t> index;
  std::map<std::string, WeightView> views;
  for (size_t i = 0; i < count; ++i) {
    const grove_tensor_view &t = tensors[i];
    if (!t.name) misuse(msg::kCApiTensorNull, i, "name");
    if (t.rank < 0) misuse(msg::kCApiTensorRank, i, t.name, t.rank);
    if (t.rank > 0 && !t.shape) misuse(msg::kCApiTensorNull, i, "shape");
    auto [it, fresh] = index.emplace(t.name, i);
    if (!fresh) misuse(msg::kCApiTensorDuplicate, it->second, i, t.name);
    WeightView view{t.data, std::vector<int64_t>(t.shape, t.shape + t.rank)};
    for (int32_t d = 0; d < t.rank; ++d)
      if (t.shape[d] < 0) misuse(msg::kCApiTensorDim, i, t.name, d, t.shape[d]);
    // No data is fine only for a tensor without elements (counted without multiplying: the caller's
    // dimensions may overflow a product before the shape check refuses them).
    bool elements = std::find(view.shape.begin(), view.shape.end(), 0) == view.shape.end();
    if (!t.data && elements) misuse(msg::kCApiTensorNull, i, "data");
    views.emplace(t.name, std::move(view));
  }
  // 2. Bind in place, or copy. A copy reads only views whose name and shape are a parameter's, so a
  //    wrong shape never makes it read past the caller's buffer; the others keep their shape
  //    without data, and the executor's check refuses them by name before anything uses them.
  if (!copy) {
    model->executor->bind(views, kBindWeights);
  } else {
    Weights weights;
    const ModelAbi &abi = abi_of(model);
    for (const auto &[name, view] : views) {
      Tensor tensor;
      tensor.shape = view.shape;
      for (const ModelAbi::Param &p : abi.params)
        if (p.name == name && p.shape == view.shape)
          tensor.data.assign(view.data, view.data + Tensor::num_elements(view.shape));
      weights.emplace(name, std::move(tensor));
    }
    model->executor->bind(std::move(weights), kBindWeights);
  }
  model->weights_bound.store(true);
}

void describe(grove_model &model) {
  model.structure = model.executor->abi().structure;
  std::replace(model.structure.begin(), model.structure.end(), '_', ' ');
}

grove_model *make_model(CompiledLibrary library) {
  auto model = std::make_unique<grove_model>();
  model->owner = std::move(library.handle);
  model->own_executor = std::move(library.executor);
  model->executor = model->own_executor.get();
  GROVE_CHECK(model->executor, "a compiled library without an executor");
  describe(*model);
  return model.release();
}

// ---- Relay programs -----------------------------------------------------------------------------

void check_relay_options(const grove_relay_options *options, const char *function) {
  if (!options) return;
  require_count(options->threads, function, "options->threads");
  int executor = enum_value(options->executor);
  if (executor != GROVE_RELAY_VM && executor != GROVE_RELAY_INTERPRETER)
    misuse(msg::kCApiEnum, function, "options->executor", executor,
           "GROVE_RELAY_VM (0), GROVE_RELAY_INTERPRETER (1)");
  require_count(options->num_targets, function, "options->num_targets");
  if (options->num_targets > 0) require(options->targets, function, "options->targets");
  for (int32_t i = 0; i < options->num_targets; ++i)
    if (!options->targets[i]) misuse(msg::kCApiRelayTarget, function, i);
}

grove_relay *open_relay(const char *path, const char *text, const grove_relay_options *options,
                        const char *function) {
  check_relay_options(options, function);
  auto open = reinterpret_cast<GroveCompilerRelayOpenFn>(dlsym(RTLD_DEFAULT, kRelayHookName));
  if (!open) throw ApiMisuse(GROVE_ERROR_UNSUPPORTED, fmt::format(msg::kCApiNoRelay, function));
  auto program = std::make_unique<grove_relay>();
  open(path, text, options, &program->program);
  GROVE_CHECK(program->program, "the Relay back end returned no program");
  return program.release();
}

// Each input: a dtype grove knows, a rank >= 0 with its dimensions >= 0, data unless it is empty.
void check_relay_inputs(const grove_tensor *inputs, size_t count) {
  const char *function = "grove_relay_run";
  if (count > 0) require(inputs, function, "inputs");
  for (size_t i = 0; i < count; ++i) {
    const grove_tensor &t = inputs[i];
    int dtype = enum_value(t.dtype);
    if (dtype < GROVE_DTYPE_BOOL || dtype > GROVE_DTYPE_FLOAT64)
      misuse(msg::kCApiEnum, function, fmt::format("inputs[{}].dtype", i), dtype,
             "GROVE_DTYPE_BOOL (0) to GROVE_DTYPE_FLOAT64 (11)");
    if (t.rank < 0) misuse(msg::kCApiRelayTensorRank, i, t.rank);
    if (t.rank > 0 && !t.shape) misuse(msg::kCApiRelayTensorNull, i, "shape");
    bool empty = false;
    for (int32_t d = 0; d < t.rank; ++d) {
      if (t.shape[d] < 0) misuse(msg::kCApiRelayTensorDim, i, d, t.shape[d]);
      empty = empty || t.shape[d] == 0;
    }
    // Bytes at 8 per element (the widest dtype) must fit in an int64.
    for (int64_t d = 0, bytes = 8; !empty && d < t.rank; bytes *= t.shape[d], ++d) {
      if (t.shape[d] <= INT64_MAX / bytes) continue;
      std::string shape;
      for (int32_t e = 0; e < t.rank; ++e) shape += (e ? ", " : "") + std::to_string(t.shape[e]);
      misuse(msg::kCApiRelayTensorSize, i, "(" + shape + ")");
    }
    if (!empty && !t.data) misuse(msg::kCApiRelayTensorNull, i, "data");
  }
}

}  // namespace
}  // namespace grove

using grove::guarded;
namespace msg = grove::runtime_messages;

extern "C" int grove_api_version(void) { return GROVE_API_VERSION; }

extern "C" const char *grove_last_error(void) { return grove::last_error.c_str(); }

extern "C" const char *grove_status_string(grove_status status_field) {
  switch (grove::enum_value(status_field)) {
    case GROVE_OK:
      return "ok";
    case GROVE_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case GROVE_ERROR_USER:
      return "user error";
    case GROVE_ERROR_UNSUPPORTED:
      return "unsupported";
    case GROVE_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case GROVE_ERROR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

extern "C" grove_status grove_model_open(const char *library_path, grove_model **model) {
  return guarded([&] {
    grove::require(library_path, "grove_model_open", "library_path");
    grove::require(model, "grove_model_open", "model");
    *model = grove::make_model(grove::open_compiled_library(library_path));
  });
}

extern "C" grove_status grove_model_open_compiled(const grove_compiled_model *compiled, grove_model **model) {
  return guarded([&] {
    grove::require(compiled, "grove_model_open_compiled", "compiled");
    grove::require(model, "grove_model_open_compiled", "model");
    std::string where = compiled->name ? fmt::format("the linked-in model '{}'", compiled->name)
                                       : std::string("the linked-in model");
    *model = grove::make_model(grove::open_compiled_model(*compiled, where));
  });
}

extern "C" grove_status grove_model_compile(const char *model_file, const char *weights_file,
                                            const grove_compile_options *options, grove_model **model) {
  return guarded([&] {
    const char *function = "grove_model_compile";
    grove::require(model_file, function, "model_file");
    grove::require(model, function, "model");
    bool sizes = options && options->sizes;
    if ((weights_file != nullptr) == sizes)
      grove::misuse(msg::kCApiWeightsOrSizes, sizes ? "both" : "neither");
    if (options) grove::require_count(options->threads, function, "options->threads");
    auto compile = reinterpret_cast<GroveCompilerCompileFn>(dlsym(RTLD_DEFAULT, grove::kCompilerHookName));
    if (!compile) throw grove::ApiMisuse(GROVE_ERROR_UNSUPPORTED, msg::kCApiNoCompiler);
    grove::CompiledForCApi compiled;
    compile(model_file, weights_file, options, &compiled);
    GROVE_CHECK(compiled.owner && compiled.executor, "the compiler returned no model");
    auto result = std::make_unique<grove_model>();
    result->owner = std::move(compiled.owner);
    result->executor = compiled.executor;
    result->weights_bound.store(compiled.weights_bound);
    grove::describe(*result);
    *model = result.release();
  });
}

extern "C" void grove_model_free(grove_model *model) { delete model; }

extern "C" grove_status grove_model_get_info(const grove_model *model, grove_model_info *info) {
  return guarded([&] {
    grove::require_model(model, "grove_model_get_info");
    grove::require(info, "grove_model_get_info", "info");
    const grove::ModelAbi &abi = grove::abi_of(model);
    grove_model_info result;
    result.name = abi.model.c_str();
    result.structure = model->structure.c_str();
    result.input = abi.runs_dags() ? GROVE_INPUT_DAGS : GROVE_INPUT_TREES;
    result.predecessor_slots = abi.predecessor_slots;
    result.vocab_size = abi.vocab_size;
    result.output_elements = abi.output_elements();
    result.num_params = int32_t(abi.params.size());
    result.schedule = abi.schedule.c_str();
    *info = result;
  });
}

extern "C" grove_status grove_model_param(const grove_model *model, int32_t index, const char **name,
                                          const int64_t **shape, int32_t *rank) {
  return guarded([&] {
    const char *function = "grove_model_param";
    grove::require_model(model, function);
    grove::require(name, function, "name");
    grove::require(shape, function, "shape");
    grove::require(rank, function, "rank");
    const grove::ModelAbi &abi = grove::abi_of(model);
    int64_t count = int64_t(abi.params.size());
    if (index < 0 || index >= count) grove::misuse(msg::kCApiParamIndex, index, abi.model, count, count - 1);
    const grove::ModelAbi::Param &p = abi.params[index];
    *name = p.name.c_str();
    *shape = p.shape.data();
    *rank = int32_t(p.shape.size());
  });
}

extern "C" grove_status grove_model_bind_weights_file(grove_model *model, const char *path) {
  return guarded([&] {
    grove::require_model(model, "grove_model_bind_weights_file");
    grove::require(path, "grove_model_bind_weights_file", "path");
    model->executor->bind(grove::read_safetensors(path), path);
    model->weights_bound.store(true);
  });
}

extern "C" grove_status grove_model_bind_weights(grove_model *model, const grove_tensor_view *tensors,
                                                 size_t count, int copy) {
  return guarded([&] { grove::bind_views(model, tensors, count, copy); });
}

extern "C" grove_status grove_model_run_trees(const grove_model *model, const grove_trees *trees,
                                              const grove_run_options *options, float *out, int64_t capacity,
                                              int64_t *rows) {
  return guarded([&] {
    grove::run_trees(model, trees, options, {"grove_model_run_trees", out, capacity, rows});
  });
}

extern "C" grove_status grove_model_run_dags(const grove_model *model, const grove_dags *dags,
                                             const grove_run_options *options, float *out, int64_t capacity,
                                             int64_t *rows) {
  return guarded([&] {
    grove::run_dags(model, dags, options, {"grove_model_run_dags", out, capacity, rows});
  });
}

extern "C" grove_status grove_model_run_grids(const grove_model *model, const grove_grids *grids,
                                              const grove_run_options *options, float *out, int64_t capacity,
                                              int64_t *rows) {
  return guarded([&] {
    grove::run_grids(model, grids, options, {"grove_model_run_grids", out, capacity, rows});
  });
}

extern "C" grove_status grove_model_run_sequences(const grove_model *model, const grove_sequences *sequences,
                                                  const grove_run_options *options, float *out,
                                                  int64_t capacity, int64_t *rows) {
  return guarded([&] {
    grove::run_sequences(model, sequences, options, {"grove_model_run_sequences", out, capacity, rows});
  });
}

extern "C" grove_status grove_relay_open(const char *path, const grove_relay_options *options,
                                         grove_relay **program) {
  return guarded([&] {
    grove::require(path, "grove_relay_open", "path");
    grove::require(program, "grove_relay_open", "program");
    *program = grove::open_relay(path, nullptr, options, "grove_relay_open");
  });
}

extern "C" grove_status grove_relay_open_text(const char *text, const grove_relay_options *options,
                                              grove_relay **program) {
  return guarded([&] {
    grove::require(text, "grove_relay_open_text", "text");
    grove::require(program, "grove_relay_open_text", "program");
    *program = grove::open_relay(nullptr, text, options, "grove_relay_open_text");
  });
}

extern "C" void grove_relay_close(grove_relay *program) { delete program; }

extern "C" grove_status grove_relay_num_params(const grove_relay *program, int32_t *count) {
  return guarded([&] {
    grove::require(program, "grove_relay_num_params", "program");
    grove::require(count, "grove_relay_num_params", "count");
    *count = int32_t(program->program->params().size());
  });
}

extern "C" grove_status grove_relay_param_info(const grove_relay *program, int32_t index,
                                               grove_relay_param *param) {
  return guarded([&] {
    grove::require(program, "grove_relay_param_info", "program");
    grove::require(param, "grove_relay_param_info", "param");
    const auto &params = program->program->params();
    grove::check_index(msg::kCApiRelayParamIndex, index, int64_t(params.size()));
    *param = params[index];
  });
}

extern "C" grove_status grove_relay_result_type(const grove_relay *program, const char **type) {
  return guarded([&] {
    grove::require(program, "grove_relay_result_type", "program");
    grove::require(type, "grove_relay_result_type", "type");
    *type = program->program->result_type().c_str();
  });
}

extern "C" grove_status grove_relay_run(const grove_relay *program, const grove_tensor *inputs,
                                        size_t num_inputs, const char *trees, grove_relay_result **result) {
  return guarded([&] {
    grove::require(program, "grove_relay_run", "program");
    grove::require(result, "grove_relay_run", "result");
    grove::check_relay_inputs(inputs, num_inputs);
    auto out = std::make_unique<grove_relay_result>();
    out->result = program->program->run(inputs, num_inputs, trees);
    *result = out.release();
  });
}

extern "C" grove_status grove_relay_result_count(const grove_relay_result *result, int32_t *count) {
  return guarded([&] {
    grove::require(result, "grove_relay_result_count", "result");
    grove::require(count, "grove_relay_result_count", "count");
    *count = int32_t(result->result.tensors.size());
  });
}

extern "C" grove_status grove_relay_result_tensor(const grove_relay_result *result, int32_t index,
                                                  grove_tensor *tensor) {
  return guarded([&] {
    grove::require(result, "grove_relay_result_tensor", "result");
    grove::require(tensor, "grove_relay_result_tensor", "tensor");
    grove::check_index(msg::kCApiRelayResultIndex, index, int64_t(result->result.tensors.size()));
    *tensor = result->result.tensors[index];
  });
}

extern "C" void grove_relay_result_free(grove_relay_result *result) { delete result; }
