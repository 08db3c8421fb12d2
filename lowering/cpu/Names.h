#pragma once
// The names the generated code calls and binds: the entry function's arguments (plan/Names.h, one
// definition for the plan, the emitters and the C header) and the runtime's team protocol.

#include "plan/Names.h"

namespace grove::lowering::names {

using namespace plan::names;

// How the threads of a parallel region (schedule `region`) share a stage's chunks and wait for
// them (lowering/Team.h), provided by the runtime (backends/runtime/Team.h). `state` points to
// zeroed int32s the generated code owns; `seq` numbers the stage.
//   int grove_stage_claim(int32_t *state, int seq, int chunks, int tid, int threads): a chunk or -1
//   int grove_stage_finish(int32_t *state, int seq): one chunk of stage seq is done
//   int grove_stage_wait(int32_t *state, int seq, int chunks): until all of stage seq are done
//   int grove_barrier_wait(int32_t *state, int threads): until all threads have arrived (unroll)
inline constexpr const char *kStageClaim = "grove_stage_claim";
inline constexpr const char *kStageFinish = "grove_stage_finish";
inline constexpr const char *kStageWait = "grove_stage_wait";
inline constexpr const char *kBarrierWait = "grove_barrier_wait";

}  // namespace grove::lowering::names
