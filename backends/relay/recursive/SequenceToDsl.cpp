#include "backends/relay/recursive/SequenceToDsl.h"

#include <fmt/format.h>

#include "backends/relay/recursive/CaseWriter.h"
#include "backends/relay/recursive/TreeAdts.h"

namespace grove::relay::tree_to_dsl {

using namespace detail;

bool is_tensor_list(const Module &m, const Type &t) {
  return list_adt(m, t).list != nullptr && t.as<TypeCall>()->args[0].as<TensorType>() != nullptr;
}

// 1. The steps' shape, [D] or [R, D], and the state's tensors (Recognition checked both). 2. The
//    params: the table first, then the weights. 3. Write the Cons clause as the node case: the
//    element reads the table, the state's tensors read their states at `prev`; the clause must end
//    with the tail call, whose state argument gives the new states. 4. Write the model: states, the
//    case and the output (a concatenation of all states when there are several).
SequenceTranslation translate_sequence(const Module &m, const std::string &name, const RecursiveForm &form,
                                       const std::vector<Shape> *weight_shapes, int64_t element_length) {
  Function_ f = function_to_translate(m, name);
  const auto &params = f.fn->params;
  SequenceTranslation out;
  f.tree_param = form.tree_param;
  f.state_param = form.state_param;
  const auto *elem = type_of(params[form.tree_param]).as<TypeCall>()->args[0].as<TensorType>();
  const int element_rank = static_cast<int>(elem->shape.size());
  const int64_t rows = element_rank == 2 ? elem->shape[0] : 1;
  f.one_row = rows == 1;
  const int64_t d = known(element_length) ? element_length : elem->shape.back();
  const Type &state_type = type_of(params[form.state_param]);
  std::vector<const TensorType *> state_types;
  if (const auto *tuple = state_type.as<TupleType>()) {
    out.tuple_state = true;
    for (const Type &t : tuple->fields) state_types.push_back(t.as<TensorType>());
  } else {
    state_types.push_back(state_type.as<TensorType>());
  }

  // 2. The params.
  f.prefix = fresh_prefix(params);
  out.table = f.prefix + "x";
  const Loc at = loc_of(f.fn->span);
  const Loc list_at = loc_of(params[form.tree_param]->span);
  std::vector<dsl::TensorDeclAst> decls;
  decls.push_back(tensor_decl(
      out.table, ilir::TensorKind::Param,
      {size_of(kAnyDim, f.prefix + "rows", list_at), size_of(d, f.prefix + "cols", list_at)}, list_at));
  for (dsl::TensorDeclAst &w :
       declare_weights(f, {form.tree_param, form.state_param}, weight_shapes, out.weights))
    decls.push_back(std::move(w));

  // 3. The Cons clause as the node case.
  const Clause *cons = &form.node();
  std::vector<Expr> xr = field_vars(cons->lhs);
  if (xr.size() != 2 || !xr[1].defined())
    reject_at("its Cons clause does not bind the rest of the list to a variable", cons->lhs->span);
  Shape step_shape = element_rank == 2 ? Shape{rows, d} : Shape{d};
  std::vector<Val> prev;
  const Loc state_at = loc_of(params[form.state_param]->span);
  for (size_t k = 0; k < state_types.size(); ++k) {
    Shape s = state_types[k]->shape;
    prev.push_back(Val{Val::Kind::Vector,
                       child_ast(fmt::format("{}s{}", f.prefix, k), dsl::ChildSlot::Prev, "", state_at),
                       s,
                       {}});
  }
  Val prev_state = out.tuple_state ? Val{Val::Kind::Tuple, nullptr, {}, prev} : prev[0];
  CaseWriter writer(f, false, Expr(), Expr(), Expr());
  writer.set_sequence_step(xr[0], Val{Val::Kind::Vector, token_ast(out.table, list_at), step_shape, {}},
                           params[form.state_param], prev_state, xr[1]);
  Val r = writer.run(cons->rhs);
  if (r.kind != Val::Kind::TailCall)
    reject_at(
        fmt::format("its Cons clause does not end with the recursive call @{}({}, new state, weights...)",
                    name, var_name(xr[1])),
        cons->rhs->span);
  std::vector<Val> next = result_fields(writer.next_state());
  if (writer.next_state().kind == Val::Kind::Tuple ? !out.tuple_state || next.size() != state_types.size()
                                                   : out.tuple_state)
    reject_at("the recursive call passes a new state of another form than the state's", cons->rhs->span);

  // 4. The model.
  for (size_t k = 0; k < next.size(); ++k) {
    if (next[k].kind != Val::Kind::Vector || !next[k].ast)
      reject_at(fmt::format("the new state's tensor {} is not computed by the step", k), cons->rhs->span);
    int64_t len = length(next[k].shape);
    int64_t declared = state_types[k]->shape.back();
    if (known(len) && known(declared) && len != declared)
      reject_at(
          fmt::format("the new state's tensor {} has {} elements where the state has {}", k, len, declared),
          cons->rhs->span);
    if (!known(len)) len = declared;
    if (!known(len) && weight_shapes)
      reject(fmt::format("the length of the state's tensor {} is known neither from its type nor the weights",
                         k));
    out.state_lengths.push_back(len);
  }
  // One state per tensor: the step reads `<p>sK[prev]` before their lengths are all known.
  ResultStates states = declare_result_states(f.prefix, out.state_lengths, /*pack=*/false, at);
  dsl::ModelAst &model = out.model;
  model.name = model_name(name);
  model.loc = model.structure_loc = model.output_loc = model.end_loc = at;
  model.structure = ilir::StructureKind::Sequence;
  model.tensors = std::move(decls);
  for (dsl::TensorDeclAst &state : states.decls) model.tensors.push_back(std::move(state));
  model.node = dsl::CaseAst{ilir::CaseKind::Leaf, loc_of(cons->rhs->span), writer.take_body(), /*node=*/true};
  states.assign(next, loc_of(cons->rhs->span), model.node->body);
  model.output = states.output;
  return out;
}

}  // namespace grove::relay::tree_to_dsl
