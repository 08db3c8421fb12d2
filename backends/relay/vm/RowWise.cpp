#include "backends/relay/vm/RowWise.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/Reduce.h"

namespace grove::relay::vm {

namespace {

// Every tensor of `t` (tuples walked) has rank >= 1 and a leading dimension of 1.
bool leading_one(const Type &t) {
  if (const auto *tuple = t.as<TupleType>()) {
    for (const Type &f : tuple->fields)
      if (!leading_one(f)) return false;
    return true;
  }
  const auto *tensor = t.as<TensorType>();
  return tensor != nullptr && !tensor->shape.empty() && tensor->shape[0] == 1;
}

// `e`'s type when it is a tensor's, else null.
const TensorType *tensor_type(const Expr &e) {
  return e->checked_type.defined() ? e->checked_type.as<TensorType>() : nullptr;
}

int64_t rank_of(const Expr &e) {
  const TensorType *t = tensor_type(e);
  return t != nullptr ? static_cast<int64_t>(t->shape.size()) : -1;
}

// `axis` (TVM's default `fallback` when absent) is an axis other than 0 of a rank-`rank` tensor
// (OpError when it is out of range or not an integer, as below).
bool axis_not_batch(const Attrs &attrs, int64_t fallback, int64_t rank) {
  return rank >= 1 && axis_attr(attrs, fallback, rank) != 0;
}

// The same for a typed attribute's `axis`, as written.
bool not_batch(int64_t axis, int64_t rank) { return rank >= 1 && normalize_axis(axis, rank) != 0; }

// Reductions that leave axis 0 alone (ops/Reduce.h reads which axes are reduced).
bool reduces_within_rows(const Attrs &attrs, const Expr &x) {
  const TensorType *t = tensor_type(x);
  return t != nullptr && !t->shape.empty() && !plan_reduce(t->shape, reduce_attrs(attrs)).reduced[0];
}

// Operators whose elementwise or broadcast pattern hides a shape: their result's rows are not their
// operands' rows.
bool reshapes(const std::string &name, const Attrs &attrs) {
  static const std::unordered_set<std::string> kShaping = {
      "expand_dims", "broadcast_to", "reshape", "squeeze", "full", "zeros", "ones"};
  return kShaping.count(name) != 0 || attrs.has("axis") || attrs.has("shape") || attrs.has("newshape") ||
         attrs.has("axes");
}

class RowCheck {
 public:
  RowCheck(const KernelOf &kernel_of, std::unordered_map<const ExprNode *, const Function *> kernels)
      : kernel_of_(kernel_of), kernels_(std::move(kernels)) {}

  void mark_rows(const Expr &var) { memo_[var.get()] = true; }

  // Whether `e` depends on the rows (nullopt: it does not compute them apart).
  std::optional<bool> visit(const Expr &e) {
    if (auto found = memo_.find(e.get()); found != memo_.end()) return found->second;
    std::optional<bool> r = compute(e);
    // (A let's type is its body's, checked there: the lets moved around a rest are not typed.)
    if (r && *r && e->kind != ExprKind::Let && (!e->checked_type.defined() || !leading_one(e->checked_type)))
      r = std::nullopt;
    if (r) memo_[e.get()] = *r;
    return r;
  }

 private:
  std::optional<bool> compute(const Expr &e) {
    switch (e->kind) {
      case ExprKind::Var:
        return false;  // bound outside: a weight (the rows' variables are marked)
      case ExprKind::Constant:
        return false;
      case ExprKind::Let: {
        Expr cur = e;
        while (const auto *let = cur.as<Let>()) {
          const auto *fn = let->value.as<Function>();
          if (fn != nullptr && fn->has_attr(attr::kPrimitive)) {
            kernels_[let->var.get()] = fn;
          } else {
            std::optional<bool> v = visit(let->value);
            if (!v) return std::nullopt;
            memo_[let->var.get()] = *v;
          }
          cur = let->body;
        }
        return visit(cur);
      }
      case ExprKind::Tuple: {
        bool rows = false;
        for (const Expr &f : e.as<Tuple>()->fields) {
          std::optional<bool> v = visit(f);
          if (!v) return std::nullopt;
          rows = rows || *v;
        }
        return rows;
      }
      case ExprKind::TupleGetItem:
        return visit(e.as<TupleGetItem>()->tuple);
      case ExprKind::Call:
        return call(*e.as<Call>());
      default:
        return std::nullopt;  // closures, branches, matches, effects, globals as values
    }
  }

  std::optional<bool> call(const Call &c) {
    std::vector<bool> rows;
    bool any = false;
    for (const Expr &a : c.args) {
      std::optional<bool> v = visit(a);
      if (!v) return std::nullopt;
      rows.push_back(*v);
      any = any || *v;
    }
    if (!any) return false;  // computed from the weights alone, once
    if (const auto *op = c.op.as<Op>()) {
      bool apart = false;
      try {
        apart = op_computes_rows_apart(c, op->name, rows);
      } catch (const OpError &) {  // an attribute of the wrong kind: not one this test knows
        apart = false;
      }
      if (apart) return true;
      return std::nullopt;
    }
    const Function *kernel = nullptr;
    if (const auto *fn = c.op.as<Function>(); fn != nullptr && fn->has_attr(attr::kPrimitive)) kernel = fn;
    if (auto found = kernels_.find(c.op.get()); kernel == nullptr && found != kernels_.end())
      kernel = found->second;
    if (kernel == nullptr) kernel = kernel_of_(c.op);
    if (kernel == nullptr || kernel->params.size() != c.args.size()) return std::nullopt;
    RowCheck inner(kernel_of_, {});
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i]) inner.mark_rows(kernel->params[i]);
    std::optional<bool> v = inner.visit(kernel->body);
    if (!v) return std::nullopt;
    return true;
  }

  bool op_computes_rows_apart(const Call &c, const std::string &name, const std::vector<bool> &rows) {
    const int64_t rank = rank_of(c.args[0]);
    if (name == "nn.dense") return rows[0] && !rows[1];
    if (name == "nn.bias_add") return rows[0] && !rows[1] && not_batch(bias_add_attrs(c.attrs).axis, rank);
    if (name == "nn.softmax") return axis_not_batch(c.attrs, -1, rank);
    if (name == "nn.layer_norm") {
      for (size_t i = 1; i < rows.size(); ++i)
        if (rows[i]) return false;
      return axis_not_batch(c.attrs, -1, rank);
    }
    if (name == "split") return not_batch(split_attrs(c.attrs).axis, rank);
    if (name == "concatenate") {
      // Every part is rows (a weight's row would be concatenated once, not per row).
      const auto *parts = c.args[0].as<Tuple>();
      if (parts == nullptr || parts->fields.empty()) return false;
      for (const Expr &f : parts->fields)
        if (!memo_.count(f.get()) || !memo_.at(f.get())) return false;
      return not_batch(concatenate_attrs(c.attrs).axis, rank_of(parts->fields[0]));
    }
    if (name == "sum" || name == "mean" || name == "max" || name == "argmax")
      return reduces_within_rows(c.attrs, c.args[0]);
    const OpDef *def = find_op(name);
    if (def == nullptr || (def->pattern != OpPattern::ElemWise && def->pattern != OpPattern::Broadcast))
      return false;
    return !reshapes(name, c.attrs);
  }

  const KernelOf &kernel_of_;
  std::unordered_map<const ExprNode *, const Function *> kernels_;
  std::unordered_map<const ExprNode *, bool> memo_;
};

}  // namespace

bool computes_rows_apart(const std::vector<Expr> &params, const std::vector<Type> &param_types,
                         const Expr &body, const KernelOf &kernel_of) {
  RowCheck check(kernel_of, {});
  for (size_t i = 0; i < params.size(); ++i) {
    if (!param_types[i].defined() || !leading_one(param_types[i])) return false;
    check.mark_rows(params[i]);
  }
  // A result that is not rows (a weight returned as it is) would be one value, not one per element.
  std::optional<bool> rows = check.visit(body);
  return rows.has_value() && *rows;
}

}  // namespace grove::relay::vm
