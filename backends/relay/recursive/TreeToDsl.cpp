#include "backends/relay/recursive/TreeToDsl.h"

#include <fmt/format.h>

#include "backends/relay/recursive/CaseWriter.h"

namespace grove::relay::tree_to_dsl {

using namespace detail;

// 1. Name the weights (their own names when those are model-language names, else generated ones).
// 2. Translate the leaf clause (its result fixes the states' shapes), then the node clause, which
//    must call the function once per child, or map it once over the children (c).
// 3. Write the model: params, states, the two cases, and the output (with several result tensors,
//    one state holding them all, or — lengths not known — one per tensor and their concatenation).
Translation translate(const Module &m, const std::string &name, const RecursiveForm &form,
                      const std::vector<Shape> *weight_shapes) {
  Function_ f = function_to_translate(m, name);
  Translation out;
  const bool rose = form.rose();
  f.tree_param = form.tree_param;
  f.prefix = fresh_prefix(f.fn->params);
  std::vector<dsl::TensorDeclAst> params = declare_weights(f, {f.tree_param}, weight_shapes, out.weights);
  const Clause *leaf = &form.leaf(), *node = &form.node();

  std::vector<Expr> lv = rose ? std::vector<Expr>{leaf->lhs->patterns[0]->var} : field_vars(leaf->lhs);
  std::vector<Expr> nv = field_vars(node->lhs);
  CaseWriter lw(f, true, lv[0], Expr(), Expr());
  Val lr = lw.run(leaf->rhs);
  std::vector<Val> results = result_fields(lr);
  f.tuple_result = out.tuple_result = lr.kind == Val::Kind::Tuple;
  if (results.empty()) reject_at("its result is an empty tuple", leaf->rhs->span);
  std::vector<dsl::StatementAst> leaf_body = lw.take_body();
  std::vector<int64_t> lengths;
  for (const Val &r : results) {
    if (r.kind != Val::Kind::Vector || !r.ast)
      reject_at("its result is not a tensor [H] or [1, H] or a tuple of such tensors", leaf->rhs->span);
    f.state_shapes.push_back(r.shape);
    lengths.push_back(length(r.shape));
  }
  out.state_shapes = f.state_shapes;
  // Several fields of known lengths: one state holding them all (the children read slices of it).
  const Loc at = loc_of(f.fn->span);
  ResultStates states = declare_result_states(f.prefix, lengths, /*pack=*/true, at);
  f.packed_offsets = states.offsets;

  CaseWriter nw(f, false, Expr(), rose ? Expr() : nv[0], rose ? Expr() : nv[1]);
  if (rose) nw.set_rose_node(nv[1], nv[0]);
  Val nr = nw.run(node->rhs);
  if (rose && !nw.mapped())
    reject_at(
        fmt::format("the node clause does not map the function over its children (@map(fn (%k) {{ @{}(%k, "
                    "weights...) }}, "
                    "{}))",
                    name, var_name(nv[1])),
        node->rhs->span);
  if (!rose && (!nw.called(true) || !nw.called(false)))
    reject_at("the node clause does not call the function on both children", node->rhs->span);
  std::vector<Val> nresults = result_fields(nr);
  for (size_t k = 0; k < nresults.size(); ++k) {
    if (nresults[k].kind != Val::Kind::Vector || !nresults[k].ast || nresults.size() != results.size())
      reject_at("its result is not a tensor [H] or [1, H] or a tuple of such tensors", node->rhs->span);
    int64_t a = length(results[k].shape), b = length(nresults[k].shape);
    if (known(a) && known(b) && a != b)
      reject_at(fmt::format("result field {} has {} elements at a leaf and {} at a node", k, a, b),
                node->rhs->span);
  }
  dsl::ModelAst &model = out.model;
  model.name = model_name(name);
  model.loc = model.structure_loc = model.output_loc = model.end_loc = at;
  model.structure = rose ? ilir::StructureKind::Tree : ilir::StructureKind::BinaryTree;
  model.tensors = std::move(params);
  for (dsl::TensorDeclAst &state : states.decls) model.tensors.push_back(std::move(state));
  model.leaf = dsl::CaseAst{ilir::CaseKind::Leaf, loc_of(leaf->rhs->span), std::move(leaf_body)};
  states.assign(results, loc_of(leaf->rhs->span), model.leaf->body);
  model.internal = dsl::CaseAst{ilir::CaseKind::Internal, loc_of(node->rhs->span), nw.take_body()};
  states.assign(nresults, loc_of(node->rhs->span), model.internal->body);
  model.output = states.output;
  return out;
}

}  // namespace grove::relay::tree_to_dsl