#include "tools/Commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Npy.h"
#include "backends/runtime/RandomWeights.h"
#include "backends/runtime/Safetensors.h"
#include "datasets/DagReader.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/Error.h"
#include "ilir/IRPrinter.h"
#include "lowering/Lower.h"
#include "tools/Messages.h"
#include "tools/Tune.h"

namespace grove::tool {

namespace msg = tool_messages;

namespace {

bool same_file(const std::string &a, const std::string &b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) &&
         std::filesystem::equivalent(a, b, ec);
}

}  // namespace

int run(const RunCommand &c) {
  const InputFiles &f = c.inputs;
  auto [input_path, input_what] = check_input_files(f, "run");
  if (c.all_nodes && f.dags.empty() && f.grids.empty()) user_error(msg::kAllNodesWithoutDags);
  for (const auto &[path, what] : {std::pair<std::string, std::string>{c.model, "model"},
                                   {c.weights, "weights"},
                                   {input_path, input_what},
                                   {f.vocab, "vocabulary"}})
    if (!path.empty() && same_file(c.out, path)) user_error(msg::kOutIsInput, c.out, what);

  ilir::Program program = dsl::parse_model_file(c.model);
  Weights weights = read_safetensors(c.weights);
  Inputs inputs = read_inputs(f, "run");

  cpu::CompileOptions options;
  options.target = c.target;
  options.weights_file = c.weights;
  options.schedule = c.schedule;
  if (c.tuned) {
    std::map<std::string, int64_t> sizes = bind_weights(program, weights, c.weights);
    std::string tuned = cached_schedule(c.cache, tune_key(program, sizes, c.batch, c.schedule, c.target));
    options.schedule = tuned + (tuned.empty() || c.schedule.empty() ? "" : ",") + c.schedule;
  }
  cpu::CompiledModel model = cpu::CompiledModel::compile(program, weights, options);
  cpu::RunStats stats;
  auto t0 = std::chrono::steady_clock::now();
  cpu::RunOptions run_options{.batch = c.batch};
  run_options.outputs = c.all_nodes ? DagOutputs::AllNodes : DagOutputs::Sinks;
  Tensor roots = run_inputs(model, inputs, run_options, &stats);
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_npy(c.out, roots);

  if (c.stats) {
    std::cout << fmt::format("model     {} ({}) from {}\n", program.name, ilir::to_string(program.structure),
                             c.model);
    std::cout << fmt::format("{:<9} {} from {}: {} nodes, {} levels in {} call(s) of up to {} {}\n",
                             inputs.what, stats.trees, inputs.path, stats.nodes, stats.levels, stats.calls,
                             c.batch == 0 ? stats.trees : c.batch, inputs.what);
    std::cout << fmt::format("schedule  {}\n", model.schedule());
    std::cout << fmt::format("compile   {:.1f} ms (ILIR -> Halide loop nest -> LLVM -> x86 JIT)\n",
                             model.compile_ms());
    std::cout << fmt::format("inspector {:.2f} ms\n", stats.inspector_ms);
    std::cout << fmt::format("compute   {:.2f} ms ({:.3f} ms per call, {:.0f} {}/s)\n", stats.compute_ms,
                             stats.compute_ms / double(stats.calls), 1000.0 * stats.trees / stats.compute_ms,
                             inputs.what);
    std::cout << fmt::format("total run {:.2f} ms\n", run_ms);
    std::cout << fmt::format("output    {} float32 {}\n", c.out, shape_string(roots.shape));
  }
  return 0;
}

int dump(const DumpCommand &c) {
  ilir::Program program = dsl::parse_model_file(c.model);
  if (c.stage == "ilir") {
    std::cout << ilir::to_string(program);
    return 0;
  }
  lowering::LowerOptions options;
  options.sizes = c.sizes.empty() ? std::map<std::string, int64_t>{} : parse_sizes(c.sizes);
  check_sizes(program, options.sizes, false);
  if (c.target != "host") options.target = Halide::Target(c.target);
  options.target = options.target.with_feature(Halide::Target::NoRuntime);
  options.schedule = scheduling::default_schedule(program, lowering::vector_bytes(options.target));
  options.schedule.apply(c.schedule, "--schedule");
  lowering::LoweredModel lowered = lowering::lower(program, options);
  if (c.stage == "loops") {
    std::cout << lowered.loops;
    return 0;
  }
  // LLVM IR or assembly: let Halide's back end write it (without its runtime), then show it.
  std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / fmt::format("grove-dump-{}.s", ::getpid());
  Halide::OutputFileType type =
      c.stage == "llvm" ? Halide::OutputFileType::llvm_assembly : Halide::OutputFileType::assembly;
  lowered.module.compile({{type, tmp.string()}});
  std::ifstream in(tmp);
  std::cout << in.rdbuf();
  std::filesystem::remove(tmp);
  return 0;
}

int init_weights(const InitWeightsCommand &c) {
  ilir::Program program = dsl::parse_model_file(c.model);
  std::map<std::string, int64_t> sizes = parse_sizes(c.sizes);
  Weights weights = random_weights(program, sizes, c.seed);
  write_safetensors(c.out, weights);
  return 0;
}

}  // namespace grove::tool
