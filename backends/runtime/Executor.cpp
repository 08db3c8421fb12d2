#include "backends/runtime/Executor.h"

#include <HalideBuffer.h>

#include <chrono>
#include <climits>
#include <future>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include "backends/runtime/Clock.h"
#include "backends/runtime/CpuFeatures.h"
#include "backends/runtime/Inspector.h"
#include "backends/runtime/Messages.h"
#include "backends/runtime/RunnerShared.h"
#include "backends/runtime/Team.h"
#include "backends/runtime/TeamPartition.h"
#include "support/Error.h"

namespace grove {

namespace msg = runtime_messages;
using Kind = ModelAbi::ArgKind;

// A packed weight's words, on a cache line boundary: the kernels read them a 64-byte vector at a
// time, and a buffer where malloc happens to place it (16-byte aligned) would split every read in
// two lines.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T *p, size_t) { ::operator delete(p, kAlign); }
  bool operator==(const CacheLineAllocator &) const { return true; }
};
using Panels = std::vector<float, CacheLineAllocator<float>>;

// One bound set of weights, immutable once published. A run holds the snapshot it started with
// for all of its batches, so it never mixes two sets; a bind builds the next set outside any lock
// and swaps the pointer.
struct Executor::WeightSet {
  Weights owned;                    // weights bound by value
  std::vector<const float *> data;  // per abi.params: into `owned` or the caller's buffers
  std::vector<Panels> panels;       // per abi.packed, when abi.hoist: its words() 32-bit words
  // Set when `data` points into the caller's buffers: fulfilled when the last run holding this
  // set lets go of it, so that a bind can return only once the caller may free the old buffers.
  std::shared_ptr<std::promise<void>> released;
};

struct Executor::Impl {
  ModelAbi abi;
  EntryPoints entry;

  // The current snapshot (null before the first bind). `current_lock` guards only the pointer:
  // a copy or a swap, never a run or a pack. Concurrent binds each swap out a set of their own.
  mutable std::mutex current_lock;
  std::shared_ptr<const WeightSet> current;

  std::shared_ptr<const WeightSet> snapshot() const {
    std::lock_guard guard(current_lock);
    return current;
  }
  // Publishes `next` (with its panels packed from its data) and waits for the runs still holding
  // the set it replaces only if that set reads the caller's buffers.
  void publish(std::shared_ptr<WeightSet> next);

  // Every packed weight's panels, from `data` (per abi.params).
  std::vector<Panels> pack_panels(const std::vector<const float *> &data) const;

  void run_batch(const WeightSet &w, std::span<const Tree> trees, int64_t first_number, float *out,
                 RunStats *stats) const;
  void run_dag_batch(const WeightSet &w, std::span<const Dag> dags, const DagInspectorOptions &options,
                     std::vector<float> &out, RunStats *stats) const;
  void execute(const WeightSet &w, const LinearizedBatch &batch, size_t inputs, double inspector_ms,
               float *out, RunStats *stats) const;
  void check_runs_dags(const std::string &noun) const;
  // The snapshot a run uses; a UserError if no weights were bound (and the model has params).
  std::shared_ptr<const WeightSet> bound_snapshot() const;
};

Executor::Executor(ModelAbi abi, EntryPoints entry) : impl_(std::make_unique<Impl>()) {
  GROVE_CHECK(entry.argv, "a compiled model without an entry function");
  if (abi.gemm_kernel == GemmKernel::Vdpbf16ps && !cpu_features().avx512bf16)
    user_error(msg::kNeedsAvx512Bf16, abi.model, abi.target);
  if (abi.gemm_kernel == GemmKernel::AmxBf16)
    if (std::string refused = amx_state_refusal(); !refused.empty())
      user_error(msg::kNeedsAmx, abi.model, abi.target, refused);
  impl_->abi = std::move(abi);
  impl_->entry = entry;
  if (impl_->abi.threads > 0 && entry.set_num_threads)
    grow_thread_pool(entry.set_num_threads, impl_->abi.threads);
}

Executor::~Executor() = default;

const ModelAbi &Executor::abi() const { return impl_->abi; }

bool Executor::bound() const { return impl_->snapshot() != nullptr || impl_->abi.params.empty(); }

std::vector<Panels> Executor::Impl::pack_panels(const std::vector<const float *> &data) const {
  std::vector<Panels> out;
  for (const PackedWeight &w : abi.packed) {
    size_t p = 0;
    while (abi.params[p].name != w.param) p++;
    out.emplace_back(w.words());
    pack(w, data[p], out.back().data());
  }
  return out;
}

void Executor::Impl::publish(std::shared_ptr<WeightSet> next) {
  if (abi.hoist) next->panels = pack_panels(next->data);
  std::future<void> old_released;
  {
    std::shared_ptr<const WeightSet> old;
    {
      std::lock_guard guard(current_lock);
      old = std::exchange(current, std::move(next));
    }
    // Only the bind that swapped `old` out reaches its promise.
    if (old && old->released) old_released = old->released->get_future();
  }  // `old` is dropped here: the last run still holding it fulfils the promise
  if (old_released.valid()) old_released.wait();
}

void Executor::bind(Weights weights, const std::string &weights_file) {
  check_weights(impl_->abi, weights, weights_file);
  auto next = std::make_shared<WeightSet>();
  next->owned = std::move(weights);
  next->data = param_data(impl_->abi, next->owned);
  impl_->publish(std::move(next));
}

void Executor::bind(const std::map<std::string, WeightView> &weights, const std::string &weights_file) {
  check_weights(impl_->abi, weights, weights_file);
  for (const auto &[name, view] : weights)
    if (!view.data && Tensor::num_elements(view.shape) > 0)
      user_error(msg::kWeightViewNull, weights_file, name);
  auto released = std::make_shared<std::promise<void>>();
  // The deleter runs where the last holder lets go: a run finishing, or the next bind.
  std::shared_ptr<WeightSet> next(new WeightSet, [released](WeightSet *w) {
    delete w;
    released->set_value();
  });
  next->released = released;
  next->data = param_data(impl_->abi, weights);
  impl_->publish(std::move(next));
}

std::shared_ptr<const Executor::WeightSet> Executor::Impl::bound_snapshot() const {
  std::shared_ptr<const WeightSet> w = snapshot();
  if (!w && !abi.params.empty()) user_error(msg::kNoWeights, abi.model);
  if (!w) {
    static const WeightSet kNone;  // a model without params
    return std::shared_ptr<const WeightSet>(std::shared_ptr<const WeightSet>{}, &kNone);
  }
  return w;
}

void Executor::Impl::run_batch(const WeightSet &w, std::span<const Tree> trees, int64_t first_number,
                               float *out, RunStats *stats) const {
  auto t0 = std::chrono::steady_clock::now();
  LinearizedBatch batch = linearize(trees, inspector_options(abi, first_number));
  if (abi.unroll_team > 0) partition_for_team(batch, abi.unroll_team, abi.unroll);
  execute(w, batch, trees.size(), ms_since(t0), out, stats);
}

void Executor::Impl::run_dag_batch(const WeightSet &w, std::span<const Dag> dags,
                                   const DagInspectorOptions &options, std::vector<float> &out,
                                   RunStats *stats) const {
  auto t0 = std::chrono::steady_clock::now();
  LinearizedBatch batch = linearize_dags(dags, options);
  double inspector_ms = ms_since(t0);
  int64_t width = abi.output_elements();
  size_t begin = out.size();
  out.resize(begin + batch.roots.size() * width);
  execute(w, batch, dags.size(), inspector_ms, out.data() + begin, stats);
}

// Steps:
//   1. Allocate the states (rows = nodes, plus the DAG inspector's zero row, zeroed).
//   2. Pack the weight panels unless they were packed when the weights were bound.
//   3. Build the argument vector in the ABI's order and call the entry function (holding the
//      region lock when the levels run unrolled at a barrier).
//   4. Copy the output rows of batch.roots, in order.
void Executor::Impl::execute(const WeightSet &w, const LinearizedBatch &batch, size_t inputs,
                             double inspector_ms, float *out, RunStats *stats) const {
  int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  std::vector<Halide::Runtime::Buffer<float>> states;
  for (const ModelAbi::State &s : abi.states) {
    int64_t elements = rows * s.row_elements;
    if (elements > INT32_MAX) user_error(msg::kBatchTooLarge, inputs, batch.num_nodes, s.name, elements);
    states.emplace_back(int(elements));
    if (batch.zero_node >= 0) {
      float *zero_row = states.back().data() + int64_t(batch.zero_node) * s.row_elements;
      std::fill(zero_row, zero_row + s.row_elements, 0.0f);
    }
  }

  std::vector<Panels> repacked;
  if (!abi.hoist) repacked = pack_panels(w.data);
  const std::vector<Panels> *packed = abi.hoist ? &w.panels : &repacked;

  static const std::vector<int32_t> kNoLevels{0};  // a batch without levels reads nothing
  std::vector<Halide::Runtime::Buffer<float>> floats;
  std::vector<Halide::Runtime::Buffer<int32_t>> ints;
  floats.reserve(abi.args.size());
  ints.reserve(abi.args.size());
  auto float_buffer = [&](const float *p, int64_t n) {
    return floats.emplace_back(const_cast<float *>(p), int(n)).raw_buffer();
  };
  // A packed weight's buffer: its words as floats, or as twice as many bfloat16 values.
  std::vector<Halide::Runtime::Buffer<void>> bf16s;
  bf16s.reserve(abi.args.size());
  auto packed_buffer = [&](const PackedWeight &pw, const Panels &words) {
    if (pw.element == PackedElement::F32) return float_buffer(words.data(), int64_t(words.size()));
    halide_type_t bf16(halide_type_bfloat, 16);
    return bf16s.emplace_back(bf16, const_cast<float *>(words.data()), int(2 * words.size())).raw_buffer();
  };
  auto int_buffer = [&](const std::vector<int32_t> &v) {
    return ints.emplace_back(const_cast<int32_t *>(v.data()), int(v.size())).raw_buffer();
  };
  int32_t num_levels = batch.num_levels;
  std::vector<void *> argv;
  for (const ModelAbi::Arg &a : abi.args) {
    switch (a.kind) {
      case Kind::Param:
        argv.push_back(float_buffer(w.data[a.index], Tensor::num_elements(abi.params[a.index].shape)));
        break;
      case Kind::Packed:
        argv.push_back(packed_buffer(abi.packed[a.index], (*packed)[a.index]));
        break;
      case Kind::State:
        argv.push_back(states[a.index].raw_buffer());
        break;
      case Kind::LevelBegin:
        argv.push_back(int_buffer(batch.level_begin));
        break;
      case Kind::ChildBegin:
        argv.push_back(int_buffer(batch.child_begin));
        break;
      case Kind::Children:
        argv.push_back(int_buffer(batch.children));
        break;
      case Kind::Token:
        argv.push_back(int_buffer(batch.token));
        break;
      case Kind::TeamBegin:
        argv.push_back(int_buffer(batch.team_begin.empty() ? kNoLevels : batch.team_begin));
        break;
      case Kind::NumLevels:
        argv.push_back(&num_levels);
        break;
      case Kind::Saved:
      case Kind::Gradient:
      case Kind::Parent:
      case Kind::ChildSlot:
      case Kind::ParentBegin:
        GROVE_CHECK(false, "the executor runs a backward program's argument {}", a.name);
    }
  }
  std::optional<RegionLock> region;
  if (abi.unroll_team > 0) region.emplace(entry.set_num_threads, abi.unroll_team);
  auto t1 = std::chrono::steady_clock::now();
  int rc = entry.argv(argv.data());
  if (rc != 0) GROVE_CHECK(false, msg::kRunFailed, rc);
  double compute_ms = ms_since(t1);

  int64_t width = abi.output_elements();
  const float *state = states[abi.output].data();
  for (size_t t = 0; t < batch.roots.size(); t++)
    std::copy(state + int64_t(batch.roots[t]) * width, state + int64_t(batch.roots[t] + 1) * width,
              out + t * width);
  add_call(stats, batch, inspector_ms, compute_ms);
}

Tensor Executor::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(msg::kNegativeBatch, options.batch);
  if (abi.runs_dags()) user_error(msg::kTreesForDagModel, abi.model, abi.structure);
  std::shared_ptr<const WeightSet> weights = impl_->bound_snapshot();
  std::vector<int64_t> shape{int64_t(trees.size())};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  int64_t width = abi.output_elements();
  if (stats) stats->trees += int64_t(trees.size());
  for_each_batch(int64_t(trees.size()), options.batch, [&](int64_t begin, int64_t end) {
    impl_->run_batch(*weights, trees.subspan(begin, end - begin), options.first_number + begin,
                     result.data.data() + begin * width, stats);
  });
  return result;
}

void Executor::Impl::check_runs_dags(const std::string &noun) const {
  if (!abi.runs_dags()) user_error(msg::kDagsForTreeModel, abi.model, abi.structure, noun);
}

Tensor Executor::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(msg::kNegativeBatch, options.batch);
  impl_->check_runs_dags(options.noun);
  std::shared_ptr<const WeightSet> weights = impl_->bound_snapshot();
  DagInspectorOptions inspector = dag_inspector_options(abi, options);
  std::vector<float> rows;
  if (stats) stats->trees += int64_t(dags.size());
  for_each_batch(int64_t(dags.size()), options.batch, [&](int64_t begin, int64_t end) {
    inspector.first_dag_number = options.first_number + begin;
    impl_->run_dag_batch(*weights, dags.subspan(begin, end - begin), inspector, rows, stats);
  });
  return output_rows(abi, std::move(rows));
}

Tensor ModelRunner::run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                                  RunStats *stats) const {
  const ModelAbi &m = abi();
  if (!m.runs_dags()) user_error(msg::kDagsForTreeModel, m.model, m.structure, "sequence");
  std::vector<Dag> chains;
  chains.reserve(sequences.size());
  for (const std::vector<int32_t> &tokens : sequences) chains.push_back(chain_dag(tokens));
  RunOptions chain_options = options;
  chain_options.noun = "sequence";
  chain_options.outputs = DagOutputs::Sinks;  // a chain's one sink is its last token
  return run_dags(chains, chain_options, stats);
}

}  // namespace grove
