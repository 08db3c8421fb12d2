#pragma once
// The C++ API: a model compiled for the CPU, ready to run on batches of trees.
//
//   ilir::Program program = dsl::parse_model_file("models/treelstm.grove");
//   Weights weights = read_safetensors("w.safetensors");
//   cpu::CompiledModel model = cpu::CompiledModel::compile(program, weights, {});
//   Tensor roots = model.run(trees, {.batch = 10});   // [trees, H], input order
//
// A `structure dag` or `structure sequence` model runs over DAGs instead (grids are DAGs too):
//   Tensor sinks = model.run_dags(dags, {});           // [sinks of all DAGs, H]
//   Tensor last = model.run_sequences(sequences, {});  // [sequences, H]

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Executor.h"
#include "datasets/Dag.h"
#include "datasets/Tree.h"
#include "ilir/IR.h"
#include "support/Tensor.h"

namespace grove::cpu {

struct CompileOptions {
  std::string target = "host";               // a Halide target string
  std::string weights_file = "the weights";  // names the weights in error messages
  // Overrides over the model's default schedule, e.g. "batch=off,fuse=off" (scheduling/Schedule.h).
  std::string schedule;
  // precision=bf16's kernels (lowering::LowerOptions::bf16_kernel): nullopt, the running CPU's.
  std::optional<GemmKernel> bf16_kernel;
};

using grove::RunOptions;
using grove::RunStats;

class CompiledModel {
 public:
  // Checks `weights` against the program's params (binding its size variables), lowers the
  // program and JIT-compiles it. Throws UserError on bad weights.
  static CompiledModel compile(const ilir::Program &program, const Weights &weights,
                               const CompileOptions &options);

  // The output state of every tree's root, [trees.size(), output size...], in input order.
  // Results agree across options.batch to float rounding (Executor.h). Throws UserError on a tree the model
  // cannot take.
  Tensor run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats = nullptr) const;

  // A dag or sequence model over DAGs: the output state of every DAG's sinks in node order (or of
  // all its nodes, options.outputs), DAG by DAG, [rows, output size...]. A sequence model takes
  // DAGs of at most one predecessor slot per node. Results agree across options.batch to float rounding
  // (Executor.h). Throws UserError on a DAG the model cannot take (naming it options.noun and its number from
  // 1).
  Tensor run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats = nullptr) const;

  // A dag or sequence model over sequences (chain DAGs): the last token's output state of each,
  // [sequences, output size...], in input order.
  Tensor run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                       RunStats *stats = nullptr) const;

  double compile_ms() const;
  std::string schedule() const;  // the schedule in effect, as KEY=VALUE pairs
  // Requested schedule options that could not take effect, one sentence each (Schedule::notes).
  const std::vector<std::string> &notes() const;
  const ModelAbi &abi() const;  // how the compiled code is called
  // What runs it; valid as long as this model (the C API and the Python module rebind through it).
  Executor &executor() const;

  CompiledModel(CompiledModel &&) noexcept;
  CompiledModel &operator=(CompiledModel &&) noexcept;
  ~CompiledModel();

 private:
  struct Impl;
  explicit CompiledModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cpu
