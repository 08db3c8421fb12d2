#pragma once
// `grove compile`: a model compiled ahead of time into a shared library, a static library and a C
// header (backends/cpu/Aot.h); and `grove run` over such a shared library instead of a model file.

#include <string>

#include "tools/Commands.h"

namespace grove::tool {

struct CompileCommand {
  std::string model, weights, sizes, target = "host", schedule, name, out;
  int threads = 0;  // > 0: the schedule's threads=N
  bool embed_weights = false;
  // --target cuda: the kernels' form (--cuda, as `grove dump` takes it), the architectures
  // (--arch sm_90,compute_90: cubins and PTX) and --no-ptx.
  std::string cuda, arch;
  bool no_ptx = false;
};

int compile(const CompileCommand &c);
// `grove compile --target cuda` (compile's branch for it).
int compile_cuda(const CompileCommand &c);

// Whether `path` is a shared library (an ELF file) rather than a model file.
bool is_compiled_library(const std::string &path);

// `grove run LIB.so`: runs the library `grove compile` wrote over the inputs, with its embedded
// weights or c.weights; its target and schedule were fixed when it was compiled.
}  // namespace grove::tool
