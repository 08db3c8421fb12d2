#pragma once
// The Relay pass list: each pass by its command-line name, and the runner that applies a list of
// them in order. Every pass takes a typed module and returns a module; the runner re-infers types
// before each pass (passes rebuild nodes, which carry no types) and after the last.
// GROVE_DEBUG=1 times each pass; GROVE_DEBUG=2 also prints the module after each pass that changed it.

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

struct PassOptions {
  int fuse_max_depth = 256;  // fuse: the most ops in one fused group (TVM's kMaxFusedOps)
  // The external targets that `merge-composite=T` and `annotate=T` may name. The command line gives
  // every code generator's (backends/relay/byoc/Codegen.h); the frontend knows none by itself.
  std::vector<ExternalTarget> targets;
};

struct PassInfo {
  const char *name;         // "dce", "fold", ...
  const char *description;  // one line, for --help and docs
  bool takes_targets;       // written `name=T` or `name=T1+T2` (merge-composite, annotate)
  Module (*run)(const Module &module, const PassOptions &options,
                const std::vector<const ExternalTarget *> &targets);
};

// One pass of a list, with the targets it names (empty for a pass that takes none).
struct PassStep {
  const PassInfo *pass;
  std::vector<std::string> targets;
};

// dce, fold, cse, inline, anf, graph, fuse, then the BYOC passes merge-composite, annotate,
// merge-regions, partition — in that order.
const std::vector<PassInfo> &all_passes();

// "dce,fold,annotate=dnnl,partition" → those passes, in that order (a pass may repeat). An unknown
// or empty name, targets given to a pass that takes none, or none to one that needs them, is a
// UserError that says which and lists the passes.
std::vector<PassStep> parse_pass_list(const std::string &spec);

// Type-checks `module`, then runs `passes` in order. A target name not in options.targets is a
// UserError listing the known ones.
Module run_passes(const Module &module, const std::vector<PassStep> &passes, const PassOptions &options = {});

}  // namespace grove::relay
