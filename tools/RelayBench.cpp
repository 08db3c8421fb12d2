#include "tools/RelayBench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <thread>

#include "backends/relay/VMRunner.h"
#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/byoc/SavedProgram.h"
#include "backends/relay/vm/VM.h"
#include "backends/runtime/Clock.h"
#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/RandomValues.h"
#include "frontend/relay/TreeValues.h"
#include "frontend/relay/TypeInfer.h"
#include "support/Error.h"
#include "tools/Bench.h"
#include "tools/Messages.h"
#include "tools/Progress.h"
#include "tools/RelayCommands.h"
#include "tools/Report.h"

namespace grove::tool {

using namespace grove::relay;

namespace {

constexpr char kExecutor[] = "--executor {}: grove relay bench runs interp (the interpreter) or vm (the VM)";
constexpr char kBadCount[] = "{} must be at least 1, got {}";
constexpr char kBatchWithoutTrees[] =
    "--batch {}: a batch is a number of trees per call; it needs --trees (without it a pass is one call of "
    "@main)";
constexpr char kTreesWithoutBatch[] = "--trees {}: say how many trees one call of @main takes with --batch N";
constexpr char kVocabWithoutTrees[] = "--vocab {}: a vocabulary is only read with --trees";
constexpr char kNoTrees[] = "--trees {}: the file holds no trees";
constexpr char kRandomUnknownDim[] =
    "{}: --random-args cannot fill parameter %{} of type {}: dimension {} is `?`; give it with --arg "
    "{}=FILE.npy";
constexpr char kRandomDType[] =
    "{}: --random-args fills float32 tensors only; parameter %{} has type {}; give it with --arg {}=FILE.npy";

// A float32 tensor of `param`'s type (relay/RandomValues.h: uniform in ±1/sqrt(fan-in)); every
// dimension must be known. Non-tensors: empty (missing).
Value random_weight(const Expr &param, std::mt19937_64 &rng) {
  const Var &var = *param.as<Var>();
  const auto *type = param.type().as<TensorType>();
  if (!type) return {};
  if (type->dtype != DType::Float32)
    user_error(kRandomDType, to_string(var.span), var.name_hint, to_string(param.type()), var.name_hint);
  for (size_t d = 0; d < type->shape.size(); ++d)
    if (type->shape[d] == kAnyDim)
      user_error(kRandomUnknownDim, to_string(var.span), var.name_hint, to_string(param.type()), d,
                 var.name_hint);
  return tensor_value(relay::random_tensor(*type, rng));
}

double round4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace

// 1. Check the options, compile (parse, types, the VM's bytecode) under the compile timer.
// 2. Bind the arguments as `grove relay run` does; with --trees, build one List value per batch.
// 3. Warm up with one pass (timed apart: the VM compiles its kernels here), then time `repeat` passes.
int relay_bench(const RelayBenchCommand &c, std::ostream &out) {
  if (c.executor != "interp" && c.executor != "vm") user_error(kExecutor, c.executor);
  if (c.executor == "interp" && c.threads > 0) print_notes({tool_messages::kRelayInterpThreads});
  if (!c.vocab.empty() && c.trees.empty()) user_error(kVocabWithoutTrees, c.vocab);
  if (c.batch != 0 && c.trees.empty()) user_error(kBatchWithoutTrees, c.batch);
  if (!c.trees.empty() && c.batch == 0) user_error(kTreesWithoutBatch, c.trees);
  if (!c.trees.empty() && c.batch < 0) user_error(kBadCount, "--batch", c.batch);
  if (c.repeat <= 0) user_error(kBadCount, "--repeat", c.repeat);
  std::map<std::string, std::string> arg_files = parse_relay_args(c.args);

  auto compile_start = std::chrono::steady_clock::now();
  // A directory is a saved program (grove relay build): loaded with its kernels, already partitioned.
  SavedProgram program;
  if (is_program_directory(c.file)) {
    if (!c.targets.empty()) user_error(tool_messages::kRelayTargetOnSaved, c.file);
    program = load_program(c.file);
  } else {
    program.module = onnx_frontend::read_program_file(c.file);
    infer_types(program.module);
  }
  Module &m = program.module;
  if (!c.targets.empty()) m = partition_for_targets(m, c.targets);
  std::unique_ptr<VirtualMachine> machine;
  if (c.executor == "vm") machine = make_vm(m, std::move(program.kernels), {.threads = c.threads});
  double compile_ms = ms_since(compile_start);

  std::mt19937_64 rng(c.seed);
  std::function<Value(const Expr &)> fill;
  if (c.random_args) fill = [&](const Expr &param) { return random_weight(param, rng); };
  MainArgs bound = bind_main_args(m, c.file, std::move(arg_files), c.trees, c.vocab, fill);
  std::vector<std::vector<Value>> calls;  // the arguments of each call of one pass
  int64_t nodes = 0;
  if (bound.tree_param < 0) {
    calls.push_back(bound.values);
  } else {
    if (bound.trees.empty()) user_error(kNoTrees, c.trees);
    const Type &list_type = m.find_function("main")->as<Function>()->params[bound.tree_param].type();
    std::span<const Tree> all(bound.trees);
    for (size_t at = 0; at < all.size(); at += size_t(c.batch)) {
      std::span<const Tree> chunk = all.subspan(at, std::min(all.size() - at, size_t(c.batch)));
      calls.push_back(bound.values);
      calls.back()[bound.tree_param] =
          trees_to_value(m, list_type, std::vector<Tree>(chunk.begin(), chunk.end()), c.trees);
    }
    for (const Tree &t : bound.trees) nodes += int64_t(t.size());
  }

  auto run_pass = [&] {
    for (const std::vector<Value> &args : calls) machine ? machine->run_main(args) : run_main(m, args);
  };
  // The interpreter can take minutes per pass: the passes done show on a terminal, outside the timing.
  Progress progress("relay bench " + c.executor, "passes", progress_wanted(c.quiet));
  progress.set_total(c.repeat + 1);
  progress.update(0);
  auto warmup_start = std::chrono::steady_clock::now();
  run_pass();
  double warmup_ms = ms_since(warmup_start);
  progress.update(1);
  std::vector<double> ms_per_call;
  for (int64_t r = 0; r < c.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    run_pass();
    ms_per_call.push_back(ms_since(start) / double(calls.size()));
    progress.update(r + 2);
  }
  progress.finish();

  // The interpreter runs on the calling thread; the VM on --threads (its default: every core).
  const int threads = c.executor == "interp" ? 1
                      : c.threads > 0        ? c.threads
                                             : int(std::max(1u, std::thread::hardware_concurrency()));
  double median = percentile(ms_per_call, 50);
  double min = *std::min_element(ms_per_call.begin(), ms_per_call.end());
  double max = *std::max_element(ms_per_call.begin(), ms_per_call.end());
  if (c.json) {
    nlohmann::json j = {{"tool", "grove relay"},
                        {"file", c.file},
                        {"executor", c.executor},
                        {"threads", threads},
                        {"trees", bound.trees.size()},
                        {"nodes", nodes},
                        {"batch", c.batch},
                        {"calls", calls.size()},
                        {"repeat", c.repeat},
                        {"compile_ms", std::round(compile_ms * 10) / 10},
                        {"warmup_ms", std::round(warmup_ms * 10) / 10},
                        {"median_ms_per_call", round4(median)},
                        {"min_ms", round4(min)},
                        {"max_ms", round4(max)}};
    out << j.dump() << std::endl;
    return 0;
  }
  out << fmt::format("program   {} on the {}\n", c.file,
                     c.executor == "vm" ? "VM (vm)" : "interpreter (interp)");
  if (bound.tree_param >= 0)
    out << fmt::format("trees     {} from {}: {} nodes per pass, {} call(s) of up to {}\n",
                       bound.trees.size(), c.trees, nodes, calls.size(), c.batch);
  else
    out << "calls     1 call of @main per pass\n";
  out << fmt::format("threads   {}\n", threads);
  out << fmt::format("compile   {:.1f} ms\n", compile_ms);
  out << fmt::format("warm-up   {:.1f} ms (one pass{})\n", warmup_ms,
                     c.executor == "vm" ? "; includes compiling the kernels" : "");
  out << fmt::format(
      "time      {:.4f} ms per call (median of {} passes after 1 warm-up; min {:.4f}, max {:.4f})\n", median,
      c.repeat, min, max);
  return 0;
}

}  // namespace grove::tool
