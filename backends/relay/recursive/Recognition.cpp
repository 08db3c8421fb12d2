#include "backends/relay/recursive/Recognition.h"

#include <fmt/format.h>

#include <algorithm>

#include "backends/relay/recursive/SequenceToDsl.h"
#include "backends/relay/recursive/TreeAdts.h"
#include "backends/relay/recursive/TreeToDsl.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

using tree_to_dsl::Reject;

[[noreturn]] void reject(std::string why, const Span &at) { throw Reject{std::move(why), at}; }

std::string var_name(const Expr &v) { return "%" + v.as<Var>()->name_hint; }

const Type &type_of(const Expr &v) {
  if (v->checked_type.defined()) return v->checked_type;
  return v.as<Var>()->type_annotation;
}

// Where `fn`'s body is: a variable's span is its declaration's, so the function's own instead.
const Span &body_span(const Function &fn) { return fn.body.as<Var>() ? fn.span : fn.body->span; }

// The float32 tensor type of rank 1 or 2 that `t` is, or null.
const TensorType *vector_type(const Type &t) {
  const auto *tt = t.as<TensorType>();
  return tt && tt->dtype == DType::Float32 && (tt->shape.size() == 1 || tt->shape.size() == 2) ? tt : nullptr;
}

// Whether `fn` takes a list of tensors and no tree: then it is recognised as a fold.
bool takes_a_sequence(const Module &m, const Function &fn) {
  bool list = false;
  for (const Expr &p : fn.params) {
    const Type &t = type_of(p);
    if (tree_to_dsl::binary_tree_adt(m, t) || tree_to_dsl::rose_tree_adt(m, t).rose) return false;
    list = list || tree_to_dsl::is_tensor_list(m, t);
  }
  return list;
}

// Every parameter not in `skip` is a weight, a float32 tensor of rank 1 or 2 (else a rejection
// saying it takes only such weights `besides`); their indices in order.
std::vector<int> weight_params(const Function &fn, const std::vector<int> &skip, const std::string &besides) {
  std::vector<int> out;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), static_cast<int>(i)) != skip.end()) continue;
    const auto *t = type_of(fn.params[i]).as<TensorType>();
    if (!t || t->dtype != DType::Float32 || t->shape.empty() || t->shape.size() > 2)
      reject(fmt::format(
                 "its parameter {} has type {}; besides {}, only float32 weights of rank 1 or 2 are taken",
                 var_name(fn.params[i]), to_string(type_of(fn.params[i])), besides),
             fn.params[i]->span);
    out.push_back(static_cast<int>(i));
  }
  return out;
}

// A rose tree's match: exactly the leaf clause `Rose(%w, Nil)` (or `Rose(_, Nil)`), then the node
// clause `Rose(_, %kids)` (or `Rose(%x, %kids)`, %x unused). The other order would send leaves to the
// node clause, which matches every tree.
void rose_clauses(const Match &match, const tree_to_dsl::RoseAdt &rose, const Span &at) {
  auto bound = [](const Pattern &p) {
    return p->kind == PatternKind::Var || p->kind == PatternKind::Wildcard;
  };
  auto is_leaf = [&](const Pattern &p) {
    const Pattern &kids = p->patterns[1];
    return p->kind == PatternKind::Constructor && bound(p->patterns[0]) &&
           kids->kind == PatternKind::Constructor && kids->constructor.as<Constructor>()->tag == rose.nil_tag;
  };
  auto is_node = [&](const Pattern &p) {
    return p->kind == PatternKind::Constructor && bound(p->patterns[0]) &&
           p->patterns[1]->kind == PatternKind::Var;
  };
  for (const Clause &c : match.clauses)
    if (c.lhs->kind != PatternKind::Constructor)
      reject("a clause of its match is not a constructor pattern", c.lhs->span);
  if (match.clauses.size() != 2)
    reject(
        "its match on a rose tree does not have exactly two clauses: Rose(%w, Nil) for a leaf, then "
        "Rose(_, %kids) for a node",
        at);
  const Clause &first = match.clauses[0], &second = match.clauses[1];
  if (is_node(first.lhs))
    reject(
        "its first clause, Rose(_, %kids), matches every tree, leaves too; the leaf clause Rose(%w, Nil) "
        "must come first",
        first.lhs->span);
  if (!is_leaf(first.lhs)) reject("its first clause is not the leaf clause Rose(%w, Nil)", first.lhs->span);
  if (!is_node(second.lhs))
    reject("its second clause is not the node clause Rose(_, %kids), with the children bound to a variable",
           second.lhs->span);
}

// Conditions (a) and (b) of RecursiveFunctions.h: 1. exactly one tree parameter, binary or rose, of
// int32 tokens; every other one a weight. 2. The body is a match on it with a leaf and a node clause
// (a rose tree's in that order).
RecursiveForm tree_form(const Module &m, const Function &fn) {
  RecursiveForm form;
  const auto &params = fn.params;
  const TypeData *tree_adt = nullptr;
  tree_to_dsl::RoseAdt rose;
  for (size_t i = 0; i < params.size(); ++i) {
    const TypeData *td = tree_to_dsl::binary_tree_adt(m, type_of(params[i]));
    tree_to_dsl::RoseAdt r = td ? tree_to_dsl::RoseAdt{} : tree_to_dsl::rose_tree_adt(m, type_of(params[i]));
    if (!td && !r.rose) continue;
    if (tree_adt) reject("it has two tree parameters", params[i]->span);
    tree_adt = td ? td : r.rose;
    rose = r;
    form.tree_param = static_cast<int>(i);
  }
  if (!tree_adt)
    reject(
        "it has no parameter of a tree type: a binary tree T[A] (an ADT with constructors of fields (A) and "
        "(T[A], T[A])) or a rose tree T[A] (one constructor of fields (A, L[T[A]]) for a list ADT L)",
        fn.span);
  const Expr &tree = params[form.tree_param];
  form.kind = rose.rose ? RecursionKind::RoseTree : RecursionKind::BinaryTree;
  form.list_cons_tag = rose.cons_tag;
  const Type &elem = type_of(tree).as<TypeCall>()->args[0];
  const auto *elem_t = elem.as<TensorType>();
  if (!elem_t || !elem_t->shape.empty() || elem_t->dtype != DType::Int32)
    reject(fmt::format("its tree holds {}, not int32 token ids", to_string(elem)), tree->span);
  form.weight_params = weight_params(fn, {form.tree_param}, "the tree");

  const auto *match = fn.body.as<Match>();
  if (!match || !match->data.same_as(tree))
    reject(fmt::format("its body is not a match on its tree parameter {}", var_name(tree)), body_span(fn));
  form.match = fn.body;
  if (form.rose()) {
    rose_clauses(*match, rose, match->span);
    form.leaf_clause = 0;
    form.node_clause = 1;
    form.leaf_tag = match->clauses[0].lhs->constructor.as<Constructor>()->tag;
    return form;
  }
  for (size_t i = 0; i < match->clauses.size(); ++i) {
    const Pattern &lhs = match->clauses[i].lhs;
    if (lhs->kind != PatternKind::Constructor)
      reject("a clause of its match is not a constructor pattern", lhs->span);
    const auto *k = lhs->constructor.as<Constructor>();
    const bool is_leaf = k->inputs.size() == 1;
    int &slot = is_leaf ? form.leaf_clause : form.node_clause;
    if (slot >= 0) reject(fmt::format("its match has two clauses for {}", k->name), lhs->span);
    slot = static_cast<int>(i);
    if (is_leaf) form.leaf_tag = k->tag;
  }
  if (form.leaf_clause < 0 || form.node_clause < 0)
    reject("its match lacks a leaf clause or a node clause", match->span);
  return form;
}

// The conditions of SequenceToDsl.h on the parameters and the match: 1. exactly one list parameter,
// its elements float32 tensors [D] or [R, D]. 2. The body is a match on it with a Cons and a Nil
// clause; the Nil clause returns a parameter, the state: a tensor of the elements' rank (and rows),
// or a tuple of such. 3. Every other parameter is a weight.
RecursiveForm fold_form(const Module &m, const Function &fn) {
  RecursiveForm form;
  form.kind = RecursionKind::SequenceFold;
  const auto &params = fn.params;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!tree_to_dsl::is_tensor_list(m, type_of(params[i]))) continue;
    if (form.tree_param >= 0) reject("it has two list parameters", params[i]->span);
    form.tree_param = static_cast<int>(i);
  }
  if (form.tree_param < 0) reject("it has no parameter of a list type L[Tensor[...]]", fn.span);
  const Expr &list = params[form.tree_param];
  const Type &list_type = type_of(list);
  const TensorType *elem = vector_type(list_type.as<TypeCall>()->args[0]);
  if (!elem)
    reject(fmt::format("its list holds {}, not float32 tensors [D] or [R, D] (one step each)",
                       to_string(list_type.as<TypeCall>()->args[0])),
           list->span);
  const int rank = static_cast<int>(elem->shape.size());
  const int64_t rows = rank == 2 ? elem->shape[0] : 1;
  form.list_cons_tag = tree_to_dsl::list_adt(m, list_type).cons_tag;

  const auto *match = fn.body.as<Match>();
  if (!match || !match->data.same_as(list))
    reject(fmt::format("its body is not a match on its list parameter {}", var_name(list)), body_span(fn));
  form.match = fn.body;
  for (size_t i = 0; i < match->clauses.size(); ++i) {
    const Pattern &lhs = match->clauses[i].lhs;
    if (lhs->kind != PatternKind::Constructor)
      reject("a clause of its match is not a constructor pattern", lhs->span);
    int &slot =
        lhs->constructor.as<Constructor>()->tag == form.list_cons_tag ? form.node_clause : form.leaf_clause;
    if (slot >= 0) reject("its match has two clauses for one constructor", lhs->span);
    slot = static_cast<int>(i);
  }
  if (form.node_clause < 0 || form.leaf_clause < 0)
    reject("its match lacks a Cons clause or a Nil clause", match->span);
  const Expr &nil = form.leaf().rhs;
  for (size_t i = 0; i < params.size(); ++i)
    if (nil.same_as(params[i]) && static_cast<int>(i) != form.tree_param)
      form.state_param = static_cast<int>(i);
  if (form.state_param < 0)
    reject("its Nil clause does not return one of its parameters (the state) as it is", nil->span);
  const Expr &state = params[form.state_param];
  const Type &state_type = type_of(state);
  std::vector<const TensorType *> state_types;
  if (const auto *tuple = state_type.as<TupleType>()) {
    for (const Type &t : tuple->fields) state_types.push_back(vector_type(t));
  } else {
    state_types.push_back(vector_type(state_type));
  }
  for (const TensorType *t : state_types) {
    if (!t || static_cast<int>(t->shape.size()) != rank)
      reject(fmt::format("its state {} has type {}; a state is a float32 tensor of the steps' rank ({}), or "
                         "a tuple of such",
                         var_name(state), to_string(state_type), rank),
             state->span);
    if (rank == 2 && known(rows) && known(t->shape[0]) && t->shape[0] != rows)
      reject(fmt::format("its state has {} rows but each step {}", t->shape[0], rows), state->span);
  }
  if (state_types.empty()) reject("its state is an empty tuple", state->span);
  form.weight_params = weight_params(fn, {form.tree_param, form.state_param}, "the list and the state");
  return form;
}

}  // namespace

// 1. A polymorphic function is not taken. 2. A function that takes a list of tensors and no tree is a
// fold, any other a tree function: its parameters and its match (tree_form, fold_form). 3. The
// clauses' bodies — conditions (c)-(e), which name operators, closures and calls — are checked by
// emitting the model for the types' own shapes (`?` allowed), whose text is discarded.
Recognition recognize_recursive(const Module &m, const std::string &global) {
  const Expr *fe = m.find_function(global);
  GROVE_CHECK(fe && fe->as<Function>(), "no global function @{}", global);
  const Function &fn = *fe->as<Function>();
  Recognition r;
  r.name = global;
  try {
    if (!fn.type_params.empty()) reject("it is polymorphic", fn.span);
    RecursiveForm form = takes_a_sequence(m, fn) ? fold_form(m, fn) : tree_form(m, fn);
    if (form.sequence())
      tree_to_dsl::translate_sequence(m, global, form, nullptr, kAnyDim);
    else
      tree_to_dsl::translate(m, global, form, nullptr);
    r.form = std::move(form);
  } catch (const Reject &rejected) {
    r.rejection = {rejected.why, rejected.span.defined() ? rejected.span : fn.span};
  }
  return r;
}

RecursiveForms::RecursiveForms(const Module &m) {
  for (const auto &[name, fn] : m.functions()) all_.push_back(recognize_recursive(m, name));
}

const Recognition *RecursiveForms::find(const std::string &name) const {
  for (const Recognition &r : all_)
    if (r.name == name) return &r;
  return nullptr;
}

const RecursiveForm *RecursiveForms::form(const std::string &name) const {
  const Recognition *r = find(name);
  return r && r->form ? &*r->form : nullptr;
}

}  // namespace grove::relay
