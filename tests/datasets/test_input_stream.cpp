// The input stream (datasets/InputStream.h): reading a file in chunks of any size (blocks of bytes
// and counts of inputs) gives exactly the inputs of the whole read and the same error messages
// (file:line:col, DAG numbers, byte offsets) wherever the error is; seeking to a recorded position
// reproduces the rest; the buffer never holds more than one block and the longest input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/DagReader.h"
#include "datasets/InputStream.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using grove::testing::user_error_of;
using grove::testing::user_error_or_empty;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string sst_file(const std::string &name) { return std::string(GROVE_SST_DIR) + "/" + name; }

// The block sizes every equivalence is checked under: a byte at a time, a few bytes (so UTF-8
// sequences, escapes and newlines straddle blocks), larger than most inputs, and the default.
const std::vector<size_t> kBlocks = {1, 3, 1000, 0};

// Inputs of any format, flattened so that one comparison covers all three vectors.
struct Inputs {
  std::vector<Tree> trees;
  std::vector<Dag> dags;
  std::vector<std::vector<int32_t>> sequences;
  std::string error;                      // the UserError that ended the read, if any
  std::vector<StreamPosition> positions;  // after each next()
  std::vector<size_t> counts;             // inputs read when each position was taken
  size_t peak = 0;

  size_t count() const { return trees.size() + dags.size() + sequences.size(); }
};

bool same_tree(const Tree &a, const Tree &b) {
  return a.token == b.token && a.child_begin == b.child_begin && a.children == b.children && a.root == b.root;
}
bool same_dag(const Dag &a, const Dag &b) {
  return a.token == b.token && a.pred_begin == b.pred_begin && a.preds == b.preds;
}

// `b` holds the inputs of `a` from index `a_from` on, and the same error. A read that ends in an
// error loses the inputs of its last call, so then `b` may hold fewer, but no fewer than `slack`
// short of `a`.
template <typename T, typename Same>
::testing::AssertionResult same_tail(const std::vector<T> &a, const std::vector<T> &b, size_t a_from,
                                     size_t slack, Same same) {
  if (a.empty() && b.empty()) return ::testing::AssertionSuccess();
  const size_t want = a.size() - std::min(a_from, a.size());
  if (b.size() > want || b.size() + slack < want)
    return ::testing::AssertionFailure() << want << " inputs vs " << b.size();
  for (size_t i = 0; i < b.size(); ++i)
    if (!same(a[a_from + i], b[i]))
      return ::testing::AssertionFailure() << "input " << a_from + i << " differs";
  return ::testing::AssertionSuccess();
}

// `max_step`: the most inputs `b` asked for at once (it may lose fewer than that to an error).
::testing::AssertionResult same_inputs(const Inputs &a, const Inputs &b, size_t a_from = 0,
                                       size_t max_step = 1) {
  const size_t slack = a.error.empty() ? 0 : max_step - 1;
  auto equal = [](const auto &x, const auto &y) { return x == y; };
  if (auto r = same_tail(a.trees, b.trees, a_from, slack, same_tree); !r) return r;
  if (auto r = same_tail(a.dags, b.dags, a_from, slack, same_dag); !r) return r;
  if (auto r = same_tail(a.sequences, b.sequences, a_from, slack, equal); !r) return r;
  if (a.error != b.error)
    return ::testing::AssertionFailure() << "errors '" << a.error << "' vs '" << b.error << "'";
  return ::testing::AssertionSuccess();
}

// Reads `stream` to its end or error, asking for 1, 2, ... `max_step` inputs in turn.
Inputs drain(InputStream &stream, size_t max_step = 5) {
  Inputs out;
  const int64_t start = stream.position().index;
  for (size_t step = 1;; step = step % max_step + 1) {
    InputChunk chunk;
    try {
      chunk = stream.next(step);
    } catch (const UserError &e) {
      out.error = e.what();
      break;
    }
    if (chunk.empty()) break;
    EXPECT_LE(chunk.count(), step);
    for (Tree &t : chunk.trees) out.trees.push_back(std::move(t));
    for (Dag &d : chunk.dags) out.dags.push_back(std::move(d));
    for (auto &s : chunk.sequences) out.sequences.push_back(std::move(s));
    out.positions.push_back(stream.position());
    out.counts.push_back(out.count());
    EXPECT_EQ(stream.position().index, start + static_cast<int64_t>(out.count()));
    EXPECT_EQ(stream.bytes_done(), stream.position().offset);
  }
  out.peak = stream.peak_buffer_bytes();
  return out;
}

struct Source {
  std::string path;  // a file, or empty: `text` through an istream
  std::string text;
  InputFormat format;
  const Vocab *vocab = nullptr;
  Sweep sweep = Sweep::SouthEast;
};

InputStream open(const Source &source, size_t block) {
  InputStream stream = source.path.empty()
                           ? InputStream(std::make_unique<std::istringstream>(source.text),
                                         source.format == InputFormat::Dags ? "in.json" : "in.txt",
                                         source.format, source.vocab, source.sweep)
                           : InputStream(source.path, source.format, source.vocab, source.sweep);
  if (block > 0) stream.set_block_size(block);
  return stream;
}

Inputs read_chunked(const Source &source, size_t block, size_t max_step = 5) {
  try {
    InputStream stream = open(source, block);
    return drain(stream, max_step);
  } catch (const UserError &e) {
    Inputs out;
    out.error = e.what();
    return out;
  }
}

// The whole-file read of the reader functions, as Inputs.
Inputs read_whole(const std::function<void(Inputs &)> &read) {
  Inputs out;
  out.error = user_error_or_empty([&] { read(out); });
  return out;
}

// 1. Reading one input at a time reads what the whole read reads, or all inputs before its error
// and that error; 2. so does every block size and chunk size; 3. seeking to each recorded position
// (in a fresh stream, and back in the same stream) reads the rest, error included.
void check_stream(const Source &source, const Inputs &whole) {
  const Inputs reference = read_chunked(source, 0, 1);
  ASSERT_EQ(reference.error, whole.error);
  if (whole.error.empty()) {
    ASSERT_TRUE(same_inputs(whole, reference));
  }
  for (size_t block : kBlocks) {
    SCOPED_TRACE("block " + std::to_string(block));
    const size_t step = block == 3 ? 7 : 5;
    Inputs chunked = read_chunked(source, block, step);
    ASSERT_TRUE(same_inputs(reference, chunked, 0, step));
    if (chunked.positions.empty()) continue;
    InputStream again = open(source, block);
    const size_t stride = std::max<size_t>(1, chunked.positions.size() / 3);
    for (size_t p = chunked.positions.size(); p-- > 0;) {
      if (p % stride != 0 && p + 1 != chunked.positions.size()) continue;
      SCOPED_TRACE("from position " + std::to_string(p));
      InputStream fresh = open(source, block);
      fresh.seek(chunked.positions[p]);
      ASSERT_TRUE(same_inputs(reference, drain(fresh, 3), chunked.counts[p], 3));
      again.seek(chunked.positions[p]);
      ASSERT_TRUE(same_inputs(reference, drain(again, 4), chunked.counts[p], 4));
    }
  }
}

// --- Trees -------------------------------------------------------------------------------------------

TEST(InputStream, SstTreesInAnyChunksAreTheWholeRead) {
  const Vocab vocab = Vocab::load(sst_file("vocab.txt"));
  const std::string path = sst_file("test.txt");
  const std::string text = testing::read_bytes(path);
  Inputs whole = read_whole([&](Inputs &out) { out.trees = read_ptb_trees(path, &vocab); });
  ASSERT_EQ(whole.error, "");
  // Independent of the reader: one tree per line, one node per '('.
  EXPECT_EQ(whole.trees.size(), static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
  int64_t nodes = 0;
  for (const Tree &t : whole.trees) nodes += t.size();
  EXPECT_EQ(nodes, std::count(text.begin(), text.end(), '('));
  check_stream(Source{path, "", InputFormat::Trees, &vocab}, whole);
}

// A file of `lines` copies of `line` with `bad` as line `bad_line` (from 1; 0: none).
std::string lines_with(const std::string &line, int lines, int bad_line = 0, const std::string &bad = "") {
  std::string text;
  for (int i = 1; i <= lines; ++i) text += (i == bad_line ? bad : line) + "\n";
  return text;
}

TEST(InputStream, TreeErrorsDeepInTheFileNameTheirLineWhateverTheChunks) {
  testing::TempDir dir;
  struct Case {
    std::string bad;
    std::string message;
  };
  // The good lines hold a multi-byte label, so columns count characters, not bytes.
  const std::string good = "(1 (\xc3\xa9 5) (3 7))";
  // The invalid byte's offset in the file: 1233 good lines, then its place in the bad line.
  const std::string bad_utf8 = "(1 (\xc3\xa9 5) (3 \xff))";
  const size_t offset = 1233 * (good.size() + 1) + bad_utf8.find('\xff');
  const std::vector<Case> cases = {
      {"(1 (\xc3\xa9 5) (3 x))", "t.txt:1234:13: token 'x' is not an integer id"},
      {"(1 (\xc3\xa9 5) (3 7)",
       "t.txt:1234:15: missing ')': expected ')' to close the node opened at column 1"},
      {"(1 (\xc3\xa9 5) (3 7))\r", "t.txt:1234:16: carriage return (CR) in the line"},
      {"", "t.txt:1234: empty line; expected one tree per line"},
      {bad_utf8,
       "t.txt:1234:13: invalid UTF-8: byte 0xFF at byte offset " + std::to_string(offset) + " of the file"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    const std::string text = lines_with(good, 1300, 1234, c.bad);
    const std::string path = dir.file("t.txt");
    testing::write_bytes(path, text);
    Inputs whole = read_whole([&](Inputs &out) { out.trees = read_ptb_trees(path, nullptr); });
    EXPECT_THAT(whole.error, StartsWith(dir.file(c.message)));
    check_stream(Source{path, "", InputFormat::Trees}, whole);
  }
}

TEST(InputStream, LineFileEndsAsTheWholeReaderSays) {
  // A single final newline is optional; a second one is an empty line; no input at all is an error.
  auto trees = [](const std::string &text) {
    Inputs whole = read_whole([&](Inputs &out) { out.trees = read_ptb_tree_text(text, nullptr, "in.txt"); });
    check_stream(Source{"", text, InputFormat::Trees}, whole);
    return whole;
  };
  EXPECT_EQ(trees("(1 2)").trees.size(), 1u);
  EXPECT_EQ(trees("(1 2)\n(1 3)\n").trees.size(), 2u);
  EXPECT_THAT(trees("(1 2)\n\n").error, StartsWith("in.txt:2: empty line"));
  EXPECT_THAT(trees("\n").error, StartsWith("in.txt:1: empty line"));
  EXPECT_THAT(trees("").error, StartsWith("in.txt: the file is empty; expected one tree per line"));
  EXPECT_THAT(trees("(1 2)\n \n").error,
              StartsWith("in.txt:2:2: expected '(' to start a tree, found end of line"));
}

TEST(InputStream, OneVeryLongLine) {
  // A chain 200,000 levels deep on one line (about 1.4 MB), between two short lines.
  const int depth = 200'000;
  std::string chain;
  for (int i = 0; i < depth; ++i) chain += "(1 ";
  chain += "(2 9)" + std::string(depth, ')');
  const std::string text = "(1 4)\n" + chain + "\n(1 5)\n";
  Inputs whole = read_whole([&](Inputs &out) { out.trees = read_ptb_tree_text(text, nullptr, "in.txt"); });
  ASSERT_EQ(whole.trees.size(), 3u);
  EXPECT_EQ(whole.trees[1].size(), depth + 1);
  for (size_t block : {size_t(1000), size_t(65536)}) {
    Inputs chunked = read_chunked(Source{"", text, InputFormat::Trees}, block);
    EXPECT_TRUE(same_inputs(whole, chunked));
    // The long line and one block, never the file twice over.
    EXPECT_LE(chunked.peak, chain.size() + 1 + block);
    EXPECT_GE(chunked.peak, chain.size());
  }
}

// --- Grids and sequences ---------------------------------------------------------------------------

TEST(InputStream, GridsAndSequencesInAnyChunksAreTheWholeRead) {
  // Grids of 1x1 to 3x4 cells with known tokens; each must come out as grid_dag of its tokens.
  std::string grids;
  std::vector<Dag> expected;
  for (int g = 0; g < 600; ++g) {
    int rows = 1 + g % 3, cols = 1 + g % 4;
    std::vector<int32_t> tokens;
    grids += std::to_string(rows) + "  " + std::to_string(cols);
    for (int c = 0; c < rows * cols; ++c) {
      tokens.push_back((g * 13 + c) % 101);
      grids.append(" ").append(std::to_string(tokens.back()));
    }
    grids += g % 5 == 0 ? "   \n" : "\n";
    expected.push_back(grid_dag(rows, cols, tokens, Sweep::NorthWest));
  }
  Inputs whole =
      read_whole([&](Inputs &out) { out.dags = read_grid_text(grids, Sweep::NorthWest, "in.txt"); });
  ASSERT_EQ(whole.dags.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_TRUE(same_dag(whole.dags[i], expected[i])) << i;
  check_stream(Source{"", grids, InputFormat::Grids, nullptr, Sweep::NorthWest}, whole);

  std::string sequences;
  std::vector<std::vector<int32_t>> expected_sequences;
  for (int s = 0; s < 700; ++s) {
    expected_sequences.emplace_back();
    for (int t = 0; t <= s % 9; ++t) {
      expected_sequences.back().push_back(s * 31 + t);
      sequences.append(t == 0 ? "" : " ").append(std::to_string(s * 31 + t));
    }
    sequences += "\n";
  }
  sequences.pop_back();  // no final newline
  whole = read_whole([&](Inputs &out) { out.sequences = read_sequence_text(sequences, nullptr, "in.txt"); });
  EXPECT_EQ(whole.sequences, expected_sequences);
  check_stream(Source{"", sequences, InputFormat::Sequences}, whole);
}

TEST(InputStream, GridAndSequenceErrorsDeepInTheFile) {
  std::string grids = lines_with("2 2 1 2 3 4", 2500, 2001, "2 2 1 2 3 -4");
  Inputs whole =
      read_whole([&](Inputs &out) { out.dags = read_grid_text(grids, Sweep::SouthEast, "in.txt"); });
  EXPECT_THAT(whole.error, StartsWith("in.txt:2001:11: grid token '-4' is not an integer id"));
  check_stream(Source{"", grids, InputFormat::Grids}, whole);

  std::string sequences = lines_with("4 5 6", 2000, 1501, "4 5\t6");
  whole = read_whole([&](Inputs &out) { out.sequences = read_sequence_text(sequences, nullptr, "in.txt"); });
  EXPECT_THAT(whole.error, StartsWith("in.txt:1501:4: unexpected control character 0x09"));
  check_stream(Source{"", sequences, InputFormat::Sequences}, whole);

  // With a vocabulary, an unknown word; the file read from disk.
  testing::TempDir dir;
  const Vocab vocab = Vocab::load(sst_file("vocab.txt"));
  const std::string path = dir.file("s.txt");
  testing::write_bytes(path, lines_with("the movie was good", 1200, 1100, "the movie was good\r"));
  whole = read_whole([&](Inputs &out) { out.sequences = read_sequences(path, &vocab); });
  EXPECT_THAT(whole.error,
              StartsWith(path + ":1100:19: carriage return (CR) in the line; sequence files must use LF"));
  check_stream(Source{path, "", InputFormat::Sequences, &vocab}, whole);
}

// --- DAGs ------------------------------------------------------------------------------------------

// DAG d: 1 + d % 5 nodes, node i's token (7d + i) % 50, slots [i - 1, null] or [i - 1].
Dag expected_dag(int d) {
  Dag dag;
  dag.pred_begin.push_back(0);
  for (int i = 0; i < 1 + d % 5; ++i) {
    dag.token.push_back((7 * d + i) % 50);
    if (i > 0) dag.preds.push_back(i - 1);
    if (i > 0 && i % 2 == 1) dag.preds.push_back(Dag::kEmptySlot);
    dag.pred_begin.push_back(static_cast<int32_t>(dag.preds.size()));
  }
  return dag;
}

// The JSON of expected_dag(d), laid out three ways (one pretty-printed over lines, one compact, one
// whose key is spelled with an escape, which the extent scan must step over).
std::string dag_json(int d) {
  const Dag dag = expected_dag(d);
  const char *sep = d % 3 == 0 ? ",\n    " : ",";
  std::string text = d % 4 == 1 ? "{\"n\\u006fdes\": [" : "{\"nodes\": [";
  for (int32_t i = 0; i < dag.size(); ++i) {
    text += (i ? sep : "") + std::string("{\"token\": ") + std::to_string(dag.token[i]);
    if (i > 0) {
      text += ", \"preds\": [";
      for (int32_t s = dag.pred_begin[i]; s < dag.pred_begin[i + 1]; ++s) {
        int32_t p = dag.preds[s];
        text += (s > dag.pred_begin[i] ? ", " : "") + (p < 0 ? std::string("null") : std::to_string(p));
      }
      text += "]";
    }
    text += "}";
  }
  return text + "]}";
}

// A list of `count` DAGs; DAG `bad` (from 1) is `bad_text` instead.
std::string dag_list(int count, int bad = 0, const std::string &bad_text = "") {
  std::string text = "[\n";
  for (int d = 0; d < count; ++d) {
    text += d + 1 == bad ? bad_text : dag_json(d);
    text += d + 1 < count ? (d % 2 ? ",\n" : " , ") : "\n";
  }
  return text + "]\n";
}

TEST(InputStream, DagListsAndSingleDagsInAnyChunksAreTheWholeRead) {
  const std::string list = dag_list(400);
  Inputs whole = read_whole([&](Inputs &out) { out.dags = read_dag_text(list, "in.json"); });
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(whole.dags.size(), 400u);
  for (int d = 0; d < 400; ++d) ASSERT_TRUE(same_dag(whole.dags[d], expected_dag(d))) << d;
  check_stream(Source{"", list, InputFormat::Dags}, whole);

  for (int d : {3, 4, 5}) {
    const std::string single = "\n  " + dag_json(d) + " \n";
    whole = read_whole([&](Inputs &out) { out.dags = read_dag_text(single, "in.json"); });
    ASSERT_EQ(whole.dags.size(), 1u);
    EXPECT_TRUE(same_dag(whole.dags[0], expected_dag(d)));
    check_stream(Source{"", single, InputFormat::Dags}, whole);
  }
}

TEST(InputStream, DagErrorsDeepInTheFileNameTheDagAndPlace) {
  // A list that begins "[\n" and puts DAG d on line 2 + (lines before it): the error's line is found
  // by counting newlines in the text before it, independently of the reader.
  struct Case {
    std::string bad;
    size_t column_in_bad;  // the error's column within `bad` (its first line), from 1
    std::string message;   // after "in.json:LINE:COL: "
  };
  const std::vector<Case> cases = {
      {"{\"nodes\": [{\"token\": 1} {\"token\": 2}]}", 25,
       "DAG 301: not valid JSON: syntax error while parsing array - unexpected '{'; expected ']'"},
      {"{\"nodes\": [{\"token\": 1, \"\xc3\xa9\": nul}]}", 33, "DAG 301: not valid JSON: syntax error"},
      {"{\"nodes\": [{\"token\": 1}]} {\"nodes\": []}", 27,
       "not valid JSON: expected ',' or ']' after DAG 301 in the list, found '{'"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    const std::string text = dag_list(500, 301, c.bad);
    const size_t at = text.find(c.bad);
    const int64_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
    const int64_t column =
        static_cast<int64_t>(at - text.rfind('\n', at)) - 1 + static_cast<int64_t>(c.column_in_bad);
    Inputs whole = read_whole([&](Inputs &out) { out.dags = read_dag_text(text, "in.json"); });
    EXPECT_EQ(whole.dags.size(), 0u);
    EXPECT_THAT(whole.error, StartsWith("in.json:" + std::to_string(line) + ":" + std::to_string(column) +
                                        ": " + c.message));
    check_stream(Source{"", text, InputFormat::Dags}, whole);
  }
  // Strings holding brackets and quotes do not end an element early: the error is the token's.
  const std::string text = dag_list(20, 7, "{\"nodes\": [{\"token\": \"]}\\\"[{\"}]}");
  Inputs whole = read_whole([&](Inputs &out) { out.dags = read_dag_text(text, "in.json"); });
  EXPECT_THAT(whole.error,
              HasSubstr("in.json: DAG 7, node 0: 'token' must be an integer in [0, 2147483647], found "
                        "\"]}\\\"[{\""));
  check_stream(Source{"", text, InputFormat::Dags}, whole);
}

TEST(InputStream, OneLineDagListKeepsItsColumnsAfterASeek) {
  // 3000 DAGs on one line: after a seek the stream starts mid-line and must count the column back
  // from the line's start.
  std::string text = "[";
  for (int d = 0; d < 3000; ++d)
    text += (d ? ", " : "") + (d == 2500 ? std::string("{\"nodes\": [x]}") : "{\"nodes\": []}");
  text += "]";
  const int64_t column = static_cast<int64_t>(text.find('x')) + 1;
  const std::string message =
      "in.json:1:" + std::to_string(column) + ": DAG 2501: not valid JSON: syntax error while parsing value";
  Inputs whole = read_whole([&](Inputs &out) { out.dags = read_dag_text(text, "in.json"); });
  EXPECT_THAT(whole.error, StartsWith(message));
  check_stream(Source{"", text, InputFormat::Dags}, whole);
}

// --- Positions, progress, bounded memory, failures -----------------------------------------------

TEST(InputStream, ProgressAndPositionsRunFromStartToEnd) {
  testing::TempDir dir;
  const std::string path = dir.file("s.txt");
  testing::write_bytes(path, lines_with("1 2 3", 100));
  InputStream stream(path, InputFormat::Sequences);
  EXPECT_EQ(stream.position(), (StreamPosition{0, 0, 1}));
  EXPECT_EQ(stream.bytes_total(), 600u);
  EXPECT_FALSE(stream.done());
  EXPECT_EQ(stream.next(30).count(), 30u);
  EXPECT_EQ(stream.position(), (StreamPosition{30, 180, 31}));
  EXPECT_EQ(stream.bytes_done(), 180u);
  EXPECT_EQ(stream.next(1000).count(), 70u);
  EXPECT_TRUE(stream.done());
  EXPECT_EQ(stream.position(), (StreamPosition{100, 600, 101}));
  EXPECT_TRUE(stream.next(5).empty());
  EXPECT_EQ(stream.format(), InputFormat::Sequences);
  EXPECT_EQ(stream.name(), path);
  EXPECT_STREQ(plural_noun(InputFormat::Dags), "DAGs");
}

TEST(InputStream, HoldsOneBlockAndOneInputNeverTheFile) {
  // About 1 MB of trees read with 4 KiB blocks: the buffer stays near one block.
  const std::string line = "(1 (2 (3 4) (3 5)) (2 6))";
  const std::string text = lines_with(line, 40'000);
  InputStream stream(std::make_unique<std::istringstream>(text), "in.txt", InputFormat::Trees);
  stream.set_block_size(4096);
  size_t trees = 0;
  for (InputChunk chunk = stream.next(1000); !chunk.empty(); chunk = stream.next(1000))
    trees += chunk.count();
  EXPECT_EQ(trees, 40'000u);
  EXPECT_LE(stream.peak_buffer_bytes(), 4096 + line.size() + 1);
  EXPECT_EQ(stream.bytes_done(), text.size());

  const std::string list = dag_list(10'000);
  InputStream dags(std::make_unique<std::istringstream>(list), "in.json", InputFormat::Dags);
  dags.set_block_size(4096);
  size_t count = 0;
  for (InputChunk chunk = dags.next(100); !chunk.empty(); chunk = dags.next(100)) count += chunk.count();
  EXPECT_EQ(count, 10'000u);
  EXPECT_LE(dags.peak_buffer_bytes(), 4096 + 400u);
  EXPECT_EQ(dags.bytes_done(), list.size());
}

TEST(InputStream, AnErrorStaysUntilASeek) {
  const std::string text = lines_with("(1 2)", 10, 6, "(1 x)");
  InputStream stream(std::make_unique<std::istringstream>(text), "in.txt", InputFormat::Trees);
  EXPECT_EQ(stream.next(3).count(), 3u);
  const StreamPosition before = stream.position();
  const std::string first = user_error_of([&] { stream.next(5); });
  EXPECT_THAT(first, StartsWith("in.txt:6:4: token 'x' is not an integer id"));
  // The inputs of the failed call are not counted, and asking again gives the same error.
  EXPECT_EQ(stream.position(), before);
  EXPECT_EQ(user_error_of([&] { stream.next(1); }), first);
  stream.seek(before);
  EXPECT_EQ(stream.next(2).count(), 2u);
  EXPECT_EQ(user_error_of([&] { stream.next(1); }), first);
}

TEST(InputStream, FilesThatCannotBeReadOrSought) {
  testing::TempDir dir;
  EXPECT_THAT(user_error_of([&] { InputStream(dir.file("none.txt"), InputFormat::Grids); }),
              StartsWith("cannot read grid file '" + dir.file("none.txt") + "': No such file or directory"));
  EXPECT_THAT(user_error_of([&] { InputStream(dir.file(""), InputFormat::Trees); }),
              HasSubstr("cannot read tree file '" + dir.file("") + "': it is a directory"));

  // A stream that cannot seek is read to its end all the same, without a size.
  struct OneWay : std::streambuf {
    explicit OneWay(std::string text) : text_(std::move(text)) {
      setg(text_.data(), text_.data(), text_.data() + text_.size());
    }
    std::string text_;
  };
  OneWay *buffer = new OneWay("1 2\n3\n");
  struct Owning : std::istream {
    explicit Owning(std::streambuf *b) : std::istream(b), owned(b) {}
    std::unique_ptr<std::streambuf> owned;
  };
  InputStream stream(std::make_unique<Owning>(buffer), "pipe", InputFormat::Sequences);
  EXPECT_EQ(stream.bytes_total(), 0u);
  EXPECT_EQ(stream.next(10).sequences, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
  EXPECT_THAT(user_error_of([&] {
                stream.seek(StreamPosition{1, 4, 2});
              }),
              StartsWith("cannot seek in sequence file 'pipe': it is not a regular file"));
}

}  // namespace
}  // namespace grove
