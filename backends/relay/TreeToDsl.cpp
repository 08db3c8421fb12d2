#include "backends/relay/TreeToDsl.h"

#include <fmt/format.h>

#include <tuple>

#include "backends/relay/CaseWriter.h"
#include "backends/relay/TreeAdts.h"

namespace grove::relay::tree_to_dsl {
namespace {

using namespace detail;

// A rose tree's match: exactly the leaf clause `Rose(%w, Nil)` (or `Rose(_, Nil)`), then the node
// clause `Rose(_, %kids)` (or `Rose(%x, %kids)`, %x unused). The other order would send leaves to the
// node clause, which matches every tree.
std::pair<const Clause *, const Clause *> rose_clauses(const Match &match, const RoseAdt &rose) {
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
    if (c.lhs->kind != PatternKind::Constructor) reject("a clause of its match is not a constructor pattern");
  if (match.clauses.size() != 2)
    reject(
        "its match on a rose tree does not have exactly two clauses: Rose(%w, Nil) for a leaf, then "
        "Rose(_, %kids) for a node");
  const Clause &first = match.clauses[0], &second = match.clauses[1];
  if (is_node(first.lhs))
    reject(
        "its first clause, Rose(_, %kids), matches every tree, leaves too; the leaf clause Rose(%w, Nil) "
        "must come first");
  if (!is_leaf(first.lhs)) reject("its first clause is not the leaf clause Rose(%w, Nil)");
  if (!is_node(second.lhs))
    reject("its second clause is not the node clause Rose(_, %kids), with the children bound to a variable");
  return {&first, &second};
}

}  // namespace

// 1. (a) Find the tree parameter, binary or rose; every other one is a float32 weight of rank 1 or 2
//    (its model name: its own when that is a model-language name, else a generated one). 2. (b) The
//    body is a match on the tree with a leaf and a node clause (for a rose tree, in that order).
// 3. Translate the leaf clause (its result fixes the states' shapes), then the node clause, which
//    must call the function once per child, or map it once over the children (c).
// 4. Write the model: params, states, the two cases, and the output (with several result tensors,
//    one state holding them all, or — lengths not known — one per tensor and their concatenation).
Translation translate(const Module &m, const std::string &name, const std::vector<Shape> *weight_shapes) {
  Function_ f = function_to_translate(m, name);
  Translation out;
  const auto &params = f.fn->params;
  const TypeData *tree_adt = nullptr;
  RoseAdt rose;
  for (size_t i = 0; i < params.size(); ++i) {
    const TypeData *td = binary_tree_adt(m, type_of(params[i]));
    RoseAdt r = td ? RoseAdt{} : rose_tree_adt(m, type_of(params[i]));
    if (!td && !r.rose) continue;
    if (tree_adt) reject("it has two tree parameters");
    tree_adt = td ? td : r.rose;
    rose = r;
    f.tree_param = static_cast<int>(i);
  }
  if (!tree_adt)
    reject(
        "it has no parameter of a tree type: a binary tree T[A] (an ADT with constructors of fields (A) and "
        "(T[A], T[A])) or a rose tree T[A] (one constructor of fields (A, L[T[A]]) for a list ADT L)");
  out.rose = rose.rose != nullptr;
  out.list_cons_tag = rose.cons_tag;
  const Type &elem = type_of(params[f.tree_param]).as<TypeCall>()->args[0];
  const auto *elem_t = elem.as<TensorType>();
  if (!elem_t || !elem_t->shape.empty() || elem_t->dtype != DType::Int32)
    reject(fmt::format("its tree holds {}, not int32 token ids", to_string(elem)));

  f.prefix = fresh_prefix(params);
  out.tree_param = f.tree_param;
  std::string decls = declare_weights(f, {f.tree_param}, weight_shapes, "the tree", out.weights);

  const auto *match = f.fn->body.as<Match>();
  if (!match || !match->data.same_as(params[f.tree_param]))
    reject(fmt::format("its body is not a match on its tree parameter {}", var_name(params[f.tree_param])));
  const Clause *leaf = nullptr, *node = nullptr;
  if (out.rose) {
    std::tie(leaf, node) = rose_clauses(*match, rose);
    out.leaf_tag = leaf->lhs->constructor.as<Constructor>()->tag;
  }
  for (const Clause &c : match->clauses) {
    if (out.rose) break;
    if (c.lhs->kind != PatternKind::Constructor) reject("a clause of its match is not a constructor pattern");
    const auto *k = c.lhs->constructor.as<Constructor>();
    bool is_leaf = k->inputs.size() == 1;
    const Clause *&slot = is_leaf ? leaf : node;
    if (slot) reject(fmt::format("its match has two clauses for {}", k->name));
    slot = &c;
    if (is_leaf) out.leaf_tag = k->tag;
  }
  if (!leaf || !node) reject("its match lacks a leaf clause or a node clause");

  std::vector<Expr> lv = out.rose ? std::vector<Expr>{leaf->lhs->patterns[0]->var} : field_vars(leaf->lhs);
  std::vector<Expr> nv = field_vars(node->lhs);
  CaseWriter lw(f, true, lv[0], Expr(), Expr());
  Val lr = lw.run(leaf->rhs);
  std::vector<Val> results = result_fields(lr);
  f.tuple_result = out.tuple_result = lr.kind == Val::Kind::Tuple;
  if (results.empty()) reject("its result is an empty tuple");
  std::string leaf_body = lw.body();
  std::vector<int64_t> lengths;
  for (const Val &r : results) {
    if (r.kind != Val::Kind::Vector || r.text.empty())
      reject("its result is not a tensor [H] or [1, H] or a tuple of such tensors");
    f.state_shapes.push_back(r.shape);
    lengths.push_back(length(r.shape));
  }
  out.state_shapes = f.state_shapes;
  // Several fields of known lengths: one state holding them all (the children read slices of it).
  const ResultStates states = declare_result_states(f.prefix, lengths, /*pack=*/true);
  f.packed_offsets = states.offsets;

  CaseWriter nw(f, false, Expr(), out.rose ? Expr() : nv[0], out.rose ? Expr() : nv[1]);
  if (out.rose) nw.set_rose_node(nv[1], nv[0]);
  Val nr = nw.run(node->rhs);
  if (out.rose && !nw.mapped())
    reject(
        fmt::format("the node clause does not map the function over its children (@map(fn (%k) {{ @{}(%k, "
                    "weights...) }}, "
                    "{}))",
                    name, var_name(nv[1])));
  if (!out.rose && (!nw.called(true) || !nw.called(false)))
    reject("the node clause does not call the function on both children");
  std::vector<Val> nresults = result_fields(nr);
  for (size_t k = 0; k < nresults.size(); ++k) {
    if (nresults[k].kind != Val::Kind::Vector || nresults[k].text.empty() ||
        nresults.size() != results.size())
      reject("its result is not a tensor [H] or [1, H] or a tuple of such tensors");
    int64_t a = length(results[k].shape), b = length(nresults[k].shape);
    if (known(a) && known(b) && a != b)
      reject(fmt::format("result field {} has {} elements at a leaf and {} at a node", k, a, b));
  }
  out.text = fmt::format("# @{} of a Relay module, translated by grove.\nmodel {}\nstructure {}\n\n{}\n{}",
                         name, model_name(name), out.rose ? "tree" : "binary_tree", decls, states.decls) +
             "\nleaf {\n" + leaf_body + states.assign(results) + "}\n\ninternal {\n" + nw.body() +
             states.assign(nresults) + "}\n\noutput " + states.output + "\n";
  return out;
}

}  // namespace grove::relay::tree_to_dsl