#include "backends/cpu/TrainableModel.h"

#include <HalideBuffer.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <functional>

#include "backends/cpu/Abi.h"
#include "backends/cpu/Barrier.h"
#include "backends/cpu/Messages.h"
#include "backends/cpu/TsanParallel.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Clock.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Inspector.h"
#include "ilir/IRPrinter.h"
#include "lowering/cpu/Codegen.h"
#include "plan/Differentiate.h"
#include "plan/LevelPlan.h"
#include "support/Error.h"
#include "support/Parallel.h"

namespace grove::cpu {

namespace HI = Halide::Internal;
namespace msg = cpu_messages;
using Kind = ModelAbi::ArgKind;

namespace {

// One of the two programs, JIT-compiled.
struct Compiled {
  LoweredForCpu lowered;
  std::unique_ptr<lowering::JitCode> jit;
  int (*entry)(void **) = nullptr;
  std::vector<std::vector<float>> panels;  // per abi.packed, filled when weights are set

  Compiled(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
           const CompileOptions &options, const std::string &function)
      : lowered(lower_for_cpu(program, sizes, options, /*jit=*/true, function)) {
    if (lowered.abi.unroll > 1) user_error(msg::kTrainingUnrolled, program.name);
    GROVE_CHECK(!kTsanBuild || jit_parallel_loops_on_threads(), "the JIT's parallel loops are not routed");
    jit = std::make_unique<lowering::JitCode>(lowered.lowered, std::vector<HI::JITModule>{barrier_module()});
    entry = reinterpret_cast<int (*)(void **)>(jit->module().argv_function());
  }
  const ModelAbi &abi() const { return lowered.abi; }
};

// The argument vector of one call, with the Halide buffers it points to.
class Args {
 public:
  explicit Args(size_t n) {
    floats_.reserve(n);
    ints_.reserve(n);
  }
  void floats(const float *p, int64_t n) {
    GROVE_CHECK(n <= INT32_MAX, "a buffer of {} floats", n);
    argv_.push_back(floats_.emplace_back(const_cast<float *>(p), int(std::max<int64_t>(n, 1))).raw_buffer());
  }
  void ints(const std::vector<int32_t> &v) {
    static const int32_t kNone = 0;
    const int32_t *p = v.empty() ? &kNone : v.data();
    argv_.push_back(
        ints_.emplace_back(const_cast<int32_t *>(p), int(std::max<size_t>(v.size(), 1))).raw_buffer());
  }
  void scalar(int32_t *v) { argv_.push_back(v); }
  void **data() { return argv_.data(); }

 private:
  std::vector<Halide::Runtime::Buffer<float>> floats_;
  std::vector<Halide::Runtime::Buffer<int32_t>> ints_;
  std::vector<void *> argv_;
};

int index_of(const std::vector<ModelAbi::State> &states, const std::string &name) {
  for (size_t i = 0; i < states.size(); i++)
    if (states[i].name == name) return int(i);
  return -1;
}

}  // namespace

struct TrainableModel::Impl {
  plan::Derivative d;
  std::map<std::string, int64_t> sizes;
  std::string weights_file;
  std::optional<Compiled> forward, backward;
  std::vector<training::ParamInfo> params;
  std::string embedding;
  // The caller's params, read in place (GradientModel::set_weights), and the backward's transposed
  // blocks, owned.
  std::map<std::string, const float *> weights;
  Weights transposed;
  // Per d.transposed: whether the backward's code reads the block in place (not only its panels),
  // so it is written out.
  std::vector<bool> transposed_read;
  Stats stats;

  // The last forward.
  bool has_forward = false;
  LinearizedBatch batch;
  std::vector<int32_t> id_of_row;          // the batch's id of every output row
  std::vector<std::vector<float>> states;  // per forward abi.states: (nodes + 1) rows
  training::NodeStates out;
  // The backward's buffers, kept from call to call (every row a call reads it writes first, but the
  // zero node's).
  std::vector<std::vector<float>> backward_states;
  // Gradients handed back by recycle(): the next backward's gradient tensors, cleared and written
  // in place, and returned.
  training::Gradients spare;
  std::vector<float> seed;

  const training::ParamInfo &param(const std::string &name) const {
    for (const training::ParamInfo &p : params)
      if (p.name == name) return p;
    GROVE_CHECK(false, "no param {}", name);
  }

  const float *param_data(const std::string &name) const {
    auto it = weights.find(name);
    GROVE_CHECK(it != weights.end(), "no weight {} bound", name);
    return it->second;
  }

  // The packing of `c`'s weights into its panels, one job per panel (sized here); a transposed
  // block is packed from its param's rows.
  void pack_jobs(Compiled &c, std::vector<std::function<void()>> &jobs) {
    c.panels.resize(c.abi().packed.size());
    for (size_t i = 0; i < c.panels.size(); i++) {
      const PackedWeight &w = c.abi().packed[i];
      float *panel = (c.panels[i].resize(size_t(w.words())), c.panels[i].data());
      auto t = std::find_if(d.transposed.begin(), d.transposed.end(),
                            [&](const plan::TransposedWeight &t) { return t.name == w.param; });
      if (t == d.transposed.end()) {
        jobs.push_back([this, &w, panel] { grove::pack(w, param_data(w.param), panel); });
        continue;
      }
      jobs.push_back([this, &w, t, panel] {
        grove::pack_transposed(w, param_data(t->param), param(t->param).shape[1],
                               ilir::eval_size(t->row_offset, sizes), panel);
      });
    }
  }

  int threads() const { return forward->lowered.lowered.plan.recursion.threads; }

  // The common arguments: params, packed panels, the inspector's arrays. `state`, `saved` and
  // `gradient` give the buffers of those kinds by their index.
  void call(const Compiled &c, auto state, auto saved, auto gradient,
            const std::vector<int32_t> &parent_begin, const std::vector<int32_t> &parent,
            const std::vector<int32_t> &slot) {
    const ModelAbi &abi = c.abi();
    Args args(abi.args.size());
    int32_t num_levels = batch.num_levels;
    for (const ModelAbi::Arg &a : abi.args) {
      switch (a.kind) {
        case Kind::Param:
          args.floats(param_data(abi.params[a.index].name), Tensor::num_elements(abi.params[a.index].shape));
          break;
        case Kind::Packed:
          args.floats(c.panels[a.index].data(), int64_t(c.panels[a.index].size()));
          break;
        case Kind::State: {
          auto [p, n] = state(a.index);
          args.floats(p, n);
          break;
        }
        case Kind::Saved: {
          auto [p, n] = saved(a.index);
          args.floats(p, n);
          break;
        }
        case Kind::Gradient: {
          auto [p, n] = gradient(a.index);
          args.floats(p, n);
          break;
        }
        case Kind::LevelBegin:
          args.ints(batch.level_begin);
          break;
        case Kind::ChildBegin:
          args.ints(batch.child_begin);
          break;
        case Kind::Children:
          args.ints(batch.children);
          break;
        case Kind::Token:
          args.ints(batch.token);
          break;
        case Kind::Parent:
          args.ints(parent);
          break;
        case Kind::ChildSlot:
          args.ints(slot);
          break;
        case Kind::ParentBegin:
          args.ints(parent_begin);
          break;
        case Kind::NumLevels:
          args.scalar(&num_levels);
          break;
        case Kind::TeamBegin:
          GROVE_CHECK(false, "a training program runs unrolled");
      }
    }
    int rc = c.entry(args.data());
    GROVE_CHECK(rc == 0, "a training program's entry function failed with {}", rc);
  }
};

TrainableModel::TrainableModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrainableModel::~TrainableModel() = default;

std::unique_ptr<TrainableModel> TrainableModel::compile(const ilir::Program &program, const Weights &weights,
                                                        const CompileOptions &options) {
  auto impl = std::make_unique<Impl>();
  impl->sizes = bind_weights(program, weights, options.weights_file);
  impl->weights_file = options.weights_file;
  impl->d = plan::differentiate(program);
  impl->forward.emplace(impl->d.forward, impl->sizes, options, "grove_train_forward");
  impl->backward.emplace(impl->d.backward, impl->sizes, options, "grove_train_backward");
  for (const plan::TransposedWeight &t : impl->d.transposed)
    impl->transposed_read.push_back(plan::reads_in_place(impl->backward->lowered.lowered.plan, t.name));
  for (const ModelAbi::Param &p : impl->forward->abi().params) impl->params.push_back({p.name, p.shape});
  // The embedding: the first param (in declaration order) read at a token; any other table read at
  // a token (MV-RNN's matrices) gets a dense gradient.
  for (const training::ParamInfo &p : impl->params)
    for (const plan::RowGradient &r : impl->d.rows)
      if (impl->embedding.empty() && r.param == p.name) impl->embedding = p.name;
  auto model = std::unique_ptr<TrainableModel>(new TrainableModel(std::move(impl)));
  model->set_weights(weights);
  return model;
}

const std::vector<training::ParamInfo> &TrainableModel::params() const { return impl_->params; }
const TrainableModel::Stats &TrainableModel::stats() const { return impl_->stats; }
int TrainableModel::threads() const { return impl_->threads(); }
const std::string &TrainableModel::embedding() const { return impl_->embedding; }

std::string TrainableModel::backward_ilir() const { return ilir::to_string(impl_->d.backward); }
std::string TrainableModel::backward_plan() const {
  return plan::to_string(impl_->backward->lowered.lowered.plan);
}

void TrainableModel::set_weights(const Weights &weights) {
  Impl &m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, const float *> next;
  for (const training::ParamInfo &p : m.params) {
    auto it = weights.find(p.name);
    if (it == weights.end())
      user_error(msg::kTrainingWeightMissing, m.weights_file, p.name, shape_string(p.shape));
    if (it->second.shape != p.shape || it->second.size() != Tensor::num_elements(p.shape))
      user_error(msg::kTrainingWeightShape, m.weights_file, p.name, shape_string(it->second.shape),
                 shape_string(p.shape));
    next[p.name] = it->second.data.data();
  }
  // The backward's transposed blocks, T[k, r] = P[row_offset + r, k], where the code reads them in
  // place, and every panel: one job each, split among the model's threads (each writes its own
  // buffer). A block read only through its panels is passed as its param's rows, never read.
  std::vector<std::function<void()>> jobs;
  for (size_t i = 0; i < m.d.transposed.size(); i++) {
    const plan::TransposedWeight &t = m.d.transposed[i];
    const Tensor &p = weights.at(t.param);
    const int64_t r0 = ilir::eval_size(t.row_offset, m.sizes), rows = ilir::eval_size(t.rows, m.sizes);
    const int64_t cols = p.shape[1];
    if (!m.transposed_read[i]) {
      next[t.name] = p.data.data() + r0 * cols;  // rows × cols floats, as many as the block's
      continue;
    }
    Tensor &out = m.transposed[t.name];
    if (out.shape != std::vector<int64_t>{cols, rows}) out = Tensor({cols, rows});
    next[t.name] = out.data.data();
    jobs.push_back([&p, &out, r0, rows, cols] {
      // In tiles of kTile × kTile, each tile's rows and columns in the caches.
      constexpr int64_t kTile = 32;
      for (int64_t rt = 0; rt < rows; rt += kTile)
        for (int64_t kt = 0; kt < cols; kt += kTile)
          for (int64_t r = rt; r < std::min(rows, rt + kTile); r++)
            for (int64_t k = kt; k < std::min(cols, kt + kTile); k++)
              out.data[size_t(k * rows + r)] = p.data[size_t((r0 + r) * cols + k)];
    });
  }
  m.weights = std::move(next);
  m.pack_jobs(*m.forward, jobs);
  m.pack_jobs(*m.backward, jobs);
  parallel_jobs(jobs, m.threads());
  m.stats.set_weights_ms += ms_since(t0);
}

const training::NodeStates &TrainableModel::forward(std::span<const Tree> trees) {
  Impl &m = *impl_;
  const ModelAbi &abi = m.forward->abi();
  if (abi.runs_dags()) user_error(msg::kTrainingNeedsDags, abi.model, abi.structure);
  InspectorOptions options;
  options.arity = {abi.min_children, abi.max_children};
  options.vocab_size = abi.vocab_size;
  options.keep_ids = true;
  m.has_forward = false;
  const auto t0 = std::chrono::steady_clock::now();
  m.batch = linearize(trees, options);
  m.id_of_row = m.batch.id_of_row;
  m.stats.inspector_ms += ms_since(t0);
  std::vector<int64_t> offsets{0};
  for (const Tree &t : trees) offsets.push_back(offsets.back() + t.size());
  return run_forward(std::move(offsets));
}

const training::NodeStates &TrainableModel::forward_dags(std::span<const Dag> dags) {
  Impl &m = *impl_;
  const ModelAbi &abi = m.forward->abi();
  if (!abi.runs_dags()) user_error(msg::kTrainingNeedsTrees, abi.model, abi.structure);
  DagInspectorOptions options;
  options.slots = abi.predecessor_slots;
  options.vocab_size = abi.vocab_size;
  options.outputs = DagOutputs::AllNodes;  // roots: every node, DAG by DAG in node order
  m.has_forward = false;
  const auto t0 = std::chrono::steady_clock::now();
  m.batch = linearize_dags(dags, options);
  m.id_of_row = m.batch.roots;
  m.stats.inspector_ms += ms_since(t0);
  std::vector<int64_t> offsets{0};
  for (const Dag &d : dags) offsets.push_back(offsets.back() + d.size());
  return run_forward(std::move(offsets));
}

const training::NodeStates &TrainableModel::run_forward(std::vector<int64_t> offsets) {
  Impl &m = *impl_;
  const ModelAbi &abi = m.forward->abi();
  const auto t1 = std::chrono::steady_clock::now();
  // Every node's row of every state is written (a case computes each state, zero where it has no
  // value), so the buffers are reused as they are; only the zero node's row is cleared.
  const int64_t rows = int64_t(m.batch.num_nodes) + 1;  // and the zero node's
  m.states.resize(abi.states.size());
  for (size_t i = 0; i < abi.states.size(); i++) {
    const int64_t width = abi.states[i].row_elements;
    m.states[i].resize(size_t(rows * width));
    std::fill(m.states[i].end() - width, m.states[i].end(), 0.0f);
  }
  auto state = [&](int i) { return std::pair{m.states[i].data(), int64_t(m.states[i].size())}; };
  auto none = [](int) -> std::pair<float *, int64_t> {
    GROVE_CHECK(false, "a forward with backward arguments");
  };
  const auto t2 = std::chrono::steady_clock::now();
  m.call(*m.forward, state, none, none, {}, {}, {});
  const auto t3 = std::chrono::steady_clock::now();
  m.stats.forward_ms += ms_since(t2);
  // Every node's output, input by input in each one's own numbering.
  training::NodeStates &out = m.out;
  out.width = abi.output_elements();
  out.tree_offset = std::move(offsets);
  out.rows.resize(size_t(out.nodes() * out.width));
  GROVE_CHECK(int64_t(m.id_of_row.size()) == out.nodes(), "{} rows for {} nodes", m.id_of_row.size(),
              out.nodes());
  const std::vector<float> &h = m.states[size_t(abi.output)];
  for (int64_t r = 0; r < out.nodes(); r++) {
    const float *row = h.data() + int64_t(m.id_of_row[size_t(r)]) * out.width;
    std::copy(row, row + out.width, out.rows.data() + r * out.width);
  }
  m.has_forward = true;
  m.stats.forwards++;
  m.stats.runtime_ms += ms_since(t1) - ms_since(t2) + ms_since(t3);
  return out;
}

training::Gradients TrainableModel::backward(std::span<const float> d_rows) {
  Impl &m = *impl_;
  GROVE_CHECK(m.has_forward, "backward() without a forward()");
  const training::NodeStates &out = m.out;
  GROVE_CHECK(int64_t(d_rows.size()) == out.nodes() * out.width,
              "backward() with {} values for {} rows of {}", d_rows.size(), out.nodes(), out.width);
  const ModelAbi &fabi = m.forward->abi(), &abi = m.backward->abi();
  const LinearizedBatch &batch = m.batch;
  const int32_t nodes = batch.num_nodes;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t rows = int64_t(nodes) + 1;
  // Trees: each node's parent and its child slot there, the zero node (row `nodes`, all zeros) for
  // a root. DAGs and sequences: each node's successors from parent_begin[n], and the slot of each
  // that it fills (a zero node's empty slots have no successor to gather from).
  std::vector<int32_t> parent_begin, parent, slot;
  if (abi.args.end() != std::find_if(abi.args.begin(), abi.args.end(),
                                     [](const ModelAbi::Arg &a) { return a.kind == Kind::ParentBegin; })) {
    parent_begin.assign(size_t(nodes) + 1, 0);
    for (int32_t c : batch.children)
      if (c < nodes) parent_begin[size_t(c) + 1]++;
    for (int32_t n = 0; n < nodes; n++) parent_begin[size_t(n) + 1] += parent_begin[size_t(n)];
    parent.resize(size_t(parent_begin.back()));
    slot.resize(parent.size());
    std::vector<int32_t> next(parent_begin.begin(), parent_begin.end() - 1);
    for (int32_t p = 0; p < nodes; p++)
      for (int32_t k = batch.child_begin[p]; k < batch.child_begin[p + 1]; k++) {
        const int32_t c = batch.children[k];
        if (c >= nodes) continue;
        parent[size_t(next[size_t(c)])] = p;
        slot[size_t(next[size_t(c)]++)] = k - batch.child_begin[p];
      }
  } else {
    parent.assign(size_t(nodes), nodes);
    slot.assign(size_t(nodes), 0);
    for (int32_t p = 0; p < nodes; p++)
      for (int32_t k = batch.child_begin[p]; k < batch.child_begin[p + 1]; k++) {
        parent[size_t(batch.children[k])] = p;
        slot[size_t(batch.children[k])] = k - batch.child_begin[p];
      }
  }
  m.stats.inspector_ms += ms_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<float> &seed = m.seed;
  seed.resize(size_t(rows * out.width));
  std::fill(seed.end() - out.width, seed.end(), 0.0f);
  for (int64_t r = 0; r < out.nodes(); r++)
    std::copy(d_rows.data() + r * out.width, d_rows.data() + (r + 1) * out.width,
              seed.data() + int64_t(m.id_of_row[size_t(r)]) * out.width);
  // The states' rows are written before they are read (a child reads its parent's row, a root the
  // zero node's), so only the zero node's row is cleared; the gradients are sums, cleared.
  std::vector<std::vector<float>> &states = m.backward_states;
  states.resize(abi.states.size());
  for (size_t i = 0; i < abi.states.size(); i++) {
    const int64_t width = abi.states[i].row_elements;
    states[i].resize(size_t(rows * width));
    std::fill(states[i].end() - width, states[i].end(), 0.0f);
  }
  // The weight gradients are sums, cleared; each is written in place in the tensor returned for
  // its param (a recycled one's buffer where there is one).
  std::vector<Tensor> grads(abi.gradients.size());
  std::vector<const std::string *> grad_param(abi.gradients.size(), nullptr);
  for (size_t i = 0; i < abi.gradients.size(); i++) {
    for (const auto &[param, tensor] : m.d.gradients)
      if (tensor == abi.gradients[i].name) grad_param[i] = &param;
    GROVE_CHECK(grad_param[i], "the backward's gradient {} is no param's", abi.gradients[i].name);
    const std::vector<int64_t> &shape = m.param(*grad_param[i]).shape;
    GROVE_CHECK(Tensor::num_elements(shape) == Tensor::num_elements(abi.gradients[i].shape),
                "gradient {} of {} values for param {} of {}", abi.gradients[i].name,
                Tensor::num_elements(abi.gradients[i].shape), *grad_param[i], shape_string(shape));
    auto spare = m.spare.dense.find(*grad_param[i]);
    if (spare != m.spare.dense.end()) grads[i].data = std::move(spare->second.data);
    grads[i].shape = shape;
    grads[i].data.assign(size_t(Tensor::num_elements(shape)), 0.0f);
  }
  auto state = [&](int i) { return std::pair{states[i].data(), int64_t(states[i].size())}; };
  auto saved = [&](int i) {
    const std::string &name = abi.saved[size_t(i)].name;
    if (name == m.d.seed) return std::pair{seed.data(), int64_t(seed.size())};
    int f = index_of(fabi.states, name);
    GROVE_CHECK(f >= 0, "the backward reads {}, which the forward does not keep", name);
    return std::pair{m.states[size_t(f)].data(), int64_t(m.states[size_t(f)].size())};
  };
  auto gradient = [&](int i) { return std::pair{grads[i].data.data(), grads[i].size()}; };
  const auto t2 = std::chrono::steady_clock::now();
  m.call(*m.backward, state, saved, gradient, parent_begin, parent, slot);
  const auto t3 = std::chrono::steady_clock::now();
  m.stats.backward_ms += ms_since(t2);

  training::Gradients g;
  for (size_t i = 0; i < abi.gradients.size(); i++) g.dense[*grad_param[i]] = std::move(grads[i]);
  for (const auto &[param, tensor] : m.d.gradients)
    if (!g.dense.count(param)) g.dense[param] = Tensor(m.param(param).shape);  // no reduction into it
  // The tables read at a token: every reader's row gradient added to its token's row — the
  // embedding's as sparse rows, another table's (MV-RNN's matrices) into a dense gradient.
  // The readers: the leaves of a tree, every node of a DAG or sequence.
  const int32_t readers = fabi.runs_dags() ? nodes : batch.num_leaves;
  for (const plan::RowGradient &rg : m.d.rows) {
    int s = index_of(abi.states, rg.state);
    GROVE_CHECK(s >= 0, "no row gradient state {}", rg.state);
    const int64_t width = abi.states[size_t(s)].row_elements;
    const float *rows_at = states[size_t(s)].data();
    if (rg.param != m.embedding) {
      Tensor dense(m.param(rg.param).shape);
      for (int32_t n = 0; n < readers; n++) {
        float *dst = dense.data.data() + int64_t(batch.token[size_t(n)]) * width;
        for (int64_t k = 0; k < width; k++) dst[k] += rows_at[int64_t(n) * width + k];
      }
      g.dense[rg.param] = std::move(dense);
      continue;
    }
    std::vector<int32_t> tokens(batch.token.begin(), batch.token.begin() + readers);
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    g.embedding_rows = tokens;
    g.embedding_grad.data = std::move(m.spare.embedding_grad.data);
    g.embedding_grad.shape = {int64_t(tokens.size()), width};
    g.embedding_grad.data.assign(tokens.size() * size_t(width), 0.0f);
    for (int32_t n = 0; n < readers; n++) {
      size_t r =
          size_t(std::lower_bound(tokens.begin(), tokens.end(), batch.token[size_t(n)]) - tokens.begin());
      const float *src = rows_at + int64_t(n) * width;
      float *dst = g.embedding_grad.data.data() + int64_t(r) * width;
      for (int64_t k = 0; k < width; k++) dst[k] += src[k];
    }
  }
  m.stats.backwards++;
  m.stats.runtime_ms += ms_since(t1) - ms_since(t2) + ms_since(t3);
  m.spare = {};
  return g;
}

void TrainableModel::recycle(training::Gradients &&spent) { impl_->spare = std::move(spent); }

}  // namespace grove::cpu
