#pragma once
// The thread team that runs a whole recursion in one parallel region (schedule `region`), as the
// generated code sees it: stages shared among the threads and the calls that coordinate them
// (names::kStageClaim, ..., provided by backends/runtime/Team.h).

#include <string>

#include "lowering/cpu/HalideIR.h"

namespace grove::lowering::internal {

// One thread of the team.
//
// A stage (one loop of a level) is cut into chunks; each thread first claims the chunks of its home
// range (the same range at every level: with persistence, the same weight panels stay in its
// cache), then steals what is left of the others', and waits until every chunk of the stage is
// finished before the next stage (names::kStageClaim / kStageFinish / kStageWait). A thread that
// the OS deschedules delays the team only by a chunk it holds, never by work it has not started;
// and a thread that starts late finds its stages done and catches up, so the region needs no
// minimum number of pool threads. Every thread numbers the stages it passes with its own counter
// (`stage_seq`, a stack array of the thread), the same sequence on all threads.
struct Team {
  Team(HExpr thread, int threads) : tid(std::move(thread)), size(threads) {}
  HExpr tid;
  int size = 1;
  // for var in [min, min + extent): body, as one stage of the team: one chunk per iteration, or
  // with `chunks_per_thread` > 0, min(extent, chunks_per_thread × size) chunks of consecutive
  // iterations.
  Stmt share(const std::string &var, const HExpr &min, const HExpr &extent, Stmt body,
             int chunks_per_thread = 0) const;
  // Recursive unrolling's static ownership needs a plain barrier: every thread waits until all have
  // arrived (names::kBarrierWait).
  Stmt barrier() const;
  // The team's state (stack array of the function, zeroed): `state_ints(size)` int32s.
  static constexpr const char *kBarrierState = "barrier_state";
  static int state_ints(int size) { return (size + 2) * 16 + 16; }
  // The per-thread stage counter: declare it around the thread's body.
  static constexpr const char *kStageSeq = "stage_seq";
  Stmt with_stage_counter(Stmt body) const;

 private:
  mutable int stages_ = 0;  // names each stage's lets apart
};

}  // namespace grove::lowering::internal
