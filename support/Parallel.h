#pragma once
// The runtime's own loops split among threads (outside compiled code, which has its own): body(t)
// for every task t of [0, tasks), on at most `threads` threads, the caller one of them. Tasks are
// claimed in order from a shared counter, so which thread runs a task varies from call to call: a
// caller whose results must not depend on it gives each task its own outputs (and sums partial
// results in task order afterwards). The first exception a task throws is rethrown once every
// thread has stopped; tasks not yet claimed then do not run. The other threads are kept from call to
// call (a process-wide pool); a call made while another has them (from another thread, or from
// inside a task) starts threads of its own.

#include <cstdint>
#include <functional>
#include <vector>

namespace grove {

void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t)> &body);

// The same over a list of jobs, each a task.
void parallel_jobs(const std::vector<std::function<void()>> &jobs, int threads);

}  // namespace grove
