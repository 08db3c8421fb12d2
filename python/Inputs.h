#pragma once
// Converting Python arguments of the grove module into grove's inputs: weights (a dict of arrays),
// sizes, vocabularies given as a dict, and batches of trees, DAGs and sequences. Called with the GIL
// held. A value of the wrong Python type throws pybind11::type_error; a wrong value of the right type
// throws grove::UserError (grove.GroveError). Messages: python/Messages.h.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/Dag.h"
#include "datasets/Tree.h"
#include "datasets/Vocab.h"
#include "support/Tensor.h"

namespace grove::python {

// A vocabulary from a file, or from a dict token -> id: the dict's tokens become a Vocab in dict
// order and `ids` maps a Vocab id (the token's position) back to the dict's id.
struct InputVocab {
  std::shared_ptr<const Vocab> vocab;
  std::vector<int32_t> ids;  // empty: the Vocab's ids are the ids
};

// None -> nullptr; a path (str or os.PathLike) -> Vocab::load; a dict -> as above.
std::shared_ptr<const InputVocab> to_vocab(pybind11::handle vocab);

// A dict name -> array-like: every value converted (cast) to a C-ordered float32 tensor.
Weights to_weights(pybind11::handle weights);

// A str "H=256,D=256" or a dict name -> int; None -> empty.
std::map<std::string, int64_t> to_sizes(pybind11::handle sizes);

// A list of trees, each a PTB string (tokens looked up in `vocab`, or integer ids without one), a
// nested tuple (leaf: an int token id; internal node: a tuple of its children, in order) or a
// (parent, tokens) pair of integer arrays (parent[i] = -1 for the root; a node's children are in
// increasing id order; tokens[i] = -1 for an internal node).
std::vector<Tree> to_trees(pybind11::handle trees, const InputVocab *vocab);

// One batch of trees as flat arrays: parent and tokens over all nodes, parent ids global, and
// node_begin (trees + 1 offsets) saying where each tree's nodes start.
std::vector<Tree> to_trees(pybind11::handle parent, pybind11::handle tokens, pybind11::handle node_begin);

// A list of sequences, each a 1-D integer array or a list of ints.
std::vector<std::vector<int32_t>> to_sequences(pybind11::handle sequences);

// A list of DAGs, each a (preds, tokens) pair: preds [nodes, slots] (-1: an empty slot), tokens [nodes].
std::vector<Dag> to_dags(pybind11::handle dags);

// "dict", "float", "numpy.ndarray": a Python value's type, as messages name it.
std::string type_name(pybind11::handle value);

}  // namespace grove::python
