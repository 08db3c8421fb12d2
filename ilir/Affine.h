#pragma once
// Affine forms of ILIR index expressions: `c + Σ a_v · v` over index variables, the node variable
// and size variables left unbound. The level plan reads row offsets (`W[i0 + H, k]` is row i0 + 64
// at H = 64) and the rows at which a value's conditions change (`select(i0 < H, ...)`) from them,
// without a general simplifier.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ilir/IR.h"

namespace grove::ilir {

struct Affine {
  int64_t constant = 0;
  std::map<std::string, int64_t> coeffs;  // no zero coefficients

  bool is_constant() const { return coeffs.empty(); }
  int64_t coeff(const std::string &var) const;
  Affine operator+(const Affine &o) const;
  Affine operator-(const Affine &o) const;
  Affine operator*(int64_t k) const;
};

// `e` as an affine form, size variables bound by `sizes` replaced by their values; nothing if `e`
// is not affine in its variables (a product of two variables, a division, a load, a structure call).
std::optional<Affine> affine(const Expr &e, const std::map<std::string, int64_t> &sizes);

// `e`'s value if it is affine and constant under `sizes`.
std::optional<int64_t> constant_value(const Expr &e, const std::map<std::string, int64_t> &sizes);

// `e` as `var + c` with c constant under `sizes` (a row read at an offset: `W[i0 + H, k]`): c, or
// nothing if `e` has another form.
std::optional<int64_t> offset_from(const Expr &e, const std::string &var,
                                   const std::map<std::string, int64_t> &sizes);

// The points in (lo, hi) at which a condition of `e` on `var` changes value: each comparison
// `a < b` or `a <= b` whose difference a - b is `var + c` (coefficient 1, nothing else free) cuts at
// -c (`<`) or 1 - c (`<=`). Sums in `skip` are not looked into. Sorted, without duplicates.
std::vector<int64_t> condition_cuts(const Expr &e, const std::string &var, int64_t lo, int64_t hi,
                                    const std::map<std::string, int64_t> &sizes,
                                    const std::vector<const ExprNode *> &skip = {});

}  // namespace grove::ilir
