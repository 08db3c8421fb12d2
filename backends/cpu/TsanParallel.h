#pragma once
// Halide's parallel loops made visible to ThreadSanitizer (a GROVE_TSAN build, `make test-tsan`).
//
// Halide's thread pool hands tasks over and parks its workers through its own runtime code, which
// TSan does not see: under TSan every parallel loop of a JIT-compiled model then reads as races
// between the pool's workers. In a GROVE_TSAN build the parallel loops of the shared JIT runtime
// (halide_do_par_for, which grove's models call without a user context) run instead on std::threads,
// routed through Halide's default JIT handlers before main:
//   - each thread that calls a loop keeps helper threads of its own; a loop of n tasks runs its
//     first task on the caller and the others on n - 1 helpers, all at once (the team loop of a
//     region, whose tasks wait for each other at stages and barriers, needs every task running),
//     and the caller returns when all have finished;
//   - a helper and its caller hand a loop over through a mutex and a condition variable of their
//     own, so TSan sees each loop's fork and join and no order between different callers' loops (a
//     shared pool would order them, and hide their races);
//   - a loop of more than max_loop_threads() tasks runs on that many threads, tasks that many apart.
// The Relay kernels' parallel loops run on their own pool (backends/relay), named in their context.
// A library compiled ahead of time carries its own Halide runtime: `grove compile` in a GROVE_TSAN
// build, or for a target with the tsan feature, gives it the same routing on pthreads (Aot.cpp).

#include <cstdint>

namespace grove::cpu {

// Whether this is a GROVE_TSAN build.
#ifdef GROVE_TSAN
inline constexpr bool kTsanBuild = true;
#else
inline constexpr bool kTsanBuild = false;
#endif

// Whether the JIT's parallel loops run on std::threads: true in a GROVE_TSAN build.
bool jit_parallel_loops_on_threads();

// The parallel loops routed so far in this process (for the tests).
int64_t routed_parallel_loops();

// The most threads one loop runs on: max(16, the hardware threads) — more than any team.
int max_loop_threads();

}  // namespace grove::cpu
