#pragma once
// Source locations and user-error reporting for grove's front ends (the model language, Relay text).
// Every error reads `file:line:col: error: message`, then the offending source line and a caret
// under the column, and is thrown as a grove::UserError.

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "support/Error.h"

namespace grove {

// A 1-based line and column in a source file.
struct Loc {
  int line = 1;
  int col = 1;
};

// A source file's name and text, with the line starts needed to quote a line in a message.
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  const std::string &name() const { return name_; }
  const std::string &text() const { return text_; }
  // The text of 1-based line `line`, without its newline.
  std::string_view line(int line) const;

  // The full message for an error at `loc`: header, quoted line and caret.
  std::string format_error(Loc loc, const std::string &message) const;

  // Throws a UserError at `loc`; the format strings live in Messages.h.
  template <typename... Args>
  [[noreturn]] void error(Loc loc, fmt::format_string<Args...> format, Args &&...args) const {
    throw UserError(format_error(loc, fmt::format(format, std::forward<Args>(args)...)));
  }

 private:
  std::string name_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

}  // namespace grove
