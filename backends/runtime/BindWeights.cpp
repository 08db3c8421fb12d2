#include "backends/runtime/BindWeights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <vector>

#include "backends/runtime/Messages.h"
#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"
#include "support/Error.h"

namespace grove {
namespace {

namespace msg = runtime_messages;
using ilir::BinOp;
using ilir::Expr;
using SizeValues = std::map<std::string, int64_t>;

// A size expression as `coef * X + constant` in one unknown X, the other variables bound.
struct Affine {
  int64_t coef = 0;
  int64_t constant = 0;
};

// The affine form of `e` in the unknown `x` (pass "" for a plain evaluation, coef 0). Empty when
// `e` uses a variable that is neither `x` nor bound, is not affine in `x` (x*x), or overflows.
// Size expressions are a few nodes written in the model file, so recursion depth is bounded.
std::optional<Affine> affine(const Expr &e, const std::string &x, const SizeValues &values) {
  if (const auto *imm = e.as<ilir::IntImm>()) return Affine{0, imm->value};
  if (const auto *var = e.as<ilir::Var>()) {
    GROVE_CHECK(var->var_kind == ilir::VarKind::Size, "shape uses the non-size variable {}", var->name);
    if (var->name == x) return Affine{1, 0};
    auto it = values.find(var->name);
    if (it == values.end()) return std::nullopt;
    return Affine{0, it->second};
  }
  const auto *bin = e.as<ilir::Binary>();
  GROVE_CHECK(bin != nullptr, "shape expression {} is not a size expression", ilir::to_string(e));
  std::optional<Affine> a = affine(bin->a, x, values), b = affine(bin->b, x, values);
  if (!a || !b) return std::nullopt;
  Affine r;
  bool overflow = false;
  switch (bin->op) {
    case BinOp::Add:
      overflow = __builtin_add_overflow(a->coef, b->coef, &r.coef) ||
                 __builtin_add_overflow(a->constant, b->constant, &r.constant);
      break;
    case BinOp::Sub:
      overflow = __builtin_sub_overflow(a->coef, b->coef, &r.coef) ||
                 __builtin_sub_overflow(a->constant, b->constant, &r.constant);
      break;
    case BinOp::Mul: {
      if (a->coef != 0 && b->coef != 0) return std::nullopt;  // x*x: not affine
      if (a->coef != 0) std::swap(a, b);                      // now a is the constant factor
      overflow = __builtin_mul_overflow(a->constant, b->coef, &r.coef) ||
                 __builtin_mul_overflow(a->constant, b->constant, &r.constant);
      break;
    }
    default:
      GROVE_CHECK(false, "shape expression {} uses {}", ilir::to_string(e), ilir::to_string(bin->op));
  }
  if (overflow) return std::nullopt;
  return r;
}

std::optional<int64_t> evaluate(const Expr &e, const SizeValues &values) {
  std::optional<Affine> a = affine(e, "", values);
  if (!a) return std::nullopt;
  return a->constant;
}

// The size variables of `e` that have no value yet, each once.
std::set<std::string> unbound_vars(const Expr &e, const SizeValues &values) {
  std::set<std::string> vars;
  ilir::for_each_node(e, [&](const Expr &node) {
    const auto *var = node.as<ilir::Var>();
    if (var && !values.count(var->name)) vars.insert(var->name);
  });
  return vars;
}

// X in `found = coef * X + constant`, when that has a solution X >= 1.
std::optional<int64_t> solve(const Affine &a, int64_t found) {
  if (a.coef == 0) return std::nullopt;
  int64_t rest = 0;
  if (__builtin_sub_overflow(found, a.constant, &rest) || rest % a.coef != 0 || rest / a.coef < 1) {
    return std::nullopt;
  }
  return rest / a.coef;
}

// "[3H, D]", or "[3H, D] = [768, 256]" once sizes are known ("[3H, D] = [768, D]" if only some are).
std::string expected_shape(const ilir::TensorDecl &decl, const SizeValues &values) {
  std::vector<std::string> symbolic, valued;
  for (const Expr &dim : decl.shape) {
    symbolic.push_back(size_expr_string(dim));
    std::optional<int64_t> v = evaluate(dim, values);
    valued.push_back(v ? std::to_string(*v) : symbolic.back());
  }
  std::string result = fmt::format("[{}]", fmt::join(symbolic, ", "));
  if (valued != symbolic) result += fmt::format(" = [{}]", fmt::join(valued, ", "));
  return result;
}

// Binds size variables one linear dimension at a time, remembering which tensor gave each value.
class SizeBinder {
 public:
  SizeBinder(const ilir::Program &program, const Weights &weights, const std::string &file)
      : program_(program), weights_(weights), file_(file) {
    for (const ilir::TensorDecl &t : program.tensors) {
      if (t.kind == ilir::TensorKind::Param) params_.push_back(&t);
    }
  }

  // Steps:
  //   1. Every tensor in the file must be a param of the model, of the right rank.
  //   2. Repeat until nothing changes: a dimension with exactly one unknown size X, of the form
  //      c*X + d, gives X = (found - d) / c, which must be a whole number >= 1.
  //   3. Every param must be present (reported after step 2, so the message shows values).
  //   4. Every size variable must now be known.
  //   5. Every dimension of every param, evaluated, must equal the one found.
  SizeValues bind() {
    check_names_and_ranks();
    solve_linear_dims();
    check_missing();
    check_all_bound();
    check_dims();
    return values_;
  }

 private:
  void check_names_and_ranks() {
    std::vector<std::string> param_names;
    for (const ilir::TensorDecl *p : params_) param_names.push_back(p->name);
    for (const auto &[name, tensor] : weights_) {
      if (is_training_state(name)) continue;
      const ilir::TensorDecl *decl = program_.find(name);
      if (!decl || decl->kind != ilir::TensorKind::Param) {
        user_error(msg::kWeightsExtra, file_, name, program_.name, fmt::join(param_names, ", "));
      }
      if (tensor.shape.size() != decl->shape.size()) {
        user_error(msg::kWeightsRank, file_, name, shape_string(tensor.shape), tensor.shape.size(),
                   expected_shape(*decl, values_), decl->shape.size());
      }
    }
  }

  void solve_linear_dims() {
    for (bool progress = true; progress;) {
      progress = false;
      for (const ilir::TensorDecl *p : params_) {
        auto it = weights_.find(p->name);
        if (it == weights_.end()) continue;
        for (size_t d = 0; d < p->shape.size(); ++d) {
          std::set<std::string> unknown = unbound_vars(p->shape[d], values_);
          if (unknown.size() != 1) continue;
          const std::string &x = *unknown.begin();
          std::optional<Affine> a = affine(p->shape[d], x, values_);
          if (!a || a->coef == 0) continue;
          const int64_t found = it->second.shape[d];
          std::optional<int64_t> value = solve(*a, found);
          if (!value) {
            user_error(msg::kWeightsNotMultiple, file_, p->name, shape_string(it->second.shape),
                       expected_shape(*p, values_), d, found, size_expr_string(p->shape[d]), x);
          }
          values_[x] = *value;
          origin_[x] = p->name;
          progress = true;
        }
      }
    }
  }

  void check_missing() {
    std::vector<const ilir::TensorDecl *> missing;
    for (const ilir::TensorDecl *p : params_) {
      if (!weights_.count(p->name)) missing.push_back(p);
    }
    if (missing.empty()) return;
    if (missing.size() == 1) {
      user_error(msg::kWeightsMissing, file_, missing[0]->name, expected_shape(*missing[0], values_));
    }
    std::vector<std::string> others;
    for (size_t i = 1; i < missing.size(); ++i) others.push_back(missing[i]->name);
    user_error(msg::kWeightsMissingMore, file_, missing[0]->name, expected_shape(*missing[0], values_),
               fmt::join(others, ", "));
  }

  void check_all_bound() {
    // Size variables of the program, and any a param shape uses that the program did not list.
    std::vector<std::string> vars = program_.size_vars;
    for (const ilir::TensorDecl *p : params_) {
      for (const Expr &dim : p->shape) {
        for (const std::string &v : unbound_vars(dim, {})) {
          if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
        }
      }
    }
    for (const std::string &v : vars) {
      if (values_.count(v)) continue;
      for (const ilir::TensorDecl *p : params_) {
        for (size_t d = 0; d < p->shape.size(); ++d) {
          if (unbound_vars(p->shape[d], {}).count(v)) {
            user_error(msg::kWeightsUnsolvable, file_, v,
                       fmt::format(msg::kWeightsUnsolvableNonlinear, v,
                                   fmt::format("tensor '{}' dimension {}: {}", p->name, d,
                                               size_expr_string(p->shape[d]))));
          }
        }
      }
      user_error(msg::kWeightsUnsolvable, file_, v, msg::kWeightsUnsolvableUnused);
    }
  }

  void check_dims() {
    for (const ilir::TensorDecl *p : params_) {
      const Tensor &found = weights_.at(p->name);
      for (size_t d = 0; d < p->shape.size(); ++d) {
        std::optional<int64_t> expected = evaluate(p->shape[d], values_);
        if (expected && *expected == found.shape[d]) continue;
        // When the dimension alone implies another value of one size, say which tensors disagree.
        std::set<std::string> vars = unbound_vars(p->shape[d], {});
        if (vars.size() == 1) {
          const std::string &x = *vars.begin();
          SizeValues others = values_;
          others.erase(x);
          std::optional<Affine> a = affine(p->shape[d], x, others);
          std::optional<int64_t> value = a ? solve(*a, found.shape[d]) : std::nullopt;
          if (value && *value != values_.at(x)) {
            user_error(msg::kWeightsInconsistent, file_, x, values_.at(x), origin_.at(x), *value, p->name,
                       shape_string(found.shape), expected_shape(*p, values_));
          }
        }
        user_error(msg::kWeightsShape, file_, p->name, shape_string(found.shape),
                   expected_shape(*p, values_));
      }
    }
  }

  const ilir::Program &program_;
  const Weights &weights_;
  const std::string &file_;
  std::vector<const ilir::TensorDecl *> params_;
  SizeValues values_;
  std::map<std::string, std::string> origin_;  // size variable -> the tensor that gave its value
};

enum class Precedence { Sum, Product, Atom };

Precedence precedence(const Expr &e) {
  const auto *bin = e.as<ilir::Binary>();
  if (!bin) return Precedence::Atom;
  return bin->op == BinOp::Mul ? Precedence::Product : Precedence::Sum;
}

std::string parenthesized(const Expr &e, Precedence context) {
  std::string s = size_expr_string(e);
  return precedence(e) < context ? "(" + s + ")" : s;
}

}  // namespace

std::map<std::string, int64_t> bind_weights(const ilir::Program &program, const Weights &weights,
                                            const std::string &weights_file) {
  return SizeBinder(program, weights, weights_file).bind();
}

bool is_training_state(std::string_view name) {
  return name.starts_with("head.") || name.starts_with("optimizer.");
}

std::string size_expr_string(const Expr &e) {
  if (const auto *imm = e.as<ilir::IntImm>()) return std::to_string(imm->value);
  if (const auto *var = e.as<ilir::Var>()) return var->name;
  const auto *bin = e.as<ilir::Binary>();
  if (!bin || (bin->op != BinOp::Add && bin->op != BinOp::Sub && bin->op != BinOp::Mul)) {
    return ilir::to_string(e);
  }
  if (bin->op == BinOp::Add) return size_expr_string(bin->a) + " + " + parenthesized(bin->b, Precedence::Sum);
  if (bin->op == BinOp::Sub)
    return size_expr_string(bin->a) + " - " + parenthesized(bin->b, Precedence::Product);
  // A constant factor is written in front of its operand, as in math: 3H, 2(H + 1).
  Expr constant = bin->a, other = bin->b;
  if (!constant.as<ilir::IntImm>()) std::swap(constant, other);
  if (constant.as<ilir::IntImm>() && !other.as<ilir::IntImm>()) {
    std::string rest = parenthesized(other, Precedence::Product);
    return size_expr_string(constant) + (std::isdigit(static_cast<unsigned char>(rest[0])) ? "*" : "") + rest;
  }
  return parenthesized(bin->a, Precedence::Product) + "*" + parenthesized(bin->b, Precedence::Atom);
}

}  // namespace grove
