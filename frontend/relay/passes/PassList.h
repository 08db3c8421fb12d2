#pragma once
// The Relay pass list: each pass by its command-line name, and the runner that applies a list of
// them in order. Every pass takes a typed module and returns a module; the runner re-infers types
// before each pass (passes rebuild nodes, which carry no types) and after the last.
// GROVE_DEBUG=1 times each pass; GROVE_DEBUG=2 also prints the module after each pass that changed it.

#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

struct PassOptions {
  int fuse_max_depth = 256;  // fuse: the most ops in one fused group (TVM's kMaxFusedOps)
};

struct PassInfo {
  const char *name;         // "dce", "fold", ...
  const char *description;  // one line, for --help and docs
  Module (*run)(const Module &module, const PassOptions &options);
};

// dce, fold, cse, inline, anf, graph, fuse — in that order.
const std::vector<PassInfo> &all_passes();

// "dce,fold,fuse" → those passes, in that order (a pass may repeat). An unknown or empty name is a
// UserError that lists the known ones.
std::vector<const PassInfo *> parse_pass_list(const std::string &spec);

// Type-checks `module`, then runs `passes` in order.
Module run_passes(const Module &module, const std::vector<const PassInfo *> &passes,
                  const PassOptions &options = {});

}  // namespace grove::relay
