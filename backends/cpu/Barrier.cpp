#include "backends/cpu/Barrier.h"

#include <immintrin.h>

#include <atomic>

#include "ilir/Error.h"
#include "lowering/LowerToLoops.h"

namespace grove::cpu {

extern "C" int32_t grove_barrier_wait(int32_t *state, int32_t threads) {
  std::atomic_ref<int32_t> arrived(state[0]), generation(state[16]);
  const int32_t gen = generation.load(std::memory_order_acquire);
  // The last to arrive resets the count and opens the next generation. acq_rel: each arrival
  // releases its writes into the count's release sequence, which the last one acquires and
  // publishes with the generation.
  if (arrived.fetch_add(1, std::memory_order_acq_rel) == threads - 1) {
    arrived.store(0, std::memory_order_relaxed);
    generation.store(gen + 1, std::memory_order_release);
    generation.notify_all();
    return 0;
  }
  // A level's stage takes microseconds: spin for about that long, then sleep (another process
  // may hold the core the last thread needs).
  for (int spin = 0; spin < 2000; spin++) {
    if (generation.load(std::memory_order_acquire) != gen) return 0;
    _mm_pause();
  }
  while (generation.load(std::memory_order_acquire) == gen) generation.wait(gen, std::memory_order_acquire);
  return 0;
}

namespace {

std::mutex &region_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

RegionLock::RegionLock(const Halide::Internal::JITModule &jit, int threads) : lock_(region_mutex()) {
  using SetNumThreads = int (*)(int);
  static SetNumThreads set_num_threads = nullptr;
  static int pool = 0;  // what it was last set to, under the lock
  if (!set_num_threads) {
    set_num_threads = reinterpret_cast<SetNumThreads>(jit.find_symbol_by_name("halide_set_num_threads").address);
    GROVE_CHECK(set_num_threads, "the JIT runtime exports no halide_set_num_threads");
  }
  if (pool < threads) {
    set_num_threads(threads);
    pool = threads;
  }
}

Halide::Internal::JITModule barrier_module() {
  Halide::Internal::JITModule m;
  m.add_extern_for_export(lowering::names::kBarrierWait, Halide::ExternCFunction(&grove_barrier_wait));
  return m;
}

}  // namespace grove::cpu
