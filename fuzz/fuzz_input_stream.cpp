// Fuzzes the input stream (datasets/InputStream.h) against itself: reading a text in any blocks and
// chunks must give exactly the inputs of reading it one input at a time, and the same UserError
// message; seeking to a recorded position must give the rest. Input layout: byte 0 picks the format
// (bits 0-1), the sweep (bits 2-3) and a three-word vocabulary (bit 4); byte 1 the block size (1 to
// 64 bytes); byte 2 seeds the chunk sizes and the seek; the rest is the file's text.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/InputStream.h"
#include "fuzz/FuzzCommon.h"

namespace {

using grove::fuzz::finding;
using grove::fuzz::require;

struct Read {
  std::vector<grove::Tree> trees;
  std::vector<grove::Dag> dags;
  std::vector<std::vector<int32_t>> sequences;
  std::vector<grove::StreamPosition> positions;  // at the start and after each call
  std::string error;
};

bool same(const grove::Tree &a, const grove::Tree &b) {
  return a.token == b.token && a.child_begin == b.child_begin && a.children == b.children && a.root == b.root;
}
bool same(const grove::Dag &a, const grove::Dag &b) {
  return a.token == b.token && a.pred_begin == b.pred_begin && a.preds == b.preds;
}
bool same(const std::vector<int32_t> &a, const std::vector<int32_t> &b) { return a == b; }

// `part` holds the inputs of `whole` from `from` on (a prefix of them if it ended in an error).
template <typename T>
void require_tail(const std::vector<T> &whole, const std::vector<T> &part, size_t from, bool error) {
  if (whole.empty() && part.empty()) return;  // another format's vector
  require(from + part.size() <= whole.size(), "a chunked read has no more inputs than the reference");
  if (!error)
    require(from + part.size() == whole.size(), "a chunked read without an error reads every input");
  for (size_t i = 0; i < part.size(); ++i)
    require(same(whole[from + i], part[i]), "chunked inputs are the same");
}

// A small deterministic generator of chunk sizes.
struct Steps {
  uint32_t state;
  size_t next() {
    state = state * 1103515245u + 12345u;
    return 1 + (state >> 16) % 8;
  }
};

// Reads `stream` from where it is to its end or error, `step()` inputs at a time, recording the
// position at the start and after each call (so one input at a time from the start, positions[i] is
// the position after i inputs).
template <typename Step>
Read drain(grove::InputStream &stream, Step step) {
  Read read;
  read.positions = {stream.position()};
  const int64_t first = stream.position().index;
  try {
    while (true) {
      grove::InputChunk chunk = stream.next(step());
      if (chunk.empty()) break;
      for (auto &t : chunk.trees) read.trees.push_back(std::move(t));
      for (auto &d : chunk.dags) read.dags.push_back(std::move(d));
      for (auto &s : chunk.sequences) read.sequences.push_back(std::move(s));
      const grove::StreamPosition p = stream.position();
      require(p.index == first + int64_t(read.trees.size() + read.dags.size() + read.sequences.size()),
              "the position counts the inputs read");
      require(stream.bytes_done() == p.offset && p.offset <= stream.bytes_total(), "progress is in the file");
      read.positions.push_back(p);
    }
    require(stream.done(), "an empty chunk means the stream is done");
  } catch (const grove::UserError &e) {
    read.error = e.what();
  }
  return read;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  const std::string text(reinterpret_cast<const char *>(data) + 3, size - 3);
  const auto format = static_cast<grove::InputFormat>(data[0] % 4);
  const auto sweep = static_cast<grove::Sweep>((data[0] >> 2) % 4);
  const grove::Vocab vocab = grove::Vocab::parse("a\nb\nc", "fuzz-vocab.txt");
  const grove::Vocab *words = (data[0] & 0x10) ? &vocab : nullptr;
  const size_t block = 1 + data[1] % 64;
  auto open = [&](size_t block_size) {
    grove::InputStream stream(std::make_unique<std::istringstream>(text), "fuzz.txt", format, words, sweep);
    if (block_size > 0) stream.set_block_size(block_size);
    return stream;
  };
  try {
    // 1. The reference: one input at a time, default blocks, a position after each input.
    grove::InputStream one = open(0);
    const Read reference = drain(one, [] { return size_t(1); });
    const bool error = !reference.error.empty();

    // 2. The whole read: everything or the same error.
    {
      grove::InputStream all = open(0);
      const Read whole = drain(all, [] { return std::numeric_limits<size_t>::max(); });
      require(whole.error == reference.error, "the whole read fails as the reference does");
      if (!error) {
        require_tail(reference.trees, whole.trees, 0, false);
        require_tail(reference.dags, whole.dags, 0, false);
        require_tail(reference.sequences, whole.sequences, 0, false);
      }
    }

    // 3. Tiny blocks and chunks of 1 to 8 inputs: the same inputs, positions and error.
    Steps steps{data[2]};
    grove::InputStream chunked = open(block);
    const Read part = drain(chunked, [&] { return steps.next(); });
    require(part.error == reference.error, "a chunked read fails as the reference does");
    require_tail(reference.trees, part.trees, 0, error);
    require_tail(reference.dags, part.dags, 0, error);
    require_tail(reference.sequences, part.sequences, 0, error);
    for (const grove::StreamPosition &p : part.positions)
      require(p == reference.positions[size_t(p.index)], "positions agree with the reference's");

    // 4. Seek back to a recorded position, in the same stream and in a fresh one with other blocks.
    const grove::StreamPosition at = reference.positions[data[2] % reference.positions.size()];
    for (int fresh = 0; fresh < 2; ++fresh) {
      grove::InputStream other = open(fresh ? 1 + (block * 7) % 13 : 0);
      grove::InputStream &stream = fresh ? other : chunked;
      stream.seek(at);
      const Read rest = drain(stream, [&] { return steps.next(); });
      require(rest.error == reference.error, "a read after a seek fails as the reference does");
      require_tail(reference.trees, rest.trees, size_t(at.index), error);
      require_tail(reference.dags, rest.dags, size_t(at.index), error);
      require_tail(reference.sequences, rest.sequences, size_t(at.index), error);
    }
  } catch (const grove::UserError &e) {
    finding(std::string("UserError outside a read: ") + e.what());
  } catch (const grove::InternalError &e) {
    finding(std::string("InternalError: ") + e.what());
  } catch (const std::exception &e) {
    finding(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
