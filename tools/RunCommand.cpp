// `grove run` in one process: the input streamed through the model, the rows streamed to the .npy.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>

#include "backends/cpu/CompiledModel.h"
#include "backends/cuda/Driver.h"
#include "backends/cuda/Messages.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Clock.h"
#include "backends/runtime/CompiledLibrary.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tools/CompileCommand.h"
#include "tools/CudaCommands.h"
#include "tools/Distributed.h"
#include "tools/Messages.h"
#include "tools/Report.h"
#include "tools/Run.h"
#include "tools/Tune.h"

namespace grove::tool {

namespace msg = tool_messages;

namespace {

class JitModel : public RunModel {
 public:
  JitModel(const RunCommand &c, int threads) : command_(c) {
    program_ = dsl::parse_model_file(c.model);
    Weights weights = read_safetensors(c.weights);
    cpu::CompileOptions options;
    options.target = c.target;
    options.weights_file = c.weights;
    // Later settings of a key win: the ranks' share of the cores, then the tuned schedule, then
    // --schedule, then --threads.
    std::vector<std::string> settings;
    if (threads > 0) settings.push_back(fmt::format("threads={}", threads));
    if (c.tuned) {
      std::map<std::string, int64_t> sizes = bind_weights(program_, weights, c.weights);
      settings.push_back(cached_schedule(c.cache, tune_key(program_, sizes, c.batch, c.schedule, c.target)));
    }
    settings.push_back(c.schedule);
    if (c.threads > 0) settings.push_back(fmt::format("threads={}", c.threads));
    std::erase(settings, std::string());
    options.schedule = fmt::format("{}", fmt::join(settings, ","));
    model_ = std::make_unique<cpu::CompiledModel>(cpu::CompiledModel::compile(program_, weights, options));
  }
  const ModelRunner &executor() const override { return model_->executor(); }
  std::vector<std::string> notes() const override { return model_->notes(); }
  std::string describe() const override {
    return fmt::format(
        "model     {} ({}) from {}\nschedule  {}\ncompile   {:.1f} ms (ILIR -> Halide loop nest -> "
        "LLVM -> x86 JIT)\n",
        program_.name, ilir::to_string(program_.structure), command_.model, model_->schedule(),
        model_->compile_ms());
  }

 private:
  const RunCommand &command_;
  ilir::Program program_;
  std::unique_ptr<cpu::CompiledModel> model_;
};

class LibraryModel : public RunModel {
 public:
  explicit LibraryModel(const RunCommand &c) : command_(c), library_(open_compiled_library(c.model)) {
    if (!c.weights.empty()) library_.executor->bind(read_safetensors(c.weights), c.weights);
  }
  const ModelRunner &executor() const override { return *library_.executor; }
  std::string describe() const override {
    const ModelAbi &abi = library_.executor->abi();
    return fmt::format("model     {} ({}) from {}, compiled for {}\nschedule  {}\n", abi.model, abi.structure,
                       command_.model, abi.target, abi.schedule);
  }

 private:
  const RunCommand &command_;
  CompiledLibrary library_;
};

// The run's output: a .npy written through a temporary file (NpyWriter), opened at the first rows
// (their shape but the first axis) and renamed into place by commit, which returns its shape.
class NpyOutput {
 public:
  explicit NpyOutput(std::string path) : path_(std::move(path)) {}
  void append(const Tensor &rows) {
    if (!writer_) {
      shape_ = rows.shape;
      writer_.emplace(path_, std::vector<int64_t>(rows.shape.begin() + 1, rows.shape.end()));
    }
    writer_->append(rows.data.data(), rows.shape[0]);
  }
  bool opened() const { return writer_.has_value(); }
  std::vector<int64_t> commit() {
    shape_[0] = writer_->rows_appended();
    writer_->commit();
    return shape_;
  }

 private:
  std::string path_;
  std::optional<NpyWriter> writer_;
  std::vector<int64_t> shape_;
};

}  // namespace

InputStream RunInput::open() const { return InputStream(path, format, vocab ? &*vocab : nullptr, sweep); }

RunInput check_run_command(const RunCommand &c) {
  const InputFiles &f = c.inputs;
  RunInput input;
  InputFile file = check_input_files(f, "run");
  input.path = file.path;
  input.format = file.format;
  if (c.all_nodes && f.dags.empty() && f.grids.empty()) user_error(msg::kAllNodesWithoutDags);
  if (c.chunk < 1) user_error(msg::kRunChunk, c.chunk);
  if (c.threads < 0) user_error(msg::kRunThreads, c.threads);
  const bool library = is_compiled_library(c.model);
  if (library && (c.target != "host" || !c.schedule.empty() || c.tuned || c.threads > 0))
    user_error(msg::kRunLibraryOptions, c.model);
  if (!library && c.weights.empty()) user_error(msg::kRunNeedsWeights);
  for (const auto &[path, kind] :
       {std::pair<std::string, std::string>{c.model, library ? "library" : "model"},
        {c.weights, "weights"},
        {input.path, plural_noun(input.format)},
        {f.vocab, "vocabulary"}})
    if (!path.empty() && same_file(c.out, path)) user_error(msg::kOutIsInput, c.out, kind);
  input.sweep = parse_sweep(f.sweep);
  if (!f.vocab.empty()) input.vocab = Vocab::load(f.vocab);
  return input;
}

std::unique_ptr<RunModel> RunModel::prepare(const RunCommand &c, int threads) {
  if (is_compiled_library(c.model)) return std::make_unique<LibraryModel>(c);
  return std::make_unique<JitModel>(c, threads);
}

StreamRunOptions stream_options(const RunCommand &c) {
  StreamRunOptions options;
  options.chunk = c.chunk;
  options.batch = c.batch;
  options.outputs = c.all_nodes ? DagOutputs::AllNodes : DagOutputs::Sinks;
  return options;
}

void print_run_stats(std::ostream &out, const RunCommand &c, const RunInput &input, const StreamRunResult &r,
                     const std::vector<int64_t> &out_shape, double run_ms) {
  const char *noun = plural_noun(input.format);
  const RunStats &s = r.stats;
  out << fmt::format("{:<9} {} from {}: {} nodes, {} levels in {} call(s) of up to {} {}, {} chunk(s)\n",
                     noun, r.inputs, input.path, s.nodes, s.levels, s.calls,
                     c.batch == 0 ? chunk_inputs(c.chunk, 0) : c.batch, noun, r.chunks);
  out << fmt::format("inspector {:.2f} ms\n", s.inspector_ms);
  out << fmt::format("compute   {:.2f} ms ({:.3f} ms per call, {:.0f} {}/s)\n", s.compute_ms,
                     s.compute_ms / double(std::max<int64_t>(s.calls, 1)),
                     1000.0 * double(r.inputs) / s.compute_ms, noun);
  out << fmt::format("reading   {:.2f} ms waited for the reader\n", r.read_wait_ms);
  out << fmt::format("wall      {:.2f} ms from start to output ({:.0f} {}/s)\n", run_ms,
                     1000.0 * double(r.inputs) / run_ms, noun);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out << fmt::format("memory    peak resident {:.1f} MiB\n", double(usage.ru_maxrss) / 1024.0);
  out << fmt::format("output    {} float32 {}\n", c.out, shape_string(out_shape));
}

// Steps:
//   1. The driver (or why not), then the command line as the CPU run checks it; no MPI.
//   2. The model: parsed, its weights read and bound on the device (tools' notes first).
//   3. The input streamed through it chunk by chunk, the rows appended to the output's temporary
//      file, renamed into place only when every input has run (an error leaves no output).
int run_cuda(const RunCommand &c) {
  require_cuda_driver();
  RunInput input = check_run_command(c);
  if (launched_by_mpi()) user_error(cuda_messages::kTargetCudaMpi);
  note_cpu_only_options(c.threads, c.tuned, c.cache);

  auto t0 = std::chrono::steady_clock::now();
  ilir::Program program = dsl::parse_model_file(c.model);
  Weights weights = read_safetensors(c.weights);
  std::map<std::string, int64_t> sizes = bind_weights(program, weights, c.weights);
  std::unique_ptr<cuda::DeviceModel> model =
      prepare_device_model(program, sizes, c.schedule, c.cuda, weights);

  InputStream stream = input.open();
  NpyOutput output(c.out);
  auto sink = [&](const Tensor &rows) { output.append(rows); };
  auto run = [&](InputFormat format, const InputChunk &chunk, const RunOptions &options, RunStats &stats) {
    return run_chunk_on_device(*model, format, chunk, options, stats);
  };
  Progress progress("run", plural_noun(input.format), progress_wanted(c.quiet));
  StreamRunResult result = run_stream_with(run, stream, stream_options(c), sink, &progress);
  progress.finish();
  GROVE_CHECK(output.opened(), "a run that read no input");  // an empty file is a UserError
  const std::vector<int64_t> out_shape = output.commit();
  double run_ms = ms_since(t0);

  if (c.stats) {
    std::cout << fmt::format(
        "model     {} ({}) from {}\ntarget    {}\nschedule  {}\ncompile   {:.1f} ms (level plan -> CUDA "
        "C++ -> NVRTC cubin -> module)\n",
        program.name, ilir::to_string(program.structure), c.model, cuda_target_line(*model),
        model->abi().schedule, model->compile_ms());
    print_run_stats(std::cout, c, input, result, out_shape, run_ms);
  }
  return 0;
}

// Steps:
//   1. Check the command line; under an MPI launcher, hand over to the distributed run.
//   2. Compile (or open) the model on a second thread while the first chunk is read.
//   3. Stream the input through it, appending each chunk's rows to the output's temporary file.
//   4. Rename the output into place only when every input has run.
int run(const RunCommand &c) {
  if (is_cuda_target(c.target)) return run_cuda(c);
  note_unused_cuda_options(c.cuda);
  RunInput input = check_run_command(c);
  if (launched_by_mpi()) return run_distributed(c, input);

  auto t0 = std::chrono::steady_clock::now();
  std::future<std::unique_ptr<RunModel>> pending =
      std::async(std::launch::async, [&c] { return RunModel::prepare(c); });
  std::unique_ptr<RunModel> model;
  auto executor = [&]() -> const ModelRunner & {
    if (!model) model = pending.get();
    return model->executor();
  };

  InputStream stream = input.open();
  NpyOutput output(c.out);
  auto sink = [&](const Tensor &rows) { output.append(rows); };
  Progress progress("run", plural_noun(input.format), progress_wanted(c.quiet));
  StreamRunResult result = run_stream(executor, stream, stream_options(c), sink, &progress);
  progress.finish();
  GROVE_CHECK(model && output.opened(), "a run that read no input");  // an empty file is a UserError
  print_notes(model->notes());
  const std::vector<int64_t> out_shape = output.commit();
  double run_ms = ms_since(t0);

  if (c.stats) {
    std::cout << model->describe();
    print_run_stats(std::cout, c, input, result, out_shape, run_ms);
  }
  return 0;
}

}  // namespace grove::tool
