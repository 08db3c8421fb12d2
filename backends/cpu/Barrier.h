#pragma once
// The thread team's functions (backends/runtime/Team.h) exported to JIT-compiled code.

#include "Halide.h"

namespace grove::cpu {

// A JIT module exporting grove_barrier_wait and grove_stage_*, for the compiled code to depend on.
Halide::Internal::JITModule barrier_module();

}  // namespace grove::cpu
