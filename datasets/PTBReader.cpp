#include "datasets/PTBReader.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "datasets/Messages.h"
#include "datasets/Readers_Internal.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;

namespace {

enum class Lexeme { kOpen, kClose, kAtom, kEnd };

// Where a line sits in its file, for messages.
struct LinePlace {
  const std::string &file;
  int64_t line_number;
  uint64_t offset;   // of the line's first byte, in the unit below
  const char *unit;  // "file" or "line": what UTF-8 byte offsets count from
};

// Parses one line into a post-order Tree:
//   1. Split the line into lexemes: '(', ')', atoms (maximal runs of bytes other than ASCII space,
//      parentheses and control characters), and the end of the line.
//   2. Keep an explicit stack of the open nodes. After '(' comes a label atom; after the label
//      either one token atom and ')' (a leaf), or one or more child nodes and ')'.
//   3. A node gets its id when its ')' is read, so ids come out in post-order. The ids of the closed
//      children of every open node wait on one shared stack until their parent closes.
//   4. After the root's ')' only the end of the line may follow.
class LineParser {
 public:
  // With `labels`, every node's label must be an integer in [0, classes); they are appended to
  // `labels` in node id order.
  LineParser(std::string_view line, const Vocab *vocab, const LinePlace &place,
             std::vector<int32_t> *labels = nullptr, int32_t classes = 0)
      : line_(line), vocab_(vocab), place_(place), labels_(labels), classes_(classes) {}

  Tree parse();

 private:
  struct OpenNode {
    size_t open_offset;  // of its '('
    size_t first_child;  // its first child's index in closed_children_
    int32_t label = -1;  // when labels are read
  };
  enum class State { kAfterOpen, kAfterLabel, kAfterChild };

  Lexeme next();
  int32_t token_id(std::string_view atom, size_t offset) const;
  int32_t label_value(std::string_view atom, size_t offset) const;
  int32_t add_node(int32_t token, size_t first_child);
  std::string describe(Lexeme lexeme) const;
  int64_t column(size_t offset) const { return utf8_column(line_, offset); }
  [[noreturn]] void fail_missing_close() const;

  std::string_view line_;
  const Vocab *vocab_;
  const LinePlace &place_;
  std::vector<int32_t> *labels_;
  int32_t classes_;
  size_t pos_ = 0;    // the next byte to read
  size_t start_ = 0;  // the first byte of the last lexeme
  std::string_view atom_;
  std::vector<OpenNode> open_;
  std::vector<int32_t> closed_children_;
  Tree tree_;
};

Lexeme LineParser::next() {
  while (pos_ < line_.size() && line_[pos_] == ' ') ++pos_;
  start_ = pos_;
  if (pos_ == line_.size()) return Lexeme::kEnd;
  auto is_control = [](unsigned char c) { return c < 0x20 || c == 0x7F; };
  auto check = [&](size_t i) {
    auto c = static_cast<unsigned char>(line_[i]);
    if (!is_control(c)) return;
    if (c == '\r') user_error(msg::kPtbCarriageReturn, place_.file, place_.line_number, column(i));
    user_error(msg::kPtbControl, place_.file, place_.line_number, column(i), c);
  };
  check(pos_);
  char c = line_[pos_];
  if (c == '(' || c == ')') {
    ++pos_;
    return c == '(' ? Lexeme::kOpen : Lexeme::kClose;
  }
  while (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '(' && line_[pos_] != ')') {
    check(pos_);
    ++pos_;
  }
  atom_ = line_.substr(start_, pos_ - start_);
  return Lexeme::kAtom;
}

std::string LineParser::describe(Lexeme lexeme) const {
  switch (lexeme) {
    case Lexeme::kOpen:
      return "'('";
    case Lexeme::kClose:
      return "')'";
    case Lexeme::kAtom:
      return fmt::format("'{}'", atom_);
    case Lexeme::kEnd:
      return "end of line";
  }
  GROVE_CHECK(false, "unknown lexeme {}", static_cast<int>(lexeme));
}

int32_t LineParser::token_id(std::string_view atom, size_t offset) const {
  if (vocab_ != nullptr) {
    std::optional<int32_t> id = vocab_->lookup(atom);
    if (!id)
      user_error(msg::kPtbUnknownToken, place_.file, place_.line_number, column(offset), atom,
                 vocab_->path());
    return *id;
  }
  int32_t id = -1;
  const char *end = atom.data() + atom.size();
  // from_chars would accept a leading '-'; ids are written as plain digits.
  bool digits = atom[0] >= '0' && atom[0] <= '9';
  auto [ptr, ec] = std::from_chars(atom.data(), end, id);
  if (!digits || ec != std::errc() || ptr != end) {
    user_error(msg::kPtbNotInteger, place_.file, place_.line_number, column(offset), atom,
               std::numeric_limits<int32_t>::max());
  }
  return id;
}

int32_t LineParser::label_value(std::string_view atom, size_t offset) const {
  int32_t value = -1;
  const char *end = atom.data() + atom.size();
  bool digits = atom[0] >= '0' && atom[0] <= '9';
  auto [ptr, ec] = std::from_chars(atom.data(), end, value);
  if (!digits || ec != std::errc() || ptr != end || value >= classes_) {
    user_error(msg::kPtbBadLabel, place_.file, place_.line_number, column(offset), atom, classes_ - 1);
  }
  return value;
}

int32_t LineParser::add_node(int32_t token, size_t first_child) {
  if (tree_.token.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    user_error(msg::kPtbTooManyNodes, place_.file, place_.line_number, std::numeric_limits<int32_t>::max());
  }
  auto id = static_cast<int32_t>(tree_.token.size());
  tree_.token.push_back(token);
  tree_.children.insert(tree_.children.end(), closed_children_.begin() + first_child, closed_children_.end());
  closed_children_.resize(first_child);
  tree_.child_begin.push_back(static_cast<int32_t>(tree_.children.size()));
  if (labels_ != nullptr) labels_->push_back(open_.back().label);
  return id;
}

void LineParser::fail_missing_close() const {
  user_error(msg::kPtbMissingClose, place_.file, place_.line_number, column(line_.size()),
             column(open_.back().open_offset));
}

Tree LineParser::parse() {
  const std::string &file = place_.file;
  int64_t line_number = place_.line_number;
  if (line_.empty()) user_error(msg::kPtbEmptyLine, file, line_number);
  tree_.child_begin.push_back(0);

  Lexeme lexeme = next();
  if (lexeme != Lexeme::kOpen)
    user_error(msg::kPtbExpectedOpen, file, line_number, column(start_), describe(lexeme));
  open_.push_back({start_, 0});
  State state = State::kAfterOpen;
  std::string_view label;
  while (!open_.empty()) {
    lexeme = next();
    if (lexeme == Lexeme::kEnd) fail_missing_close();
    int32_t closed;
    if (state == State::kAfterOpen) {
      if (lexeme == Lexeme::kClose)
        user_error(msg::kPtbEmptyNode, file, line_number, column(open_.back().open_offset));
      if (lexeme == Lexeme::kOpen)
        user_error(msg::kPtbMissingLabel, file, line_number, column(start_), "'('");
      label = atom_;
      if (labels_ != nullptr) open_.back().label = label_value(label, start_);
      state = State::kAfterLabel;
      continue;
    }
    if (lexeme == Lexeme::kOpen) {
      open_.push_back({start_, closed_children_.size()});
      state = State::kAfterOpen;
      continue;
    }
    if (state == State::kAfterLabel) {
      if (lexeme == Lexeme::kClose) {
        user_error(msg::kPtbLabelOnly, file, line_number, column(open_.back().open_offset), label);
      }
      std::string_view token = atom_;
      int32_t id = token_id(token, start_);
      lexeme = next();
      if (lexeme == Lexeme::kEnd) fail_missing_close();
      if (lexeme != Lexeme::kClose) {
        user_error(msg::kPtbCloseAfterToken, file, line_number, column(start_), token, describe(lexeme));
      }
      closed = add_node(id, open_.back().first_child);
    } else {
      if (lexeme == Lexeme::kAtom)
        user_error(msg::kPtbTokenAfterChild, file, line_number, column(start_), atom_);
      closed = add_node(-1, open_.back().first_child);
    }
    open_.pop_back();
    closed_children_.push_back(closed);
    state = State::kAfterChild;
  }
  lexeme = next();
  if (lexeme != Lexeme::kEnd)
    user_error(msg::kPtbTrailing, file, line_number, column(start_), describe(lexeme));
  tree_.root = tree_.size() - 1;
  return std::move(tree_);
}

Tree parse_line(std::string_view line, const Vocab *vocab, const LinePlace &place,
                std::vector<int32_t> *labels = nullptr, int32_t classes = 0) {
  if (auto bad = find_invalid_utf8(line)) {
    user_error(msg::kInvalidUtf8, place.file, place.line_number, utf8_column(line, *bad),
               static_cast<unsigned char>(line[*bad]), place.offset + *bad, place.unit);
  }
  return LineParser(line, vocab, place, labels, classes).parse();
}

void check_classes(int32_t classes) { GROVE_CHECK(classes >= 1, "{} classes", classes); }

}  // namespace

Tree parse_ptb_tree(std::string_view line, const Vocab *vocab, const std::string &file, int64_t line_number) {
  return parse_line(line, vocab, LinePlace{file, line_number, 0, "line"});
}

Tree parse_ptb_line(std::string_view line, const Vocab *vocab, const std::string &file, int64_t line_number,
                    uint64_t offset) {
  return parse_line(line, vocab, LinePlace{file, line_number, offset, "file"});
}

LabelledTree parse_labelled_ptb_tree(std::string_view line, const Vocab *vocab, int32_t classes,
                                     const std::string &file, int64_t line_number) {
  check_classes(classes);
  LabelledTree result;
  result.tree = parse_line(line, vocab, LinePlace{file, line_number, 0, "line"}, &result.labels, classes);
  return result;
}

LabelledTrees read_labelled_ptb_tree_text(std::string_view text, const Vocab *vocab, int32_t classes,
                                          const std::string &file) {
  check_classes(classes);
  if (text.empty()) user_error(msg::kPtbEmptyFile, file);
  // A single final newline ends the last line; it does not start an empty one.
  if (text.back() == '\n') text.remove_suffix(1);
  LabelledTrees result;
  size_t begin = 0;
  for (int64_t line_number = 1;; ++line_number) {
    size_t end = std::min(text.find('\n', begin), text.size());
    std::vector<int32_t> labels;
    result.trees.push_back(parse_line(text.substr(begin, end - begin), vocab,
                                      LinePlace{file, line_number, begin, "file"}, &labels, classes));
    result.labels.push_back(std::move(labels));
    if (end == text.size()) break;
    begin = end + 1;
  }
  return result;
}

LabelledTrees read_labelled_ptb_trees(const std::string &path, const Vocab *vocab, int32_t classes) {
  return read_labelled_ptb_tree_text(read_text_file(path, "tree file"), vocab, classes, path);
}

}  // namespace grove
