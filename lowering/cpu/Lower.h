#pragma once
// The lowering pipeline: a verified ILIR Program → ILIR passes → level plan → a Halide module ready
// for a back end.
// lowering/Lower.cpp is the one readable list of passes. GROVE_DEBUG=1 times each pass;
// GROVE_DEBUG=2 also prints the IR after each pass.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Halide.h"
#include "ilir/IR.h"
#include "lowering/cpu/HostTarget.h"
#include "lowering/cpu/LowerToLoops.h"
#include "plan/LevelPlan.h"
#include "scheduling/Schedule.h"

namespace grove::lowering {

struct LowerOptions {
  std::map<std::string, int64_t> sizes;  // bound size variables; unbound ones become arguments
  Halide::Target target = host_target();
  std::string function_name = "grove_model";
  scheduling::Schedule schedule;
  // precision=bf16's kernels: nullopt, the running CPU's (Bf16Support); else Vdpbf16ps or AmxBf16
  // whatever this CPU is (an ahead-of-time library's variants).
  std::optional<GemmKernel> bf16_kernel;
};

struct LoweredModel {
  Halide::Internal::Stmt loops;  // the loop nest after simplification: what `grove dump --stage loops` shows
  Halide::Module module{"",
                        Halide::Target()};  // the entry function (and its parallel closures), ready for LLVM
  // What the loops were emitted from: the program after the ILIR passes, its stages, and the entry
  // function's contract (plan.abi: arguments in call order, the packed weights the caller fills).
  plan::LevelPlan plan;
  // What the target changed in the schedule asked for (precision=bf16 where it has no kernel): one
  // sentence each, printed as notes beside Schedule::notes.
  std::vector<std::string> notes;
  // Non-empty: the LLVM CPU model and features to compile `module` for instead of those Halide
  // derives from its target (Bf16Support; applied by lowering/Codegen.h).
  std::string llvm_cpu, llvm_features;
};

LoweredModel lower(const ilir::Program &program, const LowerOptions &options);

}  // namespace grove::lowering
