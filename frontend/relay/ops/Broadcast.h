#pragma once
// Helpers shared by the op groups: NumPy broadcasting over shapes with unknown dimensions (for type
// relations and kernels), an N-d broadcasting index walk (for kernels), the checks every type
// relation makes on its arguments, float16 conversions, and dispatch on the dtypes the interpreter
// computes with.

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"  // normalize_axis

namespace grove::relay {

// ---------------------------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------------------------

// The shape `a` and `b` broadcast to (Relay's ConcreteBroadcast). Dimensions align from the right;
// 1 against d gives d; `?` against d > 1 gives d (a kernel checks it at run time); `?` against `?`
// or 1 gives `?`; equal sizes pass. Otherwise OpError:
// "cannot broadcast (2, 3) and (4, 3): dimension 0 is 2 and 4" (dimension of the result).
Shape broadcast_shapes(const Shape &a, const Shape &b);

// Walks the elements of a broadcast result in row-major order and keeps, for each input, the flat
// index of the element the current result element reads. Every input shape must broadcast to `out`
// (all shapes concrete; kernels get `out` from broadcast_shapes).
//
//   BroadcastIndex it(out, {a.shape(), b.shape()});
//   for (int64_t i = 0; i < it.size(); ++i, it.next()) r[i] = pa[it[0]] + pb[it[1]];
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape &out, const std::vector<Shape> &inputs);
  int64_t size() const { return size_; }  // elements in the result
  int64_t operator[](size_t input) const { return offsets_[input]; }
  void next();

 private:
  Shape out_;
  std::vector<std::vector<int64_t>> strides_;  // [input][result dim]; 0 where the input broadcasts
  std::vector<int64_t> counter_;               // the current result index, one entry per dim
  std::vector<int64_t> offsets_;               // [input]
  int64_t size_ = 1;
};

// ---------------------------------------------------------------------------------------------
// Argument checks for type relations
// ---------------------------------------------------------------------------------------------

// The TensorType of argument `index` (0-based), or null when the argument's type is not known yet
// (an IncompleteType). Any other type is an OpError: "argument 1: expected a tensor, found (...)".
const TensorType *tensor_arg(const std::vector<Type> &args, size_t index);

// nn.leaky_relu's slope for negative inputs: TVM's LeakyReluAttrs default (0.25) when absent
// (Python's relay.nn.leaky_relu passes 0.01, and TVM's printer always writes it); OpError below 0.
double leaky_relu_alpha(const Attrs &attrs);

// ---------------------------------------------------------------------------------------------
// float16 storage
// ---------------------------------------------------------------------------------------------

// IEEE binary16 bits to float (exact; a NaN keeps its payload, quieted) and float to binary16,
// rounded to nearest even (overflow to infinity, NaN stays NaN with the payload's top bits), as
// x86's F16C conversions and LLVM's fptrunc do.
float float16_to_float(uint16_t h);
uint16_t float_to_float16(float f);
// A float16 array as float32 (exact), and a float32 array rounded to float16.
NDArray widen_float16(const NDArray &a);
NDArray narrow_to_float16(const NDArray &a);

// ---------------------------------------------------------------------------------------------
// Dtype dispatch for kernels
// ---------------------------------------------------------------------------------------------

// OpError "unsupported dtype int8: the interpreter computes with float32, float64, int32, int64
// and bool".
[[noreturn]] void throw_unsupported_dtype(DType dtype);

// Calls f(T{}) with T the C++ element type of `dtype`: float, double, int32_t, int64_t or bool;
// any other dtype is throw_unsupported_dtype.
template <typename F>
decltype(auto) visit_dtype(DType dtype, F &&f) {
  switch (dtype) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::Bool:
      return f(bool{});
    default:
      throw_unsupported_dtype(dtype);
  }
}

}  // namespace grove::relay
