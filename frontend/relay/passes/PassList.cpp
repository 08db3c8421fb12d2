#include "frontend/relay/passes/PassList.h"

#include <fmt/format.h>

#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/passes/AnnotateTarget.h"
#include "frontend/relay/passes/DeadCode.h"
#include "frontend/relay/passes/EliminateCommonSubexpr.h"
#include "frontend/relay/passes/FoldConstant.h"
#include "frontend/relay/passes/FuseOps.h"
#include "frontend/relay/passes/InferType.h"
#include "frontend/relay/passes/Inline.h"
#include "frontend/relay/passes/MergeCompilerRegions.h"
#include "frontend/relay/passes/MergeComposite.h"
#include "frontend/relay/passes/PartitionGraph.h"
#include "frontend/relay/passes/ToANormalForm.h"
#include "frontend/relay/passes/ToGraphNormalForm.h"
#include "support/Error.h"
#include "support/PassRunner.h"

namespace grove::relay {

namespace {

using Targets = std::vector<const ExternalTarget *>;

const std::vector<PassInfo> kPasses = {
    {"infer", "type inference (TVM's InferType): every missing type annotation filled in", false,
     [](const Module &m, const PassOptions &, const Targets &) { return infer_type_annotations(m); }},
    {"dce", "dead-code elimination: unused let bindings without effects", false,
     [](const Module &m, const PassOptions &, const Targets &) { return dead_code_elimination(m); }},
    {"fold", "constant folding: op calls on constants, through let and if (no reassociation)", false,
     [](const Module &m, const PassOptions &, const Targets &) { return fold_constant(m); }},
    {"cse", "common-subexpression elimination of op calls within a scope", false,
     [](const Module &m, const PassOptions &, const Targets &) { return eliminate_common_subexpr(m); }},
    {"inline", "inlines global functions marked Inline=1 at their call sites", false,
     [](const Module &m, const PassOptions &, const Targets &) { return inline_globals(m); }},
    {"anf", "conversion to A-normal form: every intermediate bound by a let", false,
     [](const Module &m, const PassOptions &, const Targets &) { return to_a_normal_form(m); }},
    {"graph", "conversion to graph form: pure let bindings become shared nodes", false,
     [](const Module &m, const PassOptions &, const Targets &) { return to_graph_normal_form(m); }},
    {"fuse", "operator fusion into Primitive functions, grouped by post-dominator", false,
     [](const Module &m, const PassOptions &o, const Targets &) { return fuse_ops(m, o.fuse_max_depth); }},
    {"merge-composite", "BYOC: outlines the targets' pattern matches as Composite functions", true,
     [](const Module &m, const PassOptions &, const Targets &ts) {
       std::vector<CompositePattern> patterns;
       for (const ExternalTarget *t : ts)
         patterns.insert(patterns.end(), t->patterns.begin(), t->patterns.end());
       return merge_composite(m, patterns);
     }},
    {"annotate", "BYOC: compiler_begin/compiler_end around the calls each target supports", true,
     [](const Module &m, const PassOptions &, const Targets &ts) { return annotate_target(m, ts); }},
    {"merge-regions", "BYOC: merges adjacent regions of one target where no cycle results", false,
     [](const Module &m, const PassOptions &, const Targets &) { return merge_compiler_regions(m); }},
    {"partition", "BYOC: each target's region outlined as a global function with Compiler=target", false,
     [](const Module &m, const PassOptions &, const Targets &) { return partition_graph(m); }},
};

std::string known_names() {
  std::string s;
  for (const PassInfo &p : kPasses) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

}  // namespace

const std::vector<PassInfo> &all_passes() { return kPasses; }

std::vector<PassStep> parse_pass_list(const std::string &spec) {
  std::vector<PassStep> out;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const PassInfo *found = nullptr;
    for (const PassInfo &p : kPasses)
      if (name == p.name) found = &p;
    if (!found)
      user_error("--passes: {} (the passes are: {})",
                 name.empty() ? std::string("an empty pass name") : fmt::format("no pass named '{}'", name),
                 known_names());
    PassStep step{found, {}};
    if (eq != std::string::npos) {
      if (!found->takes_targets) user_error("--passes: the pass '{}' takes no targets ('{}')", name, item);
      const std::string list = item.substr(eq + 1);
      for (size_t b = 0; b <= list.size();) {
        size_t e = list.find('+', b);
        if (e == std::string::npos) e = list.size();
        if (e == b) user_error("--passes: an empty target name in '{}'", item);
        step.targets.push_back(list.substr(b, e - b));
        b = e + 1;
      }
    } else if (found->takes_targets) {
      user_error("--passes: the pass '{}' needs its targets: write {}=TARGET (or {}=T1+T2)", name, name,
                 name);
    }
    out.push_back(std::move(step));
    begin = end + 1;
  }
  return out;
}

Module run_passes(const Module &module, const std::vector<PassStep> &passes, const PassOptions &options) {
  const int level = debug_level();
  Module m = module;
  infer_types(m);
  for (const PassStep &step : passes) {
    Targets targets;
    for (const std::string &name : step.targets) {
      const ExternalTarget *found = nullptr;
      std::string known;
      for (const ExternalTarget &t : options.targets) {
        if (t.name == name) found = &t;
        known += (known.empty() ? "" : ", ") + t.name;
      }
      if (!found)
        user_error("--passes: {}: no target is named '{}' (the targets are: {})", step.pass->name, name,
                   known.empty() ? std::string("none") : known);
      targets.push_back(found);
    }
    Module out = run_timed_pass(
        "relay", step.pass->name, level, m,
        [&](const Module &in) {
          Module result = step.pass->run(in, options, targets);
          infer_types(result);
          return result;
        },
        [](const Module &x) { return print_module(x).text; },
        [](const Module &a, const Module &b) { return structural_equal(a, b).equal; });
    m = std::move(out);
  }
  return m;
}

}  // namespace grove::relay
