#pragma once
// Reads an input file — trees, DAGs, grids or sequences (PTBReader.h, DagReader.h give the formats) —
// a chunk at a time, so that a corpus of any size is read in memory bounded by the chunk and the
// longest input, not by the file. The whole-file readers are this stream read to the end: the same
// checks, the same messages (file:line:col for line files; the DAG's number for JSON), wherever in
// the file the error is. An input that is read is never returned twice and never skipped.
//
// Positions let a caller come back to a place it has passed (an MPI rank seeks to its share): a
// position is taken between two inputs and holds everything a message needs after it (the line
// number, the number of inputs before it).
//
// DAG files: one DAG object, or a JSON list of DAG objects read element by element — each element's
// text is found by a scan that follows strings and nesting (no recursion), then parsed on its own,
// so only one DAG's JSON is in memory at a time. Syntax errors name the DAG and the line and column
// in the file.

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "datasets/Dag.h"
#include "datasets/DagReader.h"
#include "datasets/Tree.h"
#include "datasets/Vocab.h"

namespace grove {

enum class InputFormat { Trees, Dags, Grids, Sequences };

// "trees", "DAGs", "grids", "sequences".
const char *plural_noun(InputFormat format);

// Consecutive inputs of one file; only the vector of the stream's format is filled.
struct InputChunk {
  std::vector<Tree> trees;
  std::vector<Dag> dags;  // DAGs or grids
  std::vector<std::vector<int32_t>> sequences;

  size_t count() const { return trees.size() + dags.size() + sequences.size(); }
  bool empty() const { return count() == 0; }
  // Nodes over all inputs (a sequence's nodes are its tokens).
  int64_t nodes() const;
};

// A place between two inputs (or before the first, or after the last).
struct StreamPosition {
  int64_t index = 0;    // inputs before it
  uint64_t offset = 0;  // byte offset in the file of what comes next
  int64_t line = 1;     // the 1-based line `offset` is on
  friend bool operator==(const StreamPosition &, const StreamPosition &) = default;
};

class InputStream {
 public:
  // Opens `path` (a UserError names a file that cannot be read). `vocab` (trees and sequences only)
  // must outlive the stream; `sweep` is used for grids only.
  InputStream(const std::string &path, InputFormat format, const Vocab *vocab = nullptr,
              Sweep sweep = Sweep::SouthEast);
  // The same over text held by `in` (which must be seekable for seek()); `name` names it in messages.
  InputStream(std::unique_ptr<std::istream> in, std::string name, InputFormat format,
              const Vocab *vocab = nullptr, Sweep sweep = Sweep::SouthEast);
  ~InputStream();
  InputStream(InputStream &&) noexcept;
  InputStream &operator=(InputStream &&) noexcept;

  // The next inputs, at most `max_inputs` (>= 1) of them; an empty chunk once the file is done. A
  // malformed input throws UserError (as the whole-file readers do), and so does a file with no
  // input at all, on the first call.
  InputChunk next(size_t max_inputs);
  bool done() const;

  // Where the next call of next() starts; seek() comes back to a position this stream (or another
  // stream over the same file and format) returned.
  StreamPosition position() const;
  void seek(const StreamPosition &position);

  // For progress: bytes of the file consumed so far (up to position().offset) and the file's size.
  uint64_t bytes_done() const;
  uint64_t bytes_total() const;

  const std::string &name() const;
  InputFormat format() const;

  // The size of each read from the file, 1 MiB unless set (tests and the fuzzer make it tiny).
  void set_block_size(size_t bytes);
  // The most bytes the stream has held at once: at most one block plus the longest input.
  size_t peak_buffer_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove
