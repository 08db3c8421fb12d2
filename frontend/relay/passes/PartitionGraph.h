#pragma once
// Partition graph (TVM's PartitionGraph): each annotated region of an external target becomes a
// global function `@tvmgen_<mod_name>_<target>_main_<n>` (n counts per module, so names are unique)
// with attributes Primitive=1, Inline=1, Compiler="<target>", global_symbol="<its name>", called in
// place of the region with the region's inputs. With bind_constants, constants used in the region
// are inside the function (not parameters). A region with several outputs returns one flat tuple
// (nested tuples flattened) and each former output is a projection of the call. Every
// compiler_begin/compiler_end left (the "default" ones included) is removed, so the result has no
// annotations. Assumes annotate_target's (or merge_compiler_regions') output; types the result.

#include <string>

#include "frontend/relay/IR.h"

namespace grove::relay {

Module partition_graph(const Module &m, const std::string &mod_name = "default", bool bind_constants = true);

}  // namespace grove::relay
