#pragma once
// Recognition of the recursive Relay functions grove's recursive compiler takes (the conditions are
// in RecursiveFunctions.h and SequenceToDsl.h): a global is a *recursive form* — a function over a
// binary or a rose tree, or a fold over a list of tensors, with its parameters' roles and its two
// clauses — or a rejection that says why not and where. Recognition reads the typed module only;
// the weights' shapes come later, at emission (TreeToDsl, SequenceToDsl), which takes the form.
//
// Every consumer (the VM compiler, the grove code generator, `grove relay opt --explain` and
// `grove relay dump`) asks a RecursiveForms built once for its module, rather than working the
// roles out again.

#include <optional>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

enum class RecursionKind { BinaryTree, RoseTree, SequenceFold };

struct RecursiveForm {
  RecursionKind kind = RecursionKind::BinaryTree;
  int tree_param = -1;             // the Tree[int32] or Rose[int32] parameter; a fold: its list
  int state_param = -1;            // a fold: its state; -1 for a tree function
  std::vector<int> weight_params;  // every other parameter, in order: the weights passed through
  Expr match;                      // the body: a Match on the tree (or list) parameter
  int leaf_clause = -1;            // a tree: the leaf clause; a fold: the Nil clause (indices of match)
  int node_clause = -1;            // a tree: the node clause; a fold: the Cons clause
  int leaf_tag = -1;               // a tree: the leaf constructor's tag (a rose tree: Rose's)
  int list_cons_tag = -1;          // a rose tree: its children list's Cons tag; a fold: the list's

  bool sequence() const { return kind == RecursionKind::SequenceFold; }
  bool rose() const { return kind == RecursionKind::RoseTree; }
  const Clause &leaf() const { return match.as<Match>()->clauses[leaf_clause]; }
  const Clause &node() const { return match.as<Match>()->clauses[node_clause]; }
};

// Why a global is not a recursive form: one sentence without the function's name, and the Relay
// location of what fails (the function's own when nothing narrower is known).
struct RecursiveRejection {
  std::string reason;
  Span span;
};

struct Recognition {
  std::string name;  // the global, without `@`
  std::optional<RecursiveForm> form;
  RecursiveRejection rejection;  // when there is no form
  bool qualifies() const { return form.has_value(); }
};

// Whether the global function `global` of the typed module `m` (which must exist) is a recursive
// form, and which.
Recognition recognize_recursive(const Module &m, const std::string &global);

// The recognition of every global function of a typed module, in definition order, computed once.
class RecursiveForms {
 public:
  explicit RecursiveForms(const Module &m);
  const std::vector<Recognition> &all() const { return all_; }
  // The recognition of global `name`, or null when the module has no such function.
  const Recognition *find(const std::string &name) const;
  // Its form when it qualifies, else null.
  const RecursiveForm *form(const std::string &name) const;

 private:
  std::vector<Recognition> all_;
};

}  // namespace grove::relay
