#pragma once
// Lowering for the CPU, and the ABI of a lowered model (abi/ModelAbi.h): what the runtime needs
// to call its entry function, for the JIT (CompiledModel) and for libraries written by `grove compile`
// (Aot.h).

#include <map>
#include <string>

#include "abi/ModelAbi.h"
#include "backends/cpu/CompiledModel.h"
#include "ilir/IR.h"
#include "lowering/cpu/Lower.h"
#include "scheduling/Schedule.h"

namespace grove::cpu {

// The ABI of `lowered` (every size variable bound) compiled for `target`: its plan's contract
// with the entry function's name and target added.
ModelAbi make_abi(const lowering::LoweredModel &lowered, const std::string &target);

// What the JIT and `grove compile` share: the program lowered for the CPU under the default
// schedule with options.schedule applied, and its ABI. `sizes` binds every size variable.
struct LoweredForCpu {
  scheduling::Schedule schedule;
  lowering::LoweredModel lowered;
  ModelAbi abi;
  // The notes to print: the schedule's (Schedule::notes) and the target's (LoweredModel::notes).
  std::vector<std::string> notes(ilir::StructureKind structure) const;
};
// `jit`: for Halide's JIT (CompiledModel), whose modules share one runtime; else (Aot) the module
// carries its own.
// `function`: the entry function's name; `runtime`: whether an AOT module carries Halide's runtime
// (a library's second variant shares its first's).
LoweredForCpu lower_for_cpu(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                            const CompileOptions &options, bool jit = false,
                            const std::string &function = "grove_model", bool runtime = true);

// "host" or a Halide target string; a UserError otherwise.
Halide::Target parse_target(const std::string &target);

}  // namespace grove::cpu
