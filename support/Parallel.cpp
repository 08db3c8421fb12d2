#include "support/Parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace grove {

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
  auto run = [&] {
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
  std::vector<std::thread> others;
  others.reserve(size_t(workers - 1));
  for (int64_t w = 1; w < workers; w++) others.emplace_back(run);
  run();
  for (std::thread &t : others) t.join();
  if (error) std::rethrow_exception(error);
}

void parallel_jobs(const std::vector<std::function<void()>> &jobs, int threads) {
  parallel_tasks(static_cast<int64_t>(jobs.size()), threads,
                 [&](int64_t j) { jobs[static_cast<size_t>(j)](); });
}

}  // namespace grove
