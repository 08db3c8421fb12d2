#pragma once
// The inputs of `grove run`, `bench` and `tune`: exactly one of a tree file, a DAG file, a grid file
// or a sequence file (with an optional vocabulary), read into what CompiledModel runs.

#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/Dag.h"
#include "datasets/DagReader.h"
#include "datasets/InputStream.h"
#include "datasets/Tree.h"

namespace grove::tool {

struct InputFiles {
  std::string trees, dags, grids, sequences, vocab;
  std::string sweep = "se";  // grids: the DAG-RNN sweep direction, se|sw|ne|nw
};

struct Inputs {
  std::string path;  // the input file
  std::string what;  // "trees", "DAGs", "grids", "sequences"
  std::vector<Tree> trees;
  std::vector<Dag> dags;  // DAGs or grids
  std::vector<std::vector<int32_t>> sequences;
  size_t count() const;
  // The first `limit` inputs only (limit > 0).
  void keep_first(int64_t limit);
};

// The one input file given and its format.
struct InputFile {
  std::string path;
  InputFormat format = InputFormat::Trees;
};

// The one input file given: checks the options go together (exactly one input; --sweep only with
// grids; --vocab only with trees and sequences) without reading anything; `command` names the
// subcommand in messages.
InputFile check_input_files(const InputFiles &files, const std::string &command);

// Checks the options (as above) and reads the input. A UserError names a malformed file.
Inputs read_inputs(const InputFiles &files, const std::string &command);

// "se", "sw", "ne", "nw" (check_input_files has checked it).
Sweep parse_sweep(const std::string &text);

// Runs `model` over the inputs: output rows in input order (roots, sinks or last states).
Tensor run_inputs(const cpu::CompiledModel &model, const Inputs &inputs, cpu::RunOptions options,
                  cpu::RunStats *stats = nullptr);

}  // namespace grove::tool
