#pragma once
// Internal to RecursiveFunctions: a recursive Relay function over a binary or a rose tree as grove
// model text.

#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay::tree_to_dsl {

// Why a function does not qualify (one sentence, without the function's name).
struct Reject {
  std::string why;
};

struct Translation {
  int tree_param = -1;
  int leaf_tag = -1;                 // binary: the leaf constructor's tag (the other one is the node's)
  bool rose = false;                 // a rose tree (`structure tree`): a node whose list is empty is a leaf
  int list_cons_tag = -1;            // rose: the children list's Cons tag (the other one is Nil's)
  std::string text;                  // the model (docs/DSL.md)
  std::vector<std::string> weights;  // the model's param name of each non-tree parameter, in order
  std::vector<Shape> state_shapes;   // the Relay shape of each result tensor
  bool tuple_result = false;
};

// Checks conditions (a)-(e) of RecursiveFunctions.h on the typed global `name` and translates it.
// `weight_shapes` gives the non-tree parameters' shapes in order (null: their types' shapes, `?`
// allowed, and the text is then only a sketch). Throws Reject.
Translation translate(const Module &m, const std::string &name, const std::vector<Shape> *weight_shapes);

}  // namespace grove::relay::tree_to_dsl
