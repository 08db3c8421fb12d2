#pragma once
// ILIR + Schedule → Halide loop nest. Turns the recursion into a serial loop over height levels
// (dynamic batching: each level's nodes together, matrix–vector products as register-blocked GEMMs
// over the level) or, unbatched, a serial loop over nodes in topological order; structure functions
// into loads from the inspector's arrays; Computes into vectorized loop nests; Sums into
// accumulation loops. Assumes a verified Program; guarantees a Stmt whose only free names are the
// arguments listed in `LoopNest::args`.

#include <map>
#include <string>
#include <vector>

#include "Halide.h"
#include "backends/runtime/ModelAbi.h"
#include "ilir/IR.h"
#include "scheduling/Schedule.h"

namespace grove::lowering {

// Names of the inspector's arrays and scalars as the generated code sees them.
namespace names {
inline constexpr const char *kLevelBegin = "level_begin";
inline constexpr const char *kChildBegin = "child_begin";
inline constexpr const char *kChildren = "children";
inline constexpr const char *kToken = "token";
inline constexpr const char *kTeamBegin = "team_begin";  // with unroll (LinearizedBatch::team_begin)
inline constexpr const char *kNumLevels = "num_levels";
// How the threads of a parallel region (schedule `region`) share a stage's chunks and wait for
// them (lowering::internal::Team), provided by the runtime (backends/runtime/Team.h). `state`
// points to zeroed int32s the generated code owns; `seq` numbers the stage.
//   int grove_stage_claim(int32_t *state, int seq, int chunks, int tid, int threads): a chunk or -1
//   int grove_stage_finish(int32_t *state, int seq): one chunk of stage seq is done
//   int grove_stage_wait(int32_t *state, int seq, int chunks): until all of stage seq are done
//   int grove_barrier_wait(int32_t *state, int threads): until all threads have arrived (unroll)
inline constexpr const char *kStageClaim = "grove_stage_claim";
inline constexpr const char *kStageFinish = "grove_stage_finish";
inline constexpr const char *kStageWait = "grove_stage_wait";
inline constexpr const char *kBarrierWait = "grove_barrier_wait";
std::string param(const std::string &tensor);  // p_<tensor>
std::string state(const std::string &tensor);  // s_<tensor>
std::string temp(const std::string &tensor);   // t_<tensor>
}  // namespace names

// A weight's rows packed for a GEMM micro-kernel; the layout is owned by the model's ABI.
using grove::PackedWeight;

struct LoopNest {
  Halide::Internal::Stmt body;
  // In call order: params, packed weights, states (program order), the inspector arrays (with
  // team_begin last when unrolled), num_levels, then any size variable left unbound (as an int32 scalar).
  std::vector<Halide::Internal::LoweredArgument> args;
  std::vector<PackedWeight> packed;
};

// `sizes` binds size variables to constants; unbound ones become scalar arguments (and disable
// the GEMM micro-kernels, which need constant shapes).
LoopNest lower_to_loops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                        const scheduling::Schedule &schedule);

}  // namespace grove::lowering
