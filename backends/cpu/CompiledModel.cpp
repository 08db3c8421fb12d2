#include "backends/cpu/CompiledModel.h"

#include <HalideBuffer.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>

#include "backends/cpu/Barrier.h"
#include "backends/cpu/Messages.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Inspector.h"
#include "backends/runtime/TeamPartition.h"
#include "ilir/Error.h"
#include "ilir/IRVisitor.h"
#include "lowering/Lower.h"
#include "lowering/LowerToLoops.h"

namespace grove::cpu {

namespace HI = Halide::Internal;
namespace msg = cpu_messages;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The number of rows of the table that leaves index with their token (the vocabulary size), or -1.
int64_t vocab_size(const ilir::Program &p, const std::map<std::string, int64_t> &sizes) {
  int64_t rows = -1;
  for (const ilir::Compute &op : p.leaf.body)
    ilir::for_each_node(op.value, [&](const ilir::Expr &e) {
      const auto *load = e.as<ilir::Load>();
      if (!load || load->indices.empty()) return;
      const auto *call = load->indices[0].as<ilir::StructCall>();
      if (call && call->fn == ilir::StructFn::Token) {
        int64_t r = ilir::eval_size(p.get(load->tensor).shape[0], sizes);
        rows = rows < 0 ? r : std::min(rows, r);
      }
    });
  return rows;
}

Halide::Target parse_target(const std::string &target) {
  if (target == "host") return Halide::get_host_target();
  if (!Halide::Target::validate_target_string(target)) user_error(msg::kBadTarget, target);
  return Halide::Target(target);
}

}  // namespace

struct CompiledModel::Impl {
  ilir::Program program;
  Weights weights;
  std::map<std::string, int64_t> sizes;
  scheduling::Schedule schedule;
  lowering::LoweredModel lowered;
  std::vector<std::vector<float>> packed;  // filled at compile time when the schedule hoists packing
  std::unique_ptr<HI::JITModule> jit;
  InspectorOptions inspector;
  double compile_ms = 0;

  int64_t numel(const ilir::TensorDecl &t) const {
    int64_t n = 1;
    for (const ilir::Expr &d : t.shape) n *= ilir::eval_size(d, sizes);
    return n;
  }

  // Runs trees[begin, end) in one call of the compiled code; writes roots into `out`.
  void run_batch(std::span<const Tree> trees, int64_t first_tree, float *out, RunStats *stats) const;
  // Runs one linearized batch of `inputs` trees or DAGs: writes the output state of batch.roots, in
  // order, into `out`.
  void execute(const LinearizedBatch &batch, size_t inputs, double inspector_ms, float *out,
               RunStats *stats) const;
  // Runs a batch of DAGs in one call; appends the output rows to `out`.
  void run_dag_batch(std::span<const Dag> dags, const DagInspectorOptions &options, std::vector<float> &out,
                     RunStats *stats) const;
  void check_runs_dags(const std::string &noun) const;
};

CompiledModel::CompiledModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModel::CompiledModel(CompiledModel &&) noexcept = default;
CompiledModel &CompiledModel::operator=(CompiledModel &&) noexcept = default;
CompiledModel::~CompiledModel() = default;

double CompiledModel::compile_ms() const { return impl_->compile_ms; }
std::string CompiledModel::schedule() const { return impl_->schedule.to_string(); }

namespace {

// Packs rows of a weight into the panel layout of lowering::PackedWeight.
std::vector<float> pack(const lowering::PackedWeight &w, const Tensor &param) {
  std::vector<float> out(w.size(), 0.0f);
  int64_t panels = (w.rows + w.panel - 1) / w.panel;
  for (int64_t p = 0; p < panels; p++)
    for (int64_t k = 0; k < w.cols; k++)
      for (int64_t r = 0; r < w.panel && p * w.panel + r < w.rows; r++)
        out[(p * w.cols + k) * w.panel + r] = param.data[(w.row_offset + p * w.panel + r) * w.cols + k];
  return out;
}

}  // namespace

CompiledModel CompiledModel::compile(const ilir::Program &program, const Weights &weights,
                                     const CompileOptions &options) {
  auto t0 = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->program = program;
  impl->sizes = bind_weights(program, weights, options.weights_file);
  impl->weights = weights;
  const Halide::Target target = parse_target(options.target);
  impl->schedule = scheduling::default_schedule(program, lowering::vector_bytes(target));
  impl->schedule.apply(options.schedule, "--schedule");
  if (impl->schedule.threads > 0)
    ::setenv("HL_NUM_THREADS", std::to_string(impl->schedule.threads).c_str(), 1);
  lowering::LowerOptions lower_options;
  lower_options.sizes = impl->sizes;
  lower_options.target = target;
  lower_options.schedule = impl->schedule;
  impl->lowered = lowering::lower(program, lower_options);
  if (impl->schedule.hoist)
    for (const lowering::PackedWeight &w : impl->lowered.packed)
      impl->packed.push_back(pack(w, weights.at(w.param)));
  const HI::LoweredFunc &entry = impl->lowered.module.functions().back();
  impl->jit = std::make_unique<HI::JITModule>(impl->lowered.module, entry,
                                              std::vector<HI::JITModule>{barrier_module()});
  impl->inspector.arity =
      program.structure == ilir::StructureKind::BinaryTree ? ArityRule{2, 2} : ArityRule{1, INT32_MAX};
  impl->inspector.vocab_size = vocab_size(program, impl->sizes);
  impl->compile_ms = ms_since(t0);
  return CompiledModel(std::move(impl));
}

void CompiledModel::Impl::run_batch(std::span<const Tree> trees, int64_t first_tree, float *out,
                                    RunStats *stats) const {
  auto t0 = std::chrono::steady_clock::now();
  InspectorOptions options = inspector;
  options.first_tree_number = first_tree + 1;
  LinearizedBatch batch = linearize(trees, options);
  if (schedule.uses_unroll(lowered.program.structure))
    partition_for_team(batch, schedule.team_size(), schedule.unroll);
  execute(batch, trees.size(), ms_since(t0), out, stats);
}

void CompiledModel::Impl::run_dag_batch(std::span<const Dag> dags, const DagInspectorOptions &options,
                                        std::vector<float> &out, RunStats *stats) const {
  auto t0 = std::chrono::steady_clock::now();
  LinearizedBatch batch = linearize_dags(dags, options);
  double inspector_ms = ms_since(t0);
  int64_t width = numel(program.get(program.output));
  size_t begin = out.size();
  out.resize(begin + batch.roots.size() * width);
  execute(batch, dags.size(), inspector_ms, out.data() + begin, stats);
}

void CompiledModel::Impl::execute(const LinearizedBatch &batch, size_t inputs, double inspector_ms,
                                  float *out, RunStats *stats) const {
  // With empty predecessor slots, every state has one more row, the zero node's, that stays zero.
  int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);

  // Buffers in the order of the entry function's arguments.
  std::map<std::string, Halide::Runtime::Buffer<float>> floats;
  std::map<std::string, Halide::Runtime::Buffer<int32_t>> ints;
  // The lowered program's tensors: its passes may add states (hoisted products).
  for (const ilir::TensorDecl &t : lowered.program.tensors) {
    if (t.kind == ilir::TensorKind::Param) {
      const Tensor &w = weights.at(t.name);
      floats.emplace(lowering::names::param(t.name),
                     Halide::Runtime::Buffer<float>(const_cast<float *>(w.data.data()), (int)w.data.size()));
    } else if (t.kind == ilir::TensorKind::State) {
      int64_t elements = rows * numel(t);
      if (elements > INT32_MAX) user_error(msg::kBatchTooLarge, inputs, batch.num_nodes, t.name, elements);
      Halide::Runtime::Buffer<float> state((int)elements);
      if (batch.zero_node >= 0) {
        float *zero_row = state.data() + int64_t(batch.zero_node) * numel(t);
        std::fill(zero_row, zero_row + numel(t), 0.0f);
      }
      floats.emplace(lowering::names::state(t.name), std::move(state));
    }
  }
  // Without hoisting, packing is part of every call.
  std::vector<std::vector<float>> repacked;
  const std::vector<std::vector<float>> *panels = &packed;
  if (!schedule.hoist) {
    for (const lowering::PackedWeight &w : lowered.packed) repacked.push_back(pack(w, weights.at(w.param)));
    panels = &repacked;
  }
  for (size_t i = 0; i < lowered.packed.size(); i++) {
    auto &v = (*panels)[i];
    floats.emplace(lowered.packed[i].buffer,
                   Halide::Runtime::Buffer<float>(const_cast<float *>(v.data()), (int)v.size()));
  }
  auto int_buffer = [&](const char *name, const std::vector<int32_t> &v) {
    ints.emplace(name, Halide::Runtime::Buffer<int32_t>(const_cast<int32_t *>(v.data()), (int)v.size()));
  };
  int_buffer(lowering::names::kLevelBegin, batch.level_begin);
  int_buffer(lowering::names::kChildBegin, batch.child_begin);
  int_buffer(lowering::names::kChildren, batch.children);
  int_buffer(lowering::names::kToken, batch.token);
  if (schedule.uses_unroll(lowered.program.structure)) {
    static const std::vector<int32_t> kNoLevels{0};  // a batch without levels reads nothing
    int_buffer(lowering::names::kTeamBegin, batch.team_begin.empty() ? kNoLevels : batch.team_begin);
  }
  int32_t num_levels = batch.num_levels;

  std::vector<const void *> argv;
  for (const HI::LoweredArgument &a : lowered.args) {
    if (a.name == lowering::names::kNumLevels) {
      argv.push_back(&num_levels);
    } else if (auto f = floats.find(a.name); f != floats.end()) {
      argv.push_back(f->second.raw_buffer());
    } else {
      auto i = ints.find(a.name);
      GROVE_CHECK(i != ints.end(), "no value for argument {}", a.name);
      argv.push_back(i->second.raw_buffer());
    }
  }
  std::optional<RegionLock> region;
  if (schedule.uses_unroll(lowered.program.structure)) region.emplace(*jit, schedule.team_size());
  auto t1 = std::chrono::steady_clock::now();
  int rc = jit->argv_function()(argv.data());
  if (rc != 0) GROVE_CHECK(false, msg::kRunFailed, rc);
  double compute_ms = ms_since(t1);

  const ilir::TensorDecl &output = program.get(program.output);
  int64_t width = numel(output);
  const float *state = floats.at(lowering::names::state(output.name)).data();
  for (size_t t = 0; t < batch.roots.size(); t++)
    std::copy(state + int64_t(batch.roots[t]) * width, state + int64_t(batch.roots[t] + 1) * width,
              out + t * width);
  if (stats) {
    stats->nodes += batch.num_nodes;
    stats->levels += batch.num_levels;
    stats->calls += 1;
    stats->inspector_ms += inspector_ms;
    stats->compute_ms += compute_ms;
  }
}

Tensor CompiledModel::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  if (options.batch < 0) user_error(msg::kNegativeBatch, options.batch);
  const ilir::Program &program = impl_->program;
  if (ilir::has_predecessor_slots(program.structure))
    user_error(msg::kTreesForDagModel, program.name, ilir::to_string(program.structure));
  const ilir::TensorDecl &output = impl_->program.get(impl_->program.output);
  std::vector<int64_t> shape{int64_t(trees.size())};
  for (const ilir::Expr &d : output.shape) shape.push_back(ilir::eval_size(d, impl_->sizes));
  Tensor result(shape);
  int64_t width = impl_->numel(output);
  int64_t batch = options.batch == 0 ? int64_t(trees.size()) : options.batch;
  if (stats) stats->trees += int64_t(trees.size());
  for (int64_t begin = 0; begin < int64_t(trees.size()); begin += batch) {
    int64_t end = std::min<int64_t>(begin + batch, trees.size());
    impl_->run_batch(trees.subspan(begin, end - begin), begin, result.data.data() + begin * width, stats);
  }
  return result;
}

void CompiledModel::Impl::check_runs_dags(const std::string &noun) const {
  if (!ilir::has_predecessor_slots(program.structure))
    user_error(msg::kDagsForTreeModel, program.name, ilir::to_string(program.structure), noun);
}

Tensor CompiledModel::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  if (options.batch < 0) user_error(msg::kNegativeBatch, options.batch);
  impl_->check_runs_dags(options.noun);
  DagInspectorOptions inspector;
  inspector.slots = ilir::predecessor_slots(impl_->program.structure);
  inspector.vocab_size = impl_->inspector.vocab_size;
  inspector.noun = options.noun;
  inspector.outputs = options.outputs;
  std::vector<float> rows;
  int64_t batch = options.batch == 0 ? int64_t(dags.size()) : options.batch;
  if (stats) stats->trees += int64_t(dags.size());
  for (int64_t begin = 0; begin < int64_t(dags.size()); begin += batch) {
    int64_t end = std::min<int64_t>(begin + batch, dags.size());
    inspector.first_dag_number = begin + 1;
    impl_->run_dag_batch(dags.subspan(begin, end - begin), inspector, rows, stats);
  }
  const ilir::TensorDecl &output = impl_->program.get(impl_->program.output);
  int64_t width = impl_->numel(output);
  std::vector<int64_t> shape{int64_t(rows.size()) / width};
  for (const ilir::Expr &d : output.shape) shape.push_back(ilir::eval_size(d, impl_->sizes));
  Tensor result(shape);
  result.data = std::move(rows);
  return result;
}

Tensor CompiledModel::run_sequences(std::span<const std::vector<int32_t>> sequences,
                                    const RunOptions &options, RunStats *stats) const {
  impl_->check_runs_dags("sequence");
  std::vector<Dag> chains;
  chains.reserve(sequences.size());
  for (const std::vector<int32_t> &tokens : sequences) chains.push_back(chain_dag(tokens));
  RunOptions chain_options = options;
  chain_options.noun = "sequence";
  chain_options.outputs = DagOutputs::Sinks;  // a chain's one sink is its last token
  return run_dags(chains, chain_options, stats);
}

}  // namespace grove::cpu
