#pragma once
// `grove run`: what the single-process run (tools/RunCommand.cpp) and the MPI run
// (tools/Distributed.cpp) share — the checks of the command line, the model (compiled here, or a
// library written by `grove compile`), the input stream and the summary --stats prints.

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "backends/runtime/Executor.h"
#include "datasets/InputStream.h"
#include "datasets/Vocab.h"
#include "tools/Commands.h"
#include "tools/StreamRun.h"

namespace grove::tool {

// The input file of a run and how to read it.
struct RunInput {
  std::string path;
  InputFormat format = InputFormat::Trees;
  std::optional<Vocab> vocab;
  Sweep sweep = Sweep::SouthEast;

  // A stream over the file (`vocab` must stay where it is while the stream lives).
  InputStream open() const;
};

// Checks the command line (one input, options that go together, --out not one of the inputs)
// without reading the input, and loads the vocabulary.
RunInput check_run_command(const RunCommand &c);

// The model a run runs: compiled here from a .grove file (weights from --weights), or a library
// from `grove compile` (weights embedded or from --weights).
class RunModel {
 public:
  // `threads` > 0 sets the schedule's thread count unless --schedule or --threads does (MPI ranks
  // share a machine's cores).
  static std::unique_ptr<RunModel> prepare(const RunCommand &c, int threads = 0);
  virtual ~RunModel() = default;
  virtual const ModelRunner &executor() const = 0;
  // The lines --stats prints about the model: where it came from, its schedule, compile time.
  virtual std::string describe() const = 0;
  // Requested schedule options that could not take effect (none for a library: `grove compile`
  // printed them).
  virtual std::vector<std::string> notes() const { return {}; }
};

// The streaming options of `c`.
StreamRunOptions stream_options(const RunCommand &c);

// `grove run --target cuda`: the input streamed through the model on device 0 as the CPU run
// streams it (chunks, --batch calls, the same output file written atomically). Without a driver a
// UserError says why before anything is read; options that do not apply to the GPU get a note.
int run_cuda(const RunCommand &c);

// What --stats prints after the model's lines.
void print_run_stats(std::ostream &out, const RunCommand &c, const RunInput &input,
                     const StreamRunResult &result, const std::vector<int64_t> &out_shape, double run_ms);

}  // namespace grove::tool
