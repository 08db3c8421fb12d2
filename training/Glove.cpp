#include "training/Glove.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "datasets/Messages.h"
#include "support/Error.h"
#include "training/Messages.h"
#include "training/Random.h"

namespace grove::training {

namespace msg = training_messages;

namespace {

// Reads lines into `table` (already filled with the random rows), marking the rows it sets.
class GloveLines {
 public:
  GloveLines(const std::string &file, const Vocab &vocab, Tensor &table)
      : file_(file),
        vocab_(vocab),
        table_(table),
        width_(table.shape[1]),
        set_(table.shape[0], 0),
        values_(width_) {}

  // Steps: split the line on spaces; the last D fields are the vector, each a finite float; what
  // precedes them is the word, looked up in the vocabulary.
  void line(std::string_view line, int64_t number) {
    if (line.empty()) user_error(msg::kGloveEmptyLine, file_, number, width_);
    if (line.find('\r') != std::string_view::npos) user_error(msg::kGloveCarriageReturn, file_, number);
    fields_.clear();
    for (size_t begin = 0;;) {
      size_t end = std::min(line.find(' ', begin), line.size());
      fields_.push_back(line.substr(begin, end - begin));
      if (end == line.size()) break;
      begin = end + 1;
    }
    const auto count = static_cast<int64_t>(fields_.size());
    if (count == 1) user_error(msg::kGloveNoVector, file_, number, line, width_);
    if (count < width_ + 1) user_error(msg::kGloveWidth, file_, number, fields_[0], count - 1, width_);
    const int64_t first = count - width_;
    // The word ends where the vector's first field starts, less the space between them.
    std::string_view word = line.substr(0, static_cast<size_t>(fields_[first].data() - line.data()) - 1);
    for (int64_t k = 0; k < width_; ++k) {
      std::string_view field = fields_[first + k];
      float value = 0.0f;
      auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (field.empty() || ec != std::errc() || ptr != field.data() + field.size() || !std::isfinite(value))
        user_error(msg::kGloveBadNumber, file_, number, field, k + 1, word);
      values_[k] = value;
    }
    ++stats_.lines;
    // Unknown words (looked up as <unk>) and repeated ones are skipped.
    std::optional<int32_t> id = vocab_.lookup(word);
    if (!id || vocab_.token(*id) != word || set_[*id]) return;
    set_[*id] = 1;
    ++stats_.found;
    std::copy(values_.begin(), values_.end(), table_.data.begin() + static_cast<int64_t>(*id) * width_);
  }

  const GloveStats &stats() const { return stats_; }

 private:
  const std::string &file_;
  const Vocab &vocab_;
  Tensor &table_;
  int64_t width_;
  std::vector<char> set_;
  std::vector<float> values_;
  std::vector<std::string_view> fields_;
  GloveStats stats_;
};

void fill_random(Tensor &table, uint64_t seed) {
  const int64_t width = table.shape[1];
  for (int64_t i = 0; i < table.size(); ++i) {
    const uint64_t word = hash_key({seed, static_cast<uint64_t>(i / width), static_cast<uint64_t>(i % width),
                                    0x474C4F5645ull /* "GLOVE" */});
    table.data[i] = static_cast<float>((2.0 * unit_double(word) - 1.0) * 0.05);
  }
}

void check_table(const Tensor &table, const Vocab &vocab) {
  GROVE_CHECK(table.shape.size() == 2 && table.shape[0] >= vocab.size() && table.shape[1] >= 1,
              "embedding table {} for a vocabulary of {}", shape_string(table.shape), vocab.size());
}

}  // namespace

GloveStats parse_glove(std::string_view text, const std::string &file, const Vocab &vocab, uint64_t seed,
                       Tensor &table) {
  check_table(table, vocab);
  if (text.empty()) user_error(msg::kGloveEmpty, file);
  fill_random(table, seed);
  if (text.back() == '\n') text.remove_suffix(1);
  GloveLines lines(file, vocab, table);
  size_t begin = 0;
  for (int64_t number = 1;; ++number) {
    size_t end = std::min(text.find('\n', begin), text.size());
    lines.line(text.substr(begin, end - begin), number);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return lines.stats();
}

GloveStats load_glove(const std::string &path, const Vocab &vocab, uint64_t seed, Tensor &table) {
  check_table(table, vocab);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    user_error(dataset_messages::kCannotRead, "GloVe file", path, "it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(dataset_messages::kCannotRead, "GloVe file", path, std::strerror(errno));
  fill_random(table, seed);
  GloveLines lines(path, vocab, table);
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) lines.line(line, ++number);
  if (in.bad()) user_error(dataset_messages::kCannotRead, "GloVe file", path, std::strerror(errno));
  if (number == 0) user_error(msg::kGloveEmpty, path);
  return lines.stats();
}

}  // namespace grove::training
