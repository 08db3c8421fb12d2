#include "frontend/dsl/Shapes.h"

#include <fmt/format.h>

namespace grove::dsl {

Size Size::constant(int64_t value) {
  Size size;
  size.constant_ = value;
  return size;
}

Size Size::variable(const std::string &name, int64_t coefficient) {
  Size size;
  if (coefficient != 0) size.coefficients_[name] = coefficient;
  return size;
}

Size Size::operator+(const Size &other) const {
  Size sum = *this;
  sum.constant_ += other.constant_;
  for (const auto &[name, coefficient] : other.coefficients_) {
    int64_t total = (sum.coefficients_[name] += coefficient);
    // Canonical form: a cancelled variable disappears, so H + D - H == D.
    if (total == 0) sum.coefficients_.erase(name);
  }
  return sum;
}

Size Size::operator-(const Size &other) const { return *this + other * -1; }

Size Size::operator*(int64_t factor) const {
  if (factor == 0) return Size();
  Size product = *this;
  product.constant_ *= factor;
  for (auto &entry : product.coefficients_) entry.second *= factor;
  return product;
}

bool Size::provably_nonnegative() const {
  // With every variable >= 1 and unbounded above, the minimum exists iff no coefficient is
  // negative, and is reached with every variable at 1.
  int64_t minimum = constant_;
  for (const auto &entry : coefficients_) {
    if (entry.second < 0) return false;
    minimum += entry.second;
  }
  return minimum >= 0;
}

bool Size::provably_positive() const { return (*this - constant(1)).provably_nonnegative(); }

std::string Size::to_string() const {
  std::string text;
  auto append_term = [&text](int64_t value, const std::string &name) {
    if (value < 0) {
      text += '-';
      value = -value;
    } else if (!text.empty()) {
      text += '+';
    }
    if (value != 1 || name.empty()) text += fmt::format("{}", value);
    text += name;
  };
  // Positive terms first, so that a difference reads H-D rather than -D+H.
  for (const auto &[name, coefficient] : coefficients_) {
    if (coefficient > 0) append_term(coefficient, name);
  }
  for (const auto &[name, coefficient] : coefficients_) {
    if (coefficient < 0) append_term(coefficient, name);
  }
  if (constant_ != 0 || text.empty()) append_term(constant_, "");
  return text;
}

ilir::Expr Size::to_ilir() const {
  ilir::Expr result;
  auto add = [&result](ilir::Expr term) {
    result = result.defined() ? ilir::Binary::make(ilir::BinOp::Add, result, term) : term;
  };
  for (const auto &[name, coefficient] : coefficients_) {
    ilir::Expr var = ilir::Var::make(name, ilir::VarKind::Size);
    add(coefficient == 1 ? var : ilir::Binary::make(ilir::BinOp::Mul, ilir::IntImm::make(coefficient), var));
  }
  if (constant_ != 0 || !result.defined()) add(ilir::IntImm::make(constant_));
  return result;
}

std::string to_string(const Shape &shape) {
  if (shape.empty()) return "a scalar";
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += shape[i].to_string();
  }
  return text + "]";
}

std::vector<ilir::Expr> to_ilir(const Shape &shape) {
  std::vector<ilir::Expr> result;
  result.reserve(shape.size());
  for (const Size &size : shape) result.push_back(size.to_ilir());
  return result;
}

}  // namespace grove::dsl
