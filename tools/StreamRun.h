#pragma once
// The loop of `grove run`: an input file streamed a chunk at a time through a compiled model, in
// memory bounded by the chunk, not the file. While the executor runs one chunk, a second thread
// reads and parses the next, so reading costs no time when it is faster than computing. Rows go to
// the caller's sink chunk by chunk, in input order.
//
// A chunk is a whole number of calls (`chunk` is rounded up to a multiple of `batch`), so the calls
// — and therefore the bits of every output row — are those of running the whole file at once with
// the same batch, whatever the chunk size and wherever a share starts that begins at a multiple of
// `batch` (tools/Distributed.h relies on it).

#include <cstdint>
#include <functional>

#include "backends/runtime/Executor.h"
#include "datasets/InputStream.h"
#include "tools/Progress.h"

namespace grove::tool {

struct StreamRunOptions {
  int64_t chunk = 16384;  // inputs read and run at a time (rounded up to a multiple of batch)
  int64_t batch = 0;      // inputs per call of the compiled code; 0 = one call per chunk
  DagOutputs outputs = DagOutputs::Sinks;
  int64_t end_index = -1;   // stop before the input of this index (-1: at the end of the file)
  uint64_t end_offset = 0;  // where that input starts in the file, for progress (0: the file's end)
};

struct StreamRunResult {
  RunStats stats;
  int64_t inputs = 0, rows = 0, chunks = 0;
  double read_wait_ms = 0;  // time the computation waited for the reader
};

// Receives each chunk's output rows, [rows, output_shape...], in input order.
using RowSink = std::function<void(const Tensor &rows)>;
// Polled between chunks: true stops the loop early (another MPI rank failed).
using StopCheck = std::function<bool()>;

// The effective chunk size: `chunk` rounded up to a multiple of `batch` (at least 1).
int64_t chunk_inputs(int64_t chunk, int64_t batch);

// Runs `executor` over `stream` from its current position to options.end_index (or the end), in
// chunks. Errors — a malformed input, an input the model cannot take — are UserErrors that name the
// input by its place in the whole file. `progress` (optional) is updated after each chunk with the
// inputs done and the fraction of the bytes from the starting position to the end done.
// `executor` is asked for the model when the first chunk has been read (a caller compiles meanwhile).
using ExecutorSource = std::function<const ModelRunner &()>;
StreamRunResult run_stream(const ExecutorSource &executor, InputStream &stream,
                           const StreamRunOptions &options, const RowSink &sink, Progress *progress = nullptr,
                           const StopCheck &stop = {});

// The same loop over any model that runs a chunk as the Executor does (the GPU's, --target cuda):
// `run` runs the chunk's inputs of `format` with `options` (batch, outputs, noun, numbering) and
// adds what it did to `stats`.
using ChunkRunner = std::function<Tensor(InputFormat format, const InputChunk &chunk,
                                         const RunOptions &options, RunStats &stats)>;
StreamRunResult run_stream_with(const ChunkRunner &run, InputStream &stream, const StreamRunOptions &options,
                                const RowSink &sink, Progress *progress = nullptr,
                                const StopCheck &stop = {});

}  // namespace grove::tool
