#pragma once
// A model's CUDA kernels run on a device from their compiled images alone: what a library written
// by `grove compile --target cuda` opens through the C API (CompiledLibrary.h) with only
// libgrove_runtime — no NVRTC, no emitter, no Halide — and what the CUDA back end's DeviceModel
// (backends/cuda/Driver.h) runs after its NVRTC compile. One launch path:
//   * opening: the device and its primary context; the image for the device's architecture — the
//     cubin of its own major architecture with the highest minor not above the device's, else the
//     PTX of the highest architecture not above it (cuModuleLoadData JIT-compiles PTX), else a
//     UserError naming what the library holds; each kernel's shared memory raised past 48 KB
//     where it needs it; for the persistent form a cooperative device and a grid that fits the
//     co-resident blocks the occupancy API reports; per level with graphs, the stream to capture on;
//   * binding: the weights checked against the ABI's params and copied to the device once, their
//     GEMM panels packed with abi/ModelAbi.h's PackedWeight layout;
//   * a call: the inspector's arrays in one copy into buffers kept per call shape (the level count
//     and each buffer's size rounded up to a power of two; the last kCallShapesKept shapes), the
//     states and the barrier zeroed, the launches — the persistent kernel cooperatively, or per level
//     replaying the shape's CUDA graph (captured on its first call) or launched one by one — and the
//     output state back in one copy.
//
// Threads: run* from any number of threads (calls take turns on the device: the scratch and the
// barrier are the model's) and bind* at any time. Bound weights are snapshots as the Executor's
// (Executor.h): a run uses the set bound when it started for all its calls; a bind uploads the new
// set without waiting for runs and swaps it in (a graph captured over an older set is captured again).
// Device failures (no driver, no device, no image for it, a grid too large, out of memory) are
// UserErrors with the driver's message.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/runtime/CudaDriver.h"
#include "backends/runtime/Executor.h"
#include "backends/runtime/Inspector.h"

namespace grove::cuda {

// Call shapes whose buffers (and graph) a runner keeps; the least recently used goes first.
inline constexpr size_t kCallShapesKept = 32;

// A compiled image of the kernels: a cubin ("sm_90") or PTX text ("compute_90"). Not owned.
struct CudaImage {
  std::string arch;
  const void *data = nullptr;
  size_t size = 0;
};

// The image that runs on a device of compute capability major.minor (see above), or -1.
int choose_cuda_image(const std::vector<std::string> &arches, int major, int minor);

class CudaRunner : public ModelRunner {
 public:
  // `abi.cuda` says how to launch; `images` are the kernels compiled; `where` names them in
  // messages (the library's path, or the model).
  CudaRunner(ModelAbi abi, const std::vector<CudaImage> &images, const std::string &where, int device = 0);
  ~CudaRunner() override;
  CudaRunner(const CudaRunner &) = delete;
  CudaRunner &operator=(const CudaRunner &) = delete;

  const ModelAbi &abi() const override;
  const DeviceInfo &device() const;
  const std::string &loaded_arch() const;  // the image loaded: "sm_90", "compute_90"

  bool bound() const override;
  void bind(Weights weights, const std::string &weights_file) override;
  void bind(const std::map<std::string, WeightView> &weights, const std::string &weights_file) override;

  Tensor run(std::span<const Tree> trees, const RunOptions &options,
             RunStats *stats = nullptr) const override;
  Tensor run_dags(std::span<const Dag> dags, const RunOptions &options,
                  RunStats *stats = nullptr) const override;
  // One call over a linearized batch with the weights bound now: the output rows of batch.roots.
  std::vector<float> execute(const LinearizedBatch &batch) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cuda
