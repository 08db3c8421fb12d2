#include "backends/runtime/CudaKernelArgs.h"

#include "support/Error.h"

namespace grove::cuda {

using Kind = ModelAbi::ArgKind;

KernelArgs::KernelArgs(const ModelAbi &abi, const CallBuffers &b, int32_t num_levels)
    : num_levels_(num_levels) {
  // Every pointer argument's value lives in pointers_, which never reallocates (reserved).
  pointers_.reserve(abi.args.size() + 2);
  auto pointer = [&](const void *p) {
    pointers_.push_back(p);
    argv_.push_back(&pointers_.back());
  };
  for (const ModelAbi::Arg &a : abi.args) {
    switch (a.kind) {
      case Kind::Param:
        pointer(b.params[a.index]);
        break;
      case Kind::Packed:
        pointer(b.packed[a.index]);
        break;
      case Kind::State:
        pointer(b.states[a.index]);
        break;
      case Kind::LevelBegin:
        pointer(b.level_begin);
        break;
      case Kind::ChildBegin:
        pointer(b.child_begin);
        break;
      case Kind::Children:
        pointer(b.children);
        break;
      case Kind::Token:
        pointer(b.token);
        break;
      case Kind::TeamBegin:
        pointer(b.team_begin);
        break;
      case Kind::NumLevels:
        argv_.push_back(&num_levels_);
        break;
      case Kind::Saved:
      case Kind::Gradient:
      case Kind::Parent:
      case Kind::ChildSlot:
      case Kind::ParentBegin:
        GROVE_CHECK(false, "a CUDA call with a backward program's argument {}", a.name);
    }
  }
  pointer(b.scratch);
  pointer(b.barrier);
  argv_.push_back(&level_);
}

void for_each_launch(const CudaLaunch &launch, int32_t num_levels,
                     const std::function<void(const std::string &kernel, int32_t level)> &fn) {
  if (launch.persistent) {
    fn("grove_persistent", -1);
    return;
  }
  if (num_levels <= 0) return;
  for (const std::string &k : launch.hoisted) fn(k, -1);
  for (int32_t level = 0; level < num_levels; ++level) {
    // Specialized, the leaves are level 0 and every other level is internal; else each level runs
    // both cases' phases, each node its own case's.
    if (level == 0 || !launch.specialized)
      for (const std::string &k : launch.leaf) fn(k, level);
    if (level > 0 || !launch.specialized)
      for (const std::string &k : launch.internal) fn(k, level);
  }
}

}  // namespace grove::cuda
