#pragma once
// A vocabulary file: one token per line, the id of a token is its line number from 0. A line `<unk>`,
// if present, is the id of every token not in the file; without it an unknown token has no id.
//
// Also the small text helpers the input readers share (file reading, UTF-8 checking, columns).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace grove {

class Vocab {
 public:
  static constexpr std::string_view kUnknownToken = "<unk>";

  // Reads and checks `path`: UTF-8, LF line endings, one non-empty token per line without ASCII
  // spaces, parentheses or control characters, no token twice. A single final newline is optional.
  // Throws UserError naming the file and line.
  static Vocab load(const std::string &path);
  // The same checks on the text of a vocabulary file; `path` only names it in messages.
  static Vocab parse(std::string_view text, const std::string &path);

  // The id of `token`, else the id of `<unk>` if the vocabulary has one, else nullopt.
  std::optional<int32_t> lookup(std::string_view token) const;
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string &token(int32_t id) const;
  bool has_unknown() const { return unknown_id_.has_value(); }
  const std::string &path() const { return path_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  std::string path_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  std::optional<int32_t> unknown_id_;
};

// Reads a whole file; `what` names it in the error ("vocabulary file", "tree file").
std::string read_text_file(const std::string &path, std::string_view what);

// The byte offset where the first ill-formed UTF-8 sequence of `text` starts (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or nullopt if all of it is well formed.
std::optional<size_t> find_invalid_utf8(std::string_view text);

// The 1-based column of byte `offset` of `line`, counting UTF-8 characters.
int64_t utf8_column(std::string_view line, size_t offset);

}  // namespace grove
