#pragma once
// Runs a compiled model: binds its weights, linearizes each batch of inputs with the inspector,
// calls the compiled entry function, and gathers the output rows in input order. The JIT
// (cpu::CompiledModel) and libraries written by `grove compile` (CompiledLibrary.h) both run
// through it; it needs only the model's ABI (ModelAbi.h) and its entry points, not the compiler.
//
// Thread safety: run*, from any number of threads at once, and bind* at any time. The bound
// weights are snapshots: a run takes the current one when it starts and uses it for all its
// batches (it never sees two weight sets); a bind checks and packs the new weights outside any
// lock and swaps them in, so it never waits for runs, except — when the weights it replaces are
// the caller's buffers (WeightView) — for the runs that started before it and still read them, so
// that the caller may free those buffers once bind returns.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/runtime/DagInspector.h"
#include "datasets/Dag.h"
#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove {

struct RunOptions {
  int64_t batch = 0;  // trees (DAGs, sequences) per call of the compiled code; 0 = all in one call
  // run_dags only: which nodes' states make the result, and how errors name one input DAG.
  DagOutputs outputs = DagOutputs::Sinks;
  std::string noun = "DAG";  // "DAG", "grid"
  // How errors number the inputs: the first one given is input `first_number` (a streamed chunk
  // passes its place in the file, so that a message names the input the user wrote).
  int64_t first_number = 1;
};

// What one run did, for `grove run` and `make run` to print.
struct RunStats {
  int64_t trees = 0, nodes = 0, levels = 0, calls = 0;
  double inspector_ms = 0, compute_ms = 0;
};

// What the compiled code exports.
struct EntryPoints {
  int (*argv)(void **args) = nullptr;     // Halide's argv entry (ModelAbi.h)
  int (*set_num_threads)(int) = nullptr;  // its Halide runtime's halide_set_num_threads
};

// A weight the caller owns and keeps alive (and unchanged) while the model may run.
struct WeightView {
  const float *data = nullptr;
  std::vector<int64_t> shape;
};

// What runs a compiled model, whichever the target: the Executor (the CPU's compiled code) or the
// CUDA device runner (CudaRunner.h). The C API and CompiledLibrary hold one of these.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual const ModelAbi &abi() const = 0;
  virtual void bind(Weights weights, const std::string &weights_file) = 0;
  virtual void bind(const std::map<std::string, WeightView> &weights, const std::string &weights_file) = 0;
  virtual bool bound() const = 0;
  virtual Tensor run(std::span<const Tree> trees, const RunOptions &options,
                     RunStats *stats = nullptr) const = 0;
  virtual Tensor run_dags(std::span<const Dag> dags, const RunOptions &options,
                          RunStats *stats = nullptr) const = 0;
  // A dag or sequence model over sequences (chain DAGs, through run_dags): the last token's output
  // state of each.
  Tensor run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                       RunStats *stats = nullptr) const;
};

class Executor : public ModelRunner {
 public:
  Executor(ModelAbi abi, EntryPoints entry);
  ~Executor() override;

  const ModelAbi &abi() const override;

  // Checks every weight against the ABI's params (exact names and shapes, nothing extra) and keeps
  // them, packing GEMM panels now when the schedule hoists packing. Replaces any weights bound
  // before, for the runs that start after it (see "Thread safety"). Throws UserError naming
  // `weights_file` and the tensor; the weights bound before stay then.
  void bind(Weights weights, const std::string &weights_file) override;
  // The same over caller-owned buffers: nothing is copied but the packed panels.
  void bind(const std::map<std::string, WeightView> &weights, const std::string &weights_file) override;
  bool bound() const override;

  // The output state of every tree's root, [trees.size(), output_shape...], in input order.
  // Results agree across options.batch to float rounding (a level's last, partial block of nodes runs
  // in a micro-kernel of its own size), not bit for bit. Throws UserError on a tree the model cannot
  // take, or if no weights are bound.
  Tensor run(std::span<const Tree> trees, const RunOptions &options,
             RunStats *stats = nullptr) const override;
  // A dag or sequence model: the output state of every DAG's sinks in node order (or of all its
  // nodes, options.outputs), DAG by DAG, [rows, output_shape...].
  Tensor run_dags(std::span<const Dag> dags, const RunOptions &options,
                  RunStats *stats = nullptr) const override;

 private:
  struct WeightSet;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove
