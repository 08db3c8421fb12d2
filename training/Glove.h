#pragma once
// Pretrained word vectors in GloVe's text format (https://nlp.stanford.edu/projects/glove/): one
// word per line, then its D components, separated by single ASCII spaces, LF line endings:
//   the 0.418 0.24968 -0.41242 ...
// The last D fields are the vector and everything before them the word, so a word may hold spaces
// (glove.840B has a few such lines). A line that does not end in D finite numbers after a word is a
// UserError at `file:line`. Words not in the vocabulary are skipped; a repeated word keeps its first
// vector.

#include <cstdint>
#include <string>
#include <string_view>

#include "datasets/Vocab.h"
#include "support/Tensor.h"

namespace grove::training {

struct GloveStats {
  int64_t lines = 0;  // vectors read
  int64_t found = 0;  // rows of the table that got a vector
};

// Fills `table` ([vocab.size() or more, D]): the rows of vocabulary words with a vector in the file
// get it, every other row uniform in [−0.05, 0.05] from a hash of (seed, row, component) — the
// recipe's initialization of missing words. `file` names the file in messages.
GloveStats load_glove(const std::string &path, const Vocab &vocab, uint64_t seed, Tensor &table);
GloveStats parse_glove(std::string_view text, const std::string &file, const Vocab &vocab, uint64_t seed,
                       Tensor &table);

}  // namespace grove::training
