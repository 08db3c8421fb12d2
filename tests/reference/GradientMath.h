#pragma once
// The double-precision linear algebra the reference backward passes (ReferenceGradients.cpp for
// trees, ReferenceDagGradients.cpp for DAGs and sequences) share: a matrix's rows and columns, the
// transposed product and outer product they accumulate, and rounding a result to float32.
// Nothing of grove's compiler is used here.

#include <cmath>
#include <cstdint>

#include "support/Tensor.h"
#include "tests/reference/ReferenceGradients.h"

namespace grove::reference::math {

inline int64_t rows_of(const Tensor64 &W) { return W.shape[0]; }
inline int64_t cols_of(const Tensor64 &W) { return W.size() / W.shape[0]; }

// dx += Wᵀ dy
inline void matvec_t_acc(const Tensor64 &W, const double *dy, double *dx) {
  const int64_t rows = rows_of(W), cols = cols_of(W);
  for (int64_t i = 0; i < rows; ++i) {
    const double *w = &W.data[i * cols];
    for (int64_t k = 0; k < cols; ++k) dx[k] += w[k] * dy[i];
  }
}

// dW += dy xᵀ
inline void outer_acc(Tensor64 &dW, const double *dy, const double *x) {
  const int64_t rows = rows_of(dW), cols = cols_of(dW);
  for (int64_t i = 0; i < rows; ++i) {
    double *g = &dW.data[i * cols];
    for (int64_t k = 0; k < cols; ++k) g[k] += dy[i] * x[k];
  }
}

inline void add_acc(double *a, const double *b, int64_t count) {
  for (int64_t k = 0; k < count; ++k) a[k] += b[k];
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline Tensor to_float(const Tensor64 &t) {
  Tensor out(t.shape);
  for (int64_t k = 0; k < t.size(); ++k) out.data[k] = static_cast<float>(t.data[k]);
  return out;
}

}  // namespace grove::reference::math
