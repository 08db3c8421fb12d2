#pragma once
// The Halide kernel compiler: each Primitive function (one fused group) becomes one Halide
// pipeline, JIT-compiled for the concrete input shapes and cached by (function, dtypes, shapes).
// Elementwise, broadcast and injective ops are inlined into their consumers; reductions, pools,
// softmax's statistics and the anchor ops (nn.dense, nn.batch_matmul as register-blocked GEMMs,
// nn.conv2d as a tiled direct convolution) are root stages; outputs are vectorized, and parallel
// when big enough. The kernels' parallel loops run on the compiler's own thread pool, whose workers
// spin between loops (HalideKernels.cpp), not on Halide's.
// Ops or dtypes it cannot lower are a UserError naming the op and its location, so the VM can fall
// back to the interpreter's kernels.

#include <memory>
#include <string>

#include "backends/relay/Kernel.h"

namespace grove::relay {

struct HalideKernelOptions {
  std::string target = "host";  // a Halide target string ("host", "x86-64-linux-avx2", ...)
  // Threads of the kernels' pool, and of Halide's pool (shared by every JIT pipeline in the process);
  // 0 = Halide's default (HL_NUM_THREADS, else the number of cores) for both.
  int threads = 0;
};

// Throws UserError for a target string Halide does not know. Do not keep the compiler in a static
// object: JIT code freed after Halide's own statics are destroyed (at exit) corrupts the heap.
std::unique_ptr<KernelCompiler> make_halide_kernel_compiler(const HalideKernelOptions &options = {});

}  // namespace grove::relay
