#pragma once
// Reads trees in the PTB bracket format of the Stanford Sentiment Treebank, one tree per line:
// `(3 (2 It) (4 (2 's) (4 good)))`. Every node is `(label token)` or `(label child...)`; labels
// (any non-empty atom) are ignored, but by the labelled readers at the end. Atoms are split on ASCII
// space and parentheses only, so a token may hold other white space such as U+00A0. Tokens are
// looked up in `vocab`; with no vocabulary they must be integer ids in [0, 2^31). Output trees are
// in post-order (children before parents, root last). Malformed input throws UserError at
// `file:line:col`. The parser keeps its own stack, so a line may nest a million levels deep.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/Tree.h"
#include "datasets/Vocab.h"

namespace grove {

// Reads every line of the file at `path`; the file must hold at least one tree, and a single final
// newline is optional.
std::vector<Tree> read_ptb_trees(const std::string &path, const Vocab *vocab);

// The same on the text of a file; `file` only names it in messages.
std::vector<Tree> read_ptb_tree_text(std::string_view text, const Vocab *vocab, const std::string &file);

// Parses one line (without its newline); `file` and `line_number` only place messages.
Tree parse_ptb_tree(std::string_view line, const Vocab *vocab, const std::string &file, int64_t line_number);

// Labelled trees (the Stanford Sentiment Treebank labels every node): the same syntax, where every
// label must be an integer class in [0, classes), else a UserError at the label's `file:line:col`.
// labels[i] is the class of node i in the tree's own numbering (post-order, as above).
struct LabelledTree {
  Tree tree;
  std::vector<int32_t> labels;  // per node
};
// A file of them: trees[t] with labels[t] (trees apart, so that a batch of them is a span of Trees).
struct LabelledTrees {
  std::vector<Tree> trees;
  std::vector<std::vector<int32_t>> labels;
  int64_t size() const { return static_cast<int64_t>(trees.size()); }
};

LabelledTrees read_labelled_ptb_trees(const std::string &path, const Vocab *vocab, int32_t classes);
LabelledTrees read_labelled_ptb_tree_text(std::string_view text, const Vocab *vocab, int32_t classes,
                                          const std::string &file);
LabelledTree parse_labelled_ptb_tree(std::string_view line, const Vocab *vocab, int32_t classes,
                                     const std::string &file, int64_t line_number);

}  // namespace grove
