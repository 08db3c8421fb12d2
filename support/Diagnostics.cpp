#include "support/Diagnostics.h"

namespace grove {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string_view SourceFile::line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  std::string_view text(text_);
  std::string_view result = text.substr(begin, end - begin);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return result;
}

std::string SourceFile::format_error(Loc loc, const std::string &message) const {
  std::string_view quoted = line(loc.line);
  // The caret line copies tabs from the quoted line so that the caret lines up in any tab width.
  std::string caret;
  for (int i = 0; i + 1 < loc.col && static_cast<size_t>(i) < quoted.size(); ++i) {
    caret += quoted[i] == '\t' ? '\t' : ' ';
  }
  caret += '^';
  return fmt::format("{}:{}:{}: error: {}\n{}\n{}", name_, loc.line, loc.col, message, quoted, caret);
}

}  // namespace grove
