#include "backends/relay/recursive/TreeAdts.h"

#include <vector>

namespace grove::relay::tree_to_dsl {
namespace {

// The clause of `match` in global `name`'s body for the list constructor with `fields` fields, or null.
// The global must take `params` parameters and be a two-clause match on its last one.
const Clause *list_clause(const Module &m, const std::string &name, size_t params, size_t fields) {
  const Expr *e = m.find_function(name);
  const auto *fn = e ? e->as<Function>() : nullptr;
  if (!fn || fn->params.size() != params) return nullptr;
  const auto *match = fn->body.as<Match>();
  if (!match || !match->data.same_as(fn->params.back()) || match->clauses.size() != 2) return nullptr;
  for (const Clause &c : match->clauses)
    if (c.lhs->kind == PatternKind::Constructor && c.lhs->patterns.size() == fields) return &c;
  return nullptr;
}

// A clause's pattern fields as variables (null when one is not a plain variable).
std::vector<Expr> pattern_var_fields(const Pattern &p) {
  std::vector<Expr> out;
  for (const Pattern &f : p->patterns) out.push_back(f->kind == PatternKind::Var ? f->var : Expr());
  return out;
}

}  // namespace

const TypeData *binary_tree_adt(const Module &m, const Type &t) {
  const auto *call = t.as<TypeCall>();
  if (!call || call->args.size() != 1 || !call->func.as<GlobalTypeVar>()) return nullptr;
  const std::string &adt = call->func.as<GlobalTypeVar>()->name;
  const TypeData *td = m.find_type(adt);
  if (!td || td->type_vars.size() != 1 || td->constructors.size() != 2) return nullptr;
  int leaves = 0, nodes = 0;
  for (const Expr &ce : td->constructors) {
    const auto *c = ce.as<Constructor>();
    auto is_a = [&](const Type &in) { return in.same_as(td->type_vars[0]); };
    auto is_tree = [&](const Type &in) {
      const auto *tc = in.as<TypeCall>();
      return tc && tc->func.as<GlobalTypeVar>() && tc->func.as<GlobalTypeVar>()->name == adt &&
             tc->args.size() == 1 && is_a(tc->args[0]);
    };
    if (c->inputs.size() == 1 && is_a(c->inputs[0])) ++leaves;
    if (c->inputs.size() == 2 && is_tree(c->inputs[0]) && is_tree(c->inputs[1])) ++nodes;
  }
  return leaves == 1 && nodes == 1 ? td : nullptr;
}

RoseAdt rose_tree_adt(const Module &m, const Type &t) {
  const auto *call = t.as<TypeCall>();
  if (!call || call->args.size() != 1 || !call->func.as<GlobalTypeVar>()) return {};
  const std::string &adt = call->func.as<GlobalTypeVar>()->name;
  const TypeData *td = m.find_type(adt);
  if (!td || td->type_vars.size() != 1 || td->constructors.size() != 1) return {};
  const auto *c = td->constructors[0].as<Constructor>();
  if (c->inputs.size() != 2 || !c->inputs[0].same_as(td->type_vars[0])) return {};
  // The children: L[T[A]].
  ListAdt list = list_adt(m, c->inputs[1]);
  if (!list.list) return {};
  const auto *elem = c->inputs[1].as<TypeCall>()->args[0].as<TypeCall>();
  if (!elem || !elem->func.as<GlobalTypeVar>() || elem->func.as<GlobalTypeVar>()->name != adt ||
      elem->args.size() != 1 || !elem->args[0].same_as(td->type_vars[0]))
    return {};
  return RoseAdt{td, list.cons_tag, list.nil_tag};
}

ListAdt list_adt(const Module &m, const Type &t) {
  const auto *list = t.as<TypeCall>();
  if (!list || list->args.size() != 1 || !list->func.as<GlobalTypeVar>()) return {};
  const std::string &list_name = list->func.as<GlobalTypeVar>()->name;
  const TypeData *ld = m.find_type(list_name);
  if (!ld || ld->type_vars.size() != 1 || ld->constructors.size() != 2) return {};
  ListAdt out{ld, -1, -1};
  for (const Expr &ce : ld->constructors) {
    const auto *k = ce.as<Constructor>();
    const auto *tail = k->inputs.size() == 2 ? k->inputs[1].as<TypeCall>() : nullptr;
    if (k->inputs.empty()) {
      out.nil_tag = k->tag;
    } else if (tail && k->inputs[0].same_as(ld->type_vars[0]) && tail->func.as<GlobalTypeVar>() &&
               tail->func.as<GlobalTypeVar>()->name == list_name && tail->args.size() == 1 &&
               tail->args[0].same_as(ld->type_vars[0])) {
      out.cons_tag = k->tag;
    }
  }
  if (out.cons_tag < 0 || out.nil_tag < 0) return {};
  return out;
}

bool is_list_map(const Module &m, const std::string &name, std::string *cons_name, std::string *nil_name) {
  const Clause *cons = list_clause(m, name, 2, 2), *nil = list_clause(m, name, 2, 0);
  if (!cons || !nil) return false;
  const auto &params = m.find_function(name)->as<Function>()->params;
  std::vector<Expr> xr = pattern_var_fields(cons->lhs);
  const auto *built = cons->rhs.as<Call>();
  if (!xr[0].defined() || !xr[1].defined() || !built || !built->op.as<Constructor>() ||
      built->args.size() != 2 ||
      built->op.as<Constructor>()->tag != cons->lhs->constructor.as<Constructor>()->tag)
    return false;
  const auto *head = built->args[0].as<Call>();
  const auto *tail = built->args[1].as<Call>();
  if (!head || !head->op.same_as(params[0]) || head->args.size() != 1 || !head->args[0].same_as(xr[0]))
    return false;
  if (!tail || !tail->op.as<GlobalVar>() || tail->op.as<GlobalVar>()->name != name ||
      tail->args.size() != 2 || !tail->args[0].same_as(params[0]) || !tail->args[1].same_as(xr[1]))
    return false;
  const auto *empty = nil->rhs.as<Call>();
  const Expr &value = empty && empty->args.empty() ? empty->op : nil->rhs;
  if (!value.as<Constructor>() ||
      value.as<Constructor>()->tag != nil->lhs->constructor.as<Constructor>()->tag)
    return false;
  if (cons_name) *cons_name = cons->lhs->constructor.as<Constructor>()->name;
  if (nil_name) *nil_name = nil->lhs->constructor.as<Constructor>()->name;
  return true;
}

bool ListMaps::find(const std::string &name, std::string *cons, std::string *nil) {
  auto [it, added] = known_.try_emplace(name);
  if (added) {
    std::pair<std::string, std::string> ctors;
    if (m_ != nullptr && is_list_map(*m_, name, &ctors.first, &ctors.second)) it->second = ctors;
  }
  if (!it->second) return false;
  *cons = it->second->first;
  *nil = it->second->second;
  return true;
}

bool is_list_foldl(const Module &m, const std::string &name) {
  const Clause *cons = list_clause(m, name, 3, 2), *nil = list_clause(m, name, 3, 0);
  if (!cons || !nil) return false;
  const auto &params = m.find_function(name)->as<Function>()->params;
  std::vector<Expr> xr = pattern_var_fields(cons->lhs);
  const auto *again = cons->rhs.as<Call>();
  if (!xr[0].defined() || !xr[1].defined() || !again || !again->op.as<GlobalVar>() ||
      again->op.as<GlobalVar>()->name != name || again->args.size() != 3 ||
      !again->args[0].same_as(params[0]) || !again->args[2].same_as(xr[1]))
    return false;
  const auto *step = again->args[1].as<Call>();
  return step && step->op.same_as(params[0]) && step->args.size() == 2 && step->args[0].same_as(params[1]) &&
         step->args[1].same_as(xr[0]) && nil->rhs.same_as(params[1]);
}

}  // namespace grove::relay::tree_to_dsl
