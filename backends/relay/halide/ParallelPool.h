#pragma once
// The thread pool the Relay kernels' parallel loops run on (Halide's do_par_for, replaced through
// the JIT handlers in HalideKernels.cpp). Halide's own pool puts an idle worker to sleep at once and
// the caller sleeps until the last task ends, so on a VM each parallel loop pays two wake-ups of
// several µs: a GEMV of 12 µs (1 x 256 x 1024) ran slower on 2 threads than on 1. This pool, like
// OpenBLAS's, keeps its workers spinning for a while after a loop and sleeps only then, and the
// caller waits by spinning.
//   1. The caller publishes the loop: each thread t (the caller is 0) gets a home range, the t-th
//      of T equal slices of [min, min + extent), so that consecutive calls of a kernel hand each
//      thread the same slice and it finds its part of the operands in its own cache (a GEMV's
//      weight rows: 0.5 MB a core at N = 1024, K = 256).
//   2. Every thread runs tasks from its home range, then steals from the others' ranges. A range is
//      two 64-bit words, each tagged with the loop's generation in its high half: the next task
//      and the range's end. A task is claimed by a compare-and-swap of the next word, and only
//      when both words carry the claimer's generation — so a worker that wakes late can never pair
//      one loop's end with another loop's counter, nor claim a later loop's task with an earlier
//      loop's function.
//   3. The caller returns when all tasks have finished; no task of its loop can start after that.
//      Nested loops, a second caller while one loop runs, and a pool of one thread run the loop
//      serially on the caller.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace Halide {
struct JITUserContext;
}

namespace grove::relay {

class ParallelPool {
 public:
  using Context = Halide::JITUserContext;                               // only passed through to the tasks
  using Task = int (*)(Context *context, int index, uint8_t *closure);  // Halide's task signature

  explicit ParallelPool(int threads);
  ~ParallelPool();
  ParallelPool(const ParallelPool &) = delete;
  ParallelPool &operator=(const ParallelPool &) = delete;

  int threads() const { return static_cast<int>(slots_.size()); }

  // Runs task(context, i, closure) for every i in [min, min + extent), each exactly once, and
  // returns the first nonzero status a task returned (0 if none).
  int par_for(Context *context, Task task, int min, int extent, uint8_t *closure);

 private:
  // One cache line per home range: the words are written by every claim.
  struct alignas(64) Slot {
    std::atomic<uint64_t> next{0};  // (generation << 32) | next task - min
    std::atomic<uint64_t> end{0};   // (generation << 32) | end of the range - min
  };

  void work(int t);
  void run_tasks(uint32_t gen, int t);

  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  std::mutex busy_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleeping_{0}, done_{0}, error_{0}, min_{0};
  std::atomic<bool> stop_{false};
  std::atomic<Task> task_{nullptr};
  std::atomic<Context *> context_{nullptr};
  std::atomic<uint8_t *> closure_{nullptr};
};

}  // namespace grove::relay
