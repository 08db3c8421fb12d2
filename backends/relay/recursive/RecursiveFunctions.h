#pragma once
// Recursive Relay functions over trees, compiled by grove's recursive compiler (issue 10, item 3).
//
// A global qualifies when all of these hold (recognize_recursive, Recognition.h, checks them on a
// typed module and says which one fails, and where):
//   (a) exactly one parameter has type `T[int32]` where T is a tree ADT with one type parameter A:
//       binary — two constructors, a leaf one with one field of type A (`Leaf(A)`) and a node one
//       with two fields of type T[A] (`Node(Tree[A], Tree[A])`); or rose — one constructor with
//       fields (A, L[T[A]]) (`Rose(A, List[Rose[A]])`) for a list ADT L (constructors of fields
//       (B, L[B]) and none). A must be int32 (token ids). Every other parameter is a float32 tensor
//       of rank 1 or 2 (the weights). The function is not polymorphic.
//   (b) binary: the body is a `match` on that parameter with exactly one leaf clause and one node
//       clause (constructor patterns whose fields are variables or `_`). Rose: a `match` of exactly
//       two clauses, first the leaf clause `Rose(%w, Nil)` (or `Rose(_, Nil)`), then the node
//       clause `Rose(_, %kids)` (or `Rose(%x, %kids)` with %x unused: internal nodes have no token);
//       the other order is rejected, since `Rose(_, %kids)` first would match leaves too.
//   (c) binary: the node clause calls the function itself exactly once per child, with the child as
//       the tree argument and every other argument its own parameter in the same position
//       (loop-invariant weights); no other global, closure or constructor is called, and the child
//       trees are used only as those arguments. Rose: the node clause maps the function over %kids
//       exactly once, `@map(fn (%k) { @f(%k, weights...) }, %kids)` (the closure's body is that call
//       itself, the weights passed through as above), and the mapped list is used only as the list
//       of folds `@foldl(fn (%acc, %c) { add(%acc, E) }, init, list)` (or add(E, %acc)), where E is
//       an expression of (e) in %c's fields, the weights and the clause's own vectors, %acc is used
//       nowhere else, and init is a vector of the clause or zeros (`zeros(shape=[N] or [1, N])`, or
//       `multiply(x, 0f)`). @map and @foldl are recognised by their definitions (the standard map
//       and left fold over L), not their names; no other global, closure or constructor is called.
//       In E, an nn.dense operand that depends on %c is a field of %c, or slices and concatenations
//       of fields (the model language's index-expression rule inside `sum(k in children)`).
//       In both, the leaf clause does not call the function.
//   (d) the result is a float32 tensor [H] or [1, H], or a tuple of such tensors (the node's states).
//   (e) the clause bodies are lets, graph bindings, tuples, projections, rank-0 float constants and
//       calls of: nn.dense (a vector by a rank-2 weight), add, subtract, multiply, divide,
//       nn.bias_add, sigmoid, tanh, exp, nn.relu, negative, split and concatenate along the vector's
//       axis, take(weight, token, axis=0) of the leaf's token, expand_dims(axis=0), reshape and
//       squeeze between [N] and [1, N]; every tensor is a vector ([N] or [1, N]) except the
//       weights, elementwise operands have equal lengths (or one is a constant); no effects.
//
// A global that takes a list of tensors instead (and no tree) qualifies as a *fold over a sequence*
// when the conditions of SequenceToDsl.h hold: `@f(%xs, %state, weights...)` matching %xs with
// `Cons(%x, %rest) => ... @f(%rest, new_state, weights...)` and `Nil => %state`, every step's
// operators those of (e) acting row by row ([D] or [R, D] steps, R sequences side by side). It is
// translated to a `structure sequence` model and run by CompiledSequenceFunction
// (SequenceFunctions.h) for a zero initial state; the VM runs other calls itself.
//
// Translation: the function becomes a grove model (docs/DSL.md; its syntax tree is built directly and
// lowered by the model language's front end; `structure binary_tree` or, for rose trees, `structure
// tree`) with the weights as params (their actual shapes), one state per
// result tensor, and the leaf and node clauses as the leaf and internal cases; a child's result
// field k reads `statek[left|right]`; a fold is `init + sum(g_k in children) E` with %c's field k
// read as `statek[g_k]` (the zero init dropped). With several states, one more state concatenates
// them all and is the model's output.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/relay/recursive/Recognition.h"
#include "frontend/dsl/AST.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"
#include "ilir/IR.h"

namespace grove::relay {

// The form of global `name` of the typed module `m`: a UserError when there is no such function,
// or when it does not qualify (cannot_compile_recursively).
RecursiveForm recursive_form_or_throw(const Module &m, const std::string &name);

// The UserError for a global that does not qualify: where and why, and its name.
[[noreturn]] void cannot_compile_recursively(const std::string &name, const RecursiveRejection &why);

// The tensors of a call's weight arguments (a UserError naming @name and the weight when one is not a
// tensor), and the same as float32 grove weights by model name (`names`, in the same order).
std::vector<NDArray> weight_arrays(const std::string &name, const std::vector<Value> &weights);
Weights grove_weights(const std::vector<std::string> &names, const std::vector<NDArray> &arrays);

// There are as many weights as the form has weight parameters; a UserError naming @name otherwise.
void check_weights_count(const std::string &name, const RecursiveForm &form,
                         const std::vector<NDArray> &weights);

// Each weight fits its parameter's type (dtype, rank, known dimensions): `weights` are the arguments
// of the form's weight parameters of `fn`, in order. A UserError naming @name and the parameter
// otherwise, or when their count is not the form's.
void check_weights_fit(const Function &fn, const std::string &name, const RecursiveForm &form,
                       const std::vector<NDArray> &weights);

// One line per global: `@f: compiled by grove's recursive compiler (...)` or `@f: not compiled
// recursively: <reason> (<where>)`.
std::string explain_recursive_functions(const Module &m, const RecursiveForms &forms);
std::string explain_recursive_functions(const Module &m);

// The grove model (its syntax tree, unchecked) of global `name` of the form `form`, with the weight
// shapes of `weights` (the arguments other than the tree, in parameter order). A UserError when a
// weight does not fit its parameter or the translation rejects the shapes.
dsl::ModelAst recursive_function_model(const Module &m, const std::string &name, const RecursiveForm &form,
                                       const std::vector<NDArray> &weights);
// The same recognised first, printed as model text (frontend/dsl/Printer.h).
std::string recursive_function_model_text(const Module &m, const std::string &name,
                                          const std::vector<NDArray> &weights);

// A translated model of global `name` of `m` (a tree function's or a fold's) checked and lowered by
// the model language's front end; its messages point into the Relay program.
ilir::Program lower_translated_model(const Module &m, const std::string &name, dsl::ModelAst model);

// A qualifying global compiled by grove for fixed weights, run over batches of Relay trees.
class CompiledRecursiveFunction {
 public:
  // Translates `@name` (see above), compiles it with the weights `weights` (the arguments other than
  // the tree, in parameter order). UserError when it does not qualify or the weights do not fit.
  static CompiledRecursiveFunction compile(const Module &m, const std::string &name,
                                           const std::vector<Value> &weights,
                                           const cpu::CompileOptions &options = {});
  // The same for a global already recognised as `form`.
  static CompiledRecursiveFunction compile(const Module &m, const std::string &name,
                                           const RecursiveForm &form, const std::vector<Value> &weights,
                                           const cpu::CompileOptions &options = {});

  // The function's result for each tree (Tree[int32] or Rose[int32] values; a Rose node whose list
  // is empty is a leaf, any other is internal, its token ignored), shaped as its result type.
  // Converts iteratively: trees 100,000 nodes deep or wide are fine.
  std::vector<Value> run(const std::vector<Value> &trees) const;
  // `@map` of the function over a List of trees (Cons/Nil values) in one batched run: the List of
  // the results, in order. `cons` and `nil` are the List's constructors (Module::find_constructor).
  // Walks the list iteratively, so a 100,000-tree list is fine.
  Value run_list(const Value &trees, const Expr &cons, const Expr &nil) const;

  // The model it was compiled from, printed (frontend/dsl/Printer.h): for people, never parsed.
  const std::string &model_text() const { return model_text_; }
  const ilir::Program &program() const { return program_; }

 private:
  // How tree values are read: binary (leaf constructor's tag) or rose (its children list's Cons tag).
  struct TreeForm {
    bool rose = false;
    int leaf_tag = -1;
    int list_cons_tag = -1;
  };
  CompiledRecursiveFunction(std::string text, ilir::Program program, cpu::CompiledModel model,
                            std::vector<Shape> state_shapes, bool tuple_result, TreeForm form);
  std::string model_text_;
  ilir::Program program_;
  std::shared_ptr<cpu::CompiledModel> model_;
  std::vector<Shape> state_shapes_;  // the Relay shape of each result tensor
  bool tuple_result_;
  TreeForm form_;
};

}  // namespace grove::relay
