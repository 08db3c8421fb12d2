#include "backends/relay/SequenceToDsl.h"

#include <fmt/format.h>

#include "backends/relay/CaseWriter.h"
#include "backends/relay/TreeAdts.h"

namespace grove::relay::tree_to_dsl {
namespace {

using namespace detail;

// The float32 tensor type of rank 1 or 2 that `t` is, or null.
const TensorType *vector_type(const Type &t) {
  const auto *tt = t.as<TensorType>();
  return tt && tt->dtype == DType::Float32 && (tt->shape.size() == 1 || tt->shape.size() == 2) ? tt : nullptr;
}

}  // namespace

bool is_tensor_list(const Module &m, const Type &t) {
  return list_adt(m, t).list != nullptr && t.as<TypeCall>()->args[0].as<TensorType>() != nullptr;
}

// 1. Find the list parameter (its elements float32 tensors [D] or [R, D]). 2. The body is a match on
//    it with a Cons clause and a Nil clause that returns a parameter: the state (a tensor of the
//    elements' rank, or a tuple of such). Every other parameter is a float32 weight of rank 1 or 2.
// 3. Write the Cons clause as the node case: the element reads the table, the state's tensors read
//    their states at `prev`; the clause must end with the tail call, whose state argument gives the
//    new states. 4. Write the model: params (the table first), states, the case and the output (a
//    concatenation of all states when there are several).
SequenceTranslation translate_sequence(const Module &m, const std::string &name,
                                       const std::vector<Shape> *weight_shapes, int64_t element_length) {
  Function_ f = function_to_translate(m, name);
  const auto &params = f.fn->params;
  SequenceTranslation out;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!is_tensor_list(m, type_of(params[i]))) continue;
    if (out.list_param >= 0) reject("it has two list parameters");
    out.list_param = static_cast<int>(i);
  }
  if (out.list_param < 0) reject("it has no parameter of a list type L[Tensor[...]]");
  f.tree_param = out.list_param;
  const Type &list_type = type_of(params[out.list_param]);
  const TensorType *elem = vector_type(list_type.as<TypeCall>()->args[0]);
  if (!elem)
    reject(fmt::format("its list holds {}, not float32 tensors [D] or [R, D] (one step each)",
                       to_string(list_type.as<TypeCall>()->args[0])));
  out.element_rank = static_cast<int>(elem->shape.size());
  out.cons_tag = list_adt(m, list_type).cons_tag;
  const int64_t rows = out.element_rank == 2 ? elem->shape[0] : 1;
  f.one_row = rows == 1;
  const int64_t d = known(element_length) ? element_length : elem->shape.back();

  // 2. The match and its clauses.
  const auto *match = f.fn->body.as<Match>();
  if (!match || !match->data.same_as(params[out.list_param]))
    reject(fmt::format("its body is not a match on its list parameter {}", var_name(params[out.list_param])));
  const Clause *cons = nullptr, *nil = nullptr;
  for (const Clause &c : match->clauses) {
    if (c.lhs->kind != PatternKind::Constructor) reject("a clause of its match is not a constructor pattern");
    const Clause *&slot = c.lhs->constructor.as<Constructor>()->tag == out.cons_tag ? cons : nil;
    if (slot) reject("its match has two clauses for one constructor");
    slot = &c;
  }
  if (!cons || !nil) reject("its match lacks a Cons clause or a Nil clause");
  for (size_t i = 0; i < params.size(); ++i)
    if (nil->rhs.same_as(params[i]) && static_cast<int>(i) != out.list_param)
      out.state_param = static_cast<int>(i);
  if (out.state_param < 0)
    reject("its Nil clause does not return one of its parameters (the state) as it is");
  f.state_param = out.state_param;
  const Type &state_type = type_of(params[out.state_param]);
  std::vector<const TensorType *> state_types;
  if (const auto *tuple = state_type.as<TupleType>()) {
    out.tuple_state = true;
    for (const Type &t : tuple->fields) state_types.push_back(vector_type(t));
  } else {
    state_types.push_back(vector_type(state_type));
  }
  for (const TensorType *t : state_types) {
    if (!t || static_cast<int>(t->shape.size()) != out.element_rank)
      reject(fmt::format(
          "its state {} has type {}; a state is a float32 tensor of the steps' rank ({}), or a tuple of such",
          var_name(params[out.state_param]), to_string(state_type), out.element_rank));
    if (out.element_rank == 2 && known(rows) && known(t->shape[0]) && t->shape[0] != rows)
      reject(fmt::format("its state has {} rows but each step {}", t->shape[0], rows));
  }
  if (state_types.empty()) reject("its state is an empty tuple");

  f.prefix = fresh_prefix(params);
  out.table = f.prefix + "x";
  std::string decls =
      fmt::format("param {} [{}rows, {}]\n", out.table, f.prefix, size_text(d, f.prefix + "cols")) +
      declare_weights(f, {out.list_param, out.state_param}, weight_shapes, "the list and the state",
                      out.weights);

  // 3. The Cons clause as the node case.
  std::vector<Expr> xr = field_vars(cons->lhs);
  if (xr.size() != 2 || !xr[1].defined())
    reject("its Cons clause does not bind the rest of the list to a variable");
  Shape step_shape = out.element_rank == 2 ? Shape{rows, d} : Shape{d};
  std::vector<Val> prev;
  for (size_t k = 0; k < state_types.size(); ++k) {
    Shape s = state_types[k]->shape;
    prev.push_back(Val{Val::Kind::Vector, fmt::format("{}s{}[prev]", f.prefix, k), s, {}});
  }
  Val prev_state = out.tuple_state ? Val{Val::Kind::Tuple, "", {}, prev} : prev[0];
  CaseWriter writer(f, false, Expr(), Expr(), Expr());
  writer.set_sequence_step(xr[0], Val{Val::Kind::Vector, out.table + "[token]", step_shape, {}},
                           params[out.state_param], prev_state, xr[1]);
  Val r = writer.run(cons->rhs);
  if (r.kind != Val::Kind::TailCall)
    reject(fmt::format("its Cons clause does not end with the recursive call @{}({}, new state, weights...)",
                       name, var_name(xr[1])));
  std::vector<Val> next = result_fields(writer.next_state());
  if (writer.next_state().kind == Val::Kind::Tuple ? !out.tuple_state || next.size() != state_types.size()
                                                   : out.tuple_state)
    reject("the recursive call passes a new state of another form than the state's");

  // 4. The model.
  for (size_t k = 0; k < next.size(); ++k) {
    if (next[k].kind != Val::Kind::Vector || next[k].text.empty())
      reject(fmt::format("the new state's tensor {} is not computed by the step", k));
    int64_t len = length(next[k].shape);
    int64_t declared = state_types[k]->shape.back();
    if (known(len) && known(declared) && len != declared)
      reject(
          fmt::format("the new state's tensor {} has {} elements where the state has {}", k, len, declared));
    if (!known(len)) len = declared;
    if (!known(len) && weight_shapes)
      reject(fmt::format("the length of the state's tensor {} is known neither from its type nor the weights",
                         k));
    out.state_lengths.push_back(len);
  }
  // One state per tensor: the step reads `<p>sK[prev]` before their lengths are all known.
  const ResultStates states = declare_result_states(f.prefix, out.state_lengths, /*pack=*/false);
  out.text = fmt::format(
      "# @{} of a Relay module, a fold over the list {}, translated by grove: one token per row of a step.\n"
      "model {}\nstructure sequence\n\n{}\n{}\nnode {{\n{}{}}}\n\noutput {}\n",
      name, var_name(params[out.list_param]), model_name(name), decls, states.decls, writer.body(),
      states.assign(next), states.output);
  return out;
}

}  // namespace grove::relay::tree_to_dsl
