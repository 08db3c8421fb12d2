#pragma once
// A model's kernels on a device: the CUDA source emitted for the plan (CudaEmitter.h), compiled by
// NVRTC for the device's own architecture, and run by the runtime's device runner
// (backends/runtime/CudaRunner.h) — the one launch path, which libraries written by `grove compile
// --target cuda` run through too: the primary context, the weights copied once when bound, the
// inspector's arrays in one copy per call, the persistent kernel launched cooperatively only (its
// grid checked against the co-resident blocks the occupancy API reports), the per-level kernels
// with plain launches or, with CudaOptions::graph (the default), captured into a CUDA graph on a
// stream once per call shape and replayed.
//
// The driver is loaded with dlopen (backends/runtime/CudaDriver.h: $GROVE_CUDA_DRIVER, else
// libcuda.so.1), never linked.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/runtime/CudaDriver.h"
#include "backends/runtime/CudaRunner.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Executor.h"
#include "backends/runtime/Inspector.h"
#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::cuda {

// A model's kernels on a device.
class DeviceModel {
 public:
  DeviceModel(const plan::LevelPlan &plan, const CudaOptions &options, int device = 0);
  ~DeviceModel();
  DeviceModel(const DeviceModel &) = delete;
  DeviceModel &operator=(const DeviceModel &) = delete;

  const CudaSource &source() const;
  const DeviceInfo &device() const;
  const ModelAbi &abi() const;
  // The runner (the runtime's launch path) the model runs through.
  const CudaRunner &runner() const;
  CudaRunner &runner();
  // Emitting, NVRTC's compile and loading the module, in milliseconds.
  double compile_ms() const;
  void bind(const Weights &weights);
  Tensor run(std::span<const Tree> trees) const;
  Tensor run_dags(std::span<const Dag> dags, DagOutputs outputs = DagOutputs::Sinks) const;
  // As the CPU Executor runs them (backends/runtime/Executor.h): calls of options.batch inputs,
  // inputs numbered from options.first_number in messages, what ran added to `stats` (compute_ms:
  // each call's copies, launches and synchronization).
  Tensor run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats = nullptr) const;
  Tensor run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats = nullptr) const;
  Tensor run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                       RunStats *stats = nullptr) const;
  std::vector<float> execute(const LinearizedBatch &batch) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cuda
