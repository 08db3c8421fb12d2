#pragma once
// Ahead-of-time compilation for the GPU (`grove compile --target cuda`): the model's kernels
// emitted for the level plan (CudaEmitter.h) and compiled by NVRTC into a cubin for each requested
// architecture and PTX (for the driver's JIT on later GPUs), embedded in a shared library, a static
// library and a C header — the same container as the CPU's (backends/cpu/Aot.h). The library holds
// no code: its grove_compiled_model descriptor (include/grove/grove.h) carries the ABI as JSON (target
// "cuda", with the launch: form, grid, shared bytes, kernels, and each image's size and checksum) and
// the images, each in a section of its own (.grove_cuda.sm_90, .grove_cuda.compute_90). It links
// nothing of grove; libgrove_runtime opens it (backends/runtime/CompiledLibrary.h) and runs it through
// the device runner (backends/runtime/CudaRunner.h), which loads the driver with dlopen.
//
//   cuda::CudaAotOptions aot;
//   aot.out_dir = "out";
//   aot.arches = {"sm_90", "sm_80"};                                   // + compute_80's PTX
//   cuda::CudaAotResult r = cuda::compile_cuda_library(program, sizes, aot);  // out/libtreelstm.so, .a, .h

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"

namespace grove::cuda {

struct CudaAotOptions {
  std::string out_dir;       // created if missing; lib<name>.so, lib<name>.a and <name>.h go there
  std::string name;          // a C identifier; empty: the model's name in lower case
  std::string schedule;      // --schedule overrides (plan_for_cuda)
  std::string cuda_options;  // --cuda: form, grid, barrier, shared_limit, graph (parse_cuda_options)
  // sm_XX: a cubin each; compute_XX: PTX each. Without a compute_XX (and with ptx), the PTX of the
  // lowest sm_XX's architecture is added. Empty: sm_90 and compute_90.
  std::vector<std::string> arches;
  bool ptx = true;
  std::string embed_weights_file;  // a safetensors file to embed (`--embed-weights`); it must fit `sizes`
};

struct CudaAotResult {
  std::string shared_library, static_library, header;  // the paths written
  std::string name;
  std::vector<std::string> images;  // the architectures embedded, in order
  std::vector<std::string> notes;   // options that do not apply (the schedule's and the kernels')
};

// "sm_90,compute_90" → its entries; a UserError naming a bad one (`where`: the option).
std::vector<std::string> parse_arch_list(const std::string &text, const std::string &where);

// Emits, compiles (NVRTC) and writes the three files through temporary names in out_dir, so that a
// failure leaves any files already there untouched. UserErrors: a bad name, architecture or out_dir,
// NVRTC absent or failing, weights that do not fit, no C compiler.
CudaAotResult compile_cuda_library(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                                   const CudaAotOptions &options);

}  // namespace grove::cuda
