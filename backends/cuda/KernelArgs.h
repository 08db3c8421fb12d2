#pragma once
// A call's kernel arguments and launch order (backends/runtime/CudaKernelArgs.h, shared with the
// device runner), and the launch description of an emitted source.

#include "abi/ModelAbi.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/runtime/CudaKernelArgs.h"

namespace grove::cuda {

// What the host needs of `source` to launch it (abi/ModelAbi.h's CudaLaunch; no images).
CudaLaunch cuda_launch(const CudaSource &source);

// for_each_launch over cuda_launch(source).
void for_each_launch(const CudaSource &source, int32_t num_levels,
                     const std::function<void(const std::string &kernel, int32_t level)> &launch);

}  // namespace grove::cuda
