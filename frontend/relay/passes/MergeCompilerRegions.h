#pragma once
// Merge compiler regions (TVM's MergeCompilerRegions): annotated regions (between compiler_begin and
// compiler_end, annotate_target's output) of the same target that are adjacent — one's end feeds the
// other's begin — are merged greedily into one, by removing the end/begin pair between them, unless
// the merge would create a cycle: a path from one region to the other through a region of another
// target (the diamond through an unsupported op stays split). "default" regions are never merged.
// Assumes annotate_target's output; guarantees every region is still a convex set of expressions.

#include "frontend/relay/IR.h"

namespace grove::relay {

Module merge_compiler_regions(const Module &m);

}  // namespace grove::relay
