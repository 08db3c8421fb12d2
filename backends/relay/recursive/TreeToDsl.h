#pragma once
// Internal to RecursiveFunctions: a recursive Relay function over a binary or a rose tree as a grove
// model's syntax tree (frontend/dsl/AST.h), located at the Relay expressions it comes from.

#include <string>
#include <vector>

#include "backends/relay/recursive/Recognition.h"
#include "frontend/dsl/AST.h"
#include "frontend/relay/IR.h"

namespace grove::relay::tree_to_dsl {

// Why a function does not qualify (one sentence, without the function's name), and where: the
// Relay expression the translation was at (undefined: the function itself).
struct Reject {
  std::string why;
  Span span = {};
};

struct Translation {
  dsl::ModelAst model;               // the model (docs/DSL.md), unchecked
  std::vector<std::string> weights;  // the model's param name of each non-tree parameter, in order
  std::vector<Shape> state_shapes;   // the Relay shape of each result tensor
  bool tuple_result = false;
};

// Translates the typed global `name`, recognised as the tree function `form` (conditions (a) and (b)
// of RecursiveFunctions.h), checking (c)-(e) on its clauses. `weight_shapes` gives the non-tree
// parameters' shapes in order (null: their types' shapes, `?` allowed, and the model is then only a
// sketch). Throws Reject.
Translation translate(const Module &m, const std::string &name, const RecursiveForm &form,
                      const std::vector<Shape> *weight_shapes);

}  // namespace grove::relay::tree_to_dsl
