#include "backends/cpu/Abi.h"

#include "backends/cpu/Messages.h"
#include "lowering/cpu/HostTarget.h"
#include "support/Error.h"

namespace grove::cpu {

namespace msg = cpu_messages;

// The plan (lowered.plan.abi) holds the contract: arguments in call order, params, states, packed
// weights, input checks. What only the emitter knows is added here.
ModelAbi make_abi(const lowering::LoweredModel &lowered, const std::string &target) {
  GROVE_CHECK(lowered.plan.unbound_sizes.empty(), "an ABI with the size {} unbound",
              lowered.plan.unbound_sizes[0]);
  ModelAbi abi = lowered.plan.abi;
  abi.function = lowered.module.functions().back().name;
  abi.target = target;
  return abi;
}

std::vector<std::string> LoweredForCpu::notes(ilir::StructureKind structure) const {
  std::vector<std::string> out = schedule.notes(structure);
  out.insert(out.end(), lowered.notes.begin(), lowered.notes.end());
  return out;
}

Halide::Target parse_target(const std::string &target) {
  if (target == "host") return lowering::host_target();
  if (!Halide::Target::validate_target_string(target)) user_error(msg::kBadTarget, target);
  return Halide::Target(target);
}

LoweredForCpu lower_for_cpu(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                            const CompileOptions &options, bool jit, const std::string &function,
                            bool runtime) {
  LoweredForCpu out;
  Halide::Target target = parse_target(options.target);
  if (jit) target = target.with_feature(Halide::Target::JIT);
  if (!runtime) target = target.with_feature(Halide::Target::NoRuntime);
  out.schedule = scheduling::default_schedule(program, lowering::vector_bytes(target));
  out.schedule.apply(options.schedule, "--schedule");
  lowering::LowerOptions lower_options;
  lower_options.sizes = sizes;
  lower_options.target = target;
  lower_options.schedule = out.schedule;
  lower_options.function_name = function;
  lower_options.bf16_kernel = options.bf16_kernel;
  out.lowered = lowering::lower(program, lower_options);
  out.abi = make_abi(out.lowered, target.to_string());
  return out;
}

}  // namespace grove::cpu
