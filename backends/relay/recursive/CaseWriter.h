#pragma once
// Internal to the translations of recursive Relay functions into grove models (TreeToDsl.cpp for
// trees, SequenceToDsl.cpp for folds over lists): the value a Relay expression of a clause stands
// for, and CaseWriter, which builds one clause as a case of the model's syntax tree
// (frontend/dsl/AST.h), each node located at the Relay expression it comes from.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/relay/recursive/TreeAdts.h"
#include "backends/relay/recursive/TreeToDsl.h"
#include "frontend/dsl/AST.h"
#include "frontend/dsl/Lexer.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "support/Error.h"

namespace grove::relay::tree_to_dsl::detail {

// A Reject at no narrower place than the expression CaseWriter is at (or the function).
[[noreturn]] inline void reject(std::string why) { throw Reject{std::move(why)}; }
[[noreturn]] inline void reject_at(std::string why, const Span &at) { throw Reject{std::move(why), at}; }

inline std::string var_name(const Expr &v) { return "%" + v.as<Var>()->name_hint; }

// A model expression, shared between the values that read it; a node that uses it as an operand
// takes a copy (the syntax tree owns its operands).
using Ast = std::shared_ptr<const dsl::ExprAst>;

inline Loc loc_of(const Span &s) { return s.defined() ? Loc{s.line, s.col} : Loc{}; }

inline dsl::ExprPtr clone(const dsl::ExprAst &e) {
  auto c = std::make_unique<dsl::ExprAst>(e.kind, e.loc);
  c->number = e.number;
  c->name = e.name;
  c->op = e.op;
  c->function = e.function;
  c->slot = e.slot;
  c->child_var = e.child_var;
  c->lo = e.lo;
  c->hi = e.hi;
  for (const dsl::ExprPtr &operand : e.operands) c->operands.push_back(clone(*operand));
  return c;
}

inline dsl::ExprPtr node(dsl::ExprAstKind kind, Loc at, std::initializer_list<const Ast *> operands = {}) {
  auto e = std::make_unique<dsl::ExprAst>(kind, at);
  for (const Ast *operand : operands) e->operands.push_back(clone(**operand));
  return e;
}
inline Ast name_ast(std::string name, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Name, at);
  e->name = std::move(name);
  return e;
}
// A number as the model text `{:.9g}` of it would read (the translation's constants are float32).
inline Ast number_ast(double x, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Number, at);
  e->number = std::strtod(fmt::format("{:.9g}", x).c_str(), nullptr);
  return e;
}
inline Ast neg_ast(const Ast &x, Loc at) { return node(dsl::ExprAstKind::Neg, at, {&x}); }
inline Ast call_ast(dsl::Function f, const Ast &x, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Call, at, {&x});
  e->function = f;
  return e;
}
inline Ast binary_ast(dsl::BinaryOp op, const Ast &a, const Ast &b, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Binary, at, {&a, &b});
  e->op = op;
  return e;
}
inline dsl::SizeAst size_ast(int64_t value, Loc at) {
  return dsl::SizeAst{at, dsl::Size::constant(value), {}};
}
inline Ast slice_ast(const Ast &x, int64_t lo, int64_t hi, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Slice, at, {&x});
  e->lo = size_ast(lo, at);
  e->hi = size_ast(hi, at);
  return e;
}
inline Ast token_ast(std::string table, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Token, at);
  e->name = std::move(table);
  return e;
}
// `state[slot]`; `var` names the child of ChildSlot::Var (`state[k]`).
inline Ast child_ast(std::string state, dsl::ChildSlot slot, std::string var, Loc at) {
  dsl::ExprPtr e = node(dsl::ExprAstKind::Child, at);
  e->name = std::move(state);
  e->slot = slot;
  e->child_var = std::move(var);
  return e;
}

// What a Relay expression of a clause is in the model being written. Over rose trees, the node
// clause also has its children list (Kids), the closures mapped and folded over it (MapFn, FoldFn),
// their parameters (ChildTree, Acc, a child's result as a Tuple or Vector depending on `child`), the
// mapped list (ChildResults), a recursive call inside the map's closure (SelfCall) and the body
// `add(%acc, E)` of a fold's closure (FoldBody, E's expression).
struct Val {
  enum class Kind {
    Vector,
    Scalar,
    Weight,
    Token,
    ChildTree,
    Tuple,
    Kids,
    ChildResults,
    SelfCall,
    Acc,
    FoldBody,
    MapFn,
    FoldFn,
    Rest,
    TailCall
  };
  Kind kind = Kind::Vector;
  Ast ast;      // the model expression (a name, a slice, a number); null for zeros not yet written
  Shape shape;  // Vector: [N] or [1, N]; Weight: its shape
  std::vector<Val> fields;
  // Rose trees: the fold closure's parameter (one child's result) this value depends on, if any.
  // Such a value is an expression inside `sum(k in children) ...`, never a temporary.
  const ExprNode *child = nullptr;
  const ExprNode *binder = nullptr;  // ChildTree, SelfCall: the map closure's parameter; Acc, FoldBody: %acc
  bool index = true;                 // an index expression (docs/DSL.md) when it depends on a child
  bool zero = false;                 // known to be all zeros (a fold's initial value)
  Ast pending = {};                  // a zero vector's expression, bound to a temporary only once it is read
  std::string name = {};             // Weight: its model name (for messages)
};

namespace rose_msg {
inline constexpr char kClosure[] =
    "a closure in the node clause is neither `fn (%k) { @f(%k, weights...) }` (the function itself on "
    "one child, mapped over the children) nor `fn (%acc, %c) { add(%acc, E) }` (folded over their results)";
inline constexpr char kAcc[] = "a fold's function uses its accumulator other than as add(%acc, E)";
inline constexpr char kKids[] =
    "the node's list of children, which only @map of the function itself may take";
inline constexpr char kResults[] = "the children's results, which only @foldl (summing them) may take";
}  // namespace rose_msg

inline int64_t length(const Shape &s) { return s.empty() ? 1 : s.back(); }

// The typed attributes of `call` (ops/OpAttrs.h), read as the relations and the kernels read them,
// so that the translation and the kernels agree by construction: `read` is the family's reader
// (split_attrs, take_attrs, ...). A malformed attribute, which type inference reports first, is a
// rejection naming the op.
template <typename Read>
auto typed_attrs(const Call &call, Read read) -> decltype(read(call.attrs)) {
  try {
    return read(call.attrs);
  } catch (const OpError &e) {
    reject(fmt::format("its {} has a malformed attribute: {}", call.op.as<Op>()->name, e.what()));
  }
}

struct Function_ {
  const Module *m = nullptr;
  const Function *fn = nullptr;
  std::string name;
  int tree_param = -1;
  std::unordered_map<Expr, Val, ExprHash, ExprEqual> weights;  // weight Var -> Weight value
  std::string prefix;                                          // of temporaries and states
  std::vector<Shape> state_shapes;                             // from the leaf clause
  bool tuple_result = false;
  // A fold over a list: the state parameter (the tree_param field is then the list's), and whether
  // every tensor of the step has one row, so that reshapes between [N] and [1, N] keep each row
  // (sequence) apart; with R rows a reshape would mix them.
  int state_param = -1;
  bool one_row = true;
  // Where a tree function's children's result fields are: ResultStates::offsets (declared below;
  // empty: one state per field, `<p>s<k>`).
  std::vector<int64_t> packed_offsets;
};

// Result field k of the child `slot` (left, right, or the fold's `<p>k`) as the model reads it.
inline Ast child_field(const Function_ &f, size_t k, dsl::ChildSlot slot, Loc at) {
  const std::string var = slot == dsl::ChildSlot::Var ? f.prefix + "k" : "";
  if (f.packed_offsets.empty()) return child_ast(fmt::format("{}s{}", f.prefix, k), slot, var, at);
  const int64_t lo = f.packed_offsets[k];
  return slice_ast(child_ast(f.prefix + "all", slot, var, at), lo, lo + length(f.state_shapes[k]), at);
}

// 1. Collect let bindings and reject closures (except, in a rose node clause, those of its map and
// folds, whose parameters get their roles), branches and effects. 2. Translate every node in
// post-order (children first), binding each computed vector to a temporary so that expressions
// stay shallow; a vector computed from a fold's child instead stays one expression, since the fold
// becomes one `sum(k in children) E` statement. 3. The clause's result value is returned; recursive
// calls are recorded per child (binary) or the map over the children (rose).
class CaseWriter {
 public:
  CaseWriter(const Function_ &f, bool leaf, Expr token, Expr left, Expr right)
      : f_(f), leaf_(leaf), token_(std::move(token)), left_(std::move(left)), right_(std::move(right)) {}

  // The node clause of a rose tree: `kids` binds its children list, `node_token` (maybe undefined)
  // its token, which grove's internal nodes do not have.
  // The Cons clause of a fold over a list: `x` binds the element (read as `x_val`), `state` is the
  // state parameter (its previous value `prev`), `rest` binds the rest of the list, which only the
  // tail call may take.
  void set_sequence_step(Expr x, Val x_val, Expr state, Val prev, Expr rest) {
    if (x.defined()) role_[x] = std::move(x_val);  // `Cons(_, %rest)` reads no element
    role_[state] = std::move(prev);
    rest_ = std::move(rest);
  }
  // The state the tail call passes on (a vector or a tuple of vectors); set once run() returns.
  const Val &next_state() const { return next_state_; }

  void set_rose_node(Expr kids, Expr node_token) {
    kids_ = std::move(kids);
    node_token_ = std::move(node_token);
  }

  // A Reject without a place gets the one of the expression being translated.
  Val run(const Expr &rhs) {
    try {
      return run_clause(rhs);
    } catch (Reject &r) {
      if (!r.span.defined() && at_ != nullptr) r.span = at_->span;
      throw;
    }
  }

  // The case's statements so far (moved out).
  std::vector<dsl::StatementAst> take_body() { return std::move(body_); }
  bool called(bool left) const { return left ? called_left_ : called_right_; }
  bool mapped() const { return mapped_; }

 private:
  Val run_clause(const Expr &rhs) {
    post_order_visit(rhs, [&](const Expr &e) {
      at_ = e.get();
      if (const auto *let = e.as<Let>()) let_value_[let->var] = let->value;
      switch (e->kind) {
        case ExprKind::Function:
          if (e.as<Function>()->has_attr(attr::kPrimitive))
            reject(
                "a clause calls fused Primitive functions (the translation reads operator calls: explain "
                "before "
                "fuse)");
          if (kids_.defined()) {
            closure_params(*e.as<Function>());
            break;
          }
          reject("a clause defines a closure");
        case ExprKind::If:
          reject("a clause branches (if)");
        case ExprKind::Match:
          reject("a clause has a nested match");
        case ExprKind::RefCreate:
          reject("a clause has an effect (ref)");
        case ExprKind::RefRead:
          reject("a clause has an effect (ref_read)");
        case ExprKind::RefWrite:
          reject("a clause has an effect (ref_write)");
        default:
          break;
      }
    });
    post_order_visit(rhs, [&](const Expr &e) {
      at_ = e.get();
      visit(e);
    });
    Val r = get(rhs);
    if (r.kind == Val::Kind::TailCall) {
      for (Val &f : next_state_.kind == Val::Kind::Tuple ? next_state_.fields : std::vector<Val>{})
        if (f.pending) f = vector(f, "the new state");
      if (next_state_.pending) next_state_ = vector(next_state_, "the new state");
      return r;
    }
    for (Val &f : r.fields)  // a tuple's
      if (f.pending) f = vector(f, "the result");
    return !r.pending ? r : vector(r, "the result");
  }

  // A closure of a rose node clause: one parameter is a child tree (a map's function), two are the
  // accumulator and one child's result (a fold's function); its body decides in closure().
  void closure_params(const Function &fn) {
    if (fn.params.size() == 1) {
      role_[fn.params[0]] = Val{Val::Kind::ChildTree, nullptr, {}, {}, nullptr, fn.params[0].get()};
    } else if (fn.params.size() == 2) {
      role_[fn.params[0]] = Val{Val::Kind::Acc, nullptr, {}, {}, nullptr, fn.params[0].get()};
      std::vector<Val> fields;
      for (size_t k = 0; k < f_.state_shapes.size(); ++k)
        fields.push_back(Val{Val::Kind::Vector,
                             child_field(f_, k, dsl::ChildSlot::Var, here()),
                             f_.state_shapes[k],
                             {},
                             fn.params[1].get()});
      role_[fn.params[1]] =
          f_.tuple_result ? Val{Val::Kind::Tuple, nullptr, {}, std::move(fields)} : fields[0];
    } else {
      reject(rose_msg::kClosure);
    }
  }

  Val closure(const Function &fn) {
    Val b = get(fn.body);
    if (fn.params.size() == 1 && b.kind == Val::Kind::SelfCall && b.binder == fn.params[0].get())
      return Val{Val::Kind::MapFn, nullptr, {}, {}};
    if (fn.params.size() == 2 && b.kind == Val::Kind::FoldBody && b.binder == fn.params[0].get() &&
        (!b.child || b.child == fn.params[1].get())) {
      b.kind = Val::Kind::FoldFn;
      return b;
    }
    reject(rose_msg::kClosure);
  }

  // `@map(fn (%k) { @f(%k, weights...) }, %kids)`: the children's results.
  Val map_call(const Call &c) {
    Val fn = get(c.args[0]), xs = get(c.args[1]);
    if (fn.kind != Val::Kind::MapFn)
      reject("the node clause maps something other than `fn (%k) { @f(%k, weights...) }` over a list");
    if (xs.kind != Val::Kind::Kids)
      reject(fmt::format("the node clause maps the function over something other than its children {}",
                         var_name(kids_)));
    if (mapped_) reject("the node clause maps the function over its children twice");
    mapped_ = true;
    return Val{Val::Kind::ChildResults, nullptr, {}, {}};
  }

  // `@foldl(fn (%acc, %c) { add(%acc, E) }, init, results)`: init + sum over the children of E.
  Val fold_call(const Call &c) {
    Val fn = get(c.args[0]), init = get(c.args[1]), xs = get(c.args[2]);
    if (fn.kind != Val::Kind::FoldFn)
      reject(
          "a fold's function is not `fn (%acc, %c) { add(%acc, E) }` with E an expression of one child's "
          "result");
    if (xs.kind != Val::Kind::ChildResults)
      reject(
          "@foldl folds something other than the children's results (the function mapped over its children)");
    dsl::ExprPtr sum_node = node(dsl::ExprAstKind::SumChildren, here(), {&fn.ast});
    sum_node->name = f_.prefix + "k";
    Ast sum = std::move(sum_node);
    if (init.kind == Val::Kind::Vector && init.zero && !init.child) {
      check_fold_length(init, fn);
      return bind(sum, init.shape, {});
    }
    Val v = vector(init, "@foldl's initial value");
    check_fold_length(v, fn);
    return bind(binary_ast(dsl::BinaryOp::Add, v.ast, sum, here()), v.shape, {&v});
  }

  void check_fold_length(const Val &init, const Val &e) {
    int64_t a = length(init.shape), b = length(e.shape);
    if (known(a) && known(b) && a != b)
      reject(fmt::format("a fold adds vectors of {} elements to an initial value of {}", b, a));
  }

  Val get(Expr e) {
    while (e.as<Var>() && let_value_.count(e)) e = let_value_.at(e);
    if (e.as<Var>()) {
      if (auto it = f_.weights.find(e); it != f_.weights.end()) return it->second;
      if (token_.defined() && e.same_as(token_)) return Val{Val::Kind::Token, nullptr, {}, {}};
      if ((left_.defined() && e.same_as(left_)) || (right_.defined() && e.same_as(right_)))
        return Val{Val::Kind::ChildTree, nullptr, {}, {}};
      if (auto it = role_.find(e); it != role_.end()) return it->second;
      if (kids_.defined() && e.same_as(kids_)) return Val{Val::Kind::Kids, nullptr, {}, {}};
      if (rest_.defined() && e.same_as(rest_)) return Val{Val::Kind::Rest, nullptr, {}, {}};
      if (rest_.defined() && e.same_as(f_.fn->params[f_.tree_param]))
        reject(fmt::format(
            "the Cons clause uses the whole list {}; only its rest {} may go to the recursive call",
            var_name(e), var_name(rest_)));
      if (node_token_.defined() && e.same_as(node_token_))
        reject(fmt::format(
            "the node clause uses {}, an internal node's token (grove's internal nodes have none)",
            var_name(e)));
      reject(fmt::format("a clause uses {}, which is neither a weight, the leaf's token nor a let",
                         var_name(e)));
    }
    if (e.as<GlobalVar>()) reject(fmt::format("a clause uses @{} as a value", e.as<GlobalVar>()->name));
    if (e.as<Op>()) reject(fmt::format("a clause uses the operator {} as a value", e.as<Op>()->name));
    if (e.as<Constructor>())
      reject(fmt::format("a clause builds an ADT value ({})", e.as<Constructor>()->name));
    auto it = memo_.find(e);
    GROVE_CHECK(it != memo_.end(), "a clause node was not translated before its use");
    return it->second;
  }

  // A vector operand: a computed vector or a rank-1 weight.
  Val vector(const Val &v, const std::string &op) {
    if (v.kind == Val::Kind::Vector && v.pending) {
      Val r = bind(v.pending, v.shape, {});
      r.zero = true;
      return r;
    }
    if (v.kind == Val::Kind::Vector && !v.ast)
      reject(fmt::format("{} takes zeros(...), which is translated only as a fold's initial value", op));
    if (v.kind == Val::Kind::Vector) return v;
    if (v.kind == Val::Kind::Weight && v.shape.size() == 1) return Val{Val::Kind::Vector, v.ast, v.shape, {}};
    if (v.kind == Val::Kind::Weight)
      reject(fmt::format("{} takes the rank-{} weight {}, where only vectors ([N] or [1, N]) are translated",
                         op, v.shape.size(), v.name));
    if (v.kind == Val::Kind::Token)
      reject(fmt::format("{} takes the leaf's token, which only take may index with", op));
    if (v.kind == Val::Kind::ChildTree)
      reject(fmt::format("{} takes a child tree, which only the recursive call may take", op));
    if (v.kind == Val::Kind::Tuple) reject(fmt::format("{} takes a tuple", op));
    if (v.kind == Val::Kind::Kids) reject(fmt::format("{} takes {}", op, rose_msg::kKids));
    if (v.kind == Val::Kind::ChildResults) reject(fmt::format("{} takes {}", op, rose_msg::kResults));
    if (v.kind == Val::Kind::Acc) reject(rose_msg::kAcc);
    if (v.kind == Val::Kind::SelfCall)
      reject(fmt::format("{} takes the recursive call's result, which only @map over the children may take",
                         op));
    if (v.kind == Val::Kind::FoldBody) reject(fmt::format("{} takes add(%acc, ...), a fold's step", op));
    if (v.kind == Val::Kind::Rest)
      reject(fmt::format("{} takes the rest of the list, which only the recursive call may take", op));
    if (v.kind == Val::Kind::TailCall)
      reject(fmt::format(
          "{} takes the recursive call's result; the step must end with the call itself (a tail call)", op));
    if (v.kind == Val::Kind::MapFn || v.kind == Val::Kind::FoldFn)
      reject(fmt::format("{} takes a closure", op));
    reject(fmt::format("{} takes only constants", op));
  }

  // The one child result the operands depend on (rejecting two different ones), or null.
  const ExprNode *child_of(const std::vector<const Val *> &from) {
    const ExprNode *child = nullptr;
    for (const Val *v : from) {
      if (!v->child) continue;
      if (child && child != v->child) reject("an expression combines the results of two folds' children");
      child = v->child;
    }
    return child;
  }

  // A computed vector: a temporary, or an expression inside the fold when it depends on a fold's
  // child (temporaries are per node; the fold's expression is per child, inside `sum(k in children)`).
  Val bind(const Ast &e, Shape shape, std::initializer_list<const Val *> from) {
    return bind_all(e, std::move(shape), std::vector<const Val *>(from));
  }
  Val bind_all(const Ast &e, Shape shape, const std::vector<const Val *> &from) {
    if (const ExprNode *child = child_of(from)) {
      Val r{Val::Kind::Vector, e, std::move(shape), {}, child};
      r.index = false;
      return r;
    }
    std::string name = fmt::format("{}t{}", f_.prefix, temps_++);
    body_.push_back(dsl::StatementAst{name, here(), clone(*e)});
    return Val{Val::Kind::Vector, name_ast(name, here()), std::move(shape), {}};
  }

  // The operand of a reshape: a vector, or zeros not yet written (they stay unwritten).
  Val same_elements(const Val &v, const std::string &op) {
    return v.kind == Val::Kind::Vector && v.pending ? v : vector(v, op);
  }

  // `x` with another shape (the same elements).
  static Val reshaped(Val x, Shape shape) {
    x.shape = std::move(shape);
    return x;
  }

  void visit(const Expr &e) {
    switch (e->kind) {
      case ExprKind::Constant: {
        const NDArray &d = e.as<Constant>()->data;
        if (d.ndim() != 0 || !is_float(d.dtype()))
          reject(fmt::format(
              "a clause has a constant of type Tensor[{}, {}]; only rank-0 float constants are translated",
              shape_to_string(d.shape()), to_string(d.dtype())));
        double x = d.element_as_double(0);
        if (!std::isfinite(x)) reject("a clause has a constant that is not finite");
        Ast magnitude = number_ast(std::fabs(x), here());
        memo_[e] = Val{Val::Kind::Scalar, x < 0 ? neg_ast(magnitude, here()) : magnitude, {}, {}};
        memo_[e].zero = x == 0.0;
        return;
      }
      case ExprKind::Tuple: {
        Val t{Val::Kind::Tuple, nullptr, {}, {}};
        for (const Expr &f : e.as<Tuple>()->fields) t.fields.push_back(get(f));
        memo_[e] = t;
        return;
      }
      case ExprKind::TupleGetItem: {
        const auto *g = e.as<TupleGetItem>();
        Val t = get(g->tuple);
        if (t.kind == Val::Kind::TailCall || t.kind == Val::Kind::Rest)
          vector(t, "a projection");  // rejects, saying what it projects
        if (t.kind == Val::Kind::SelfCall)
          reject("the map's function projects the recursive call's result; it must return the call itself");
        if (t.kind == Val::Kind::Acc) reject(rose_msg::kAcc);
        if (t.kind == Val::Kind::ChildResults || t.kind == Val::Kind::Kids || t.kind == Val::Kind::FoldBody)
          vector(t, "a projection");  // rejects, saying what it projects
        GROVE_CHECK(
            t.kind == Val::Kind::Tuple && g->index >= 0 && g->index < static_cast<int>(t.fields.size()),
            "a typed projection of a non-tuple");
        memo_[e] = t.fields[g->index];
        return;
      }
      case ExprKind::Let:
        memo_[e] = get(e.as<Let>()->body);
        return;
      case ExprKind::Call:
        memo_[e] = call(*e.as<Call>());
        return;
      case ExprKind::Function:
        memo_[e] = closure(*e.as<Function>());
        return;
      default:
        return;  // variables, globals, ops and constructors are resolved where they are used
    }
  }

  Val self_call(const Call &c) {
    if (rest_.defined()) return tail_call(c);
    if (leaf_) reject("the leaf clause calls the function itself");
    const auto &params = f_.fn->params;
    GROVE_CHECK(c.args.size() == params.size(), "a typed call with the wrong number of arguments");
    const Expr &tree = c.args[f_.tree_param];
    check_weights_passed_through(c);
    if (kids_.defined()) {
      auto role = role_.find(tree);
      if (role == role_.end() || role->second.kind != Val::Kind::ChildTree)
        reject(fmt::format(
            "the node clause calls the function itself on something other than one child of {}, inside the "
            "function @map applies to {}",
            var_name(kids_), var_name(kids_)));
      return Val{Val::Kind::SelfCall, nullptr, {}, {}, nullptr, role->second.binder};
    }
    bool left = left_.defined() && tree.same_as(left_);
    bool right = right_.defined() && tree.same_as(right_);
    if (!left && !right)
      reject("the node clause calls the function itself on something other than a child tree");
    bool &done = left ? called_left_ : called_right_;
    if (done) reject(fmt::format("the node clause calls the function itself twice on {}", var_name(tree)));
    done = true;
    const dsl::ChildSlot side = left ? dsl::ChildSlot::Left : dsl::ChildSlot::Right;
    std::vector<Val> fields;
    for (size_t k = 0; k < f_.state_shapes.size(); ++k)
      fields.push_back(Val{Val::Kind::Vector, child_field(f_, k, side, here()), f_.state_shapes[k], {}});
    if (!f_.tuple_result) return fields[0];
    return Val{Val::Kind::Tuple, nullptr, {}, std::move(fields)};
  }

  // A fold's `@f(%rest, new_state, weights...)`: the rest of the list in the list's place, every
  // weight passed through in its own position; the new state is recorded.
  // Every argument of a recursive call but the tree (the list) and a fold's state is the function's
  // own parameter in the same position: the weights are loop-invariant.
  void check_weights_passed_through(const Call &c) {
    const auto &params = f_.fn->params;
    for (size_t i = 0; i < params.size(); ++i) {
      if (static_cast<int>(i) == f_.tree_param || static_cast<int>(i) == f_.state_param ||
          c.args[i].same_as(params[i]))
        continue;
      reject(fmt::format(
          "the recursive call passes a changed argument for {} (the weights must be passed through "
          "unchanged)",
          var_name(params[i])));
    }
  }

  Val tail_call(const Call &c) {
    const auto &params = f_.fn->params;
    GROVE_CHECK(c.args.size() == params.size(), "a typed call with the wrong number of arguments");
    if (tail_called_) reject("the Cons clause calls the function itself twice");
    tail_called_ = true;
    if (get(c.args[f_.tree_param]).kind != Val::Kind::Rest)
      reject(fmt::format("the recursive call takes something other than the rest of the list {} as its list",
                         var_name(rest_)));
    check_weights_passed_through(c);
    next_state_ = get(c.args[f_.state_param]);
    return Val{Val::Kind::TailCall, nullptr, {}, {}};
  }

  Val call(const Call &c) {
    if (const auto *g = c.op.as<GlobalVar>()) {
      if (g->name == f_.name) return self_call(c);
      if (kids_.defined() && c.args.size() == 2 && is_list_map(*f_.m, g->name)) return map_call(c);
      if (kids_.defined() && c.args.size() == 3 && is_list_foldl(*f_.m, g->name)) return fold_call(c);
      if (kids_.defined())
        reject(fmt::format(
            "a clause calls @{}; only the function itself (mapped over the children with the standard @map), "
            "the standard @foldl over their results and operators may be called",
            g->name));
      reject(
          fmt::format("a clause calls @{}; only the function itself and operators may be called", g->name));
    }
    if (const auto *k = c.op.as<Constructor>())
      reject(fmt::format("a clause builds an ADT value ({})", k->name));
    const auto *op = c.op.as<Op>();
    if (!op) reject("a clause calls a closure");
    const std::string &name = op->name;
    std::vector<Val> a;
    for (const Expr &arg : c.args) a.push_back(get(arg));

    // The model's function of each elementwise operator (none: negative, `-x`).
    static const std::map<std::string, std::optional<dsl::Function>> kUnary = {
        {"sigmoid", dsl::Function::Sigmoid},
        {"tanh", dsl::Function::Tanh},
        {"exp", dsl::Function::Exp},
        {"nn.relu", dsl::Function::Relu},
        {"negative", std::nullopt}};
    static const std::map<std::string, dsl::BinaryOp> kBinary = {{"add", dsl::BinaryOp::Add},
                                                                 {"subtract", dsl::BinaryOp::Sub},
                                                                 {"multiply", dsl::BinaryOp::Mul},
                                                                 {"divide", dsl::BinaryOp::Div},
                                                                 {"nn.bias_add", dsl::BinaryOp::Add}};
    if (auto u = kUnary.find(name); u != kUnary.end()) {
      Val x = vector(a[0], name);
      return bind(u->second ? call_ast(*u->second, x.ast, here()) : neg_ast(x.ast, here()), x.shape, {&x});
    }
    if (auto b = kBinary.find(name); b != kBinary.end()) return binary(c, name, b->second, a[0], a[1]);
    if (name == "take") return take(c, a);
    if (name == "nn.dense") return dense(a);
    if ((name == "expand_dims" || name == "squeeze" || name == "reshape") && !f_.one_row)
      reject(fmt::format(
          "a step of several rows (sequences) uses {}, which would mix its rows; only row-wise operators are "
          "translated",
          name));
    if (name == "expand_dims") {
      Val x = same_elements(a[0], name);
      const ExpandDimsAttrs e = typed_attrs(c, expand_dims_attrs);
      if (x.shape.size() != 1 || (e.axis != 0 && e.axis != -2) || e.num_newaxis != 1)
        reject("expand_dims is translated only from [N] to [1, N] (axis=0)");
      return reshaped(x, {1, x.shape[0]});
    }
    if (name == "squeeze") {
      Val x = same_elements(a[0], name);
      const std::optional<std::vector<int64_t>> axis = typed_attrs(c, squeeze_attrs).axis;
      bool axis0 = !axis || *axis == std::vector<int64_t>{0};
      if (x.shape.size() != 2 || !axis0) reject("squeeze is translated only from [1, N] to [N]");
      return reshaped(x, {x.shape[1]});
    }
    if (name == "reshape") return reshape(c, same_elements(a[0], name));
    if (name == "split") return split(c, vector(a[0], name));
    if (name == "concatenate") return concatenate(c, a[0]);
    if (name == "zeros" && kids_.defined()) return zeros(c);
    reject(
        fmt::format("a clause uses the operator {}, which the translation to grove does not support", name));
  }

  Val binary(const Call &c, const std::string &name, dsl::BinaryOp sym, const Val &x, const Val &y) {
    if (x.kind == Val::Kind::Acc || y.kind == Val::Kind::Acc) {
      // A fold's step add(%acc, E) (or add(E, %acc)): E is summed over the children.
      if (name != "add" || (x.kind == Val::Kind::Acc && y.kind == Val::Kind::Acc)) reject(rose_msg::kAcc);
      const Val &acc = x.kind == Val::Kind::Acc ? x : y;
      Val e = vector(x.kind == Val::Kind::Acc ? y : x, "a fold's step");
      e.kind = Val::Kind::FoldBody;
      e.binder = acc.binder;
      return e;
    }
    bool xs = x.kind == Val::Kind::Scalar, ys = y.kind == Val::Kind::Scalar;
    if (xs && ys) return Val{Val::Kind::Scalar, binary_ast(sym, x.ast, y.ast, here()), {}, {}};
    if (xs || ys) {
      Val v = vector(xs ? y : x, name);
      Ast text = xs ? binary_ast(sym, x.ast, v.ast, here()) : binary_ast(sym, v.ast, y.ast, here());
      if (name == "multiply" && (xs ? x : y).zero && !v.child) {
        // Zeros, most likely a fold's initial value: written only if something else reads it.
        Val r{Val::Kind::Vector, nullptr, v.shape, {}};
        r.zero = true;
        r.pending = text;
        return r;
      }
      return bind(text, v.shape, {&v});
    }
    Val u = vector(x, name), v = vector(y, name);
    if (name == "nn.bias_add") {
      const int64_t axis = typed_attrs(c, bias_add_attrs).axis;
      if (v.shape.size() != 1 || !(axis == -1 || axis == static_cast<int64_t>(u.shape.size()) - 1))
        reject("nn.bias_add is translated only along the vector's axis");
    }
    int64_t m = length(u.shape), n = length(v.shape);
    if (known(m) && known(n) && m != n)
      reject(fmt::format("{} broadcasts a vector of {} elements against one of {}", name, m, n));
    Shape shape = u.shape.size() >= v.shape.size() ? u.shape : v.shape;
    if (!known(shape.back())) shape.back() = known(m) ? m : n;
    return bind(binary_ast(sym, u.ast, v.ast, here()), shape, {&u, &v});
  }

  Val take(const Call &c, const std::vector<Val> &a) {
    const TakeAttrs t = typed_attrs(c, take_attrs);
    if (a[0].kind != Val::Kind::Weight || a[0].shape.size() != 2 || a[1].kind != Val::Kind::Token ||
        t.axis != std::optional<int64_t>(0) || t.batch_dims != 0)
      reject("take is translated only as take(weight, token, axis=0) of a rank-2 weight by the leaf's token");
    return bind(token_ast(a[0].name, here()), {a[0].shape[1]}, {});
  }

  Val dense(const std::vector<Val> &a) {
    Val x = vector(a[0], "nn.dense");
    const Val &w = a[1];
    if (w.kind != Val::Kind::Weight || w.shape.size() != 2)
      reject("nn.dense is translated only with a rank-2 weight as its second argument");
    int64_t k = length(x.shape);
    if (known(k) && known(w.shape[1]) && k != w.shape[1])
      reject(fmt::format("nn.dense multiplies {} elements by the weight {} of {} columns", k, w.name,
                         w.shape[1]));
    if (x.child && !x.index)
      reject(
          fmt::format("a fold multiplies the weight {} by a vector computed from the child; inside sum(k in "
                      "children) grove "
                      "multiplies only a child's states, their slices and concatenations",
                      w.name));
    Shape shape = x.shape;
    shape.back() = w.shape[0];
    return bind(binary_ast(dsl::BinaryOp::MatMul, w.ast, x.ast, here()), shape, {&x});
  }

  // zeros(shape=[N] or [1, N]): only a fold's initial value (it has no expression).
  Val zeros(const Call &c) {
    const Shape s = typed_attrs(c, init_attrs).shape;
    if (s.empty() || s.size() > 2 || (s.size() == 2 && s[0] != 1) || s.back() < 1)
      reject("zeros is translated only with shape [N] or [1, N]");
    Val r{Val::Kind::Vector, nullptr, s, {}};
    r.zero = true;
    return r;
  }

  Val reshape(const Call &c, const Val &x) {
    const std::vector<int64_t> ns = typed_attrs(c, reshape_attrs).newshape;
    int64_t n = length(x.shape);
    auto fits = [&](int64_t d) { return d == -1 || d == n; };
    if (ns.size() == 1 && fits(ns[0])) return reshaped(x, {n});
    if (ns.size() == 2 && ns[0] == 1 && fits(ns[1])) return reshaped(x, {1, n});
    reject("reshape is translated only between [N] and [1, N]");
  }

  // Whether `axis` (as written) is the last of `x`'s.
  static bool last_axis(int64_t axis, const Val &x) {
    return axis == -1 || axis == static_cast<int64_t>(x.shape.size()) - 1;
  }

  Val split(const Call &c, const Val &x) {
    const SplitAttrs attrs = typed_attrs(c, split_attrs);
    if (!last_axis(attrs.axis, x)) reject("split is translated only along the vector's axis");
    int64_t n = length(x.shape);
    std::vector<int64_t> bounds{0};
    if (const std::optional<int64_t> sections = attrs.sections) {
      if (known(n) && n % *sections != 0)
        reject(fmt::format("split cuts {} elements into {} sections", n, *sections));
      for (int64_t s = 1; s <= *sections; ++s) bounds.push_back(known(n) ? n / *sections * s : kAnyDim);
    } else {
      bounds.insert(bounds.end(), attrs.indices.begin(), attrs.indices.end());
      bounds.push_back(n);
    }
    Val t{Val::Kind::Tuple, nullptr, {}, {}};
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      int64_t lo = bounds[s], hi = bounds[s + 1];
      Shape shape = x.shape;
      shape.back() = known(lo) && known(hi) ? hi - lo : kAnyDim;
      if (known(lo) && known(hi) && hi <= lo) reject("split makes an empty section");
      Val part = reshaped(x, shape);
      part.ast = slice_ast(x.ast, lo, hi, here());
      part.zero = false;
      t.fields.push_back(std::move(part));
    }
    return t;
  }

  Val concatenate(const Call &c, const Val &t) {
    if (t.kind != Val::Kind::Tuple || t.fields.empty()) reject("concatenate's argument is not a tuple");
    std::vector<Val> parts;
    for (const Val &f : t.fields) parts.push_back(vector(f, "concatenate"));
    if (!last_axis(typed_attrs(c, concatenate_attrs).axis, parts[0]))
      reject("concatenate is translated only along the vectors' axis");
    Shape shape = parts[0].shape;
    dsl::ExprPtr joined = node(dsl::ExprAstKind::Concat, here());
    int64_t total = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].shape.size() != shape.size()) reject("concatenate joins vectors of different ranks");
      int64_t n = length(parts[i].shape);
      total = known(total) && known(n) ? total + n : kAnyDim;
      joined->operands.push_back(clone(*parts[i].ast));
    }
    shape.back() = total;
    std::vector<const Val *> from;
    bool index = true;
    for (const Val &p : parts) {
      from.push_back(&p);
      index = index && p.index;
    }
    Val r = bind_all(Ast(std::move(joined)), shape, from);
    if (r.child) r.index = index;  // a concatenation of index expressions is one
    return r;
  }

  const Function_ &f_;
  bool leaf_;
  Expr token_, left_, right_;
  Expr kids_, node_token_;  // a rose tree's node clause
  Expr rest_;               // a fold's Cons clause
  Val next_state_;
  bool tail_called_ = false;
  std::unordered_map<Expr, Val, ExprHash, ExprEqual> role_;  // its closures' parameters
  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> let_value_;
  std::unordered_map<Expr, Val, ExprHash, ExprEqual> memo_;
  std::vector<dsl::StatementAst> body_;
  int temps_ = 0;
  bool called_left_ = false, called_right_ = false;
  bool mapped_ = false;
  const ExprNode *at_ = nullptr;  // the expression being translated

  // Where the node being built comes from: the Relay expression being translated.
  Loc here() const { return loc_of(at_ != nullptr ? at_->span : f_.fn->span); }
};

inline const Type &type_of(const Expr &v) {
  if (v->checked_type.defined()) return v->checked_type;
  return v.as<Var>()->type_annotation;
}

// The variables a clause's constructor pattern binds per field (null for `_`).
inline std::vector<Expr> field_vars(const Pattern &p) {
  std::vector<Expr> vars;
  for (const Pattern &f : p->patterns) {
    if (f->kind == PatternKind::Var)
      vars.push_back(f->var);
    else if (f->kind == PatternKind::Wildcard)
      vars.push_back(Expr());
    else
      reject_at("a clause's pattern is nested; only variables and _ are taken as the constructor's fields",
                f->span);
  }
  return vars;
}

// The result's tensors; a rank-1 weight returned as it is counts as a vector.
inline std::vector<Val> result_fields(const Val &r) {
  std::vector<Val> fields = r.kind == Val::Kind::Tuple ? r.fields : std::vector<Val>{r};
  for (Val &f : fields)
    if (f.kind == Val::Kind::Weight && f.shape.size() == 1) f.kind = Val::Kind::Vector;
  return fields;
}

// Whether a Relay parameter's name can name the model's tensor: a model-language identifier
// (frontend/dsl/Lexer.h) that is none of the IR's own index variables (`n`, `i0`..., `k0`...), which
// the printed ILIR would confuse it with.
inline bool identifier(const std::string &s) {
  if (!dsl::is_identifier(s) || s == "n") return false;
  return !((s[0] == 'i' || s[0] == 'k') && s.size() > 1 &&
           s.find_first_not_of("0123456789", 1) == std::string::npos);
}

// The typed global `name` of `m` to translate (Recognition took it: it is not polymorphic).
inline Function_ function_to_translate(const Module &m, const std::string &name) {
  const Expr *fe = m.find_function(name);
  GROVE_CHECK(fe && fe->as<Function>(), "no global function @{}", name);
  Function_ f;
  f.m = &m;
  f.fn = fe->as<Function>();
  f.name = name;
  GROVE_CHECK(f.fn->type_params.empty(), "translating the polymorphic @{}", name);
  return f;
}

// A dimension: the number, or the size variable `symbol` when it is not known (a sketch's).
inline dsl::SizeAst size_of(int64_t d, const std::string &symbol, Loc at) {
  if (known(d)) return size_ast(d, at);
  return dsl::SizeAst{at, dsl::Size::variable(symbol), {{symbol, at}}};
}

inline dsl::TensorDeclAst tensor_decl(std::string name, ilir::TensorKind kind, std::vector<dsl::SizeAst> dims,
                                      Loc at) {
  return dsl::TensorDeclAst{std::move(name), at, kind, std::move(dims), {}};
}

// The model's name for global `function`: `relay_` and its name, other characters as `_`.
inline std::string model_name(const std::string &function) {
  std::string out = "relay_";
  for (char ch : function) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

// The states holding a function's result tensors of these lengths, and the model's output. One
// tensor: the state `<p>s0`. Several, `pack`ed and of known lengths: one state `<p>all` holding them
// one after another (field k from offsets[k]), which the children read slices of. Otherwise: the
// states `<p>s0`, `<p>s1`, ... and one more, `<p>all`, their concatenation, assigned at the end of
// each case so that one run returns them all.
struct ResultStates {
  std::string prefix;
  std::vector<int64_t> offsets;  // packed: each field's first element in <p>all; else empty
  std::vector<dsl::TensorDeclAst> decls;
  std::string output;
  // The end of a case: the assignment of its result fields to the states, at `at`.
  void assign(const std::vector<Val> &fields, Loc at, std::vector<dsl::StatementAst> &body) const {
    auto all = [&](std::vector<Ast> parts) {
      dsl::ExprPtr joined = node(dsl::ExprAstKind::Concat, at);
      for (const Ast &part : parts) joined->operands.push_back(clone(*part));
      body.push_back(dsl::StatementAst{prefix + "all", at, std::move(joined)});
    };
    std::vector<Ast> parts;
    if (!offsets.empty()) {
      for (const Val &f : fields) parts.push_back(f.ast);
      all(parts);
      return;
    }
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string state = fmt::format("{}s{}", prefix, k);
      body.push_back(dsl::StatementAst{state, at, clone(*fields[k].ast)});
      parts.push_back(name_ast(state, at));
    }
    if (fields.size() > 1) all(parts);
  }
};
inline ResultStates declare_result_states(const std::string &prefix, const std::vector<int64_t> &lengths,
                                          bool pack, Loc at) {
  ResultStates r{prefix, {}, {}, prefix + "s0"};
  int64_t total = 0;
  for (int64_t len : lengths) total = known(total) && known(len) ? total + len : kAnyDim;
  if (lengths.size() > 1) r.output = prefix + "all";
  if (pack && lengths.size() > 1 && known(total)) {
    for (int64_t offset = 0; int64_t len : lengths) r.offsets.push_back(offset), offset += len;
    r.decls.push_back(tensor_decl(r.output, ilir::TensorKind::State, {size_ast(total, at)}, at));
    return r;
  }
  for (size_t k = 0; k < lengths.size(); ++k)
    r.decls.push_back(tensor_decl(fmt::format("{}s{}", prefix, k), ilir::TensorKind::State,
                                  {size_of(lengths[k], fmt::format("{}h{}", prefix, k), at)}, at));
  if (lengths.size() > 1)
    r.decls.push_back(tensor_decl(r.output, ilir::TensorKind::State, {size_of(total, prefix + "h", at)}, at));
  return r;
}

// A prefix no parameter name starts with, for the states, temporaries and renamed weights.
inline std::string fresh_prefix(const std::vector<Expr> &params) {
  std::string prefix = "g_";
  for (bool clash = true; clash;) {
    clash = false;
    for (const Expr &p : params)
      if (p.as<Var>()->name_hint.rfind(prefix, 0) == 0) clash = true;
    if (clash) prefix.insert(1, "_");
  }
  return prefix;
}

// Every parameter not in `skip` is a weight (Recognition checked they are float32 tensors of rank 1
// or 2), named by its own name when that can name a tensor, else `<prefix>w<i>`. Records each in
// f.weights and appends its name to `names`; returns the `param` declarations (at the parameters),
// with `weight_shapes` (in order) or else the types' shapes.
inline std::vector<dsl::TensorDeclAst> declare_weights(Function_ &f, const std::vector<int> &skip,
                                                       const std::vector<Shape> *weight_shapes,
                                                       std::vector<std::string> &names) {
  const auto &params = f.fn->params;
  std::vector<dsl::TensorDeclAst> decls;
  std::set<std::string> used;
  size_t w = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), static_cast<int>(i)) != skip.end()) continue;
    const auto *t = type_of(params[i]).as<TensorType>();
    GROVE_CHECK(t != nullptr, "a recognised function's weight {} is not a tensor", var_name(params[i]));
    Shape shape = weight_shapes ? weight_shapes->at(w) : t->shape;
    std::string pname = params[i].as<Var>()->name_hint;
    if (!identifier(pname) || used.count(pname)) pname = fmt::format("{}w{}", f.prefix, w);
    used.insert(pname);
    names.push_back(pname);
    const Loc at = loc_of(params[i]->span);
    Val weight{Val::Kind::Weight, name_ast(pname, at), shape, {}};
    weight.name = pname;
    f.weights[params[i]] = weight;
    std::vector<dsl::SizeAst> dims;
    for (int64_t d : shape) dims.push_back(size_ast(d, at));
    decls.push_back(tensor_decl(pname, ilir::TensorKind::Param, std::move(dims), at));
    ++w;
  }
  return decls;
}

}  // namespace grove::relay::tree_to_dsl::detail
