#include "tools/CudaCommands.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/Driver.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Clock.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "support/Error.h"
#include "support/Safetensors.h"
#include "tools/Progress.h"
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

void require_cuda_driver() {
  std::string why;
  if (!cuda::driver_available(&why)) user_error(msg::kTargetCudaNeedsDriver, why);
}

void note_cpu_only_options(int64_t threads, bool tuned, const std::string &cache) {
  if (threads > 0) print_notes({fmt::format(msg::kNoteTargetCudaThreads, threads)});
  if (tuned) print_notes({msg::kNoteTargetCudaTuned});
  if (!tuned && !cache.empty()) print_notes({msg::kNoteTargetCudaCache});
}

std::unique_ptr<cuda::DeviceModel> prepare_device_model(const ilir::Program &program,
                                                        const std::map<std::string, int64_t> &sizes,
                                                        const std::string &schedule,
                                                        const std::string &cuda_options,
                                                        const Weights &weights) {
  plan::LevelPlan plan = cuda::plan_for_cuda(program, sizes, schedule);
  print_notes(plan.schedule.notes(program.structure));
  auto model = std::make_unique<cuda::DeviceModel>(plan, cuda::parse_cuda_options(cuda_options, "--cuda"));
  print_notes(model->source().notes);
  model->bind(weights);
  return model;
}

std::string cuda_target_line(const cuda::DeviceModel &model) {
  const cuda::DeviceInfo &d = model.device();
  return fmt::format("cuda ({}) on {} ({}, {} multiprocessors)", cuda::to_string(model.source().options),
                     d.name, d.arch(), d.multiprocessors);
}

Tensor run_chunk_on_device(const cuda::DeviceModel &model, InputFormat format, const InputChunk &chunk,
                           const RunOptions &options, RunStats &stats) {
  switch (format) {
    case InputFormat::Trees:
      return model.run(chunk.trees, options, &stats);
    case InputFormat::Dags:
    case InputFormat::Grids:
      return model.run_dags(chunk.dags, options, &stats);
    case InputFormat::Sequences:
      return model.run_sequences(chunk.sequences, options, &stats);
  }
  return {};
}

void note_unused_cuda_options(const std::string &cuda) {
  if (!cuda.empty()) print_notes({fmt::format(msg::kNoteCudaWithoutTarget, cuda)});
}

// Steps 1-4 of the bench protocol (tools/Bench.h) with the model on device 0: compiling it is
// NVRTC's compile and the module's load; a pass runs every input in calls of --batch.
int bench_cuda(const BenchCommand &c, std::ostream &out) {
  require_cuda_driver();
  note_cpu_only_options(c.threads, c.tuned, c.cache);
  BenchInputs in = load_bench_inputs(c);
  const ilir::Program &program = in.program;
  const std::map<std::string, int64_t> &sizes = in.sizes;
  const Inputs &inputs = in.inputs;
  std::unique_ptr<cuda::DeviceModel> model =
      prepare_device_model(program, sizes, c.schedule, c.cuda, in.weights);
  auto pass = [&](RunStats *stats) {
    RunOptions options{.batch = c.batch};
    if (!inputs.trees.empty()) {
      model->run(inputs.trees, options, stats);
    } else if (!inputs.dags.empty()) {
      options.noun = inputs.what == "grids" ? "grid" : "DAG";
      model->run_dags(inputs.dags, options, stats);
    } else {
      model->run_sequences(inputs.sequences, options, stats);
    }
  };
  Timing timing;
  {
    Progress progress("bench " + program.name, "passes", progress_wanted(c.quiet));
    progress.set_total(c.repeat + 1);
    timing = time_passes(pass, c.repeat, &progress);
  }

  const BenchFigures figures = bench_figures(program, sizes, inputs, timing);
  const cuda::DeviceInfo &device = model->device();
  if (c.json) {
    nlohmann::json j = bench_json(c, program, sizes, inputs, timing, figures, model->abi().schedule, "fp32",
                                  model->compile_ms());
    j["target"] = "cuda";
    j["cuda"] = cuda::to_string(model->source().options);
    j["gpu"] = device.name;
    j["arch"] = device.arch();
    out << j.dump() << std::endl;
    return 0;
  }
  print_bench_head(out, c, program, sizes, inputs, timing);
  out << fmt::format("target    {}\n", cuda_target_line(*model));
  out << fmt::format("schedule  {}\n", model->abi().schedule);
  out << "precision fp32\n";
  out << fmt::format("compile   {:.1f} ms (NVRTC cubin and module load)\n", model->compile_ms());
  print_bench_tail(out, c, inputs, timing, figures, "; copies, launches and synchronization included");
  return 0;
}

void refuse_cuda_target(const std::string &command) {
  require_cuda_driver();
  user_error(msg::kTargetCudaNotWired, command, cuda::device_info(0).name);
}

}  // namespace grove::tool
