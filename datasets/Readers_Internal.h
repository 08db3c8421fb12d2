#pragma once
// What InputStream.cpp needs of the readers (PTBReader.cpp, DagReader.cpp): the parsers of one input
// each. Line parsers take the line without its newline, its 1-based number and the byte offset of
// its first byte in the file, and make every check of that line (UTF-8 with file byte offsets,
// blank lines, syntax), throwing UserError at `file:line:col`.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/Dag.h"
#include "datasets/DagReader.h"
#include "datasets/Tree.h"
#include "datasets/Vocab.h"

namespace grove {

// The example line the empty-file and empty-line messages of grid and sequence files show.
inline constexpr char kGridExample[] = "2 3 5 1 4 1 0 2";
inline const char *sequence_example(const Vocab *vocab) { return vocab ? "the movie was good" : "12 7 9 3"; }

Tree parse_ptb_line(std::string_view line, const Vocab *vocab, const std::string &file, int64_t line_number,
                    uint64_t offset);
Dag parse_grid_line(std::string_view line, Sweep sweep, const std::string &file, int64_t line_number,
                    uint64_t offset);
std::vector<int32_t> parse_sequence_line(std::string_view line, const Vocab *vocab, const std::string &file,
                                         int64_t line_number, uint64_t offset);

// Reads one parsed DAG object; `number` is its place in the file, from 1.
Dag read_dag(const nlohmann::json &object, const std::string &file, int64_t number);

// How a JSON value reads in a message: scalars as written (long ones cut short), containers by kind.
std::string describe_json(const nlohmann::json &value);

}  // namespace grove
