#include "tools/CudaCommands.h"

#include <iostream>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/Driver.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "tools/Report.h"

namespace grove::tool {

namespace msg = cuda_messages;

// Steps: the model; the plan for the GPU (every size bound); the kernels in the form --cuda asks
// for; the source as it is, or NVRTC's PTX for --arch (compute_XX for an sm_XX).
int dump_cuda(const DumpCommand &c) {
  ilir::Program program = dsl::parse_model_file(c.model);
  std::map<std::string, int64_t> sizes =
      c.sizes.empty() ? std::map<std::string, int64_t>{} : parse_sizes(c.sizes);
  check_sizes(program, sizes, true);
  plan::LevelPlan plan = cuda::plan_for_cuda(program, sizes, c.schedule);
  print_notes(plan.schedule.notes(program.structure));
  cuda::CudaSource source = cuda::emit_cuda(plan, cuda::parse_cuda_options(c.cuda, "--cuda"));
  print_notes(source.notes);
  if (c.stage == "cuda") {
    std::cout << source.text;
    return 0;
  }
  std::string arch = c.arch;
  if (arch.rfind("sm_", 0) == 0) arch = "compute_" + arch.substr(3);
  std::cout << cuda::compile_with_nvrtc(source, arch, program.name).image;
  return 0;
}

void refuse_cuda_target(const std::string &command) {
  std::string why;
  if (!cuda::driver_available(&why)) user_error(msg::kTargetCudaNeedsDriver, why);
  user_error(msg::kTargetCudaNotWired, command, cuda::device_info(0).name);
}

void refuse_cuda_compile() { user_error(msg::kTargetCudaCompile); }

}  // namespace grove::tool
