#include "datasets/Vocab.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "datasets/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;

namespace {

// The 1-based line number and the [begin, end) byte range of the line holding byte `offset`.
struct LineAt {
  int64_t number;
  size_t begin;
  size_t end;
};

LineAt line_at(std::string_view text, size_t offset) {
  LineAt at{1, 0, text.size()};
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++at.number;
      at.begin = i + 1;
    }
  }
  size_t newline = text.find('\n', offset);
  if (newline != std::string_view::npos) at.end = newline;
  return at;
}

}  // namespace

std::string read_text_file(const std::string &path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error(msg::kCannotRead, what, path, "it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kCannotRead, what, path, std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) user_error(msg::kCannotRead, what, path, std::strerror(errno));
  return std::move(contents).str();
}

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char b = bytes[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Unicode 15, Table 3-7: the allowed range of the second byte depends on the first byte; that is
    // what rules out overlong forms, surrogates and code points above U+10FFFF.
    size_t length;
    unsigned char low = 0x80, high = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3;
      if (b == 0xE0) low = 0xA0;
      if (b == 0xED) high = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4;
      if (b == 0xF0) low = 0x90;
      if (b == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    for (size_t k = 1; k < length; ++k) {
      if (i + k >= n) return i;
      unsigned char c = bytes[i + k];
      if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return i;
    }
    i += length;
  }
  return std::nullopt;
}

int64_t utf8_column(std::string_view line, size_t offset) {
  int64_t column = 1;
  for (size_t i = 0; i < offset && i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;
  }
  return column;
}

Vocab Vocab::load(const std::string &path) { return parse(read_text_file(path, "vocabulary file"), path); }

Vocab Vocab::parse(std::string_view text, const std::string &path) {
  if (text.empty()) user_error(msg::kVocabEmpty, path);
  if (auto bad = find_invalid_utf8(text)) {
    LineAt at = line_at(text, *bad);
    std::string_view line = text.substr(at.begin, at.end - at.begin);
    user_error(msg::kInvalidUtf8, path, at.number, utf8_column(line, *bad - at.begin),
               static_cast<unsigned char>(text[*bad]), *bad, "file");
  }
  // A single final newline ends the last line; it does not start an empty one.
  if (text.back() == '\n') text.remove_suffix(1);

  Vocab vocab;
  vocab.path_ = path;
  int64_t line_number = 0;
  size_t begin = 0;
  while (true) {
    ++line_number;
    size_t end = text.find('\n', begin);
    std::string_view line = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    if (line.empty()) user_error(msg::kVocabEmptyLine, path, line_number);
    for (size_t i = 0; i < line.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(line[i]);
      if (c > ' ' && c != '(' && c != ')' && c != 0x7F) continue;
      int64_t column = utf8_column(line, i);
      if (c == '\r') user_error(msg::kVocabCarriageReturn, path, line_number, column);
      if (c == ' ') user_error(msg::kVocabSeparator, path, line_number, column, line, "an ASCII space");
      if (c == '(' || c == ')') {
        user_error(msg::kVocabSeparator, path, line_number, column, line, fmt::format("'{}'", line[i]));
      }
      user_error(msg::kVocabControl, path, line_number, column, c, line);
    }
    if (vocab.tokens_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      user_error(msg::kVocabTooLarge, path, std::numeric_limits<int32_t>::max());
    }
    auto id = static_cast<int32_t>(vocab.tokens_.size());
    auto [it, inserted] = vocab.ids_.emplace(std::string(line), id);
    if (!inserted) user_error(msg::kVocabDuplicate, path, line_number, line, it->second + 1);
    if (line == kUnknownToken) vocab.unknown_id_ = id;
    vocab.tokens_.emplace_back(line);
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return vocab;
}

std::optional<int32_t> Vocab::lookup(std::string_view token) const {
  auto it = ids_.find(token);
  if (it != ids_.end()) return it->second;
  return unknown_id_;
}

const std::string &Vocab::token(int32_t id) const {
  GROVE_CHECK(id >= 0 && id < size(), "token id {} out of range for a vocabulary of {} tokens", id, size());
  return tokens_[id];
}

}  // namespace grove
