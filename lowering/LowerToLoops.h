#pragma once
// ILIR → Halide loop nest. Turns the recursion into a serial loop over height levels and a
// parallel loop over each level's nodes (dynamic batching), the structure functions into loads
// from the inspector's arrays, each Compute into a loop nest and each Sum into an accumulation
// loop. Assumes a verified Program; guarantees a Stmt whose only free names are the arguments
// listed in `LoopNest::args`.

#include <map>
#include <string>
#include <vector>

#include "Halide.h"
#include "ilir/IR.h"

namespace grove::lowering {

// Names of the inspector's arrays and scalars as the generated code sees them.
namespace names {
inline constexpr const char *kLevelBegin = "level_begin";
inline constexpr const char *kChildBegin = "child_begin";
inline constexpr const char *kChildren = "children";
inline constexpr const char *kToken = "token";
inline constexpr const char *kNumLevels = "num_levels";
std::string param(const std::string &tensor);  // p_<tensor>
std::string state(const std::string &tensor);  // s_<tensor>
std::string temp(const std::string &tensor);   // t_<tensor>
}  // namespace names

struct LoopNest {
  Halide::Internal::Stmt body;
  // In call order: params, states (program order), the inspector arrays, num_levels, then any
  // size variable left unbound (as an int32 scalar).
  std::vector<Halide::Internal::LoweredArgument> args;
};

// `sizes` binds size variables to constants; unbound ones become scalar arguments.
LoopNest lower_to_loops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes);

}  // namespace grove::lowering
