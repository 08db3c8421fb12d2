#include "backends/cpu/Barrier.h"

#include "backends/runtime/Team.h"
#include "lowering/cpu/Names.h"

namespace grove::cpu {

Halide::Internal::JITModule barrier_module() {
  Halide::Internal::JITModule m;
  m.add_extern_for_export(lowering::names::kBarrierWait, Halide::ExternCFunction(&grove_barrier_wait));
  m.add_extern_for_export(lowering::names::kStageClaim, Halide::ExternCFunction(&grove_stage_claim));
  m.add_extern_for_export(lowering::names::kStageFinish, Halide::ExternCFunction(&grove_stage_finish));
  m.add_extern_for_export(lowering::names::kStageWait, Halide::ExternCFunction(&grove_stage_wait));
  return m;
}

}  // namespace grove::cpu
