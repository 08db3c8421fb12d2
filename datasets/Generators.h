#pragma once
// Synthetic input trees, for tests and benchmarks. Every generator is deterministic: the shape and
// the tokens come from a std::mt19937_64 seeded with `seed`. Leaf tokens are uniform in
// [0, vocab_size); internal nodes have token -1. Every tree comes out in post-order (children
// before parents, root last), numbered like the PTB reader's. Bad arguments throw UserError.

#include <cstdint>

#include "datasets/Tree.h"

namespace grove {

// A binary tree of a random shape with `num_leaves` leaves: start from the leaves in a row and
// repeatedly merge two random adjacent subtrees under a new node.
Tree random_binary_tree(uint64_t seed, int32_t num_leaves, int32_t vocab_size);

// The full binary tree of the given height (0: a single leaf; h: 2^h leaves). Height <= 30.
Tree perfect_binary_tree(int32_t height, int32_t vocab_size, uint64_t seed = 0);

// A caterpillar: leaf 0 and leaf 1 under the first internal node, then every further internal
// node holds (the previous subtree, a new leaf). 2 * num_leaves - 1 nodes.
Tree binary_chain(int32_t num_leaves, int32_t vocab_size, uint64_t seed = 0);

// One leaf under num_nodes - 1 internal nodes of one child each (a model of any arity takes it).
Tree unary_chain(int32_t num_nodes, int32_t vocab_size, uint64_t seed = 0);

// A random tree of exactly `num_nodes` nodes whose internal nodes have 1..max_children children:
// node k > 0 hangs under a uniformly chosen earlier node that has fewer than max_children children.
Tree random_tree(uint64_t seed, int32_t num_nodes, int32_t max_children, int32_t vocab_size);

}  // namespace grove
