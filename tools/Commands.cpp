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
#include "backends/runtime/Safetensors.h"
#include "datasets/DagReader.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/Error.h"
#include "ilir/IRPrinter.h"
#include "lowering/Lower.h"
#include "tools/Messages.h"
#include "tools/RandomWeights.h"
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

namespace {

// The one input file of `grove run` and what it holds ("trees", "DAGs", ...).
struct RunInput {
  std::string path;
  const char *what;
  const char *option;
};

// Checks the input options go together: exactly one input, and --sweep, --all-nodes and --vocab
// only with inputs they apply to.
RunInput check_run_input(const RunCommand &c) {
  std::vector<RunInput> given;
  for (RunInput input :
       {RunInput{c.trees, "trees", "--trees"}, RunInput{c.dags, "DAGs", "--dags"},
        RunInput{c.grids, "grids", "--grids"}, RunInput{c.sequences, "sequences", "--sequences"}})
    if (!input.path.empty()) given.push_back(input);
  if (given.empty()) user_error(msg::kInputCount, "none was given");
  if (given.size() > 1) {
    std::vector<std::string> names;
    for (const RunInput &input : given) names.push_back(input.option);
    user_error(msg::kInputCount, fmt::format("got {}", fmt::join(names, " and ")));
  }
  if (c.sweep != "se" && c.sweep != "sw" && c.sweep != "ne" && c.sweep != "nw")
    user_error(msg::kBadSweep, c.sweep);
  if (c.sweep != "se" && c.grids.empty()) user_error(msg::kSweepWithoutGrids);
  if (c.all_nodes && c.dags.empty() && c.grids.empty()) user_error(msg::kAllNodesWithoutDags);
  if (!c.vocab.empty() && c.trees.empty() && c.sequences.empty()) user_error(msg::kVocabWithoutText);
  return given[0];
}

Sweep parse_sweep(const std::string &text) {
  if (text == "sw") return Sweep::SouthWest;
  if (text == "ne") return Sweep::NorthEast;
  if (text == "nw") return Sweep::NorthWest;
  return Sweep::SouthEast;
}

}  // namespace

int run(const RunCommand &c) {
  RunInput input = check_run_input(c);
  for (const auto &[path, what] : {std::pair{c.model, "model"},
                                   {c.weights, "weights"},
                                   {input.path, input.what},
                                   {c.vocab, "vocabulary"}})
    if (!path.empty() && same_file(c.out, path)) user_error(msg::kOutIsInput, c.out, what);

  ilir::Program program = dsl::parse_model_file(c.model);
  Weights weights = read_safetensors(c.weights);
  std::optional<Vocab> vocab;
  if (!c.vocab.empty()) vocab = Vocab::load(c.vocab);
  std::vector<Tree> trees;
  std::vector<Dag> dags;
  std::vector<std::vector<int32_t>> sequences;
  if (!c.trees.empty()) {
    trees = read_ptb_trees(c.trees, vocab ? &*vocab : nullptr);
    if (trees.empty()) user_error(msg::kNoTrees, c.trees);
  } else if (!c.dags.empty()) {
    dags = read_dags(c.dags);
  } else if (!c.grids.empty()) {
    dags = read_grids(c.grids, parse_sweep(c.sweep));
  } else {
    sequences = read_sequences(c.sequences, vocab ? &*vocab : nullptr);
  }

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
  run_options.noun = c.grids.empty() ? "DAG" : "grid";
  Tensor roots = !c.trees.empty()                      ? model.run(trees, run_options, &stats)
                 : !c.dags.empty() || !c.grids.empty() ? model.run_dags(dags, run_options, &stats)
                                                       : model.run_sequences(sequences, run_options, &stats);
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_npy(c.out, roots);

  if (c.stats) {
    std::cout << fmt::format("model     {} ({}) from {}\n", program.name, ilir::to_string(program.structure),
                             c.model);
    std::cout << fmt::format("{:<9} {} from {}: {} nodes, {} levels in {} call(s) of up to {} {}\n",
                             input.what, stats.trees, input.path, stats.nodes, stats.levels, stats.calls,
                             c.batch == 0 ? stats.trees : c.batch, input.what);
    std::cout << fmt::format("schedule  {}\n", model.schedule());
    std::cout << fmt::format("compile   {:.1f} ms (ILIR -> Halide loop nest -> LLVM -> x86 JIT)\n",
                             model.compile_ms());
    std::cout << fmt::format("inspector {:.2f} ms\n", stats.inspector_ms);
    std::cout << fmt::format("compute   {:.2f} ms ({:.3f} ms per call, {:.0f} {}/s)\n", stats.compute_ms,
                             stats.compute_ms / double(stats.calls), 1000.0 * stats.trees / stats.compute_ms,
                             input.what);
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
  options.schedule = scheduling::default_schedule(program);
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
