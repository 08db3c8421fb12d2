#include "backends/cpu/CompiledModel.h"

#include <chrono>
#include <cstdlib>
#include <optional>

#include "backends/cpu/Abi.h"
#include "backends/cpu/Barrier.h"
#include "backends/cpu/TsanParallel.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Clock.h"
#include "lowering/cpu/Codegen.h"
#include "lowering/cpu/Lower.h"
#include "support/Error.h"

namespace grove::cpu {

namespace HI = Halide::Internal;

struct CompiledModel::Impl {
  std::unique_ptr<lowering::JitCode> jit;
  std::optional<Executor> executor;
  double compile_ms = 0;
  std::vector<std::string> notes;
};

CompiledModel::CompiledModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModel::CompiledModel(CompiledModel &&) noexcept = default;
CompiledModel &CompiledModel::operator=(CompiledModel &&) noexcept = default;
CompiledModel::~CompiledModel() = default;

double CompiledModel::compile_ms() const { return impl_->compile_ms; }
std::string CompiledModel::schedule() const { return impl_->executor->abi().schedule; }
const std::vector<std::string> &CompiledModel::notes() const { return impl_->notes; }
const ModelAbi &CompiledModel::abi() const { return impl_->executor->abi(); }
Executor &CompiledModel::executor() const { return *impl_->executor; }

CompiledModel CompiledModel::compile(const ilir::Program &program, const Weights &weights,
                                     const CompileOptions &options) {
  auto t0 = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  std::map<std::string, int64_t> sizes = bind_weights(program, weights, options.weights_file);
  LoweredForCpu lowered = lower_for_cpu(program, sizes, options, /*jit=*/true);
  impl->notes = lowered.notes(program.structure);
  // With Halide's JIT feature the module links against the one shared JIT runtime instead of
  // carrying a runtime of its own: halide_set_num_threads found below then sizes the thread pool
  // the code runs on (no HL_NUM_THREADS), and compiling skips linking a runtime per model.

  // Under ThreadSanitizer the code's parallel loops run on std::threads TSan sees (TsanParallel.h).
  GROVE_CHECK(!kTsanBuild || jit_parallel_loops_on_threads(), "the JIT's parallel loops are not routed");

  impl->jit =
      std::make_unique<lowering::JitCode>(lowered.lowered, std::vector<HI::JITModule>{barrier_module()});
  const HI::JITModule &jit = impl->jit->module();
  EntryPoints entry_points;
  // The JIT takes const void **, AOT code void **: the same calling convention.
  entry_points.argv = reinterpret_cast<int (*)(void **)>(jit.argv_function());
  entry_points.set_num_threads =
      reinterpret_cast<int (*)(int)>(jit.find_symbol_by_name("halide_set_num_threads").address);
  impl->executor.emplace(std::move(lowered.abi), entry_points);
  impl->executor->bind(weights, options.weights_file);
  impl->compile_ms = ms_since(t0);
  return CompiledModel(std::move(impl));
}

Tensor CompiledModel::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  return impl_->executor->run(trees, options, stats);
}

Tensor CompiledModel::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  return impl_->executor->run_dags(dags, options, stats);
}

Tensor CompiledModel::run_sequences(std::span<const std::vector<int32_t>> sequences,
                                    const RunOptions &options, RunStats *stats) const {
  return impl_->executor->run_sequences(sequences, options, stats);
}

}  // namespace grove::cpu
