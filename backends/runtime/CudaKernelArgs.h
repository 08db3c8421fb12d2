#pragma once
// A call's kernel arguments and launches, shared by the device runner (CudaRunner.h) and the CUDA
// back end's CPU emulation (backends/cuda/HostEmulation.h): the ABI's arguments in order, then the
// scratch, the barrier's counter and, in the per-level form, the level; and the order in which a
// call launches kernels (abi/ModelAbi.h's CudaLaunch).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"

namespace grove::cuda {

// Where a call's buffers are (host or device addresses, as void *).
struct CallBuffers {
  std::vector<const void *> params, packed;  // per abi.params, abi.packed
  std::vector<void *> states;                // per abi.states
  const void *level_begin = nullptr, *child_begin = nullptr, *children = nullptr, *token = nullptr,
             *team_begin = nullptr;
  void *scratch = nullptr, *barrier = nullptr;
};

// args[i] points to argument i, as cuLaunchKernel's kernelParams and the emulation's launchers take.
class KernelArgs {
 public:
  KernelArgs(const ModelAbi &abi, const CallBuffers &buffers, int32_t num_levels);
  KernelArgs(const KernelArgs &) = delete;
  KernelArgs &operator=(const KernelArgs &) = delete;
  void **argv() { return argv_.data(); }
  void set_level(int32_t level) { level_ = level; }  // the per-level kernels' last argument

 private:
  std::vector<const void *> pointers_;
  std::vector<void *> argv_;
  int32_t num_levels_ = 0, level_ = -1;
};

// Calls `launch(kernel, level)` for each launch of a call over `num_levels` levels, in order: the
// persistent kernel once (level -1), or the per-level form's phases (hoisted, leaf, internal).
void for_each_launch(const CudaLaunch &launch, int32_t num_levels,
                     const std::function<void(const std::string &kernel, int32_t level)> &fn);

}  // namespace grove::cuda
