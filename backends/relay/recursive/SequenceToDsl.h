#pragma once
// Internal to RecursiveFunctions: a Relay fold over a list of tensors (a sequence model such as the
// LSTM of models/relay/lstm.relay) as a grove model's syntax tree, `structure sequence`.
//
// The function `@f(%xs: L[Tensor[S]], %state, weights...)` matches on %xs with a Cons clause
// `Cons(%x, %rest) => ... @f(%rest, new_state, weights...)` (the call is the clause's value, every
// weight passed through in its own position) and a Nil clause that returns the state parameter as it
// is. Each list element is one step, S = [R, D] (R rows, each its own sequence: every operator of the
// step acts row by row) or [D]. The step becomes the model's node case: %x reads `<p>x[token]`, a
// table holding every step's rows (the token of row r at step t is t·R + r), the state's tensors are
// states read as `<p>sK[prev]`, and the new state's tensors are assigned to them. grove's sequence
// models start from zeros, so the compiled model computes the fold only for a zero initial state
// (RecursiveFunctions checks it per call).

#include <cstdint>
#include <string>
#include <vector>

#include "backends/relay/recursive/TreeToDsl.h"
#include "frontend/relay/IR.h"

namespace grove::relay::tree_to_dsl {

struct SequenceTranslation {
  dsl::ModelAst model;                 // the model (docs/DSL.md), unchecked
  std::string table;                   // the param that holds the steps' rows, [rows, D]
  std::vector<std::string> weights;    // the model's param name of each weight, in parameter order
  std::vector<int64_t> state_lengths;  // the last dimension of each of the state's tensors
  bool tuple_state = false;            // the state is a tuple (else one tensor)
};

// Whether `t` is a list of tensors L[Tensor[...]] (then the translation, not a tree one, applies).
bool is_tensor_list(const Module &m, const Type &t);

// Translates the typed global `name`, recognised as the fold `form` (its list, state and weights, its
// Cons and Nil clauses), checking the step's operators. `weight_shapes` gives the weights' shapes in
// parameter order and `element_length` the steps' D (null and kAnyDim: the types' own, `?` allowed,
// and the model is then only a sketch). Throws Reject.
SequenceTranslation translate_sequence(const Module &m, const std::string &name, const RecursiveForm &form,
                                       const std::vector<Shape> *weight_shapes, int64_t element_length);

}  // namespace grove::relay::tree_to_dsl
