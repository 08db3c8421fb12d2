#include "tools/CompileCommand.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "backends/cpu/Aot.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/CompiledLibrary.h"
#include "backends/runtime/Npy.h"
#include "backends/runtime/RandomWeights.h"
#include "backends/runtime/Safetensors.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/Error.h"
#include "tools/Inputs.h"
#include "tools/Messages.h"

namespace grove::tool {

namespace msg = tool_messages;

int compile(const CompileCommand &c) {
  if (c.weights.empty() == c.sizes.empty()) user_error(msg::kCompileWeightsOrSizes);
  if (c.embed_weights && c.weights.empty()) user_error(msg::kCompileEmbedWithoutWeights);
  if (c.threads < 0) user_error(msg::kCompileThreads, c.threads);
  ilir::Program program = dsl::parse_model_file(c.model);
  std::map<std::string, int64_t> sizes;
  if (!c.weights.empty()) {
    sizes = bind_weights(program, read_safetensors(c.weights), c.weights);
  } else {
    sizes = parse_sizes(c.sizes);
    check_sizes(program, sizes, true);
  }
  cpu::CompileOptions options;
  options.target = c.target;
  options.weights_file = c.weights.empty() ? options.weights_file : c.weights;
  options.schedule = c.schedule;
  // --threads after --schedule: the later setting of a key wins.
  if (c.threads > 0)
    options.schedule += fmt::format("{}threads={}", c.schedule.empty() ? "" : ",", c.threads);
  cpu::AotOptions aot;
  aot.out_dir = c.out;
  aot.name = c.name;
  if (c.embed_weights) aot.embed_weights_file = c.weights;
  cpu::AotResult result = cpu::compile_library(program, sizes, options, aot);
  std::cout << fmt::format("wrote {}\nwrote {}\nwrote {}\n", result.shared_library, result.static_library,
                           result.header);
  return 0;
}

bool is_compiled_library(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) ==
                                  "\x7f"
                                  "ELF";
}

int run_library(const RunCommand &c) {
  const InputFiles &f = c.inputs;
  auto [input_path, input_what] = check_input_files(f, "run");
  if (c.all_nodes && f.dags.empty() && f.grids.empty()) user_error(msg::kAllNodesWithoutDags);
  if (c.target != "host" || !c.schedule.empty() || c.tuned) user_error(msg::kRunLibraryOptions, c.model);
  std::error_code ec;
  for (const std::string &path : {c.model, c.weights, input_path, f.vocab})
    if (!path.empty() && std::filesystem::exists(path, ec) && std::filesystem::equivalent(c.out, path, ec))
      user_error(msg::kOutIsInput, c.out,
                 path == c.model     ? "library"
                 : path == c.weights ? "weights"
                                     : "input");

  CompiledLibrary library = open_compiled_library(c.model);
  if (!c.weights.empty()) library.executor->bind(read_safetensors(c.weights), c.weights);
  Inputs inputs = read_inputs(f, "run");
  RunOptions options{.batch = c.batch};
  options.outputs = c.all_nodes ? DagOutputs::AllNodes : DagOutputs::Sinks;
  RunStats stats;
  Tensor out;
  if (!inputs.trees.empty()) {
    out = library.executor->run(inputs.trees, options, &stats);
  } else if (!inputs.dags.empty()) {
    options.noun = inputs.what == "grids" ? "grid" : "DAG";
    out = library.executor->run_dags(inputs.dags, options, &stats);
  } else {
    out = library.executor->run_sequences(inputs.sequences, options, &stats);
  }
  write_npy(c.out, out);
  if (c.stats) {
    const ModelAbi &abi = library.executor->abi();
    std::cout << fmt::format("model     {} ({}) from {}, compiled for {}\n", abi.model, abi.structure,
                             c.model, abi.target);
    std::cout << fmt::format("{:<9} {} from {}: {} nodes, {} levels in {} call(s)\n", inputs.what,
                             stats.trees, inputs.path, stats.nodes, stats.levels, stats.calls);
    std::cout << fmt::format("schedule  {}\n", abi.schedule);
    std::cout << fmt::format("inspector {:.2f} ms\ncompute   {:.2f} ms\n", stats.inspector_ms,
                             stats.compute_ms);
    std::cout << fmt::format("output    {} float32 {}\n", c.out, shape_string(out.shape));
  }
  return 0;
}

}  // namespace grove::tool
