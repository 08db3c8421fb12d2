#include "tools/StreamRun.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "backends/runtime/Clock.h"

namespace grove::tool {

namespace {

// The options of one chunk's run; `first_number` numbers its first input in messages (1-based, in
// the file).
RunOptions chunk_options(InputFormat format, int64_t first_number, const StreamRunOptions &options) {
  RunOptions run{.batch = options.batch, .outputs = options.outputs};
  run.first_number = first_number;
  if (format == InputFormat::Grids) run.noun = "grid";
  return run;
}

}  // namespace

int64_t chunk_inputs(int64_t chunk, int64_t batch) {
  chunk = std::max<int64_t>(chunk, 1);
  if (batch <= 0) return chunk;
  return (chunk + batch - 1) / batch * batch;
}

// Steps:
//   1. Start reading the first chunk on the reader thread.
//   2. Take the chunk read; start reading the next one (unless this one reached the end); run this
//      one while the next is read; hand its rows to the sink; report progress.
//   3. Stop at the end of the stream, at options.end_index, or when `stop` says so. A reader
//      error surfaces from the future when its chunk is taken, in input order: the chunks before
//      it have been run and handed on.
StreamRunResult run_stream(const ExecutorSource &executor, InputStream &stream,
                           const StreamRunOptions &options, const RowSink &sink, Progress *progress,
                           const StopCheck &stop) {
  auto run = [&](InputFormat format, const InputChunk &chunk, const RunOptions &run, RunStats &stats) {
    switch (format) {
      case InputFormat::Trees:
        return executor().run(chunk.trees, run, &stats);
      case InputFormat::Dags:
      case InputFormat::Grids:
        return executor().run_dags(chunk.dags, run, &stats);
      case InputFormat::Sequences:
        return executor().run_sequences(chunk.sequences, run, &stats);
    }
    return Tensor{};
  };
  return run_stream_with(run, stream, options, sink, progress, stop);
}

StreamRunResult run_stream_with(const ChunkRunner &run, InputStream &stream, const StreamRunOptions &options,
                                const RowSink &sink, Progress *progress, const StopCheck &stop) {
  const int64_t chunk = chunk_inputs(options.chunk, options.batch);
  const StreamPosition start = stream.position();
  const uint64_t end_offset = options.end_offset > 0 ? options.end_offset : stream.bytes_total();
  auto read_next = [&]() -> InputChunk {
    int64_t want = chunk;
    if (options.end_index >= 0) want = std::min(want, options.end_index - stream.position().index);
    if (want <= 0) return {};
    return stream.next(size_t(want));
  };

  StreamRunResult result;
  std::future<InputChunk> pending = std::async(std::launch::async, read_next);
  while (true) {
    auto t0 = std::chrono::steady_clock::now();
    InputChunk current = pending.get();
    result.read_wait_ms += ms_since(t0);
    if (current.empty()) break;
    // The stream is read here only while the reader thread is idle.
    const int64_t first_number = stream.position().index - int64_t(current.count()) + 1;
    const uint64_t bytes_done = std::min(stream.bytes_done(), end_offset);
    pending = std::async(std::launch::async, read_next);
    Tensor rows =
        run(stream.format(), current, chunk_options(stream.format(), first_number, options), result.stats);
    result.inputs += int64_t(current.count());
    result.rows += rows.shape.empty() ? 0 : rows.shape[0];
    result.chunks += 1;
    sink(rows);
    if (progress) {
      double span = double(end_offset - std::min(end_offset, start.offset));
      double done = double(bytes_done - std::min(bytes_done, start.offset));
      progress->update(result.inputs, span > 0 ? std::optional<double>(done / span) : std::nullopt);
    }
    if (stop && stop()) break;
  }
  // A stop leaves a read in flight: wait for it (its error, if any, is not this run's to report).
  if (pending.valid()) {
    try {
      pending.get();
    } catch (...) {
    }
  }
  return result;
}

}  // namespace grove::tool
