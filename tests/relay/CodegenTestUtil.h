#pragma once
// Helpers shared by the external code generators' tests (test_byoc_dnnl.cpp, test_byoc_ccompiler.cpp,
// test_byoc_saved.cpp): a UserError's message, seeded input tensors, a kernel's flattened inputs and
// shapes, and an environment variable set for one scope ($CC for the C compiler's tests).

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/relay/Kernel.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"
#include "tests/UserError.h"

namespace grove::relay::testing {

// The shared helper (tests/UserError.h), under the name these suites and tests/frontend/onnx use.
using grove::testing::user_error_of;

// A float32 tensor of `shape`, uniform in [lo, hi), the same for the same seed.
inline NDArray random_array(const Shape &shape, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  NDArray a(DType::Float32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = dist(rng);
  return a;
}

// The tensors of `v`, a tuple's fields flattened left to right (as kernels take and give them).
inline void flatten(const Value &v, std::vector<NDArray> &out) {
  if (const auto *tuple = v->as<TupleValue>()) {
    for (const Value &f : tuple->fields) flatten(f, out);
    return;
  }
  out.push_back(tensor_of(v));
}

// The reason of an unsupported result; fails the test (at the caller's line) and returns "" when the
// compiler compiled a kernel instead.
#define GROVE_UNSUPPORTED_REASON(result) \
  ::grove::relay::testing::unsupported_reason((result), __FILE__, __LINE__)
inline std::string unsupported_reason(const KernelResult &result, const char *file, int line) {
  if (result.ok()) {
    ADD_FAILURE_AT(file, line) << "expected an unsupported result, got the kernel "
                               << result.kernel()->describe();
    return "";
  }
  return result.unsupported().reason;
}

inline std::vector<Shape> shapes_of(const std::vector<NDArray> &inputs) {
  std::vector<Shape> shapes;
  for (const NDArray &a : inputs) shapes.push_back(a.shape());
  return shapes;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  const char *name_;
  std::optional<std::string> old_;
};

}  // namespace grove::relay::testing
