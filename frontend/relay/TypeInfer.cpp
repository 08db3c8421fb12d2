#include "frontend/relay/TypeInfer.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/relay/TypeSolver.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// ---------------------------------------------------------------------------------------------
// Messages: every type error's text, in one place.
// ---------------------------------------------------------------------------------------------
namespace msg {

UserError mismatch(const Span &at, const std::string &what, const Type &expected, const Type &found) {
  return UserError(fmt::format("{}: type error: {}: expected {}, found {}", to_string(at), what,
                               to_string(expected), to_string(found)));
}
UserError infinite_result(const Span &at, const std::string &global) {
  return UserError(
      fmt::format("{}: type error: @{} would return a value of its own type, which is infinite; "
                  "annotate its result type",
                  to_string(at), global));
}
UserError op_error(const Span &at, const std::string &op, const std::string &message) {
  return UserError(fmt::format("{}: type error in {}: {}", to_string(at), op, message));
}
UserError unknown_attribute(const Span &at, const OpDef &op, const std::string &attr) {
  std::string accepted = "no attributes";
  if (!op.attr_names.empty()) accepted = fmt::format("{}", fmt::join(op.attr_names, ", "));
  return UserError(fmt::format("{}: type error: {} has no attribute '{}'; it accepts {}", to_string(at),
                               op.name, attr, accepted));
}
UserError arity(const Span &at, const std::string &callee, size_t expected, size_t found) {
  return UserError(fmt::format("{}: type error: wrong number of arguments to {}: expected {}, found {}",
                               to_string(at), callee, expected, found));
}
UserError type_arity(const Span &at, const std::string &callee, size_t expected, size_t found) {
  return UserError(fmt::format("{}: type error: wrong number of type arguments to {}: expected {}, found {}",
                               to_string(at), callee, expected, found));
}
UserError not_a_function(const Span &at, const std::string &callee, const Type &found) {
  return UserError(
      fmt::format("{}: type error: {} is called but is not a function: expected a function type, found {}",
                  to_string(at), callee, to_string(found)));
}
UserError not_a_tuple(const Span &at, int index, const Type &found) {
  return UserError(
      fmt::format("{}: type error: cannot take field {} of a non-tuple: expected a tuple type, found {}",
                  to_string(at), index, to_string(found)));
}
UserError tuple_index(const Span &at, int index, const Type &tuple) {
  return UserError(fmt::format(
      "{}: type error: tuple index {} is out of range for {}: expected an index below {}, found {}",
      to_string(at), index, to_string(tuple), tuple.as<TupleType>()->fields.size(), index));
}
UserError undefined_global(const Span &at, const std::string &name) {
  return UserError(fmt::format("{}: type error: undefined global @{}", to_string(at), name));
}
UserError undefined_adt(const Span &at, const std::string &constructor, const std::string &adt) {
  return UserError(fmt::format("{}: type error: constructor {} belongs to an undefined type {}",
                               to_string(at), constructor, adt));
}
UserError op_as_value(const Span &at, const std::string &op) {
  return UserError(fmt::format("{}: type error: the operator {} can only be called, not used as a value",
                               to_string(at), op));
}
UserError cannot_infer(const Span &at, const std::string &what) {
  return UserError(
      fmt::format("{}: type error: cannot infer the type of {}; add a type annotation", to_string(at), what));
}

// The `what` of mismatch errors.
std::string let_value(const std::string &var) {
  return fmt::format("the value bound to %{} does not match its type annotation", var);
}
std::string function_body() { return "the body of the function does not match its return type"; }
std::string argument(size_t i, const std::string &callee) {
  return fmt::format("argument {} of {}", i + 1, callee);
}
std::string op_result(const std::string &op) {
  return fmt::format("the result of {} does not match its use", op);
}
std::string tuple_field(int index) {
  return fmt::format("field {} of the tuple does not match its use", index);
}
std::string if_condition() { return "the condition of if must be a bool scalar"; }
std::string if_branches() { return "the branches of if have different types"; }
std::string match_clauses() { return "the clauses of match have different types"; }
std::string pattern_constructor(const std::string &c) {
  return fmt::format("the pattern {} does not match the type of the matched value", c);
}
std::string pattern_tuple() { return "the tuple pattern does not match the type of the matched value"; }
std::string pattern_var(const std::string &var) {
  return fmt::format("the pattern variable %{} does not match its type annotation", var);
}
std::string ref_read() { return "the argument of ref_read must be a reference"; }
std::string ref_write_ref() { return "the first argument of ref_write must be a reference"; }
std::string ref_write_value() { return "the value written by ref_write does not match the reference's type"; }

}  // namespace msg

// How messages name an expression.
std::string describe(const Expr &e) {
  if (const auto *v = e.as<Var>()) return "%" + v->name_hint;
  if (const auto *g = e.as<GlobalVar>()) return "@" + g->name;
  if (const auto *op = e.as<Op>()) return op->name;
  if (const auto *c = e.as<Constructor>()) return c->name;
  if (const auto *call = e.as<Call>()) {
    const Expr &f = call->op;
    if (f.as<Var>() || f.as<GlobalVar>() || f.as<Op>() || f.as<Constructor>())
      return "the call to " + describe(f);
    return "this call";
  }
  if (e.as<Function>()) return "this function";
  if (const auto *t = e.as<TupleGetItem>()) return fmt::format("this projection .{}", t->index);
  return fmt::format("this {}", to_string(e->kind));
}

// The location of `e`, or of `fallback` (its parent) when `e` has none or is a variable: a Var's span
// is where it is bound, while the error is where it is used.
Span where(const Expr &e, const Expr &fallback) {
  if (e.defined() && e->span.defined() && !(e.as<Var>() && fallback.defined() && fallback->span.defined()))
    return e->span;
  return fallback.defined() ? fallback->span : Span{};
}

bool fully_annotated(const Function *f) {
  if (!f->ret_type.defined()) return false;
  return std::all_of(f->params.begin(), f->params.end(),
                     [](const Expr &p) { return p.as<Var>()->type_annotation.defined(); });
}

// The type a Function declares through its annotations (generic over its type parameters).
Type declared_type(const Function *f) {
  std::vector<Type> args;
  for (const Expr &p : f->params) args.push_back(p.as<Var>()->type_annotation);
  return FuncType::make(std::move(args), f->ret_type, f->type_params, f->span);
}

// Strongly connected components of the call graph among the module's globals reachable from
// `roots` (indices into module.functions()), callees before callers (Tarjan's algorithm, with an
// explicit stack). Members of a component are in definition order.
std::vector<std::vector<int>> global_components(const Module &module, const std::vector<int> &roots) {
  const auto &functions = module.functions();
  size_t n = functions.size();
  std::unordered_map<std::string, int> index_of;
  for (size_t i = 0; i < n; ++i) index_of.emplace(functions[i].first, static_cast<int>(i));
  std::vector<std::vector<int>> callees(n);
  auto discover = [&](int v) {
    for (const std::string &name : called_globals(functions[v].second)) {
      auto it = index_of.find(name);
      if (it != index_of.end()) callees[v].push_back(it->second);
    }
  };

  std::vector<int> index(n, -1), low(n, 0), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::vector<int>> components;
  int counter = 0;
  struct Frame {
    int v;
    size_t next;
  };
  auto open = [&](int v, std::vector<Frame> &calls) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    discover(v);
    calls.push_back({v, 0});
  };
  for (int root : roots) {
    if (index[root] >= 0) continue;
    std::vector<Frame> calls;
    open(root, calls);
    while (!calls.empty()) {
      int v = calls.back().v;
      if (calls.back().next < callees[v].size()) {
        int w = callees[v][calls.back().next++];
        if (index[w] < 0) {
          open(w, calls);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<int> component;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component.push_back(w);
        } while (w != v);
        std::sort(component.begin(), component.end());
        components.push_back(std::move(component));
      }
      calls.pop_back();
      if (!calls.empty()) low[calls.back().v] = std::min(low[calls.back().v], low[v]);
    }
  }
  return components;
}

// Type inference over one module.
//
//   1. Globals are inferred one strongly connected component of the call graph at a time, callees
//      first. Inside a component, a global whose parameters and result are all annotated is known
//      by its declared (possibly generic) type; any other is monomorphic, with holes where
//      annotations are missing. After the component is solved, each global's type is final: its
//      Function's resolved type, generic over the Function's type parameters.
//   2. An expression is walked with an explicit stack (a 100,000-let chain is normal): binders get
//      their types (annotation or a hole) before the code in their scope; each node's type is
//      computed from its children's after them, unifying as it goes and adding a deferred relation
//      where a type may not be known yet (an op call, a tuple projection).
//   3. Generic function types (a generic global, a constructor, a let-bound `fn [A]`) are
//      instantiated with fresh holes at each call; explicit type arguments fill those holes.
//   4. At the end of a component, relations are solved to a fixpoint; a pending relation or a hole
//      left anywhere is an error; resolved types are written to checked_type.
class Inferencer {
 public:
  explicit Inferencer(const Module &module) : module_(module) {}

  // Infers the globals reachable from `roots` (all of them when `roots` lists every global).
  void infer_globals(const std::vector<int> &roots) {
    for (const std::vector<int> &component : global_components(module_, roots)) infer_component(component);
  }

  // Infers a standalone expression (after the globals it calls).
  Type infer_expr(const Expr &e) {
    infer(e);
    finish();
    return e->checked_type;
  }

 private:
  struct Frame {
    Expr e;
    size_t stage;
  };

  // -------------------------------------------------------------------------------------------
  // Globals
  // -------------------------------------------------------------------------------------------

  void infer_component(const std::vector<int> &members) {
    const auto &functions = module_.functions();
    // 1. Signatures first: members may call each other (and themselves).
    for (int m : members) {
      const auto *f = functions[m].second.as<Function>();
      GROVE_CHECK(f, "global @{} is not a Function", functions[m].first);
      if (fully_annotated(f)) {
        current_[functions[m].first] = declared_type(f);
        continue;
      }
      std::vector<Type> args;
      for (const Expr &p : f->params) {
        const Type &annotation = p.as<Var>()->type_annotation;
        args.push_back(annotation.defined() ? annotation : solver_.fresh(p->span));
        bind_var(p, args.back());
      }
      Type ret = f->ret_type.defined() ? f->ret_type : solver_.fresh(f->span);
      current_[functions[m].first] = FuncType::make(std::move(args), std::move(ret), {}, f->span);
    }
    // 2. Bodies; a monomorphic signature takes the result type its Function infers.
    for (int m : members) {
      const Expr &fn = functions[m].second;
      Type inferred = infer(fn);
      if (fully_annotated(fn.as<Function>())) continue;
      // Fails only when the result would contain itself: `def @f() { @f }` returns @f's own type.
      const auto *sig = current_[functions[m].first].as<FuncType>();
      try {
        solver_.unify(sig->ret_type, inferred.as<FuncType>()->ret_type);
      } catch (const TypeMismatch &) {
        throw msg::infinite_result(fn->span, functions[m].first);
      }
    }
    // 3. Solve, check and write types; the globals' types are now final.
    finish();
    for (int m : members) {
      solved_[functions[m].first] = functions[m].second->checked_type;
      current_.erase(functions[m].first);
    }
  }

  Type global_type(const GlobalVar *g, const Expr &e) {
    if (auto it = current_.find(g->name); it != current_.end()) return it->second;
    if (auto it = solved_.find(g->name); it != solved_.end()) return it->second;
    GROVE_CHECK(!module_.find_function(g->name), "global @{} used before it was inferred", g->name);
    throw msg::undefined_global(e->span, g->name);
  }

  // -------------------------------------------------------------------------------------------
  // The walk
  // -------------------------------------------------------------------------------------------

  // GlobalVar nodes are looked up at every visit: the parser may share one node among several
  // globals, and a global's type changes from its signature to its final type.
  bool visited(const Expr &e) const { return !e.as<GlobalVar>() && types_.count(e.get()); }

  Type infer(const Expr &root) {
    if (!visited(root)) {
      std::vector<Frame> stack;
      enter(root);
      stack.push_back({root, 0});
      while (!stack.empty()) {
        const Expr *child = next_child(stack.back());
        if (child) {
          if (visited(*child)) continue;
          Expr next = *child;
          enter(next);
          stack.push_back({std::move(next), 0});
          continue;
        }
        Expr e = std::move(stack.back().e);
        stack.pop_back();
        set_type(e, exit(e));
      }
    }
    return types_.at(root.get());
  }

  const Type &type_of(const Expr &e) const {
    auto it = types_.find(e.get());
    GROVE_CHECK(it != types_.end(), "no type yet for a {}", to_string(e->kind));
    return it->second;
  }

  void set_type(const Expr &e, Type t) {
    auto [it, inserted] = types_.insert_or_assign(e.get(), std::move(t));
    if (inserted) order_.push_back(e);
  }

  void bind_var(const Expr &var, const Type &t) {
    if (!types_.count(var.get())) set_type(var, t);
  }

  // Binders get their types on the way down.
  void enter(const Expr &e) {
    if (const auto *f = e.as<Function>()) {
      for (const Expr &p : f->params) {
        const Type &annotation = p.as<Var>()->type_annotation;
        bind_var(p, annotation.defined() ? annotation : solver_.fresh(p->span));
      }
    } else if (const auto *let = e.as<Let>()) {
      const Type &annotation = let->var.as<Var>()->type_annotation;
      if (annotation.defined()) {
        bind_var(let->var, annotation);
      } else if (const auto *f = let->value.as<Function>(); f && fully_annotated(f)) {
        // A let-bound function that calls itself sees its declared (possibly generic) type.
        bind_var(let->var, declared_type(f));
      } else {
        bind_var(let->var, solver_.fresh(let->var->span));
      }
    }
  }

  // The next child of the frame's node to visit, or null when all are done. Runs what must happen
  // between two children (binding a let's variable, a clause's pattern).
  const Expr *next_child(Frame &frame) {
    const Expr &e = frame.e;
    size_t i = frame.stage++;
    switch (e->kind) {
      case ExprKind::Tuple: {
        const auto &fields = e.as<Tuple>()->fields;
        return i < fields.size() ? &fields[i] : nullptr;
      }
      case ExprKind::TupleGetItem:
        return i == 0 ? &e.as<TupleGetItem>()->tuple : nullptr;
      case ExprKind::Call: {
        // An Op callee is not a value: its call is typed by the op's relation.
        const auto *c = e.as<Call>();
        size_t first_arg = c->op.as<Op>() ? 0 : 1;
        if (i < first_arg) return &c->op;
        return i - first_arg < c->args.size() ? &c->args[i - first_arg] : nullptr;
      }
      case ExprKind::Function:
        return i == 0 ? &e.as<Function>()->body : nullptr;
      case ExprKind::Let: {
        const auto *let = e.as<Let>();
        if (i == 0) return &let->value;
        if (i > 1) return nullptr;
        unify_or_fail(type_of(let->var), type_of(let->value), where(let->value, e),
                      msg::let_value(let->var.as<Var>()->name_hint));
        return &let->body;
      }
      case ExprKind::If: {
        const auto *n = e.as<If>();
        const Expr *children[] = {&n->cond, &n->then_branch, &n->else_branch};
        return i < 3 ? children[i] : nullptr;
      }
      case ExprKind::Match: {
        const auto *m = e.as<Match>();
        if (i == 0) return &m->data;
        if (i > m->clauses.size()) return nullptr;
        const Clause &clause = m->clauses[i - 1];
        bind_pattern(clause.lhs, type_of(m->data), e);
        return &clause.rhs;
      }
      case ExprKind::RefCreate:
        return i == 0 ? &e.as<RefCreate>()->value : nullptr;
      case ExprKind::RefRead:
        return i == 0 ? &e.as<RefRead>()->ref : nullptr;
      case ExprKind::RefWrite: {
        const auto *w = e.as<RefWrite>();
        return i == 0 ? &w->ref : i == 1 ? &w->value : nullptr;
      }
      default:
        return nullptr;
    }
  }

  // The type of `e`, its children being typed.
  Type exit(const Expr &e) {
    switch (e->kind) {
      case ExprKind::Constant: {
        const NDArray &data = e.as<Constant>()->data;
        return TensorType::make(data.shape(), data.dtype(), e->span);
      }
      case ExprKind::Var: {
        // A free variable (bound variables were typed at their binder).
        const Type &annotation = e.as<Var>()->type_annotation;
        return annotation.defined() ? annotation : solver_.fresh(e->span);
      }
      case ExprKind::GlobalVar:
        return global_type(e.as<GlobalVar>(), e);
      case ExprKind::Op:
        throw msg::op_as_value(e->span, e.as<Op>()->name);
      case ExprKind::Constructor:
        return constructor_type(e);
      case ExprKind::Tuple: {
        std::vector<Type> fields;
        for (const Expr &f : e.as<Tuple>()->fields) fields.push_back(type_of(f));
        return TupleType::make(std::move(fields), e->span);
      }
      case ExprKind::TupleGetItem:
        return project(e);
      case ExprKind::Call:
        return e.as<Call>()->op.as<Op>() ? op_call(e) : call(e);
      case ExprKind::Function: {
        const auto *f = e.as<Function>();
        std::vector<Type> params;
        for (const Expr &p : f->params) params.push_back(type_of(p));
        Type ret = type_of(f->body);
        if (f->ret_type.defined())
          ret = unify_or_fail(f->ret_type, ret, where(f->body, e), msg::function_body());
        return FuncType::make(std::move(params), std::move(ret), f->type_params, e->span);
      }
      case ExprKind::Let:
        return type_of(e.as<Let>()->body);
      case ExprKind::If: {
        const auto *n = e.as<If>();
        unify_or_fail(TensorType::scalar(DType::Bool), type_of(n->cond), where(n->cond, e),
                      msg::if_condition());
        return unify_or_fail(type_of(n->then_branch), type_of(n->else_branch), where(n->else_branch, e),
                             msg::if_branches());
      }
      case ExprKind::Match: {
        const auto *m = e.as<Match>();
        if (m->clauses.empty()) return solver_.fresh(e->span);
        Type t = type_of(m->clauses[0].rhs);
        for (size_t i = 1; i < m->clauses.size(); ++i)
          t = unify_or_fail(t, type_of(m->clauses[i].rhs), where(m->clauses[i].rhs, e), msg::match_clauses());
        return t;
      }
      case ExprKind::RefCreate:
        return RefType::make(type_of(e.as<RefCreate>()->value), e->span);
      case ExprKind::RefRead: {
        const Expr &ref = e.as<RefRead>()->ref;
        Type value = solver_.fresh(e->span);
        unify_or_fail(RefType::make(value), type_of(ref), where(ref, e), msg::ref_read());
        return value;
      }
      case ExprKind::RefWrite: {
        const auto *w = e.as<RefWrite>();
        Type value = solver_.fresh(e->span);
        unify_or_fail(RefType::make(value), type_of(w->ref), where(w->ref, e), msg::ref_write_ref());
        unify_or_fail(value, type_of(w->value), where(w->value, e), msg::ref_write_value());
        return TupleType::make({});
      }
    }
    GROVE_CHECK(false, "unknown Relay expression kind");
  }

  // -------------------------------------------------------------------------------------------
  // Rules that need more than a line
  // -------------------------------------------------------------------------------------------

  Type unify_or_fail(const Type &expected, const Type &found, const Span &at, const std::string &what) {
    try {
      return solver_.unify(expected, found);
    } catch (const TypeMismatch &) {
      throw msg::mismatch(at, what, solver_.resolve(expected), solver_.resolve(found));
    }
  }

  const TypeData &adt_of(const Constructor *c, const Span &at) {
    const auto *g = c->belongs_to.as<GlobalTypeVar>();
    GROVE_CHECK(g, "constructor {} does not belong to a GlobalTypeVar", c->name);
    const TypeData *data = module_.find_type(g->name);
    if (!data) throw msg::undefined_adt(at, c->name, g->name);
    return *data;
  }

  // `Cons : fn [A](A, List[A]) -> List[A]`
  Type constructor_type(const Expr &e) {
    const auto *c = e.as<Constructor>();
    const TypeData &data = adt_of(c, e->span);
    return FuncType::make(c->inputs, TypeCall::make(data.header, data.type_vars), data.type_vars, e->span);
  }

  // A call of anything but an Op: a function value, a global, a constructor.
  Type call(const Expr &e) {
    const auto *c = e.as<Call>();
    std::string callee = describe(c->op);
    Type callee_type = solver_.shallow(type_of(c->op));
    if (callee_type.as<IncompleteType>()) {
      // Deferred relations may know more about the callee (it may be a projection).
      solver_.solve();
      callee_type = solver_.shallow(callee_type);
    }

    Type fn;
    if (const auto *f = callee_type.as<FuncType>()) {
      if (!f->type_params.empty()) {
        std::vector<Type> holes;
        fn = solver_.instantiate(callee_type, &holes);
        if (!c->type_args.empty() && c->type_args.size() != holes.size())
          throw msg::type_arity(e->span, callee, holes.size(), c->type_args.size());
        for (size_t i = 0; i < c->type_args.size(); ++i) solver_.unify(holes[i], c->type_args[i]);
      } else {
        if (!c->type_args.empty()) throw msg::type_arity(e->span, callee, 0, c->type_args.size());
        fn = callee_type;
      }
    } else if (callee_type.as<IncompleteType>()) {
      // Nothing known yet: the callee is a monomorphic function of holes.
      std::vector<Type> args;
      for (const Expr &a : c->args) args.push_back(solver_.fresh(a->span));
      fn = FuncType::make(std::move(args), solver_.fresh(e->span), {}, e->span);
      solver_.unify(callee_type, fn);
    } else {
      throw msg::not_a_function(where(c->op, e), callee, solver_.resolve(callee_type));
    }

    const auto *f = fn.as<FuncType>();
    if (f->arg_types.size() != c->args.size())
      throw msg::arity(e->span, callee, f->arg_types.size(), c->args.size());
    for (size_t i = 0; i < c->args.size(); ++i)
      unify_or_fail(f->arg_types[i], type_of(c->args[i]), where(c->args[i], e), msg::argument(i, callee));
    return f->ret_type;
  }

  // A call of an Op: its relation computes the result from the argument types, now or later.
  Type op_call(const Expr &e) {
    const auto *c = e.as<Call>();
    const auto *op = c->op.as<Op>();
    const OpDef *def = op->def;
    GROVE_CHECK(def && def->relation, "op {} has no type relation", op->name);
    if (def->num_args >= 0 && c->args.size() != static_cast<size_t>(def->num_args))
      throw msg::arity(e->span, op->name, def->num_args, c->args.size());
    for (const auto &entry : c->attrs.entries()) {
      const std::string &name = entry.first;
      if (std::find(def->attr_names.begin(), def->attr_names.end(), name) == def->attr_names.end())
        throw msg::unknown_attribute(e->span, *def, name);
    }

    std::vector<Type> args;
    for (const Expr &a : c->args) args.push_back(type_of(a));
    Type result = solver_.fresh(e->span);
    if (!types_.count(c->op.get())) set_type(c->op, FuncType::make(args, result, {}, op->span));
    Span at = e->span;
    cache_typed_attrs(op->name, c->attrs);  // the one parse, which every later reader takes
    Attrs attrs = c->attrs;
    int id = solver_.add_relation(args, [this, def, attrs, result, at, args](const std::vector<Type> &known) {
      std::vector<Type> resolved = known;
      Type out;
      try {
        // 1. Arguments still unknown that the op can type from the others (an untyped weight).
        if (def->infer_args) {
          std::vector<Type> given = def->infer_args(resolved, attrs, false);
          for (size_t i = 0; i < given.size() && i < args.size(); ++i) {
            if (!given[i].defined()) continue;
            unify_or_fail(args[i], given[i], at, msg::argument(i, def->name));
            resolved[i] = solver_.resolve(args[i]);
          }
        }
        // 2. The result.
        out = def->relation(resolved, attrs);
      } catch (const OpError &err) {
        throw msg::op_error(at, def->name, err.what());
      }
      if (!out.defined()) return false;
      unify_or_fail(result, out, at, msg::op_result(def->name));
      return true;
    });
    GROVE_CHECK(id == static_cast<int>(relation_sites_.size()), "relation ids are consecutive");
    relation_sites_.push_back(e);
    solver_.solve();
    return result;
  }

  // `t.i`: the tuple's type must be known to project; until then the projection waits.
  Type project(const Expr &e) {
    const auto *g = e.as<TupleGetItem>();
    Type result = solver_.fresh(e->span);
    Span at = where(e, g->tuple);
    int index = g->index;
    int id = solver_.add_relation({type_of(g->tuple)},
                                  [this, result, at, index](const std::vector<Type> &resolved) {
                                    const Type &t = resolved[0];
                                    if (t.as<IncompleteType>()) return false;
                                    const auto *tuple = t.as<TupleType>();
                                    if (!tuple) throw msg::not_a_tuple(at, index, t);
                                    if (index < 0 || static_cast<size_t>(index) >= tuple->fields.size())
                                      throw msg::tuple_index(at, index, t);
                                    unify_or_fail(result, tuple->fields[index], at, msg::tuple_field(index));
                                    return true;
                                  });
    GROVE_CHECK(id == static_cast<int>(relation_sites_.size()), "relation ids are consecutive");
    relation_sites_.push_back(e);
    solver_.solve();
    return result;
  }

  // Binds the variables of pattern `p`, matched against a value of type `expected`.
  void bind_pattern(const Pattern &p, const Type &expected, const Expr &match) {
    Span at = p->span.defined() ? p->span : match->span;
    switch (p->kind) {
      case PatternKind::Wildcard:
        return;
      case PatternKind::Var: {
        const auto *v = p->var.as<Var>();
        if (v->type_annotation.defined()) {
          unify_or_fail(expected, v->type_annotation, at, msg::pattern_var(v->name_hint));
          bind_var(p->var, v->type_annotation);
        } else {
          bind_var(p->var, expected);
        }
        return;
      }
      case PatternKind::Constructor: {
        const auto *c = p->constructor.as<Constructor>();
        const TypeData &data = adt_of(c, at);
        if (!types_.count(p->constructor.get())) set_type(p->constructor, constructor_type(p->constructor));
        std::vector<Type> holes;
        for (size_t i = 0; i < data.type_vars.size(); ++i) holes.push_back(solver_.fresh(at));
        unify_or_fail(expected, TypeCall::make(data.header, holes), at, msg::pattern_constructor(c->name));
        GROVE_CHECK(p->patterns.size() == c->inputs.size(), "pattern {} has the wrong number of fields",
                    c->name);
        for (size_t i = 0; i < p->patterns.size(); ++i)
          bind_pattern(p->patterns[i], TypeSolver::substitute(c->inputs[i], data.type_vars, holes), match);
        return;
      }
      case PatternKind::Tuple: {
        std::vector<Type> fields;
        for (size_t i = 0; i < p->patterns.size(); ++i) fields.push_back(solver_.fresh(at));
        unify_or_fail(expected, TupleType::make(fields), at, msg::pattern_tuple());
        for (size_t i = 0; i < p->patterns.size(); ++i) bind_pattern(p->patterns[i], fields[i], match);
        return;
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // The end of a component
  // -------------------------------------------------------------------------------------------

  // An op call whose relation is still pending because an argument the op could type (a weight)
  // lacks the attributes it needs: the op says which, at the call.
  void explain_missing_arguments(const Expr &site) {
    const auto *c = site.as<Call>();
    const Op *op = c ? c->op.as<Op>() : nullptr;
    if (!op || !op->def || !op->def->infer_args) return;
    std::vector<Type> resolved;
    for (const Expr &a : c->args) resolved.push_back(solver_.resolve(types_.at(a.get())));
    try {
      op->def->infer_args(resolved, c->attrs, true);
    } catch (const OpError &err) {
      throw msg::op_error(site->span, op->def->name, err.what());
    }
  }

  void finish() {
    solver_.solve();
    // 1. An op that could type an argument but lacks an attribute for it says which (conv2d's
    //    weight without channels). Then a variable with an unknown type: annotating it is the fix.
    //    Then a relation that never had enough information, then any other expression.
    for (int id : solver_.pending(relations_from_)) explain_missing_arguments(relation_sites_.at(id));
    for (const Expr &e : order_)
      if (e.as<Var>() && solver_.has_holes(types_.at(e.get()))) throw msg::cannot_infer(e->span, describe(e));
    for (int id : solver_.pending(relations_from_)) {
      const Expr &site = relation_sites_.at(id);
      throw msg::cannot_infer(site->span, describe(site));
    }
    std::vector<Expr> globals;
    for (const Expr &e : order_) {
      if (e.as<GlobalVar>()) {
        globals.push_back(e);
        continue;
      }
      Type t = solver_.resolve(types_.at(e.get()));
      if (solver_.has_holes(t)) throw msg::cannot_infer(e->span, describe(e));
      e->checked_type = std::move(t);
    }
    // 2. A global's node carries the global's final type, not its signature inside a component.
    for (const Expr &e : globals) {
      const std::string &name = e.as<GlobalVar>()->name;
      const Expr *fn = module_.find_function(name);
      e->checked_type =
          fn && (*fn)->checked_type.defined() ? (*fn)->checked_type : solver_.resolve(types_.at(e.get()));
    }
    order_.clear();
    relations_from_ = static_cast<int>(relation_sites_.size());
  }

  const Module &module_;
  TypeSolver solver_;
  std::unordered_map<const ExprNode *, Type> types_;  // each visited node's type (in solver terms)
  std::vector<Expr> order_;                           // nodes typed since the last finish()
  std::unordered_map<std::string, Type> current_;     // globals of the component being inferred
  std::unordered_map<std::string, Type> solved_;      // globals already inferred: their final types
  std::vector<Expr> relation_sites_;                  // by relation id: the expression it types
  int relations_from_ = 0;                            // relations of earlier components are all solved
};

}  // namespace

void infer_types(const Module &module) {
  std::vector<int> all(module.functions().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  Inferencer(module).infer_globals(all);
}

Type infer_type(const Expr &e, const Module &module) {
  std::unordered_map<std::string, int> index_of;
  for (size_t i = 0; i < module.functions().size(); ++i) index_of.emplace(module.functions()[i].first, i);
  std::vector<int> roots;
  for (const std::string &name : called_globals(e))
    if (auto it = index_of.find(name); it != index_of.end()) roots.push_back(it->second);
  Inferencer inferencer(module);
  inferencer.infer_globals(roots);
  return inferencer.infer_expr(e);
}

}  // namespace grove::relay
