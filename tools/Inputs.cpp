#include "tools/Inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "datasets/DagReader.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "support/Error.h"
#include "tools/Messages.h"

namespace grove::tool {

namespace msg = tool_messages;

Sweep parse_sweep(const std::string &text) {
  if (text == "sw") return Sweep::SouthWest;
  if (text == "ne") return Sweep::NorthEast;
  if (text == "nw") return Sweep::NorthWest;
  return Sweep::SouthEast;
}

size_t Inputs::count() const { return trees.size() + dags.size() + sequences.size(); }

void Inputs::keep_first(int64_t limit) {
  if (limit <= 0) return;
  auto cut = [&](auto &v) {
    if (int64_t(v.size()) > limit) v.resize(size_t(limit));
  };
  cut(trees);
  cut(dags);
  cut(sequences);
}

InputFile check_input_files(const InputFiles &f, const std::string &command) {
  struct Given {
    const std::string &path;
    InputFormat format;
    const char *option;
  };
  std::vector<Given> given;
  for (Given g : {Given{f.trees, InputFormat::Trees, "--trees"}, Given{f.dags, InputFormat::Dags, "--dags"},
                  Given{f.grids, InputFormat::Grids, "--grids"},
                  Given{f.sequences, InputFormat::Sequences, "--sequences"}})
    if (!g.path.empty()) given.push_back(g);
  if (given.empty()) user_error(msg::kInputCount, command, "none was given");
  if (given.size() > 1) {
    std::vector<std::string> names;
    for (const Given &g : given) names.push_back(g.option);
    user_error(msg::kInputCount, command, fmt::format("got {}", fmt::join(names, " and ")));
  }
  if (f.sweep != "se" && f.sweep != "sw" && f.sweep != "ne" && f.sweep != "nw")
    user_error(msg::kBadSweep, f.sweep);
  if (f.sweep != "se" && f.grids.empty()) user_error(msg::kSweepWithoutGrids);
  if (!f.vocab.empty() && f.trees.empty() && f.sequences.empty()) user_error(msg::kVocabWithoutText);
  return {given[0].path, given[0].format};
}

Inputs read_inputs(const InputFiles &f, const std::string &command) {
  Inputs in;
  InputFile file = check_input_files(f, command);
  in.path = file.path;
  in.what = plural_noun(file.format);
  std::optional<Vocab> vocab;
  if (!f.vocab.empty()) vocab = Vocab::load(f.vocab);
  if (!f.trees.empty()) {
    in.trees = read_ptb_trees(f.trees, vocab ? &*vocab : nullptr);
  } else if (!f.dags.empty()) {
    in.dags = read_dags(f.dags);
  } else if (!f.grids.empty()) {
    in.dags = read_grids(f.grids, parse_sweep(f.sweep));
  } else {
    in.sequences = read_sequences(f.sequences, vocab ? &*vocab : nullptr);
  }
  if (in.count() == 0) user_error(msg::kNoInputs, in.path, in.what);
  return in;
}

Tensor run_inputs(const cpu::CompiledModel &model, const Inputs &in, cpu::RunOptions options,
                  cpu::RunStats *stats) {
  if (!in.trees.empty()) return model.run(in.trees, options, stats);
  if (!in.dags.empty()) {
    options.noun = in.what == "grids" ? "grid" : "DAG";
    return model.run_dags(in.dags, options, stats);
  }
  return model.run_sequences(in.sequences, options, stats);
}

}  // namespace grove::tool
