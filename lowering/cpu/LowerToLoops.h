#pragma once
// Level plan → Halide loop nest: the CPU emitter. Maps the plan's recursion to a serial loop over
// height levels (each level's stages in turn: level GEMMs as register-blocked micro-kernels,
// per-node matrix products over (node, row block) pairs, node loops), or unbatched to a serial loop
// over nodes in topological order; with a team, the levels to one parallel region. Structure
// functions become loads from the inspector's arrays, Computes vectorized loop nests, Sums
// accumulation loops. Decides nothing the plan decided. Guarantees a Stmt whose only free names
// are the arguments listed in `LoopNest::args`.

#include <vector>

#include "Halide.h"
#include "lowering/cpu/Names.h"
#include "plan/LevelPlan.h"

namespace grove::lowering {

struct LoopNest {
  Halide::Internal::Stmt body;
  // In call order: the plan's abi.args, then its unbound size variables (int32 scalars).
  std::vector<Halide::Internal::LoweredArgument> args;
};

LoopNest lower_to_loops(const plan::LevelPlan &plan);

}  // namespace grove::lowering
