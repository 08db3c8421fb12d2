#pragma once
// A model compiled ahead of time by `grove compile` (backends/cpu/Aot.h), opened for running: the
// shared library is dlopen-ed and its grove_compiled_model descriptor (include/grove/grove.h) read;
// a statically linked model hands its descriptor over directly. A CPU library runs through the
// Executor; a CUDA library (`grove compile --target cuda`: the ABI's target "cuda") through the
// device runner (CudaRunner.h), which loads its embedded cubin or PTX on device 0.

#include <memory>
#include <string>

#include "backends/runtime/Executor.h"
#include "include/grove/grove.h"

namespace grove {

struct CompiledLibrary {
  std::shared_ptr<void> handle;           // the dlopen handle (null for a static descriptor); closes last
  std::unique_ptr<ModelRunner> executor;  // weights bound when the library embeds them
};

// Opens `path` (RTLD_NOW | RTLD_LOCAL), checks the descriptor's ABI version and description, and
// binds embedded weights. Throws UserError naming the path: not found, not a grove library (no
// grove_compiled_model_entry), another ABI version, a malformed description; for a CUDA library
// also images that do not match the description (a corrupt section) and every device failure of
// CudaRunner (no driver, no device, no image for it, a grid too large, out of memory).
CompiledLibrary open_compiled_library(const std::string &path);

// The same for a descriptor linked in statically; `where` names it in messages.
CompiledLibrary open_compiled_model(const grove_compiled_model &compiled, const std::string &where);

}  // namespace grove
