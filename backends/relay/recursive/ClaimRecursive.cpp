#include "backends/relay/recursive/ClaimRecursive.h"

#include <fmt/format.h>

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "backends/relay/recursive/TreeAdts.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

Attrs claimed_attrs(const std::string &name) {
  return Attrs()
      .with(attr::kCompiler, AttrValue::of_string(kGroveCompiler))
      .with(attr::kGlobalSymbol, AttrValue::of_string(name));
}

// `e` projected along `path`, outermost index first.
Expr project(Expr e, const std::vector<int> &path, const Span &span) {
  for (int i : path) e = TupleGetItem::make(e, i, span);
  return e;
}

// Whether `value` is computed from variables by tuples, projections, constants and operator calls
// only (nothing that calls a function or touches a ref).
bool pure_dataflow(const Expr &value) {
  bool pure = true;
  post_order_visit(value, [&](const Expr &x) {
    switch (x->kind) {
      case ExprKind::Tuple:
      case ExprKind::TupleGetItem:
      case ExprKind::Constant:
      case ExprKind::Var:
      case ExprKind::Op:
        return;
      case ExprKind::Call:
        if (x.as<Call>()->op.as<Op>() == nullptr) pure = false;
        return;
      default:
        pure = false;
    }
  });
  return pure;
}

// The variables `e` binds itself (a let's, a function's parameters, a match's pattern variables).
std::vector<Expr> binders(const Expr &e) {
  if (const auto *let = e.as<Let>()) return {let->var};
  if (const auto *fn = e.as<Function>()) return fn->params;
  std::vector<Expr> out;
  if (const auto *m = e.as<Match>())
    for (const Clause &c : m->clauses)
      for (const Expr &v : pattern_vars(c.lhs)) out.push_back(v);
  return out;
}

// A copy of the pure dataflow `e` (pure_dataflow) with new compound nodes, so that a binding moved
// out of a closure that stays shares no node with it.
class DataflowCopier : public ExprMutator {
 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (const auto *t = post.as<Tuple>()) return Tuple::make(t->fields, post->span);
    if (const auto *g = post.as<TupleGetItem>()) return TupleGetItem::make(g->tuple, g->index, post->span);
    if (const auto *c = post.as<Call>())
      return Call::make(c->op, c->args, c->attrs, c->type_args, post->span);
    return post;
  }
};

Expr copy_dataflow(const Expr &e) { return DataflowCopier().mutate(e); }

// Replaces nodes (by identity) with expressions.
class NodeReplacer : public ExprMutator {
 public:
  explicit NodeReplacer(const std::unordered_map<const ExprNode *, Expr> &map) : map_(map) {}

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    auto it = map_.find(pre.get());
    return it != map_.end() ? it->second : post;
  }

 private:
  const std::unordered_map<const ExprNode *, Expr> &map_;
};

class Claimer : public ExprMutator {
 public:
  Claimer(Module &out, const Module &m, const RecursiveForms &forms, std::set<std::string> &names)
      : out_(out), m_(m), forms_(forms), names_(names) {}

  // `def @grove_f(params of @f, Compiler="grove") { @f(params...) }` for each claimed direct call
  // that the module calls (a direct call in a closure that became a claimed map is gone).
  void finish() {
    std::unordered_set<std::string> called;
    for (const auto &[name, fn] : out_.functions())
      for (const std::string &g : called_globals(fn)) called.insert(g);
    for (const auto &[f, name] : direct_order_) {
      if (called.count(name) == 0) continue;
      const auto *fn = m_.find_function(f)->as<Function>();
      std::vector<Expr> params;
      for (const Expr &p : fn->params)
        params.push_back(Var::make(p.as<Var>()->name_hint, p->checked_type, p->span));
      Expr body = Call::make(GlobalVar::make(f, fn->span), params, {}, {}, fn->span);
      out_.add_function(name, Function::make(params, body, {}, {}, claimed_attrs(name), fn->span));
    }
  }

  // The closures let-bound in `body`, which a map may name by their variable.
  void collect_closures(const Expr &body) {
    post_order_visit(body, [&](const Expr &x) {
      if (const auto *let = x.as<Let>(); let != nullptr && let->value.as<Function>() != nullptr)
        closures_[let->var.get()] = let->value;
    });
  }

 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    const auto *call = post.as<Call>();
    const auto *gv = call != nullptr ? call->op.as<GlobalVar>() : nullptr;
    if (gv == nullptr) return post;
    if (Expr claimed = claim_map(pre.as<Call>(), pre); claimed.defined()) return claimed;
    if (forms_.form(gv->name) == nullptr) return post;
    return Call::make(GlobalVar::make(direct(gv->name), call->op->span), call->args, call->attrs, {},
                      post->span);
  }

 private:
  Module &out_;
  const Module &m_;
  const RecursiveForms &forms_;
  std::set<std::string> &names_;
  std::unordered_map<const ExprNode *, Expr> closures_;
  std::unordered_map<std::string, std::string> direct_;            // @f -> its claimed direct call
  std::vector<std::pair<std::string, std::string>> direct_order_;  // the same, in order
  std::unordered_map<std::string, std::string> list_map_of_;       // a List's Cons -> @grove_list_map
  tree_to_dsl::ListMaps list_maps_{&m_};

  std::string fresh_name(const std::string &base) {
    std::string name = base;
    for (int i = 1; m_.find_function(name) != nullptr || !names_.insert(name).second; ++i)
      name = fmt::format("{}_{}", base, i);
    return name;
  }

  bool list_map(const std::string &name, std::string *cons, std::string *nil) {
    return list_maps_.find(name, cons, nil);
  }

  // A map over the List of `cons` that maps to any type: `map` itself when it is polymorphic, else
  // `def @grove_list_map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B]`, the standard map, made
  // once (the claimed map gives the encoders' results, and the rest maps over them). Empty when the
  // List is not an ADT of one type parameter.
  std::string any_map(const std::string &map, const std::string &cons, const std::string &nil) {
    if (!m_.find_function(map)->as<Function>()->type_params.empty()) return map;
    auto found = list_map_of_.find(cons);
    if (found != list_map_of_.end()) return found->second;
    const Expr &cons_ctor = *m_.find_constructor(cons);
    const Expr &nil_ctor = *m_.find_constructor(nil);
    const Type &list = cons_ctor.as<Constructor>()->belongs_to;
    const TypeData *data = m_.find_type(list.as<GlobalTypeVar>()->name);
    if (data == nullptr || data->type_vars.size() != 1) return "";
    const std::string name = fresh_name("grove_list_map");
    const Span &span = m_.find_function(map)->as<Function>()->span;
    Type a = TypeVar::make("A", span), b = TypeVar::make("B", span);
    Expr f = Var::make("f", FuncType::make({a}, b), span);
    Expr xs = Var::make("xs", TypeCall::make(list, {a}), span);
    Expr x = Var::make("x", {}, span), rest = Var::make("rest", {}, span);
    Expr cons_body = Call::make(
        cons_ctor,
        {Call::make(f, {x}, {}, {}, span), Call::make(GlobalVar::make(name, span), {f, rest}, {}, {}, span)},
        {}, {}, span);
    std::vector<Clause> clauses{
        {PatternNode::constructor_of(
             cons_ctor, {PatternNode::variable(x, span), PatternNode::variable(rest, span)}, span),
         cons_body},
        {PatternNode::constructor_of(nil_ctor, {}, span), Call::make(nil_ctor, {}, {}, {}, span)}};
    out_.add_function(name, Function::make({f, xs}, Match::make(xs, clauses, true, span),
                                           TypeCall::make(list, {b}), {a, b}, {}, span));
    return list_map_of_.emplace(cons, name).first->second;
  }

  // The name of `@grove_f`, the claimed direct call of @f, once per @f (defined by finish).
  const std::string &direct(const std::string &f) {
    auto found = direct_.find(f);
    if (found != direct_.end()) return found->second;
    const std::string &name = direct_.emplace(f, fresh_name("grove_" + f)).first->second;
    direct_order_.emplace_back(f, name);
    return name;
  }

  // See ClaimRecursive.h; an undefined Expr when `call` is not such a map.
  Expr claim_map(const Call *call, const Expr &e) {
    const std::string &map_name = call->op.as<GlobalVar>()->name;
    std::string cons, nil;
    if (call->args.size() != 2 || !list_map(map_name, &cons, &nil)) return Expr();
    Expr closure = call->args[0];
    if (auto found = closures_.find(closure.get()); found != closures_.end()) closure = found->second;
    const auto *fn = closure.as<Function>();
    if (fn == nullptr || fn->has_attr(attr::kPrimitive) || fn->params.size() != 1) return Expr();
    const Expr &t = fn->params[0];
    struct Encoder {
      const Call *call;
      Expr result;
      std::vector<int> path;
    };
    std::vector<Encoder> encoders;
    std::unordered_map<const ExprNode *, std::vector<int>> projections;
    std::vector<const Let *> hoisted;
    // The tree an encoder takes: %t, or a projection of it (its path); false for anything else.
    auto tree_path = [&](const Expr &arg, std::vector<int> *path) {
      std::vector<int> inner;
      Expr cur = arg;
      for (; cur.as<TupleGetItem>() != nullptr; cur = cur.as<TupleGetItem>()->tuple)
        inner.insert(inner.begin(), cur.as<TupleGetItem>()->index);
      std::vector<int> outer;
      if (!cur.same_as(t)) {
        auto p = projections.find(cur.get());
        if (p == projections.end()) return false;
        outer = p->second;
      }
      outer.insert(outer.end(), inner.begin(), inner.end());
      *path = std::move(outer);
      return true;
    };
    auto of_element = [&](const Expr &v) {
      if (v.same_as(t) || projections.count(v.get()) != 0) return true;
      for (const Encoder &enc : encoders)
        if (v.same_as(enc.result)) return true;
      return false;
    };
    auto invariant = [&](const Expr &value) {
      if (!pure_dataflow(value)) return false;
      for (const Expr &v : free_vars(value))
        if (of_element(v)) return false;
      return true;
    };
    auto encoder = [&](const Expr &value, Encoder *out) {
      const auto *c = value.as<Call>();
      const auto *callee = c != nullptr ? c->op.as<GlobalVar>() : nullptr;
      const RecursiveForm *form = callee != nullptr ? forms_.form(callee->name) : nullptr;
      std::vector<int> path;
      if (form == nullptr || !tree_path(c->args[form->tree_param], &path)) return false;
      for (size_t i = 0; i < c->args.size(); ++i)
        if (static_cast<int>(i) != form->tree_param && !invariant(c->args[i])) return false;
      *out = Encoder{c, Expr(), std::move(path)};
      return true;
    };
    Expr body = fn->body;
    while (const auto *let = body.as<Let>()) {
      std::vector<int> path;
      Encoder enc;
      if (let->value.as<TupleGetItem>() != nullptr && tree_path(let->value, &path)) {
        projections[let->var.get()] = std::move(path);
      } else if (encoder(let->value, &enc)) {
        enc.result = let->var;
        encoders.push_back(std::move(enc));
      } else if (invariant(let->value)) {
        hoisted.push_back(let);
      } else {
        break;
      }
      body = let->body;
    }
    // Encoders in the rest's dataflow (graph form: `nn.dense(@f(%t, ws...).0, %wc)`), outside
    // branches and closures, of variables bound outside the rest: each call once, left to right,
    // replaced by its result.
    std::unordered_set<const ExprNode *> bound_in_rest;
    post_order_visit(body, [&](const Expr &x) {
      for (const Expr &v : binders(x)) bound_in_rest.insert(v.get());
    });
    std::unordered_map<const ExprNode *, Expr> replaced;
    std::vector<Expr> stack{body};
    std::unordered_set<const ExprNode *> seen;
    while (!stack.empty()) {
      Expr x = stack.back();
      stack.pop_back();
      if (!seen.insert(x.get()).second) continue;
      Encoder enc;
      if (x.as<Call>() != nullptr && encoder(x, &enc)) {
        bool outside = true;
        for (const Expr &v : free_vars(x)) outside = outside && bound_in_rest.count(v.get()) == 0;
        if (outside) {
          enc.result = Var::make("r", x->checked_type, x->span);
          replaced.emplace(x.get(), enc.result);
          encoders.push_back(std::move(enc));
          continue;
        }
      }
      if (x.as<Function>() != nullptr || x.as<If>() != nullptr || x.as<Match>() != nullptr) continue;
      std::vector<Expr> kids;
      for_each_child(x, [&](const Expr &c) { kids.push_back(c); });
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    if (encoders.empty()) return Expr();
    Expr rest = replaced.empty() ? body : NodeReplacer(replaced).mutate(body);
    for (const Expr &v : free_vars(rest))
      if (v.same_as(t) || projections.count(v.get()) != 0) return Expr();
    const std::string map_any = any_map(map_name, cons, nil);
    if (map_any.empty()) return Expr();
    // The bindings computed once, before the call, on fresh variables (a let-bound closure stays
    // where it is, unused).
    std::unordered_map<Expr, Expr, ExprHash, ExprEqual> renamed;
    std::vector<std::pair<Expr, Expr>> before;
    for (const Let *h : hoisted) {
      Expr v = Var::make(h->var.as<Var>()->name_hint, {}, h->var->span);
      before.emplace_back(v, copy_dataflow(substitute(h->value, renamed)));
      renamed.emplace(h->var, v);
    }
    // The claimed function's parameters: the list, then each argument passed through (a variable
    // once; anything else bound before the call).
    const Span &span = e->span;
    Expr xs = Var::make("xs", call->args[1]->checked_type, call->args[1]->span);
    std::vector<Expr> params{xs}, outer{mutate(call->args[1])};
    std::unordered_map<const ExprNode *, int> param_of;
    Expr element = Var::make(t.as<Var>()->name_hint, t->checked_type, t->span);
    std::vector<Expr> calls;
    for (const Encoder &enc : encoders) {
      const int tree = forms_.form(enc.call->op.as<GlobalVar>()->name)->tree_param;
      std::vector<Expr> args;
      for (size_t i = 0; i < enc.call->args.size(); ++i) {
        if (static_cast<int>(i) == tree) {
          args.push_back(project(element, enc.path, span));
          continue;
        }
        Expr w = substitute(enc.call->args[i], renamed);
        if (w.as<Var>() == nullptr) w = copy_dataflow(w);
        if (w.as<Var>() == nullptr) {
          Expr v = Var::make(fmt::format("arg{}", i), {}, enc.call->args[i]->span);
          before.emplace_back(v, w);
          w = v;
        }
        auto [it, added] = param_of.emplace(w.get(), static_cast<int>(params.size()));
        if (added) {
          params.push_back(Var::make(w.as<Var>()->name_hint, enc.call->args[i]->checked_type, w->span));
          outer.push_back(w);
        }
        args.push_back(params[it->second]);
      }
      calls.push_back(Call::make(enc.call->op, std::move(args), enc.call->attrs, {}, enc.call->span));
    }
    const std::string name = fresh_name("grove_map_" + encoders[0].call->op.as<GlobalVar>()->name);
    Expr mapped = Function::make({element}, calls.size() == 1 ? calls[0] : Tuple::make(calls, span), {}, {},
                                 {}, fn->span);
    const Expr map_var = GlobalVar::make(map_any, call->op->span);
    out_.add_function(name, Function::make(params, Call::make(map_var, {mapped, xs}, {}, {}, span), {}, {},
                                           claimed_attrs(name), fn->span));
    Expr result = Call::make(GlobalVar::make(name, span), outer, {}, {}, span);
    if (!(encoders.size() == 1 && rest.same_as(encoders[0].result))) {
      // @map of the rest over the results: one variable for one encoder, their tuple for several.
      std::vector<Type> types;
      for (const Encoder &enc : encoders) types.push_back(enc.call->checked_type);
      Expr r = Var::make("r", types.size() == 1 ? types[0] : TupleType::make(types, span), span);
      for (size_t i = 0; i < encoders.size(); ++i)
        renamed.emplace(encoders[i].result,
                        encoders.size() == 1 ? r : TupleGetItem::make(r, static_cast<int>(i), span));
      Expr each = Function::make({r}, substitute(mutate(rest), renamed), fn->ret_type, {}, {}, fn->span);
      Expr results = Var::make("rs", {}, span);
      result = Let::make(results, result, Call::make(map_var, {each, results}, call->attrs, {}, span), span);
    }
    for (auto it = before.rbegin(); it != before.rend(); ++it)
      result = Let::make(it->first, it->second, result, span);
    return result;
  }
};

}  // namespace

void grove_cannot_compile(const Span &span, const std::string &global, const std::string &why) {
  user_error("{}@{} has Compiler=\"grove\" but grove's recursive compiler cannot compile it: {}",
             span.defined() ? to_string(span) + ": " : "", global, why);
}

Module claim_recursive(const Module &m, const RecursiveForms &forms) {
  Module out = m;
  std::set<std::string> names;
  Claimer claimer(out, m, forms, names);
  for (const auto &[name, fn] : m.functions()) {
    const auto *f = fn.as<Function>();
    const AttrValue *compiler = f->attrs.find(attr::kCompiler);
    if (compiler != nullptr && compiler->s == kGroveCompiler) {
      const Recognition *r = forms.find(name);
      if (r == nullptr || !r->qualifies())
        grove_cannot_compile(f->span, name,
                             r != nullptr ? r->rejection.reason : "it is not a global function");
      // Its calls are claimed one by one; the function itself is what grove translates.
      out.add_function(name, Function::make(f->params, f->body, f->ret_type, f->type_params,
                                            f->attrs.without(attr::kCompiler), f->span));
      continue;
    }
    // The recursive forms' bodies are grove's to translate; other code generators' functions theirs.
    if (compiler != nullptr || forms.form(name) != nullptr) continue;
    claimer.collect_closures(f->body);
    Expr body = claimer.mutate(f->body);
    if (!body.same_as(f->body))
      out.add_function(name, Function::make(f->params, body, f->ret_type, f->type_params, f->attrs, f->span));
  }
  claimer.finish();
  infer_types(out);
  return out;
}

std::optional<ClaimedFunction> read_claimed(const Module &m, const std::string &global) {
  const auto *fn = m.find_function(global)->as<Function>();
  std::unordered_map<const ExprNode *, int> param_index;
  for (size_t i = 0; i < fn->params.size(); ++i) param_index[fn->params[i].get()] = static_cast<int>(i);
  const auto *call = fn->body.as<Call>();
  const auto *callee = call != nullptr ? call->op.as<GlobalVar>() : nullptr;
  if (callee == nullptr) return std::nullopt;
  ClaimedFunction claimed;
  const auto *mapped = call->args.size() == 2 ? call->args[0].as<Function>() : nullptr;
  if (mapped != nullptr && mapped->params.size() == 1 && !fn->params.empty() &&
      call->args[1].same_as(fn->params[0]) &&
      tree_to_dsl::is_list_map(m, callee->name, &claimed.cons, &claimed.nil)) {
    claimed.over_list = true;
    const Expr &element = mapped->params[0];
    std::vector<Expr> calls{mapped->body};
    if (const auto *tuple = mapped->body.as<Tuple>()) calls = tuple->fields;
    for (const Expr &c : calls) {
      const auto *enc = c.as<Call>();
      if (enc == nullptr || enc->op.as<GlobalVar>() == nullptr) return std::nullopt;
      ClaimedEncoder out{enc->op.as<GlobalVar>()->name, {}, {}};
      int trees = 0;
      for (const Expr &arg : enc->args) {
        if (auto p = param_index.find(arg.get()); p != param_index.end() && p->second > 0) {
          out.args.push_back(p->second);
          continue;
        }
        std::vector<int> path;
        Expr cur = arg;
        for (; cur.as<TupleGetItem>() != nullptr; cur = cur.as<TupleGetItem>()->tuple)
          path.insert(path.begin(), cur.as<TupleGetItem>()->index);
        if (!cur.same_as(element)) return std::nullopt;
        out.path = std::move(path);
        out.args.push_back(-1);
        ++trees;
      }
      if (trees != 1) return std::nullopt;
      claimed.encoders.push_back(std::move(out));
    }
    return claimed;
  }
  ClaimedEncoder direct{callee->name, {}, {}};
  for (const Expr &arg : call->args) {
    auto p = param_index.find(arg.get());
    if (p == param_index.end()) return std::nullopt;
    direct.args.push_back(p->second);
  }
  claimed.encoders.push_back(std::move(direct));
  return claimed;
}

}  // namespace grove::relay
