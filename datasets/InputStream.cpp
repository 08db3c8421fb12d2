#include "datasets/InputStream.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "datasets/Messages.h"
#include "datasets/PTBReader.h"
#include "datasets/Readers_Internal.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;
using nlohmann::json;

namespace {

constexpr size_t kDefaultBlock = size_t(1) << 20;
// Reads backwards to a line's start (for a column after a seek) go in pieces of this size.
constexpr size_t kBackwardBlock = size_t(1) << 16;

// What a file of each format is called when it cannot be read.
const char *file_kind(InputFormat format) {
  switch (format) {
    case InputFormat::Trees:
      return "tree file";
    case InputFormat::Dags:
      return "DAG file";
    case InputFormat::Grids:
      return "grid file";
    case InputFormat::Sequences:
      return "sequence file";
  }
  return "input file";
}

std::unique_ptr<std::istream> open_file(const std::string &path, InputFormat format) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    user_error(msg::kCannotRead, file_kind(format), path, "it is a directory");
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) user_error(msg::kCannotRead, file_kind(format), path, std::strerror(errno));
  return file;
}

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The bytes that end a JSON number or literal.
bool ends_scalar(char c) {
  return is_json_space(c) || c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}' || c == '"';
}

// The characters in [begin, end) as columns count them (bytes that do not continue a UTF-8 sequence),
// the same count as utf8_column.
int64_t count_chars(const char *begin, const char *end) {
  int64_t n = 0;
  for (const char *p = begin; p < end; ++p) n += (static_cast<unsigned char>(*p) & 0xC0) != 0x80;
  return n;
}

// A byte of JSON structure (or -1, the end of the file) as a message shows it.
std::string describe_byte(int c) {
  if (c < 0) return "end of file";
  if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02X}", c);
}

// nlohmann's explanation without its "[json.exception.parse_error.101] parse error at line 1, column
// 3: " prefix: its position counts from the start of one element, the message gives the file's.
std::string json_detail(const json::exception &e) {
  std::string_view what = e.what();
  if (size_t tag = what.find("] "); tag != std::string_view::npos) what.remove_prefix(tag + 2);
  if (what.starts_with("parse error")) {
    if (size_t colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
  }
  return std::string(what);
}

}  // namespace

const char *plural_noun(InputFormat format) {
  switch (format) {
    case InputFormat::Trees:
      return "trees";
    case InputFormat::Dags:
      return "DAGs";
    case InputFormat::Grids:
      return "grids";
    case InputFormat::Sequences:
      return "sequences";
  }
  return "inputs";
}

int64_t InputChunk::nodes() const {
  int64_t n = 0;
  for (const Tree &tree : trees) n += tree.size();
  for (const Dag &dag : dags) n += dag.size();
  for (const auto &sequence : sequences) n += static_cast<int64_t>(sequence.size());
  return n;
}

// Steps of a read:
//   1. The buffer holds bytes [base, base + buf.size()) of the file and `pos` is the next unread
//      one. fill() drops the bytes before `pos` and appends one block, so the buffer holds at most
//      the unread part of the current input and one block.
//   2. Line files: an input is the bytes up to the next '\n', or to the end of the file; a single
//      final newline ends the last line, so the file is done when nothing follows a newline.
//   3. DAG files: at the start, after white space, '{' is a file of one DAG and '[' a list. An
//      element's extent is found by value_length() (strings, escapes, nesting depth), its text is
//      parsed by nlohmann::json and read by read_dag(); then ',' or ']' follows (and after ']' or a
//      lone DAG only white space). Lines are counted as bytes are consumed; a column is counted
//      only for a message, back to the line's start (through the file when a seek dropped it).
//   4. After each input the position is committed. A UserError puts the position back where the
//      failed call began, and next() throws the same error again until a seek().
struct InputStream::Impl {
  std::unique_ptr<std::istream> in;
  std::string name;
  InputFormat format;
  const Vocab *vocab;
  Sweep sweep;
  size_t block = kDefaultBlock;
  uint64_t total = 0;  // the file's size (0 if the stream cannot tell)

  std::string buf;
  uint64_t base = 0;       // the file offset of buf[0]
  size_t pos = 0;          // the next byte to read, in buf
  int64_t pos_line = 1;    // the line buf[pos] is on
  int64_t base_chars = 0;  // characters between the start of base's line and base; -1: unknown
  bool eof = false;        // nothing follows buf in the file
  size_t peak = 0;

  enum class JsonState { kStart, kList };
  JsonState json_state = JsonState::kStart;
  StreamPosition committed;
  bool finished = false;
  std::optional<std::string> failure;

  bool fill();
  bool available(size_t n);
  void commit();
  bool read_one(InputChunk &chunk);
  bool read_line(InputChunk &chunk);
  bool read_json(InputChunk &chunk);
  [[noreturn]] void fail_empty_file() const;

  // JSON.
  int skip_space();
  size_t value_length();
  json parse_value(int64_t number);
  void expect_end(const char *what);
  void consume(size_t n);
  int64_t line_at(size_t k) const;
  int64_t column_at(size_t k);
  int64_t chars_before_base();
};

bool InputStream::Impl::fill() {
  if (eof) return false;
  if (pos > 0) {
    // The column at the new base follows from the bytes dropped: those after their last newline, or
    // all of them on top of the old base's.
    const char *begin = buf.data(), *end = begin + pos;
    auto newline = std::find(std::make_reverse_iterator(end), std::make_reverse_iterator(begin), '\n');
    if (newline.base() != begin)
      base_chars = count_chars(newline.base(), end);
    else if (base_chars >= 0)
      base_chars += count_chars(begin, end);
    buf.erase(0, pos);
    base += pos;
    pos = 0;
  }
  // Near the known end, ask for one byte past it, so that a short read says the file is done.
  size_t want = block;
  const uint64_t end = base + buf.size();
  if (total >= end) want = static_cast<size_t>(std::min<uint64_t>(want, total - end + 1));
  const size_t old = buf.size();
  buf.resize(old + want);
  in->read(buf.data() + old, static_cast<std::streamsize>(want));
  const auto got = static_cast<size_t>(in->gcount());
  buf.resize(old + got);
  if (in->bad()) user_error(msg::kCannotRead, file_kind(format), name, std::strerror(errno));
  peak = std::max(peak, buf.size());
  if (got < want) eof = true;
  return got > 0;
}

bool InputStream::Impl::available(size_t n) {
  while (buf.size() - pos < n)
    if (!fill()) return false;
  return true;
}

void InputStream::Impl::commit() {
  committed = StreamPosition{committed.index + 1, base + pos, pos_line};
  if (format != InputFormat::Dags) finished = !available(1);
}

void InputStream::Impl::fail_empty_file() const {
  switch (format) {
    case InputFormat::Trees:
      user_error(msg::kPtbEmptyFile, name);
    case InputFormat::Grids:
      user_error(msg::kLineFileEmpty, name, "grid", kGridExample);
    case InputFormat::Sequences:
      user_error(msg::kLineFileEmpty, name, "sequence", sequence_example(vocab));
    case InputFormat::Dags:
      break;
  }
  GROVE_CHECK(false, "a DAG file is never empty of lines");
}

bool InputStream::Impl::read_one(InputChunk &chunk) {
  return format == InputFormat::Dags ? read_json(chunk) : read_line(chunk);
}

bool InputStream::Impl::read_line(InputChunk &chunk) {
  // Only the bytes appended by each fill are searched, so a long line costs its length once.
  size_t scanned = 0, length;
  bool newline = false;
  while (true) {
    const char *start = buf.data() + pos;
    const size_t have = buf.size() - pos;
    if (const void *nl = std::memchr(start + scanned, '\n', have - scanned)) {
      length = static_cast<size_t>(static_cast<const char *>(nl) - start);
      newline = true;
      break;
    }
    scanned = have;
    if (!fill()) {
      length = buf.size() - pos;
      break;
    }
  }
  if (length == 0 && !newline) {
    if (committed.index == 0) fail_empty_file();
    return false;
  }
  const std::string_view line(buf.data() + pos, length);
  const uint64_t offset = base + pos;
  switch (format) {
    case InputFormat::Trees:
      chunk.trees.push_back(parse_ptb_line(line, vocab, name, pos_line, offset));
      break;
    case InputFormat::Grids:
      chunk.dags.push_back(parse_grid_line(line, sweep, name, pos_line, offset));
      break;
    case InputFormat::Sequences:
      chunk.sequences.push_back(parse_sequence_line(line, vocab, name, pos_line, offset));
      break;
    case InputFormat::Dags:
      GROVE_CHECK(false, "DAG files are not line files");
  }
  pos += length + (newline ? 1 : 0);
  ++pos_line;
  return true;
}

int InputStream::Impl::skip_space() {
  while (true) {
    for (; pos < buf.size(); ++pos) {
      const char c = buf[pos];
      if (!is_json_space(c)) return static_cast<unsigned char>(c);
      if (c == '\n') ++pos_line;
    }
    if (!fill()) return -1;
  }
}

// The length of the JSON value at `pos` (all the rest of the file if it does not end): a container
// up to the bracket that brings the nesting depth back to 0 (strings skipped, escapes followed), a
// string up to its closing quote, a number or literal up to a byte that cannot be part of one, and
// any other byte alone. Whether the text is valid JSON is nlohmann's to say.
size_t InputStream::Impl::value_length() {
  if (!available(1)) return 0;
  const char first = buf[pos];
  if (first == ',' || first == ':' || first == ']' || first == '}') return 1;
  const bool scalar = first != '{' && first != '[' && first != '"';
  int64_t depth = 0;
  bool in_string = false, escape = false;
  for (size_t k = 0;; ++k) {
    if (pos + k == buf.size() && !fill()) return k;
    const char c = buf[pos + k];
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return k + 1;
      }
    } else if (scalar) {
      if (ends_scalar(c)) return k;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return k + 1;
    }
  }
}

// Parses the value at `pos` and consumes it; `number` is the DAG it is (0: none yet).
json InputStream::Impl::parse_value(int64_t number) {
  const size_t length = value_length();
  const char *text = buf.data() + pos;
  size_t at = 0;
  std::string detail;
  try {
    json value = json::parse(text, text + length);
    consume(length);
    return value;
  } catch (const json::parse_error &e) {
    // `byte` is 1-based and one past the end at the end of the text.
    at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, length);
    detail = json_detail(e);
  } catch (const json::exception &e) {
    detail = json_detail(e);
  }
  if (number > 0) user_error(msg::kDagBadJsonIn, name, line_at(at), column_at(at), number, detail);
  user_error(msg::kDagBadJson, name, line_at(at), column_at(at), detail);
}

void InputStream::Impl::expect_end(const char *what) {
  const int c = skip_space();
  if (c >= 0) user_error(msg::kDagTrailing, name, pos_line, column_at(0), describe_byte(c), what);
}

void InputStream::Impl::consume(size_t n) {
  pos_line += std::count(buf.data() + pos, buf.data() + pos + n, '\n');
  pos += n;
}

int64_t InputStream::Impl::line_at(size_t k) const {
  return pos_line + std::count(buf.data() + pos, buf.data() + pos + k, '\n');
}

int64_t InputStream::Impl::column_at(size_t k) {
  const char *begin = buf.data(), *at = begin + pos + k;
  for (const char *p = at; p > begin; --p)
    if (p[-1] == '\n') return count_chars(p, at) + 1;
  if (base_chars < 0) base_chars = chars_before_base();
  return base_chars + count_chars(begin, at) + 1;
}

// After a seek the buffer starts mid-line: read the file backwards to the line's start.
int64_t InputStream::Impl::chars_before_base() {
  std::string piece;
  int64_t chars = 0;
  for (uint64_t end = base; end > 0;) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(end, kBackwardBlock));
    in->clear();
    in->seekg(static_cast<std::streamoff>(end - n));
    piece.resize(n);
    in->read(piece.data(), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in->gcount()) != n)
      user_error(msg::kCannotRead, file_kind(format), name, "it changed");
    if (size_t nl = piece.rfind('\n'); nl != std::string::npos) {
      chars += count_chars(piece.data() + nl + 1, piece.data() + n);
      break;
    }
    chars += count_chars(piece.data(), piece.data() + n);
    end -= n;
  }
  in->clear();
  in->seekg(static_cast<std::streamoff>(base + buf.size()));
  return chars;
}

bool InputStream::Impl::read_json(InputChunk &chunk) {
  const int64_t number = committed.index + 1;
  if (json_state == JsonState::kStart) {
    const int c = skip_space();
    if (c == '[') {
      consume(1);
      if (skip_space() == ']') {
        consume(1);
        expect_end("list");
        user_error(msg::kDagNoDags, name);
      }
      json_state = JsonState::kList;
    } else if (c != '{') {
      // Not a DAG file; the value is parsed for the message only.
      json value = parse_value(0);
      user_error(msg::kDagTopLevel, name, describe_json(value));
    }
  }
  skip_space();
  chunk.dags.push_back(read_dag(parse_value(number), name, number));
  if (json_state == JsonState::kStart) {
    expect_end("DAG");
    finished = true;
    return true;
  }
  const int c = skip_space();
  if (c == ',') {
    consume(1);
    return true;
  }
  if (c != ']') user_error(msg::kDagListSeparator, name, pos_line, column_at(0), number, describe_byte(c));
  consume(1);
  expect_end("list");
  finished = true;
  return true;
}

InputStream::InputStream(const std::string &path, InputFormat format, const Vocab *vocab, Sweep sweep)
    : InputStream(open_file(path, format), path, format, vocab, sweep) {}

InputStream::InputStream(std::unique_ptr<std::istream> in, std::string name, InputFormat format,
                         const Vocab *vocab, Sweep sweep)
    : impl_(std::make_unique<Impl>()) {
  Impl &s = *impl_;
  s.in = std::move(in);
  s.name = std::move(name);
  s.format = format;
  s.vocab = vocab;
  s.sweep = sweep;
  // The size, for progress and to size the last read; a stream that cannot seek does without.
  s.in->seekg(0, std::ios::end);
  const std::streamoff size = s.in->tellg();
  s.in->clear();
  s.in->seekg(0, std::ios::beg);
  s.in->clear();
  s.total = size > 0 ? static_cast<uint64_t>(size) : 0;
}

InputStream::~InputStream() = default;
InputStream::InputStream(InputStream &&) noexcept = default;
InputStream &InputStream::operator=(InputStream &&) noexcept = default;

InputChunk InputStream::next(size_t max_inputs) {
  GROVE_CHECK(max_inputs >= 1, "next() of {} inputs", max_inputs);
  Impl &s = *impl_;
  if (s.failure) throw UserError(*s.failure);
  InputChunk chunk;
  // A failed call returns none of its inputs, so the position goes back to where it began.
  const StreamPosition start = s.committed;
  try {
    while (chunk.count() < max_inputs && !s.finished) {
      if (!s.read_one(chunk)) {
        s.finished = true;
        break;
      }
      s.commit();
    }
  } catch (const UserError &e) {
    s.failure = e.what();
    s.committed = start;
    throw;
  }
  return chunk;
}

bool InputStream::done() const { return impl_->finished; }

StreamPosition InputStream::position() const { return impl_->committed; }

void InputStream::seek(const StreamPosition &position) {
  GROVE_CHECK(position.index > 0 || (position.offset == 0 && position.line == 1),
              "a position before the first input is the file's start, not offset {} line {}", position.offset,
              position.line);
  Impl &s = *impl_;
  s.in->clear();
  s.in->seekg(static_cast<std::streamoff>(position.offset));
  if (s.in->fail()) user_error(msg::kCannotSeek, file_kind(s.format), s.name);
  s.buf.clear();
  s.base = position.offset;
  s.pos = 0;
  s.pos_line = position.line;
  s.base_chars = position.offset == 0 ? 0 : -1;
  s.eof = false;
  s.committed = position;
  s.failure.reset();
  // Past the first input a DAG file can only be inside a list: a lone DAG ends the file.
  s.json_state = position.index == 0 ? Impl::JsonState::kStart : Impl::JsonState::kList;
  s.finished = position.index > 0 && !s.available(1);
}

uint64_t InputStream::bytes_done() const { return impl_->committed.offset; }
uint64_t InputStream::bytes_total() const { return impl_->total; }
const std::string &InputStream::name() const { return impl_->name; }
InputFormat InputStream::format() const { return impl_->format; }

void InputStream::set_block_size(size_t bytes) {
  GROVE_CHECK(bytes >= 1, "a block of {} bytes", bytes);
  impl_->block = bytes;
}

size_t InputStream::peak_buffer_bytes() const { return impl_->peak; }

// The whole-file readers: the stream read to the end.

namespace {

InputChunk read_all(InputStream stream) { return stream.next(std::numeric_limits<size_t>::max()); }

std::unique_ptr<std::istream> text_stream(std::string_view text) {
  return std::make_unique<std::istringstream>(std::string(text));
}

}  // namespace

std::vector<Tree> read_ptb_trees(const std::string &path, const Vocab *vocab) {
  return read_all(InputStream(path, InputFormat::Trees, vocab)).trees;
}

std::vector<Tree> read_ptb_tree_text(std::string_view text, const Vocab *vocab, const std::string &file) {
  return read_all(InputStream(text_stream(text), file, InputFormat::Trees, vocab)).trees;
}

std::vector<Dag> read_dags(const std::string &path) {
  return read_all(InputStream(path, InputFormat::Dags)).dags;
}

std::vector<Dag> read_dag_text(std::string_view text, const std::string &file) {
  return read_all(InputStream(text_stream(text), file, InputFormat::Dags)).dags;
}

std::vector<Dag> read_grids(const std::string &path, Sweep sweep) {
  return read_all(InputStream(path, InputFormat::Grids, nullptr, sweep)).dags;
}

std::vector<Dag> read_grid_text(std::string_view text, Sweep sweep, const std::string &file) {
  return read_all(InputStream(text_stream(text), file, InputFormat::Grids, nullptr, sweep)).dags;
}

std::vector<std::vector<int32_t>> read_sequences(const std::string &path, const Vocab *vocab) {
  return read_all(InputStream(path, InputFormat::Sequences, vocab)).sequences;
}

std::vector<std::vector<int32_t>> read_sequence_text(std::string_view text, const Vocab *vocab,
                                                     const std::string &file) {
  return read_all(InputStream(text_stream(text), file, InputFormat::Sequences, vocab)).sequences;
}

}  // namespace grove
