#include "support/Parallel.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace grove {

namespace {

// Threads kept from call to call: starting one costs tens of microseconds, as much as some calls'
// whole work (a training step makes several). One call at a time has them; a call that finds them
// taken (another thread's call, or a task's own nested call) starts threads of its own instead.
class Pool {
 public:
  // Runs `job` on `helpers` of the pool's threads while the caller runs it too, and returns once
  // all have; false (nothing run) if another call has the pool. `job` must not throw.
  bool run(int helpers, const std::function<void()> &job) {
    std::unique_lock call(call_, std::try_to_lock);
    if (!call.owns_lock()) return false;
    {
      std::lock_guard lock(m_);
      while (int(workers_.size()) < helpers) {
        const int index = int(workers_.size());
        workers_.emplace_back([this, index] { serve(index); });
      }
      job_ = &job;
      wanted_ = helpers;
      running_ = helpers;
      ++generation_;
    }
    work_.notify_all();
    job();
    std::unique_lock lock(m_);
    done_.wait(lock, [&] { return running_ == 0; });
    job_ = nullptr;
    return true;
  }

  // The process's pool; a new one in a forked child, which has none of its parent's threads (the
  // parent's, whose mutexes may have been held at the fork, is left as it is).
  static Pool &get() {
    static std::mutex m;
    static Pool *pool = nullptr;
    static pid_t owner = 0;
    std::lock_guard lock(m);
    if (!pool || owner != getpid()) {
      pool = new Pool;  // never destroyed: its threads sleep until the process ends
      owner = getpid();
    }
    return *pool;
  }

 private:
  // Thread `index`: runs the job of every call that wants it (the first `wanted_` threads).
  void serve(int index) {
    uint64_t seen = 0;
    std::unique_lock lock(m_);
    for (;;) {
      work_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= wanted_) continue;
      const std::function<void()> *job = job_;
      lock.unlock();
      (*job)();
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::mutex call_;  // held by the call that has the pool
  std::mutex m_;     // guards the fields below
  std::condition_variable work_, done_;
  std::vector<std::thread> workers_;
  const std::function<void()> *job_ = nullptr;
  uint64_t generation_ = 0;  // one more per call
  int wanted_ = 0, running_ = 0;
};

}  // namespace

void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t)> &body) {
  const int64_t workers = std::min<int64_t>(tasks, std::max(threads, 1));
  if (workers <= 1) {
    for (int64_t t = 0; t < tasks; t++) body(t);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::function<void()> run = [&] {
    for (int64_t t = next++; t < tasks && !failed; t = next++) {
      try {
        body(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  if (!Pool::get().run(int(workers - 1), run)) {
    std::vector<std::thread> others;
    others.reserve(size_t(workers - 1));
    for (int64_t w = 1; w < workers; w++) others.emplace_back(run);
    run();
    for (std::thread &t : others) t.join();
  }
  if (error) std::rethrow_exception(error);
}

void parallel_jobs(const std::vector<std::function<void()>> &jobs, int threads) {
  parallel_tasks(static_cast<int64_t>(jobs.size()), threads,
                 [&](int64_t j) { jobs[static_cast<size_t>(j)](); });
}

}  // namespace grove
