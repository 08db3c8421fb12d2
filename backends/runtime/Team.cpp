#include "backends/runtime/Team.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "support/Error.h"

namespace grove {

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

// Word i of the team state: 64 bytes apart, from the first 64-byte boundary (the generated code's
// stack array is only 4-byte aligned; Team::state_ints leaves room).
std::atomic_ref<uint64_t> word(int32_t *state, int i) {
  auto base = (reinterpret_cast<uintptr_t>(state) + 63) & ~uintptr_t(63);
  return std::atomic_ref<uint64_t>(reinterpret_cast<uint64_t *>(base)[i * 8]);
}

uint64_t tagged(int32_t seq, uint64_t count) { return uint64_t(uint32_t(seq)) << 32 | count; }
int32_t stage_of(uint64_t w) { return int32_t(w >> 32); }
uint32_t count_of(uint64_t w) { return uint32_t(w); }

// Claims the next of `n` chunks from word `w` for stage `seq`: its index, or -1 if none is left.
int32_t claim_from(std::atomic_ref<uint64_t> w, int32_t seq, int32_t n) {
  uint64_t cur = w.load(std::memory_order_acquire);
  for (;;) {
    uint32_t taken = stage_of(cur) < seq ? 0 : stage_of(cur) == seq ? count_of(cur) : uint32_t(n);
    if (taken >= uint32_t(n)) return -1;
    if (w.compare_exchange_weak(cur, tagged(seq, taken + 1), std::memory_order_acq_rel,
                                std::memory_order_acquire))
      return int32_t(taken);
  }
}

std::mutex &region_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

extern "C" int32_t grove_stage_claim(int32_t *state, int32_t seq, int32_t chunks, int32_t tid,
                                     int32_t threads) {
  for (int32_t i = 0; i < threads; i++) {
    int32_t t = (tid + i) % threads;
    int32_t begin = int32_t(int64_t(chunks) * t / threads),
            end = int32_t(int64_t(chunks) * (t + 1) / threads);
    if (int32_t c = claim_from(word(state, 1 + t), seq, end - begin); c >= 0) return begin + c;
  }
  return -1;
}

extern "C" int32_t grove_stage_finish(int32_t *state, int32_t seq) {
  std::atomic_ref<uint64_t> done = word(state, 0);
  uint64_t cur = done.load(std::memory_order_relaxed);
  // The release publishes this chunk's results to whoever sees the count.
  while (!done.compare_exchange_weak(cur, stage_of(cur) < seq ? tagged(seq, 1) : cur + 1,
                                     std::memory_order_acq_rel, std::memory_order_relaxed)) {
  }
  return 0;
}

extern "C" int32_t grove_stage_wait(int32_t *state, int32_t seq, int32_t chunks) {
  std::atomic_ref<uint64_t> done = word(state, 0);
  auto finished = [&] {
    uint64_t w = done.load(std::memory_order_acquire);
    return stage_of(w) > seq || (stage_of(w) == seq && count_of(w) >= uint32_t(chunks));
  };
  if (chunks <= 0) return 0;
  for (int spin = 0; spin < 2000; spin++) {
    if (finished()) return 0;
    _mm_pause();
  }
  while (!finished()) sched_yield();
  return 0;
}

int grow_thread_pool(int (*set_num_threads)(int), int threads) {
  std::lock_guard lock(region_mutex());
  int before = set_num_threads(threads);
  if (before > threads) set_num_threads(before);
  return std::max(before, threads);
}

// halide_set_num_threads returns the pool's size before the call: grow it to `threads` and put a
// larger size back. Asking the runtime rather than remembering what was set keeps this right
// when several JIT modules reach one shared runtime through different addresses.
RegionLock::RegionLock(int (*set_num_threads)(int), int threads) : lock_(region_mutex()) {
  GROVE_CHECK(set_num_threads, "compiled code without halide_set_num_threads runs a region");
  if (int before = set_num_threads(threads); before > threads) set_num_threads(before);
}

}  // namespace grove
