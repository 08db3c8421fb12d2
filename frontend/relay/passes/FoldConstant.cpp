#include "frontend/relay/passes/FoldConstant.h"

#include <string_view>

#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// A Constant, or a tuple literal of them.
bool is_constant(const Expr &e) {
  if (e.as<Constant>()) return true;
  const auto *t = e.as<Tuple>();
  if (!t) return false;
  for (const Expr &f : t->fields)
    if (!is_constant(f)) return false;
  return true;
}

// An expression whose evaluation has no effect and cannot fail, so dropping it changes nothing.
bool is_plain_value(const Expr &e) {
  switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
    case ExprKind::Function:
      return true;
    case ExprKind::Tuple:
      for (const Expr &f : e.as<Tuple>()->fields)
        if (!is_plain_value(f)) return false;
      return true;
    default:
      return false;
  }
}

Type type_of_constant(const Constant *c) { return TensorType::make(c->data.shape(), c->data.dtype()); }

// Whether `a` has the dtype and every known dimension of `t`.
bool matches(const NDArray &a, const TensorType *t) {
  if (a.dtype() != t->dtype || a.shape().size() != t->shape.size()) return false;
  for (size_t i = 0; i < t->shape.size(); ++i)
    if (t->shape[i] != kAnyDim && t->shape[i] != a.shape()[i]) return false;
  return true;
}

// Ops TVM leaves alone: folding them only materializes a (possibly large) constant.
bool never_fold(std::string_view name) {
  return name == "zeros_like" || name == "ones_like" || name == "full_like" || name == "full";
}

// The constant value of the op call `e`, or `e` itself when it cannot be folded:
//   1. the callee is an op with a kernel, the call has arguments, each a Constant or a tuple literal
//      of Constants (passed to the kernel field by field, as the interpreter does);
//   2. the op's type relation accepts the argument types (an ill-typed call is left for type
//      inference to report);
//   3. the kernel runs without error (one that fails is left for run time to report), and its
//      results have the relation's dtypes and shapes.
Expr fold_call(const Expr &e) {
  const auto *call = e.as<Call>();
  const auto *op = call->op.as<Op>();
  if (!op || !op->def || !op->def->kernel || !op->def->relation || call->args.empty() || never_fold(op->name))
    return e;
  std::vector<Type> arg_types;
  std::vector<NDArray> flat;
  for (const Expr &a : call->args) {
    if (const auto *c = a.as<Constant>()) {
      arg_types.push_back(type_of_constant(c));
      flat.push_back(c->data);
      continue;
    }
    const auto *t = a.as<Tuple>();
    if (!t) return e;
    std::vector<Type> fields;
    for (const Expr &f : t->fields) {
      const auto *c = f.as<Constant>();
      if (!c) return e;
      fields.push_back(type_of_constant(c));
      flat.push_back(c->data);
    }
    arg_types.push_back(TupleType::make(std::move(fields)));
  }
  Type result_type;
  std::vector<NDArray> results;
  try {
    result_type = op->def->relation(arg_types, call->attrs);
    if (!result_type.defined()) return e;
    results = op->def->kernel(flat, call->attrs);
  } catch (const OpError &) {
    return e;
  }
  if (const auto *tt = result_type.as<TensorType>()) {
    GROVE_CHECK(results.size() == 1 && matches(results[0], tt),
                "the kernel of {} disagrees with its type relation", op->name);
    return Constant::make(results[0], e->span);
  }
  const auto *tuple_type = result_type.as<TupleType>();
  if (!tuple_type) return e;
  GROVE_CHECK(results.size() == tuple_type->fields.size(),
              "the kernel of {} returned {} results for {} fields", op->name, results.size(),
              tuple_type->fields.size());
  std::vector<Expr> fields;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto *ft = tuple_type->fields[i].as<TensorType>();
    GROVE_CHECK(ft && matches(results[i], ft), "the kernel of {} disagrees with its type relation", op->name);
    fields.push_back(Constant::make(results[i], e->span));
  }
  return Tuple::make(std::move(fields), e->span);
}

class Folder : public LetMutator {
 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    switch (post->kind) {
      case ExprKind::Call:
        return fold_call(post);
      case ExprKind::TupleGetItem: {
        const auto *g = post.as<TupleGetItem>();
        const auto *t = g->tuple.as<Tuple>();
        // The other fields are dropped, so they must be plain values.
        if (t && g->index >= 0 && static_cast<size_t>(g->index) < t->fields.size() &&
            is_plain_value(g->tuple))
          return t->fields[g->index];
        return post;
      }
      case ExprKind::If: {
        const auto *i = post.as<If>();
        const auto *c = i->cond.as<Constant>();
        if (c && c->data.ndim() == 0 && c->data.defined())
          return c->data.element_as_int(0) != 0 ? i->then_branch : i->else_branch;
        return post;
      }
      default:
        return post;
    }
  }
  std::optional<Expr> bind(const Let *, const Expr &value) override {
    if (is_constant(value)) return value;
    return std::nullopt;
  }
};

}  // namespace

Module fold_constant(const Module &module) {
  return map_functions(module, [](const std::string &, const Expr &fn) { return Folder().mutate(fn); });
}

}  // namespace grove::relay
