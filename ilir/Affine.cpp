#include "ilir/Affine.h"

#include <algorithm>
#include <set>

namespace grove::ilir {

int64_t Affine::coeff(const std::string &var) const {
  auto it = coeffs.find(var);
  return it == coeffs.end() ? 0 : it->second;
}

Affine Affine::operator+(const Affine &o) const {
  Affine r = *this;
  r.constant += o.constant;
  for (const auto &[v, a] : o.coeffs)
    if ((r.coeffs[v] += a) == 0) r.coeffs.erase(v);
  return r;
}

Affine Affine::operator*(int64_t k) const {
  if (k == 0) return Affine{};
  Affine r = *this;
  r.constant *= k;
  for (auto &[v, a] : r.coeffs) a *= k;
  return r;
}

Affine Affine::operator-(const Affine &o) const { return *this + o * -1; }

std::optional<Affine> affine(const Expr &e, const std::map<std::string, int64_t> &sizes) {
  // Index expressions are a few nodes deep (i0 + 2H): recursion is bounded by the model file.
  if (const auto *i = e.as<IntImm>()) return Affine{i->value, {}};
  if (const auto *v = e.as<Var>()) {
    if (v->var_kind == VarKind::Size)
      if (auto it = sizes.find(v->name); it != sizes.end()) return Affine{it->second, {}};
    return Affine{0, {{v->name, 1}}};
  }
  if (const auto *u = e.as<Unary>(); u && u->op == UnaryOp::Neg) {
    std::optional<Affine> a = affine(u->a, sizes);
    if (a) return *a * -1;
    return std::nullopt;
  }
  const auto *b = e.as<Binary>();
  if (!b || (b->op != BinOp::Add && b->op != BinOp::Sub && b->op != BinOp::Mul)) return std::nullopt;
  std::optional<Affine> x = affine(b->a, sizes), y = affine(b->b, sizes);
  if (!x || !y) return std::nullopt;
  if (b->op == BinOp::Add) return *x + *y;
  if (b->op == BinOp::Sub) return *x - *y;
  if (x->is_constant()) return *y * x->constant;
  if (y->is_constant()) return *x * y->constant;
  return std::nullopt;  // a product of two variables
}

std::optional<int64_t> constant_value(const Expr &e, const std::map<std::string, int64_t> &sizes) {
  std::optional<Affine> a = affine(e, sizes);
  if (!a || !a->is_constant()) return std::nullopt;
  return a->constant;
}

std::optional<int64_t> offset_from(const Expr &e, const std::string &var,
                                   const std::map<std::string, int64_t> &sizes) {
  std::optional<Affine> a = affine(e, sizes);
  if (!a || a->coeffs.size() != 1 || a->coeff(var) != 1) return std::nullopt;
  return a->constant;
}

std::vector<int64_t> condition_cuts(const Expr &e, const std::string &var, int64_t lo, int64_t hi,
                                    const std::map<std::string, int64_t> &sizes,
                                    const std::vector<const ExprNode *> &skip) {
  std::set<int64_t> cuts;
  // An explicit stack: a value may be a long chain of additions.
  std::vector<const ExprNode *> stack{e.get()};
  while (!stack.empty()) {
    const ExprNode *node = stack.back();
    stack.pop_back();
    if (!node || std::find(skip.begin(), skip.end(), node) != skip.end()) continue;
    switch (node->kind) {
      case ExprKind::Binary: {
        const auto *b = static_cast<const Binary *>(node);
        if (b->op == BinOp::LT || b->op == BinOp::LE) {
          std::optional<Affine> x = affine(b->a, sizes), y = affine(b->b, sizes);
          if (x && y) {
            Affine d = *x - *y;
            if (d.coeffs.size() == 1 && d.coeff(var) == 1) {
              // var + c < 0 ⇔ var < -c;  var + c <= 0 ⇔ var < 1 - c.
              int64_t cut = (b->op == BinOp::LE ? 1 : 0) - d.constant;
              if (cut > lo && cut < hi) cuts.insert(cut);
            }
          }
        }
        stack.push_back(b->a.get());
        stack.push_back(b->b.get());
        break;
      }
      case ExprKind::Unary:
        stack.push_back(static_cast<const Unary *>(node)->a.get());
        break;
      case ExprKind::Select: {
        const auto *s = static_cast<const Select *>(node);
        stack.insert(stack.end(), {s->cond.get(), s->t.get(), s->f.get()});
        break;
      }
      case ExprKind::Load: {
        const auto *l = static_cast<const Load *>(node);
        stack.push_back(l->node.get());
        for (const Expr &i : l->indices) stack.push_back(i.get());
        break;
      }
      case ExprKind::StructCall: {
        const auto *c = static_cast<const StructCall *>(node);
        stack.push_back(c->node.get());
        stack.push_back(c->arg.get());
        break;
      }
      case ExprKind::Sum: {
        const auto *s = static_cast<const Sum *>(node);
        stack.push_back(s->extent.get());
        stack.push_back(s->body.get());
        break;
      }
      default:
        break;
    }
  }
  return {cuts.begin(), cuts.end()};
}

}  // namespace grove::ilir
