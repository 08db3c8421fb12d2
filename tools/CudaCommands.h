#pragma once
// The command line's CUDA side: `grove dump --stage cuda|ptx` (the kernels' source, and PTX through
// NVRTC) and what `grove run|bench --target cuda` answers.

#include <string>

#include "tools/Commands.h"

namespace grove::tool {

// Whether a --target asks for the GPU.
inline bool is_cuda_target(const std::string &target) { return target == "cuda"; }

// `grove dump --stage cuda` or `--stage ptx`.
int dump_cuda(const DumpCommand &c);

// `grove <command> --target cuda`: a UserError, before anything is read or written — without a
// driver it says why; with one, that the command does not run on the GPU yet.
[[noreturn]] void refuse_cuda_target(const std::string &command);
// `grove compile --target cuda`: a UserError (libraries with CUDA kernels are not written yet).
[[noreturn]] void refuse_cuda_compile();

}  // namespace grove::tool
