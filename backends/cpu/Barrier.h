#pragma once
// The barrier that the threads of a parallel region (schedule `region`) meet at between stages,
// called by name from the generated code (lowering::names::kBarrierWait), and what the back end
// must do around a call of code that uses it.
//
// The team's threads are iterations of one Halide parallel loop. They can only meet at a barrier
// if all of them run at once, so: the thread pool must hold at least `threads` threads (the main
// thread included), and only one region may run at a time in the process — two regions could
// otherwise each hold part of the pool and wait for the rest forever. RegionLock guarantees both
// for the duration of one call.

#include <cstdint>
#include <mutex>

#include "Halide.h"

namespace grove::cpu {

// `state` points to 32 int32s, zero before the team's first wait: arrivals at [0], the generation
// at [16] (another cache line). Spins briefly, then sleeps on the generation (a futex).
// Returns 0 (Halide's convention for an extern that cannot fail).
extern "C" int32_t grove_barrier_wait(int32_t *state, int32_t threads);

// Held around each call of compiled code whose schedule uses a region: one region at a time, and
// Halide's thread pool set to at least `threads` threads (through the JIT runtime's
// halide_set_num_threads, found in `jit`).
class RegionLock {
 public:
  RegionLock(const Halide::Internal::JITModule &jit, int threads);

 private:
  std::unique_lock<std::mutex> lock_;
};

// A JIT module exporting grove_barrier_wait, for the compiled code to depend on.
Halide::Internal::JITModule barrier_module();

}  // namespace grove::cpu
