#include "datasets/DagReader.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "datasets/Messages.h"
#include "datasets/Readers_Internal.h"
#include "support/Error.h"

namespace grove {

namespace msg = dataset_messages;
using nlohmann::json;

namespace {

constexpr int32_t kMaxId = std::numeric_limits<int32_t>::max();

// The value of an integer JSON number in [lo, hi], or nullopt.
std::optional<int64_t> integer_in(const json &value, int64_t lo, int64_t hi) {
  int64_t v;
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else {
    return std::nullopt;
  }
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

// Containers by kind only, so that a hostile file's huge or deeply nested value is never printed.
std::string describe_json(const json &value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    default: {
      std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
      constexpr size_t kShown = 40;
      if (text.size() > kShown) text = text.substr(0, kShown) + "...";
      return text;
    }
  }
}

Dag read_dag(const json &object, const std::string &file, int64_t number) {
  if (!object.is_object()) user_error(msg::kDagNotObject, file, number, describe_json(object));
  for (const auto &[key, value] : object.items()) {
    if (key != "nodes") user_error(msg::kDagUnknownKey, file, number, key);
  }
  auto nodes = object.find("nodes");
  if (nodes == object.end()) user_error(msg::kDagNoNodes, file, number);
  if (!nodes->is_array()) user_error(msg::kDagNodesNotList, file, number, describe_json(*nodes));
  if (nodes->size() >= static_cast<size_t>(kMaxId)) user_error(msg::kDagTooManyNodes, file, number, kMaxId);
  Dag dag;
  dag.pred_begin.push_back(0);
  auto size = static_cast<int64_t>(nodes->size());
  for (int64_t i = 0; i < size; ++i) {
    const json &node = (*nodes)[static_cast<size_t>(i)];
    if (!node.is_object()) user_error(msg::kDagNodeNotObject, file, number, i, describe_json(node));
    for (const auto &[key, value] : node.items()) {
      if (key != "token" && key != "preds") user_error(msg::kDagNodeUnknownKey, file, number, i, key);
    }
    auto token = node.find("token");
    if (token == node.end()) user_error(msg::kDagNoToken, file, number, i);
    std::optional<int64_t> id = integer_in(*token, 0, kMaxId);
    if (!id) user_error(msg::kDagBadToken, file, number, i, kMaxId, describe_json(*token));
    dag.token.push_back(static_cast<int32_t>(*id));
    if (auto preds = node.find("preds"); preds != node.end()) {
      if (!preds->is_array()) user_error(msg::kDagPredsNotList, file, number, i, describe_json(*preds));
      if (dag.preds.size() + preds->size() >= static_cast<size_t>(kMaxId))
        user_error(msg::kDagTooManyNodes, file, number, kMaxId);
      for (size_t slot = 0; slot < preds->size(); ++slot) {
        const json &pred = (*preds)[slot];
        if (pred.is_null()) {
          dag.preds.push_back(Dag::kEmptySlot);
          continue;
        }
        // Indices past the DAG's end are the inspector's to report (with the node count); the
        // reader only rules out what an int32 index cannot hold.
        std::optional<int64_t> index = integer_in(pred, 0, kMaxId);
        if (!index) user_error(msg::kDagBadPred, file, number, i, slot, kMaxId, describe_json(pred));
        dag.preds.push_back(static_cast<int32_t>(*index));
      }
    }
    dag.pred_begin.push_back(static_cast<int32_t>(dag.preds.size()));
  }
  return dag;
}

namespace {

// The checks every line of a line file shares: UTF-8 (offsets in the file), not blank.
void check_line(std::string_view line, const std::string &file, int64_t line_number, uint64_t offset,
                const char *kind, const char *example) {
  if (auto bad = find_invalid_utf8(line)) {
    user_error(msg::kInvalidUtf8, file, line_number, utf8_column(line, *bad),
               static_cast<unsigned char>(line[*bad]), offset + *bad, "file");
  }
  if (line.find_first_not_of(' ') == std::string_view::npos)
    user_error(msg::kLineEmpty, file, line_number, kind, example);
}

// A token of a line file: its text and byte offset in the line.
struct Word {
  std::string_view text;
  size_t offset;
};

// Splits `line` on runs of ASCII spaces, rejecting control characters.
std::vector<Word> split_words(std::string_view line, const std::string &file, int64_t line_number,
                              const char *kind) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t begin = i;
    while (i < line.size() && line[i] != ' ') {
      auto c = static_cast<unsigned char>(line[i]);
      if (c < 0x20 || c == 0x7F) {
        if (c == '\r') user_error(msg::kLineCarriageReturn, file, line_number, utf8_column(line, i), kind);
        user_error(msg::kLineControl, file, line_number, utf8_column(line, i), c);
      }
      ++i;
    }
    if (i > begin) words.push_back({line.substr(begin, i - begin), begin});
  }
  return words;
}

// An integer id in [0, 2^31) written as plain digits, or nullopt.
std::optional<int32_t> parse_id(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
  int32_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

const char *to_string(Sweep sweep) {
  switch (sweep) {
    case Sweep::SouthEast:
      return "se";
    case Sweep::SouthWest:
      return "sw";
    case Sweep::NorthEast:
      return "ne";
    case Sweep::NorthWest:
      return "nw";
  }
  return "?";
}

Dag grid_dag(int32_t rows, int32_t cols, const std::vector<int32_t> &tokens, Sweep sweep) {
  GROVE_CHECK(rows >= 1 && cols >= 1 && int64_t(rows) * cols == int64_t(tokens.size()),
              "a {}x{} grid with {} tokens", rows, cols, tokens.size());
  // The sweep runs towards its corner, so a cell's predecessors are its neighbours on the side the
  // sweep comes from: above (south sweeps) or below, left (east sweeps) or right.
  int32_t dr = sweep == Sweep::SouthEast || sweep == Sweep::SouthWest ? -1 : 1;
  int32_t dc = sweep == Sweep::SouthEast || sweep == Sweep::NorthEast ? -1 : 1;
  Dag dag;
  dag.token = tokens;
  dag.pred_begin.reserve(tokens.size() + 1);
  dag.pred_begin.push_back(0);
  dag.preds.reserve(2 * tokens.size());
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t c = 0; c < cols; ++c) {
      int32_t vr = r + dr, hc = c + dc;
      dag.preds.push_back(vr >= 0 && vr < rows ? vr * cols + c : Dag::kEmptySlot);
      dag.preds.push_back(hc >= 0 && hc < cols ? r * cols + hc : Dag::kEmptySlot);
      dag.pred_begin.push_back(static_cast<int32_t>(dag.preds.size()));
    }
  }
  return dag;
}

Dag parse_grid_line(std::string_view line, Sweep sweep, const std::string &file, int64_t line_number,
                    uint64_t offset) {
  check_line(line, file, line_number, offset, "grid", kGridExample);
  std::vector<Word> words = split_words(line, file, line_number, "grid");
  // Two cells per slot of the preds array must fit an int32 index.
  constexpr int32_t kMaxCells = kMaxId / 2;
  int32_t size[2];
  for (int k = 0; k < 2; ++k) {
    const char *what = k == 0 ? "row" : "column";
    if (words.size() <= static_cast<size_t>(k)) {
      user_error(msg::kGridBadSize, file, line_number, utf8_column(line, line.size()), what, "", kMaxCells);
    }
    std::optional<int32_t> v = parse_id(words[k].text);
    if (!v || *v < 1 || *v > kMaxCells) {
      user_error(msg::kGridBadSize, file, line_number, utf8_column(line, words[k].offset), what,
                 words[k].text, kMaxCells);
    }
    size[k] = *v;
  }
  int64_t cells = int64_t(size[0]) * size[1];
  if (cells > kMaxCells) user_error(msg::kGridTooLarge, file, line_number, size[0], size[1], kMaxCells);
  if (static_cast<int64_t>(words.size()) - 2 != cells) {
    user_error(msg::kGridTokenCount, file, line_number, size[0], size[1], cells, words.size() - 2);
  }
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(cells));
  for (size_t w = 2; w < words.size(); ++w) {
    std::optional<int32_t> id = parse_id(words[w].text);
    if (!id) {
      user_error(msg::kGridBadToken, file, line_number, utf8_column(line, words[w].offset), words[w].text,
                 kMaxId);
    }
    tokens.push_back(*id);
  }
  return grid_dag(size[0], size[1], tokens, sweep);
}

std::vector<int32_t> parse_sequence_line(std::string_view line, const Vocab *vocab, const std::string &file,
                                         int64_t line_number, uint64_t offset) {
  check_line(line, file, line_number, offset, "sequence", sequence_example(vocab));
  std::vector<Word> words = split_words(line, file, line_number, "sequence");
  if (words.size() >= static_cast<size_t>(kMaxId))
    user_error(msg::kSequenceTooLong, file, line_number, kMaxId);
  std::vector<int32_t> ids;
  ids.reserve(words.size());
  for (const Word &word : words) {
    if (vocab) {
      std::optional<int32_t> id = vocab->lookup(word.text);
      if (!id) {
        user_error(msg::kSequenceUnknownToken, file, line_number, utf8_column(line, word.offset), word.text,
                   vocab->path());
      }
      ids.push_back(*id);
      continue;
    }
    std::optional<int32_t> id = parse_id(word.text);
    if (!id) {
      user_error(msg::kSequenceNotInteger, file, line_number, utf8_column(line, word.offset), word.text,
                 kMaxId);
    }
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace grove
