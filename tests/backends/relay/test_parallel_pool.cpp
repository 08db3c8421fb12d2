// The Relay kernels' thread pool (backends/relay/halide/ParallelPool.h) under stress: loops of varying
// sizes and offsets, published back to back by one caller and by several at once, must run every
// index exactly once per loop and no task after its loop's call returned. The pool's code runs
// unchanged, without injected delays; a late worker pairing two loops' state shows up as an index
// run twice, out of range, or after its call returned.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "backends/relay/halide/ParallelPool.h"

namespace grove::relay {
namespace {

constexpr int kMaxExtent = 64;

// One loop's record, kept alive (and checked again) long after its call returned.
struct Call {
  int min = 0, extent = 0;
  std::array<std::atomic<int>, kMaxExtent> runs{};
  std::atomic<bool> returned{false};
  std::atomic<int> late{0}, out_of_range{0};
};

int record(ParallelPool::Context *, int index, uint8_t *closure) {
  Call &call = *reinterpret_cast<Call *>(closure);
  if (call.returned.load(std::memory_order_acquire)) call.late.fetch_add(1);
  if (index < call.min || index >= call.min + call.extent)
    call.out_of_range.fetch_add(1);
  else
    call.runs[index - call.min].fetch_add(1);
  return 0;
}

struct Anomalies {
  int64_t loops = 0, twice = 0, missed = 0, late = 0, out_of_range = 0;
};

void check(const Call &call, Anomalies &seen) {
  for (int i = 0; i < call.extent; ++i) {
    int runs = call.runs[i].load();
    seen.twice += runs > 1;
    seen.missed += runs == 0;
  }
  seen.late += call.late.load();
  seen.out_of_range += call.out_of_range.load();
}

// Runs `loops` loops of random extents (1..kMaxExtent) and offsets on `pool`; each record is
// checked right after its call and again before the ring slot is reused, 1,024 calls later.
Anomalies stress(ParallelPool &pool, int loops, unsigned seed) {
  std::vector<Call> ring(1024);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> extent(1, kMaxExtent), offset(-8, 100);
  Anomalies seen;
  for (int n = 0; n < loops; ++n) {
    Call &call = ring[n % ring.size()];
    if (n >= static_cast<int>(ring.size())) {
      Anomalies again;
      check(call, again);  // a task that ran after the first check lands here
      seen.twice += again.twice;
      seen.late += again.late;
      seen.out_of_range += again.out_of_range;
    }
    call.min = offset(rng);
    call.extent = extent(rng);
    for (auto &r : call.runs) r.store(0);
    call.late.store(0);
    call.out_of_range.store(0);
    call.returned.store(false, std::memory_order_release);
    EXPECT_EQ(pool.par_for(nullptr, record, call.min, call.extent, reinterpret_cast<uint8_t *>(&call)), 0);
    call.returned.store(true, std::memory_order_release);
    check(call, seen);
    seen.loops++;
  }
  return seen;
}

void expect_none(const Anomalies &a) {
  EXPECT_EQ(a.twice, 0) << "indices run twice in " << a.loops << " loops";
  EXPECT_EQ(a.missed, 0) << "indices never run in " << a.loops << " loops";
  EXPECT_EQ(a.late, 0) << "tasks run after their call returned in " << a.loops << " loops";
  EXPECT_EQ(a.out_of_range, 0) << "indices out of their loop's range in " << a.loops << " loops";
}

TEST(ParallelPool, OneCallerBackToBackLoopsRunEachIndexOnce) {
  ParallelPool pool(3);
  expect_none(stress(pool, 400000, 1));
}

TEST(ParallelPool, ConcurrentCallersRunEachIndexOnce) {
  ParallelPool pool(3);
  std::vector<Anomalies> results(3);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) callers.emplace_back([&, c] { results[c] = stress(pool, 100000, 100 + c); });
  for (std::thread &t : callers) t.join();
  for (const Anomalies &a : results) expect_none(a);
}

int fail_at_five(ParallelPool::Context *, int index, uint8_t *closure) {
  reinterpret_cast<std::atomic<int> *>(closure)->fetch_add(1);
  return index == 5 ? 7 : 0;
}

TEST(ParallelPool, ReturnsATasksErrorAfterTheLoopFinished) {
  ParallelPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_EQ(pool.par_for(nullptr, fail_at_five, 0, 40, reinterpret_cast<uint8_t *>(&ran)), 7);
  EXPECT_EQ(ran.load(), 40);  // the other tasks still ran: the caller returns when all finished
}

struct Nested {
  ParallelPool *pool = nullptr;
  std::atomic<int> inner{0};
};

int count_inner(ParallelPool::Context *, int, uint8_t *closure) {
  reinterpret_cast<Nested *>(closure)->inner.fetch_add(1);
  return 0;
}

int run_inner_loop(ParallelPool::Context *, int, uint8_t *closure) {
  Nested &n = *reinterpret_cast<Nested *>(closure);
  return n.pool->par_for(nullptr, count_inner, 0, 10, closure);
}

TEST(ParallelPool, ALoopStartedByATaskRunsOnItsThread) {
  ParallelPool pool(3);
  Nested nested{&pool};
  EXPECT_EQ(pool.par_for(nullptr, run_inner_loop, 0, 6, reinterpret_cast<uint8_t *>(&nested)), 0);
  EXPECT_EQ(nested.inner.load(), 60);
}

}  // namespace
}  // namespace grove::relay
