#include "backends/cpu/TsanParallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "Halide.h"

namespace grove::cpu {

int max_loop_threads() { return std::max(16, static_cast<int>(std::thread::hardware_concurrency())); }

#ifdef GROVE_TSAN

namespace {

using Task = int (*)(Halide::JITUserContext *, int, uint8_t *);

std::atomic<int64_t> routed{0};

// Tasks first, first + stride, ... below end of one loop.
struct Part {
  Task task = nullptr;
  Halide::JITUserContext *context = nullptr;
  uint8_t *closure = nullptr;
  int first = 0, end = 0, stride = 1;
};

// The first failing task's status, as Halide's do_par_for returns it.
int run_part(const Part &p) {
  int status = 0;
  for (int i = p.first; i < p.end; i += p.stride)
    if (int s = p.task(p.context, i, p.closure); s && !status) status = s;
  return status;
}

// One helper thread of one calling thread.
class Helper {
 public:
  Helper() : thread_([this] { serve(); }) {}
  ~Helper() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Helper(const Helper &) = delete;
  Helper &operator=(const Helper &) = delete;

  void start(const Part &part) {
    {
      std::lock_guard lock(mutex_);
      part_ = part;
      busy_ = true;
    }
    cv_.notify_all();
  }
  int wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !busy_; });
    return status_;
  }

 private:
  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return busy_ || stop_; });
      if (!busy_) return;
      const Part part = part_;
      lock.unlock();
      const int status = run_part(part);
      lock.lock();
      status_ = status;
      busy_ = false;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  Part part_;
  bool busy_ = false, stop_ = false;
  int status_ = 0;
  std::thread thread_;  // last: it starts once the rest is built
};

int do_par_for(Halide::JITUserContext *context, Task task, int min, int extent, uint8_t *closure) {
  routed.fetch_add(1, std::memory_order_relaxed);
  if (extent <= 0) return 0;
  // The calling thread's helpers, joined when it exits; a loop inside a task of this thread's loop
  // takes the helpers after those in use. A task on a helper runs its loops on that helper's own.
  thread_local std::vector<std::unique_ptr<Helper>> helpers;
  thread_local size_t in_use = 0;
  const int threads = std::min(extent, max_loop_threads());
  const size_t first = in_use;
  in_use += threads - 1;
  while (helpers.size() < in_use) helpers.push_back(std::make_unique<Helper>());
  auto part = [&](int k) { return Part{task, context, closure, min + k, min + extent, threads}; };
  for (int k = 1; k < threads; ++k) helpers[first + k - 1]->start(part(k));
  int status = run_part(part(0));
  for (int k = 1; k < threads; ++k)
    if (int s = helpers[first + k - 1]->wait(); s && !status) status = s;
  in_use = first;
  return status;
}

// Before main: no JIT code runs yet, and Halide's handler tables are written by one thread.
bool route() {
  Halide::JITHandlers handlers = Halide::Internal::JITSharedRuntime::set_default_handlers({});
  handlers.custom_do_par_for = do_par_for;
  Halide::Internal::JITSharedRuntime::set_default_handlers(handlers);
  return true;
}

const bool kRouted = route();

}  // namespace

bool jit_parallel_loops_on_threads() { return kRouted; }
int64_t routed_parallel_loops() { return routed.load(std::memory_order_relaxed); }

#else

bool jit_parallel_loops_on_threads() { return false; }
int64_t routed_parallel_loops() { return 0; }

#endif

}  // namespace grove::cpu
