#pragma once
// The names of the entry function's arguments as generated code and messages see them: one
// definition for the plan (which lists the arguments, plan::LevelPlan::abi), the emitters (which
// bind them) and the C header a compiled library ships with.

#include <string>

namespace grove::plan::names {

// The inspector's arrays and scalars (backends/runtime/Inspector.h, LinearizedBatch).
inline constexpr const char *kLevelBegin = "level_begin";
inline constexpr const char *kChildBegin = "child_begin";
inline constexpr const char *kChildren = "children";
inline constexpr const char *kToken = "token";
inline constexpr const char *kTeamBegin = "team_begin";  // with unroll (LinearizedBatch::team_begin)
inline constexpr const char *kNumLevels = "num_levels";
// Top-down (backward) programs: each node's parent (the zero node for a root) and its child slot
// there, derived from the child arrays by the runtime.
inline constexpr const char *kParent = "parent";
inline constexpr const char *kChildSlot = "child_slot";
// Over DAGs and sequences, parent and child_slot hold each node's successors from parent_begin[n].
inline constexpr const char *kParentBegin = "parent_begin";
std::string param(const std::string &tensor);     // p_<tensor>
std::string state(const std::string &tensor);     // s_<tensor>
std::string temp(const std::string &tensor);      // t_<tensor> (the emitter's local buffers)
std::string saved(const std::string &tensor);     // v_<tensor> (a top-down program's saved inputs)
std::string gradient(const std::string &tensor);  // g_<tensor> (a top-down program's reductions)
std::string packed(int index);                    // pk<index>

}  // namespace grove::plan::names
