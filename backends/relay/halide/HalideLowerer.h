#pragma once
// Internal to the Halide kernel compiler: the lowering's state and helpers, shared by HalideOps.cpp
// (the walk, elementwise, reduction and data-movement ops) and HalideNN.cpp (the anchor ops, dense,
// batch_matmul, conv2d and the pools, with their schedules).

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "backends/relay/Kernel.h"
#include "backends/relay/halide/HalideLower.h"
#include "frontend/relay/ops/Broadcast.h"
#include "support/Error.h"

namespace grove::relay::halide_internal {

using HExpr = Halide::Expr;
using Halide::Func;
using Halide::RDom;
using HVar = Halide::Var;

// A lowered tensor: a Func over its dimensions (Halide order) with its dtype and concrete shape.
// `root`: the Func is materialized (an input, a constant or a root stage), so reading it is a load.
struct Tensor {
  Func f;
  DType dtype = DType::Float32;
  Shape shape;
  bool root = false;
};

// A lowered value: a tensor or a tuple of values.
struct LValue {
  bool is_tuple = false;
  Tensor tensor;
  std::vector<LValue> fields;
};

inline LValue of(Tensor t) {
  LValue v;
  v.tensor = std::move(t);
  return v;
}

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The element at row-major `idx`.
inline HExpr at(const Tensor &t, const std::vector<HExpr> &idx) {
  GROVE_CHECK(idx.size() == t.shape.size(), "rank {} indexed with {} indices", t.shape.size(), idx.size());
  return t.f(std::vector<HExpr>(idx.rbegin(), idx.rend()));
}

inline std::vector<HVar> make_vars(size_t rank) {
  std::vector<HVar> v;
  for (size_t d = 0; d < rank; ++d) v.emplace_back(fmt::format("d{}", d));
  return v;
}

inline std::vector<HExpr> exprs(const std::vector<HVar> &vars) {
  return std::vector<HExpr>(vars.begin(), vars.end());
}

inline HExpr zero(const Halide::Type &t) { return Halide::Internal::make_zero(t); }
inline HExpr one(const Halide::Type &t) { return Halide::Internal::make_one(t); }

// Parallel loops cost more than they save on small stages (with Halide's own thread pool, which
// wakes a sleeping worker per loop, a GEMV of 1 x 256 x 1024 ran slower on 2 threads than on 1, and
// the MLP 16-32-10 at batch 16 took 0.006-0.011 ms instead of 0.006). With the kernels' spinning
// pool (HalideKernels.cpp) a loop costs about a µs: a GEMV of 1 x 256 x 512 (131,072 multiply-adds)
// takes 3.6 µs on 2 threads and 5.5 on 1, one of 1 x 256 x 256 2.5 and 3.2 on a quiet machine but
// 7.9 and 3.2 while another process holds a core. So a stage gets a parallel loop only with at least
// kParallelWork scalar multiply-adds; one point of an elementwise or reduction stage counts as
// kElementWork (a vectorized FMA does 16, a point costs about an instruction).
constexpr int64_t kParallelWork = int64_t{1} << 17;
constexpr int64_t kElementWork = 16;
inline bool worth_parallel(int64_t work) { return work >= kParallelWork; }

// Lowers one Primitive function (lower_primitive); one instance per pipeline.
class Lowerer {
 public:
  explicit Lowerer(int vector_bytes) : vector_bytes_(vector_bytes) {}
  LoweredPipeline run(const Function &fn, const std::vector<DType> &dtypes, const std::vector<Shape> &shapes);

 private:
  int vector_bytes_;
  int counter_ = 0;
  Span span_;       // of the call being lowered, for messages
  std::string op_;  // its op
  std::set<std::string> scheduled_;

  [[noreturn]] void unsupported(const std::string &what, const Span &span) const {
    throw NotLowerable(
        fmt::format("the Halide kernel compiler does not support {} (at {})", what, to_string(span)));
  }
  std::string fresh(const std::string &base) {
    std::string name = base;
    std::replace(name.begin(), name.end(), '.', '_');
    return fmt::format("{}_{}", name, counter_++);
  }
  // float16 stages compute in float32 (htype), so they take float32's vector width.
  int lanes(DType d) const {
    return std::max<int>(
        1, vector_bytes_ / static_cast<int>(dtype_bytes(d == DType::Float16 ? DType::Float32 : d)));
  }
  // The type a stage computes with; float16 tensors hold float32 values that float16 represents.
  Halide::Type htype(DType d, const Span &span) const;
  // The type of buffers in memory (inputs, constants, outputs): htype, but Float(16) for float16.
  Halide::Type storage_type(DType d, const Span &span) const;
  // `v` with every float16 tensor rounded to float16 (to nearest even) and widened back: what
  // storing an op's float16 result and loading it again gives.
  LValue round_float16(const LValue &v);
  Tensor define(const std::string &base, DType dtype, const Shape &shape,
                const std::function<HExpr(const std::vector<HExpr> &)> &value);
  Tensor materialize(const Tensor &t);
  // `update_steps`: the update's reduction extent per point (0: no update definition).
  void schedule_stage(Func f, const Shape &shape, DType dtype, int64_t update_steps);
  Tensor reshape(const Tensor &t, const Shape &shape);
  HExpr broadcast_at(const Tensor &t, const std::vector<HExpr> &idx, const Shape &out_shape);

  LValue lower_call(const Call &call, const std::vector<LValue> &args, const Type &result);
  Tensor elementwise(const std::string &op, const Call &call, const std::vector<Tensor> &a,
                     const TensorType &out);
  Tensor reduce(const std::string &op, const Call &call, const Tensor &x, const TensorType &out);
  Tensor softmax(const Call &call, const Tensor &x);
  Tensor gemm(const std::string &name, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
              const std::function<HExpr(HExpr, HExpr, HExpr)> &a, const Tensor &b_kj);
  Tensor gemm_dot(const std::string &name, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const std::function<HExpr(HExpr, HExpr, HExpr)> &a,
                  const std::function<HExpr(HExpr, HExpr, HExpr)> &bt);
  Tensor dense(const Call &call, const Tensor &x, const Tensor &w, const TensorType &out);
  Tensor batch_matmul(const Call &call, const Tensor &x, const Tensor &y, const TensorType &out);
  Tensor conv2d(const Call &call, const Tensor &x, const Tensor &w, const TensorType &out);
  Tensor pool2d(bool is_max, const Call &call, const Tensor &x, const TensorType &out);
  Tensor strided_slice(const Call &call, const Tensor &x, const TensorType &out);
  Tensor take(const Call &call, const Tensor &data, const Tensor &indices, const TensorType &out);
};

}  // namespace grove::relay::halide_internal
