#pragma once
// Readers of the non-tree input structures (docs/MODELS.md, "Input structures"):
//   * DAGs: JSON, `{"nodes": [{"token": 3, "preds": [0, 1]}, ...]}` per DAG, or a JSON list of such
//     objects. `preds` lists the node's ordered predecessor slots; `null` is an empty slot, and a
//     missing `preds` is no slot at all. Tokens are integer ids.
//   * Grids: one per line, `R C` then R*C integer tokens in row-major order. Each grid becomes the
//     DAG of one sweep direction over its cells (cells numbered row-major in every sweep).
//   * Sequences: one per line, tokens separated by ASCII spaces, looked up like tree tokens.
// The readers check syntax and report `file` (and line:col for line files; for JSON, line:col of a
// syntax error and the DAG and node numbers); whether a DAG is acyclic, its indices in range and its tokens
// below the vocabulary size is the inspector's to check. Nothing recurses on the C stack per node.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/Dag.h"
#include "datasets/Vocab.h"

namespace grove {

std::vector<Dag> read_dags(const std::string &path);
// The same on the text of a file; `file` only names it in messages.
std::vector<Dag> read_dag_text(std::string_view text, const std::string &file);

// The direction a DAG-RNN sweeps a grid, named by the corner it runs towards: `SouthEast` starts at
// the top-left cell, each cell's slot p0 is the cell above and slot p1 the cell to its left (docs/MODELS.md);
// `SouthWest`: above and right; `NorthEast`: below and left; `NorthWest`: below and right. A slot
// outside the grid is empty.
enum class Sweep { SouthEast, SouthWest, NorthEast, NorthWest };

// "se", "sw", "ne", "nw".
const char *to_string(Sweep sweep);

// The DAG of `sweep` over a rows x cols grid of `tokens` (row-major; rows * cols of them).
Dag grid_dag(int32_t rows, int32_t cols, const std::vector<int32_t> &tokens, Sweep sweep);

std::vector<Dag> read_grids(const std::string &path, Sweep sweep);
std::vector<Dag> read_grid_text(std::string_view text, Sweep sweep, const std::string &file);

// Each line's token ids, in order. Without a vocabulary, tokens must be integer ids.
std::vector<std::vector<int32_t>> read_sequences(const std::string &path, const Vocab *vocab);
std::vector<std::vector<int32_t>> read_sequence_text(std::string_view text, const Vocab *vocab,
                                                     const std::string &file);

}  // namespace grove
