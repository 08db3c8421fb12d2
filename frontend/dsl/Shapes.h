#pragma once
// Symbolic shapes: each dimension is a linear form Σ c_v·v + c0 over the size variables (H, D, V),
// kept canonical (sorted variables, no zero coefficients) so that 3H and H+H+H compare equal.
// Size variables are integers >= 1; proofs such as "lo < hi" use only that fact.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"

namespace grove::dsl {

class Size {
 public:
  Size() = default;
  static Size constant(int64_t value);
  static Size variable(const std::string &name, int64_t coefficient = 1);

  Size operator+(const Size &other) const;
  Size operator-(const Size &other) const;
  Size operator*(int64_t factor) const;
  bool operator==(const Size &other) const = default;

  int64_t constant_term() const { return constant_; }
  const std::map<std::string, int64_t> &coefficients() const { return coefficients_; }
  bool is_constant() const { return coefficients_.empty(); }

  // Whether the form is >= 0 (resp. >= 1) for every assignment of the variables to integers >= 1.
  bool provably_nonnegative() const;
  bool provably_positive() const;

  // "3H", "2H+1", "H-D", "0".
  std::string to_string() const;
  // The ILIR size expression: IntImm, Var(Size), Add and Mul (`3H` is Mul(3, H)).
  ilir::Expr to_ilir() const;

 private:
  std::map<std::string, int64_t> coefficients_;
  int64_t constant_ = 0;
};

// A tensor shape; rank 0 is a scalar.
using Shape = std::vector<Size>;

// "[3H, 2H]", or "a scalar" for rank 0.
std::string to_string(const Shape &shape);
std::vector<ilir::Expr> to_ilir(const Shape &shape);

}  // namespace grove::dsl
