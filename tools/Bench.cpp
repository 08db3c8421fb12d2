#include "tools/Bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Clock.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "support/Safetensors.h"
#include "tools/CudaCommands.h"
#include "tools/Flops.h"
#include "tools/Messages.h"
#include "tools/Progress.h"
#include "tools/Report.h"
#include "tools/Tune.h"

namespace grove::tool {

namespace msg = tool_messages;

double percentile(std::vector<double> values, double p) {
  GROVE_CHECK(!values.empty(), "percentile of no values");
  std::sort(values.begin(), values.end());
  double pos = p / 100.0 * double(values.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
}

Timing time_passes(const cpu::CompiledModel &model, const Inputs &inputs, int64_t batch, int64_t repeat,
                   Progress *progress) {
  return time_passes([&](cpu::RunStats *stats) { run_inputs(model, inputs, {.batch = batch}, stats); },
                     repeat, progress);
}

Timing time_passes(const std::function<void(cpu::RunStats *stats)> &pass, int64_t repeat,
                   Progress *progress) {
  Timing timing;
  if (progress) progress->update(0);
  pass(&timing.pass);  // the warm-up pass; its stats describe a pass
  if (progress) progress->update(1);
  timing.calls = timing.pass.calls;
  std::vector<double> inspector;
  for (int64_t r = 0; r < repeat; ++r) {
    cpu::RunStats stats;
    auto start = std::chrono::steady_clock::now();
    pass(&stats);
    double ms = ms_since(start);
    timing.ms_per_batch.push_back(ms / double(timing.calls));
    inspector.push_back(stats.inspector_ms / double(timing.calls));
    if (progress) progress->update(r + 2);
  }
  timing.inspector_ms_per_batch = percentile(inspector, 50);
  return timing;
}

std::string sizes_string(const std::map<std::string, int64_t> &sizes) {
  std::string s;
  for (const auto &[name, value] : sizes) s += fmt::format("{}{}={}", s.empty() ? "" : ",", name, value);
  return s;
}

namespace {

double round4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace

BenchFigures bench_figures(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                           const Inputs &inputs, const Timing &timing) {
  BenchFigures f;
  f.median = percentile(timing.ms_per_batch, 50);
  f.p10 = percentile(timing.ms_per_batch, 10);
  f.p90 = percentile(timing.ms_per_batch, 90);
  f.flops_per_batch = inputs_flops(node_flops(program, sizes), inputs) / double(timing.calls);
  f.gflops = f.flops_per_batch / (f.median * 1e6);
  f.trees_per_s = double(inputs.count()) / (f.median * double(timing.calls)) * 1e3;
  return f;
}

nlohmann::json bench_json(const BenchCommand &c, const ilir::Program &program,
                          const std::map<std::string, int64_t> &sizes, const Inputs &inputs,
                          const Timing &timing, const BenchFigures &figures, const std::string &schedule,
                          const std::string &precision, double compile_ms) {
  return {{"tool", "grove"},
          {"model", program.name},
          {"model_file", c.model},
          {"sizes", sizes},
          {"schedule", schedule},
          {"precision", precision},
          {"batch", c.batch},
          {"inputs", inputs.what},
          {"trees", inputs.count()},
          {"nodes", timing.pass.nodes},
          {"levels", timing.pass.levels},
          {"calls", timing.calls},
          {"repeat", c.repeat},
          {"median_ms_per_batch", round4(figures.median)},
          {"p10_ms", round4(figures.p10)},
          {"p90_ms", round4(figures.p90)},
          {"trees_per_s", std::round(figures.trees_per_s * 10) / 10},
          {"flops_per_batch", figures.flops_per_batch},
          {"gflops", std::round(figures.gflops * 100) / 100},
          {"compile_ms", std::round(compile_ms * 10) / 10},
          {"inspector_ms", round4(timing.inspector_ms_per_batch)}};
}

void print_bench_head(std::ostream &out, const BenchCommand &c, const ilir::Program &program,
                      const std::map<std::string, int64_t> &sizes, const Inputs &inputs,
                      const Timing &timing) {
  out << fmt::format("model     {} from {}, sizes {}\n", program.name, c.model, sizes_string(sizes));
  out << fmt::format("{:<9} {} from {}: {} nodes, {} levels per pass, {} call(s) of up to {}\n", inputs.what,
                     inputs.count(), inputs.path, timing.pass.nodes, timing.pass.levels, timing.calls,
                     c.batch);
}

void print_bench_tail(std::ostream &out, const BenchCommand &c, const Inputs &inputs, const Timing &timing,
                      const BenchFigures &figures, const char *time_note) {
  out << fmt::format("inspector {:.4f} ms per batch (median; inside the timed passes)\n",
                     timing.inspector_ms_per_batch);
  out << fmt::format(
      "time      {:.4f} ms per batch (median of {} passes after 1 warm-up; p10 {:.4f}, p90 {:.4f}{})\n",
      figures.median, c.repeat, figures.p10, figures.p90, time_note);
  out << fmt::format("rate      {:.0f} {}/s, {:.2f} GFLOP/s ({:.4g} FLOPs per batch)\n", figures.trees_per_s,
                     inputs.what, figures.gflops, figures.flops_per_batch);
}

BenchInputs load_bench_inputs(const BenchCommand &c) {
  check_input_files(c.inputs, "bench");  // before the model: the cheapest mistakes first
  if (c.weights.empty() == !c.random_weights) user_error(msg::kBenchWeights);
  if (!c.weights.empty() && !c.sizes.empty()) user_error(msg::kBenchSizesWithWeights, c.sizes, c.weights);
  if (c.batch <= 0) user_error(msg::kBenchBadCount, "--batch", c.batch);
  if (c.repeat <= 0) user_error(msg::kBenchBadCount, "--repeat", c.repeat);

  BenchInputs in;
  in.program = dsl::parse_model_file(c.model);
  if (c.random_weights) {
    in.sizes = parse_sizes(c.sizes);
    in.weights = random_weights(in.program, in.sizes, c.seed);  // checks that sizes binds every variable
  } else {
    in.weights = read_safetensors(c.weights);
    in.sizes = bind_weights(in.program, in.weights, c.weights);
  }
  in.inputs = read_inputs(c.inputs, "bench");
  in.inputs.keep_first(c.limit);
  return in;
}

cpu::CompileOptions bench_compile_options(const BenchCommand &c, const std::string &schedule) {
  cpu::CompileOptions options;
  options.target = c.target;
  options.weights_file = c.random_weights ? "the random weights" : c.weights;
  options.schedule = schedule;
  if (c.threads > 0) options.schedule += fmt::format("{}threads={}", schedule.empty() ? "" : ",", c.threads);
  return options;
}

int bench(const BenchCommand &c, std::ostream &out) {
  if (is_cuda_target(c.target)) return bench_cuda(c, out);
  note_unused_cuda_options(c.cuda);
  BenchInputs in = load_bench_inputs(c);
  const ilir::Program &program = in.program;
  const std::map<std::string, int64_t> &sizes = in.sizes;
  const Inputs &inputs = in.inputs;
  std::string schedule = c.schedule;
  if (c.tuned) {
    std::string tuned = tuned_schedule(c, in);
    schedule = tuned + (tuned.empty() || schedule.empty() ? "" : ",") + schedule;
  }
  cpu::CompiledModel model =
      cpu::CompiledModel::compile(program, in.weights, bench_compile_options(c, schedule));
  print_notes(model.notes());
  // The warm-up pass and the timed ones; the line is gone before the report is printed.
  Timing timing;
  {
    Progress progress("bench " + program.name, "passes", progress_wanted(c.quiet));
    progress.set_total(c.repeat + 1);
    timing = time_passes(model, inputs, c.batch, c.repeat, &progress);
  }

  // The arithmetic that ran (precision=bf16 falls back to fp32 with a note where it has no kernel).
  const bool bf16 = model.abi().bf16_panels();
  const BenchFigures figures = bench_figures(program, sizes, inputs, timing);
  if (c.json) {
    nlohmann::json j = bench_json(c, program, sizes, inputs, timing, figures, model.schedule(),
                                  bf16 ? "bf16" : "fp32", model.compile_ms());
    j["gemm_kernel"] = to_string(model.abi().gemm_kernel);
    out << j.dump() << std::endl;
    return 0;
  }
  print_bench_head(out, c, program, sizes, inputs, timing);
  out << fmt::format("schedule  {}\n", model.schedule());
  out << fmt::format(
      "precision {}\n",
      bf16 ? fmt::format("bf16 level GEMMs (bf16 weights and inputs, fp32 accumulation; {} kernels)",
                         model.abi().gemm_kernel == GemmKernel::AmxBf16 ? "AMX tile" : "vdpbf16ps")
           : "fp32");
  out << fmt::format("compile   {:.1f} ms\n", model.compile_ms());
  print_bench_tail(out, c, inputs, timing, figures, "");
  return 0;
}

}  // namespace grove::tool
