#pragma once
// grove's input trees (datasets/Tree.h, e.g. from read_ptb_trees) as Relay values: a parameter of type
// List[Tree[int32]] (binary: `type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]) }`) or
// List[Rose[int32]] (any arity: `type Rose[A] { Rose(A, List[Rose[A]]) }`). A leaf holds its token
// id; a Rose internal node holds token -1 (grove's Tree convention: no token), its children in order.

#include <string>
#include <vector>

#include "datasets/Tree.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

// Whether `type` names a list of trees: List[Tree[int32]] or List[Rose[int32]] (by the ADTs' names;
// trees_to_value checks their constructors). Used to pick the parameter trees bind to.
bool is_tree_list_type(const Type &type);

// The trees, in order, as a value of `param_type` (List[Tree[int32]] or List[Rose[int32]]), built
// bottom-up without recursion. Checks the module's List and Tree/Rose ADTs have the expected
// constructors and, for Tree, that every internal node has 2 children; each is a UserError saying
// what was expected. Trees must be in post-order (children before parents, as read_ptb_trees gives
// them). Messages place tree i at `source`:i+1 (one tree per line, as read_ptb_trees reads them).
Value trees_to_value(const Module &module, const Type &param_type, const std::vector<Tree> &trees,
                     const std::string &source = "trees");

}  // namespace grove::relay
