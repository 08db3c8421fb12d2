#pragma once
// The thread team: how the threads of a parallel region (schedule `region`) share a stage and wait for each
// other, called by name from the generated code (lowering::names::kStage*, kBarrierWait; the protocol is
// described at lowering::internal::Team, lowering/cpu/Team.h), and what the back end must do around a call.
//
// Stages: the state holds 64-bit words on separate cache lines, each a (stage number, count) pair:
// word 0 counts the finished chunks of the current stage, word 1 + t the claimed chunks of thread
// t's home range. A word whose stage number is older than the caller's is reset by the first to
// touch it; one that is newer means the caller's stage is long finished. Waiting spins, then
// yields the core: the chunks it waits for are being run by threads that hold them.
//
// Recursive unrolling (schedule `unroll`) gives threads static ownership instead, and its threads
// meet at a barrier. They can only meet if all of them run at once, so: the thread pool must hold
// at least `threads` threads (the main thread included), and only one such region may run at a
// time in the process — two could otherwise each hold part of the pool and wait for the rest
// forever. RegionLock guarantees both for the duration of one call.

#include <cstdint>
#include <mutex>

namespace grove {

// `state` points to 32 int32s, zero before the team's first wait: arrivals at [0], the generation
// at [16] (another cache line). Spins briefly, then sleeps on the generation (a futex).
// Returns 0 (Halide's convention for an extern that cannot fail).
extern "C" int32_t grove_barrier_wait(int32_t *state, int32_t threads);

// A chunk of stage `seq` (of `chunks`) for thread `tid` of `threads`: from its home range
// [chunks·tid/threads, chunks·(tid+1)/threads) first, then from the others'; -1 when none is left.
extern "C" int32_t grove_stage_claim(int32_t *state, int32_t seq, int32_t chunks, int32_t tid,
                                     int32_t threads);
// One claimed chunk of stage `seq` is finished (its results are published with it).
extern "C" int32_t grove_stage_finish(int32_t *state, int32_t seq);
// Returns once all `chunks` chunks of stage `seq` are finished (their results visible).
extern "C" int32_t grove_stage_wait(int32_t *state, int32_t seq, int32_t chunks);

// Grows a Halide runtime's thread pool to at least `threads` (a schedule's `threads`) and returns
// its size. The pool is shared by every model on that runtime (all JIT-compiled models share one),
// so it is never shrunk: each model's own thread count is enforced by its code, whose parallel
// dispatches have at most that many tasks and whose team has that many threads
// (plan::Recursion::threads). Waits for a region in flight.
int grow_thread_pool(int (*set_num_threads)(int), int threads);

// Held around each call of compiled code whose schedule uses a region: one region at a time, and
// Halide's thread pool set to at least `threads` threads through `set_num_threads` (the compiled
// code's halide_set_num_threads).

class RegionLock {
 public:
  RegionLock(int (*set_num_threads)(int), int threads);

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace grove
