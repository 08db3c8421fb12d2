#pragma once
// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") — never linked, so every
// grove binary starts on a machine without a driver — and a model's kernels run on a device
// through it: the primary context, the module loaded from NVRTC's cubin for the device's own
// architecture, the weights copied once when bound, the inspector's arrays in one copy per call,
// the persistent kernel launched cooperatively only (its grid checked against the co-resident
// blocks the occupancy API reports), the per-level kernels with plain launches.
//
// Without a driver every entry point throws the UserError "no CUDA driver: libcuda.so.1 could not
// be loaded (...)". Not exercised here (no GPU): experiments with a lent H200 are to run it.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Inspector.h"
#include "datasets/Tree.h"
#include "support/Tensor.h"

namespace grove::cuda {

// Whether libcuda.so.1 loads and initializes; if not, `why` says why.
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
  void bind(const Weights &weights);
  Tensor run(std::span<const Tree> trees) const;
  Tensor run_dags(std::span<const Dag> dags, DagOutputs outputs = DagOutputs::Sinks) const;
  std::vector<float> execute(const LinearizedBatch &batch) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cuda
