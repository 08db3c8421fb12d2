#pragma once
// The CUDA driver API, loaded at run time with dlopen — never linked, so every grove binary starts
// on a machine without a driver — and a model's kernels run on a device through it: the primary
// context, the module loaded from NVRTC's cubin for the device's own architecture, the weights
// copied once when bound, the inspector's arrays in one copy per call, the persistent kernel
// launched cooperatively only (its grid checked against the co-resident blocks the occupancy API
// reports), the per-level kernels with plain launches or, with CudaOptions::graph (the default),
// captured into a CUDA graph on a stream once per call shape and replayed.
//
// The library: $GROVE_CUDA_DRIVER if set (a path or a name for dlopen; the tests name a fake driver,
// tests/backends/cuda/FakeDriver.cpp, that runs the kernels' host build on the CPU), else
// libcuda.so.1. Without it every entry point throws the UserError "no CUDA driver: libcuda.so.1
// could not be loaded (...)". Entry points are loaded by their exported names (the _v2 ones that
// cuda.h maps to in CUDA 12 and 13).
//
// A call's device buffers (the inspector's arrays, the states, the scratch, the barrier counter)
// are kept per call shape — the level count and each buffer's size rounded up to a power of two —
// for the last kCallShapesKept shapes, so that repeated shapes (`grove bench`'s passes) allocate
// nothing and, per level with graphs, replay the graph captured for that shape.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Executor.h"
#include "backends/runtime/Inspector.h"
#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::cuda {

// Call shapes whose buffers (and graph) a DeviceModel keeps; the least recently used goes first.
inline constexpr size_t kCallShapesKept = 32;

// Whether the driver ($GROVE_CUDA_DRIVER or libcuda.so.1) loads and initializes; if not, `why`
// says why.
bool driver_available(std::string *why = nullptr);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  bool cooperative_launch = false;
  int64_t max_shared_optin = 0;  // bytes per block with the opt-in attribute
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
};

// Device `ordinal`'s properties (UserError without a driver or such a device).
DeviceInfo device_info(int ordinal = 0);

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
