#include "frontend/relay/passes/PassList.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/passes/DeadCode.h"
#include "frontend/relay/passes/EliminateCommonSubexpr.h"
#include "frontend/relay/passes/FoldConstant.h"
#include "frontend/relay/passes/FuseOps.h"
#include "frontend/relay/passes/Inline.h"
#include "frontend/relay/passes/ToANormalForm.h"
#include "frontend/relay/passes/ToGraphNormalForm.h"
#include "ilir/Error.h"

namespace grove::relay {

namespace {

int debug_level() {
  const char *v = std::getenv("GROVE_DEBUG");
  return v ? std::atoi(v) : 0;
}

const std::vector<PassInfo> kPasses = {
    {"dce", "dead-code elimination: unused let bindings without effects",
     [](const Module &m, const PassOptions &) { return dead_code_elimination(m); }},
    {"fold", "constant folding: op calls on constants, through let and if (no reassociation)",
     [](const Module &m, const PassOptions &) { return fold_constant(m); }},
    {"cse", "common-subexpression elimination of op calls within a scope",
     [](const Module &m, const PassOptions &) { return eliminate_common_subexpr(m); }},
    {"inline", "inlines global functions marked Inline=1 at their call sites",
     [](const Module &m, const PassOptions &) { return inline_globals(m); }},
    {"anf", "conversion to A-normal form: every intermediate bound by a let",
     [](const Module &m, const PassOptions &) { return to_a_normal_form(m); }},
    {"graph", "conversion to graph form: pure let bindings become shared nodes",
     [](const Module &m, const PassOptions &) { return to_graph_normal_form(m); }},
    {"fuse", "operator fusion into Primitive functions, grouped by post-dominator",
     [](const Module &m, const PassOptions &o) { return fuse_ops(m, o.fuse_max_depth); }},
};

std::string known_names() {
  std::string s;
  for (const PassInfo &p : kPasses) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

}  // namespace

const std::vector<PassInfo> &all_passes() { return kPasses; }

std::vector<const PassInfo *> parse_pass_list(const std::string &spec) {
  std::vector<const PassInfo *> out;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    std::string name = spec.substr(begin, end - begin);
    const PassInfo *found = nullptr;
    for (const PassInfo &p : kPasses)
      if (name == p.name) found = &p;
    if (!found)
      user_error("--passes: {} (the passes are: {})",
                 name.empty() ? std::string("an empty pass name") : fmt::format("no pass named '{}'", name),
                 known_names());
    out.push_back(found);
    begin = end + 1;
  }
  return out;
}

Module run_passes(const Module &module, const std::vector<const PassInfo *> &passes,
                  const PassOptions &options) {
  const int level = debug_level();
  Module m = module;
  infer_types(m);
  for (const PassInfo *pass : passes) {
    auto t0 = std::chrono::steady_clock::now();
    Module out = pass->run(m, options);
    infer_types(out);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (level >= 1) std::cerr << fmt::format("[grove] relay pass {:<8} {:8.2f} ms\n", pass->name, ms);
    if (level >= 2 && !structural_equal(out, m).equal)
      std::cerr << "[grove] after " << pass->name << ":\n" << print_module(out).text << "\n";
    m = std::move(out);
  }
  return m;
}

}  // namespace grove::relay
