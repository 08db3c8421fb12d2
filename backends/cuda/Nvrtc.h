#pragma once
// NVRTC, loaded at run time: the emitted CUDA source (CudaEmitter.h) compiled to a cubin for an
// `sm_XX` architecture or to PTX for `compute_XX`. libnvrtc is opened with dlopen ($GROVE_NVRTC if
// set, else libnvrtc.so.13, libnvrtc.so, then under the toolkit's lib64), never linked, so grove starts on a
// machine without CUDA; a UserError says so when it is needed and absent. ptxas's resource report
// (--ptxas-options=-v) is kept and read per kernel: registers, spills, shared memory.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/CudaEmitter.h"

namespace grove::cuda {

// What ptxas reported for one kernel (cubins only; PTX is not assembled).
struct KernelResources {
  std::string kernel;
  int registers = 0;
  int64_t spill_stores = 0, spill_loads = 0;  // bytes
  int64_t stack_bytes = 0, static_shared_bytes = 0;
};

struct NvrtcOutput {
  std::string arch;   // sm_90, compute_90
  std::string image;  // the cubin, or the PTX text
  bool is_cubin = true;
  std::string log;  // NVRTC's log (ptxas's report included)
  std::vector<KernelResources> kernels;
};

// Whether NVRTC can be loaded; if not, `why` says what dlopen said.
bool nvrtc_available(std::string *why = nullptr);
// NVRTC's version, e.g. "13.0"; a UserError if it cannot be loaded.
std::string nvrtc_version();

// Compiles `source` for `arch` (cached per source and architecture within the process). `what`
// names the source in messages (the model's name). UserErrors: NVRTC absent, a bad architecture,
// a failed compile (with its log).
const NvrtcOutput &compile_with_nvrtc(const CudaSource &source, const std::string &arch,
                                      const std::string &what);

// ptxas's "-v" report read per kernel (exposed for tests).
std::vector<KernelResources> parse_ptxas_report(const std::string &log);

}  // namespace grove::cuda
