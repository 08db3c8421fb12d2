// support/Parallel.h: every task runs exactly once on any number of threads, on the caller alone
// for one thread, and a task's exception reaches the caller after every thread has stopped.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/Parallel.h"

namespace grove {
namespace {

TEST(ParallelTasks, EveryTaskOnceOnAnyNumberOfThreads) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t tasks : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
      parallel_tasks(tasks, threads, [&](int64_t t) { runs[static_cast<size_t>(t)]++; });
      for (int64_t t = 0; t < tasks; t++)
        EXPECT_EQ(runs[size_t(t)], 1) << tasks << " tasks, " << threads << " threads";
    }
  }
}

TEST(ParallelTasks, OneThreadRunsOnTheCallerInOrder) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int64_t> order;
  parallel_tasks(5, 1, [&](int64_t t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(t);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ParallelTasks, ATasksExceptionReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_tasks(50, 3,
                              [&](int64_t t) {
                                ran++;
                                if (t == 4) throw std::runtime_error("task 4");
                              }),
               std::runtime_error);
  EXPECT_GE(ran, 1);
  EXPECT_LE(ran, 50);
}

TEST(ParallelTasks, NestedAndConcurrentCallsEachRunEveryTaskOnce) {
  // Calls from inside tasks and from several threads at once: one has the kept threads, the
  // others start their own; each runs all of its tasks.
  constexpr int kOuter = 6, kInner = 40, kCallers = 3;
  std::vector<std::atomic<int>> runs(size_t(kCallers * kOuter * kInner));
  auto call = [&](int caller) {
    for (int round = 0; round < 20; round++) {
      parallel_tasks(kOuter, 3, [&](int64_t o) {
        parallel_tasks(kInner, 2, [&](int64_t i) { runs[size_t((caller * kOuter + o) * kInner + i)]++; });
      });
    }
  };
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; c++) callers.emplace_back(call, c);
  for (std::thread &t : callers) t.join();
  for (size_t i = 0; i < runs.size(); i++) EXPECT_EQ(runs[i], 20) << "task " << i;
}

TEST(ParallelTasks, ManyCallsInARowReuseTheThreads) {
  // Each call sees every task's effect of the one before (a call returns after all its tasks).
  std::vector<int64_t> values(64, 0);
  for (int call = 0; call < 500; call++)
    parallel_tasks(64, 2, [&](int64_t t) { values[size_t(t)] = values[size_t(t)] + 1; });
  for (int64_t v : values) EXPECT_EQ(v, 500);
}

}  // namespace
}  // namespace grove
