#include "backends/relay/halide/ParallelPool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace grove::relay {
namespace {

// How long an idle worker spins before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(50);

// Set while a thread runs a task: a loop a task starts runs serially on that thread.
thread_local bool in_task = false;

uint64_t tagged(uint64_t gen, int64_t value) { return gen << 32 | static_cast<uint32_t>(value); }
uint32_t generation_of(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
int value_of(uint64_t word) { return static_cast<int>(static_cast<uint32_t>(word)); }

}  // namespace

ParallelPool::ParallelPool(int threads) : slots_(std::max(threads, 1)) {
  for (int t = 1; t < static_cast<int>(slots_.size()); ++t) workers_.emplace_back([this, t] { work(t); });
}

ParallelPool::~ParallelPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread &w : workers_) w.join();
}

int ParallelPool::par_for(Context *context, Task task, int min, int extent, uint8_t *closure) {
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (in_task || workers_.empty() || extent <= 1 || !busy.owns_lock()) {
    for (int i = min; i < min + extent; ++i)
      if (int status = task(context, i, closure)) return status;
    return 0;
  }
  // The previous loop has finished (its caller held busy_ until then), so every word still tagged
  // with an older generation is exhausted; the new words are written before the generation that
  // lets workers read them.
  const uint64_t gen = static_cast<uint32_t>(generation_.load() + 1);
  task_.store(task, std::memory_order_relaxed);
  context_.store(context, std::memory_order_relaxed);
  closure_.store(closure, std::memory_order_relaxed);
  min_.store(min, std::memory_order_relaxed);
  const int threads = static_cast<int>(slots_.size());
  for (int t = 0; t < threads; ++t) {
    // Offsets from min, in [0, extent]: claiming adds 1 to a word and never carries into its tag.
    const int64_t begin = static_cast<int64_t>(extent) * t / threads;
    const int64_t end = static_cast<int64_t>(extent) * (t + 1) / threads;
    slots_[t].end.store(tagged(gen, end), std::memory_order_relaxed);
    slots_[t].next.store(tagged(gen, begin), std::memory_order_release);
  }
  done_.store(0, std::memory_order_relaxed);
  error_.store(0, std::memory_order_relaxed);
  generation_.store(static_cast<uint32_t>(gen));
  if (sleeping_.load() > 0) generation_.notify_all();
  run_tasks(static_cast<uint32_t>(gen), 0);
  for (int spins = 0; done_.load(std::memory_order_acquire) < extent; ++spins) {
    _mm_pause();
    if (spins > 4096) std::this_thread::yield();  // a worker was preempted inside a task
  }
  return error_.load();
}

void ParallelPool::work(int t) {
  uint32_t seen = 0;  // not loaded here: a loop or the stop may have been published already
  while (true) {
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
      _mm_pause();
      if ((spins & 255) != 255) continue;
      // Yielding now and then lets a thread that shares the core run (another process on a busy
      // machine): pausing alone, the worker took CPU time from the caller while other processes
      // ran, and a GEMV of 1 x 256 x 1024 ran at half its one-thread speed (18 against 38
      // GFLOP/s; 37 yielding every 16 pauses). Every 256 keeps the quiet machine's speed (69
      // GFLOP/s; 54 yielding every 16).
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() - start > kSpin) {
        sleeping_.fetch_add(1);
        generation_.wait(seen);
        sleeping_.fetch_sub(1);
        start = std::chrono::steady_clock::now();
      }
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    run_tasks(seen, t);
  }
}

// Runs thread t's home range, then steals; only tasks of generation `gen`. The task, context,
// closure and min read here may belong to a later loop than `gen` when this worker is late; it then finds
// no word of generation `gen` with a task left (that loop has finished) and runs nothing.
void ParallelPool::run_tasks(uint32_t gen, int t) {
  Task task = task_.load(std::memory_order_relaxed);
  Context *context = context_.load(std::memory_order_relaxed);
  uint8_t *closure = closure_.load(std::memory_order_relaxed);
  const int min = min_.load(std::memory_order_relaxed);
  const int threads = static_cast<int>(slots_.size());
  in_task = true;
  for (int k = 0; k < threads; ++k) {
    Slot &slot = slots_[(t + k) % threads];
    uint64_t word = slot.next.load(std::memory_order_acquire);
    while (generation_of(word) == gen) {
      const uint64_t end = slot.end.load(std::memory_order_relaxed);
      if (generation_of(end) != gen || value_of(word) >= value_of(end)) break;
      if (!slot.next.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
      if (int status = task(context, min + value_of(word), closure)) {
        int none = 0;
        error_.compare_exchange_strong(none, status);
      }
      done_.fetch_add(1, std::memory_order_release);
      word = slot.next.load(std::memory_order_acquire);
    }
  }
  in_task = false;
}

}  // namespace grove::relay
