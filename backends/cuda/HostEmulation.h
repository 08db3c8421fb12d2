#pragma once
// The CUDA kernels run on the CPU: the emitted source (CudaEmitter.h) built by the host C++
// compiler against Simt.h into a shared object, and a call run through it as a GPU run would go —
// the batch linearized by the tree or DAG inspector, the weights packed with the plan's
// PackedWeight layout, the states and the temps' scratch allocated per call, then the persistent
// launch or the per-level launches. This is how the test suite checks the GPU code without a GPU.
//
// Builds are cached per source text within the process (one compiler run per distinct source).
// $CXX names the compiler (default c++). Under ThreadSanitizer the kernels are built with it too;
// $GROVE_CUDA_HOST_FLAGS adds flags (e.g. -fsanitize=thread from a process linked with TSan).

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Inspector.h"
#include "datasets/Dag.h"
#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::cuda {

// A host build of a CudaSource's kernels.
class HostKernels {
 public:
  // Builds (or finds in the process's cache) `source`'s text.
  static std::shared_ptr<const HostKernels> build(const CudaSource &source);
  ~HostKernels();
  // Runs kernel `name` on `blocks` × `threads` host threads; args[i] points to argument i.
  void launch(const std::string &name, void **args, unsigned blocks, unsigned threads,
              size_t shared_bytes) const;
  // The shared object (kept while this build lives): what the tests' fake CUDA driver runs
  // (tests/backends/cuda/FakeDriver.cpp, $GROVE_FAKE_CUDA_KERNELS).
  const std::string &library_path() const;

  struct Impl;

 private:
  explicit HostKernels(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A model's kernels, emulated: the plan's ABI bound the way the CPU Executor binds it.
class EmulatedModel {
 public:
  EmulatedModel(const plan::LevelPlan &plan, const CudaOptions &options);

  const CudaSource &source() const { return source_; }
  const ModelAbi &abi() const { return abi_; }

  // Keeps `weights` (exactly the ABI's params) and packs the GEMM panels.
  void bind(const Weights &weights);

  // The output state of every tree's root, [trees, output...].
  Tensor run(std::span<const Tree> trees) const;
  // A DAG or sequence model: each DAG's sinks (or all nodes), [rows, output...].
  Tensor run_dags(std::span<const Dag> dags, DagOutputs outputs = DagOutputs::Sinks) const;
  // The last token's state of each sequence.
  Tensor run_sequences(std::span<const std::vector<int32_t>> sequences) const;

  // One call over a linearized batch: the output rows of batch.roots.
  std::vector<float> execute(const LinearizedBatch &batch) const;

 private:
  ModelAbi abi_;
  CudaSource source_;
  std::shared_ptr<const HostKernels> kernels_;
  std::vector<std::vector<float>> params_, packed_;
};

}  // namespace grove::cuda
