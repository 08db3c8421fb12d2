// Elementwise operators: unary math, rounding, clip, logical_not, copy and cast, arithmetic,
// maximum/minimum, power, logical and/or and comparisons with NumPy broadcasting, and where. Type
// relations follow TVM's (IdentityRel, CastRel, BroadcastRel, BroadcastCompRel, WhereRel), with the
// dtype checks TVM leaves to code generation made here:
//   * exp log sqrt tanh sigmoid erf, and power: float tensors only (TVM type-checks ints, then
//     fails or truncates when lowering);
//   * nn.leaky_relu(x, alpha): float tensors only, x > 0 ? x : x * alpha (alpha 0.25 when absent,
//     TVM's attribute default);
//   * negative abs nn.relu clip floor ceil round, and add subtract multiply divide maximum minimum:
//     float or integer, not bool; integer arithmetic wraps around (two's complement) and `divide`
//     truncates toward zero, as TVM's integer division does; an integer division by zero is an
//     OpError; floor, ceil and round keep integers as they are (TVM's tir.floor on an int); round
//     rounds halves away from zero (TVM's tir.round is llvm.round, not NumPy's half-to-even);
//     maximum(a, b) is `a > b ? a : b` and minimum `a < b ? a : b`, as TVM's Max/Min lower, so a
//     NaN in b wins and a NaN in a loses;
//   * logical_not, logical_and, logical_or: bool only;
//   * copy: any dtype, a fresh tensor with the same elements;
//   * cast(x, dtype): any dtype to any dtype (float16 included): integers and bool convert exactly
//     through int64 (narrowing wraps around, as C and LLVM's trunc do); a float converts to an
//     integer by truncating toward zero, saturating at the integer's range (NaN gives 0: TVM
//     leaves these undefined); to bool, anything nonzero is True;
//   * comparisons: any dtype, both the same; the result is bool;
//   * broadcast_to(x, shape): any dtype; the result is x broadcast with `shape` (TVM's
//     BroadCastToRel is BroadcastRel against the target shape, so a target the data does not
//     stretch to is an error: "cannot broadcast ..."). It lives here, with the broadcasting ops,
//     rather than with TVM's other transforms;
//   * where(cond, x, y): cond bool (TVM accepts any dtype and tests != 0), x and y the same dtype.
// Kernels compute float32 math in double and round once; float32 arithmetic is exact in float.
// float16 is computed as float32 and rounded to float16 (the table's float16_in_float32, Op.h).

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// ---------------------------------------------------------------------------------------------
// Dtype families
// ---------------------------------------------------------------------------------------------

enum class Family { Float, Numeric, Bool, Any };

bool in_family(Family f, DType t) {
  switch (f) {
    case Family::Float:
      return is_float(t);
    case Family::Numeric:
      return is_float(t) || is_int(t);
    case Family::Bool:
      return t == DType::Bool;
    case Family::Any:
      return true;
  }
  return false;
}

const char *family_name(Family f) {
  switch (f) {
    case Family::Float:
      return "a float tensor";
    case Family::Numeric:
      return "a float or integer tensor";
    case Family::Bool:
      return "a bool tensor";
    case Family::Any:
      return "a tensor";
  }
  return "?";
}

void check_family(Family f, DType t, const char *what = nullptr) {
  if (in_family(f, t)) return;
  throw OpError(fmt::format("{}expected {}, found {}", what ? what : "", family_name(f), to_string(t)));
}

void check_same_dtype(DType a, DType b) {
  if (a != b) throw OpError(fmt::format("dtypes differ: {} and {}", to_string(a), to_string(b)));
}

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
constexpr bool in_family_v(Family f) {
  switch (f) {
    case Family::Float:
      return kIsFloat<T>;
    case Family::Numeric:
      return kIsFloat<T> || kIsInt<T>;
    case Family::Bool:
      return std::is_same_v<T, bool>;
    case Family::Any:
      return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Type relations
// ---------------------------------------------------------------------------------------------

// The result is the argument's type (TVM's IdentityRel), for a dtype of family F.
template <Family F>
Type unary_rel(const std::vector<Type> &args, const Attrs &) {
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  check_family(F, x->dtype);
  return TensorType::make(x->shape, x->dtype);
}

// TVM's CastRel: the argument's shape, the `dtype` attribute's dtype.
DType cast_dtype(const Attrs &attrs) {
  require_attr(attrs, "dtype");
  const std::string name = attr_string(attrs, "dtype", "");
  std::optional<DType> d = parse_dtype(name);
  if (!d) throw OpError(fmt::format("dtype \"{}\" is not a dtype grove knows", name));
  return *d;
}

Type cast_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const DType to = cast_dtype(attrs);
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  return TensorType::make(x->shape, to);
}

Type leaky_relu_rel(const std::vector<Type> &args, const Attrs &attrs) {
  leaky_relu_alpha(attrs);
  return unary_rel<Family::Float>(args, attrs);
}

Type clip_rel(const std::vector<Type> &args, const Attrs &attrs) {
  clip_attrs(attrs);
  return unary_rel<Family::Numeric>(args, attrs);
}

// TVM's BroadcastRel (F = Numeric, result dtype of the arguments) and BroadcastCompRel (F = Any,
// result bool).
template <Family F, bool kCompare>
Type binary_rel(const std::vector<Type> &args, const Attrs &) {
  const TensorType *a = tensor_arg(args, 0);
  const TensorType *b = tensor_arg(args, 1);
  if (!a || !b) return {};
  check_same_dtype(a->dtype, b->dtype);
  check_family(F, a->dtype);
  return TensorType::make(broadcast_shapes(a->shape, b->shape), kCompare ? DType::Bool : a->dtype);
}

// TVM's WhereRel: x and y broadcast together, then with the condition.
Type where_rel(const std::vector<Type> &args, const Attrs &) {
  const TensorType *c = tensor_arg(args, 0);
  const TensorType *x = tensor_arg(args, 1);
  const TensorType *y = tensor_arg(args, 2);
  if (!c || !x || !y) return {};
  check_family(Family::Bool, c->dtype, "condition: ");
  check_same_dtype(x->dtype, y->dtype);
  return TensorType::make(broadcast_shapes(c->shape, broadcast_shapes(x->shape, y->shape)), x->dtype);
}

Shape broadcast_to_shape(const Shape &in, const Attrs &attrs) {
  require_attr(attrs, "shape");
  const Shape target = attr_ints(attrs, "shape", {});
  for (int64_t d : target)
    if (d < 0) throw OpError(fmt::format("shape {} has a negative dimension", shape_to_string(target)));
  return broadcast_shapes(in, target);
}

Type broadcast_to_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  return TensorType::make(broadcast_to_shape(x->shape, attrs), x->dtype);
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

// Elementwise math on doubles; float32 inputs are widened and the result rounded once.
double op_exp(double x) { return std::exp(x); }
double op_log(double x) { return std::log(x); }
double op_sqrt(double x) { return std::sqrt(x); }
double op_tanh(double x) { return std::tanh(x); }
double op_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double op_erf(double x) { return std::erf(x); }

using MathFn = double (*)(double);

template <MathFn Fn>
std::vector<NDArray> float_math_kernel(const std::vector<NDArray> &args, const Attrs &) {
  const NDArray &x = args[0];
  NDArray out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = static_cast<T>(Fn(static_cast<double>(in[i])));
    } else {
      check_family(Family::Float, x.dtype());
    }
  });
  return {out};
}

// Integer arithmetic in the unsigned type of the same width: wraps around instead of overflowing.
template <typename T>
using Unsigned = std::make_unsigned_t<T>;

struct Negative {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>) return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x));
    return -x;
  }
};
struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>) return x < 0 ? Negative()(x) : x;
    return std::abs(x);
  }
};
struct Relu {
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};
struct LogicalNot {
  bool operator()(bool x) const { return !x; }
};
// Rounding keeps integers as they are.
struct Floor {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) return std::floor(x);
    return x;
  }
};
struct Ceil {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) return std::ceil(x);
    return x;
  }
};
struct Round {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) return std::round(x);  // halves away from zero
    return x;
  }
};

std::vector<NDArray> copy_kernel(const std::vector<NDArray> &args, const Attrs &) {
  const NDArray &x = args[0];
  NDArray out(x.dtype(), x.shape());
  if (out.nbytes()) std::memcpy(out.raw(), x.raw(), out.nbytes());
  return {out};
}

// Element i of `out` set from an integer (wrapping to the width of out's dtype) or from a double
// (truncated toward zero and saturated for integers, rounded once for floats).
template <typename T>
void store_int(NDArray &out, int64_t i, int64_t v) {
  if constexpr (std::is_same_v<T, bool>)
    out.data<T>()[i] = v != 0;
  else
    out.data<T>()[i] = static_cast<T>(v);
}

template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return T(0);
  // The bounds as doubles: the integer's min is a power of two (exact); max + 1 is one as well.
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi_excl = 2.0 * (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1.0);
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi_excl) return std::numeric_limits<T>::max();
  return static_cast<T>(std::trunc(v));
}

void store(NDArray &out, int64_t i, int64_t v) {
  switch (out.dtype()) {
    case DType::Bool:
      return store_int<bool>(out, i, v);
    case DType::Int8:
      return store_int<int8_t>(out, i, v);
    case DType::Int16:
      return store_int<int16_t>(out, i, v);
    case DType::Int32:
      return store_int<int32_t>(out, i, v);
    case DType::Int64:
      return store_int<int64_t>(out, i, v);
    case DType::UInt8:
      return store_int<uint8_t>(out, i, v);
    case DType::UInt16:
      return store_int<uint16_t>(out, i, v);
    case DType::UInt32:
      return store_int<uint32_t>(out, i, v);
    case DType::UInt64:
      return store_int<uint64_t>(out, i, v);
    case DType::Float16:
    case DType::Float32:
    case DType::Float64:
      break;
  }
  GROVE_CHECK(false, "store of an integer into {}", to_string(out.dtype()));
}

void store(NDArray &out, int64_t i, double v) {
  switch (out.dtype()) {
    case DType::Bool:
      out.data<bool>()[i] = v != 0.0;
      return;
    case DType::Int8:
      out.data<int8_t>()[i] = saturate<int8_t>(v);
      return;
    case DType::Int16:
      out.data<int16_t>()[i] = saturate<int16_t>(v);
      return;
    case DType::Int32:
      out.data<int32_t>()[i] = saturate<int32_t>(v);
      return;
    case DType::Int64:
      out.data<int64_t>()[i] = saturate<int64_t>(v);
      return;
    case DType::UInt8:
      out.data<uint8_t>()[i] = saturate<uint8_t>(v);
      return;
    case DType::UInt16:
      out.data<uint16_t>()[i] = saturate<uint16_t>(v);
      return;
    case DType::UInt32:
      out.data<uint32_t>()[i] = saturate<uint32_t>(v);
      return;
    case DType::UInt64:
      out.data<uint64_t>()[i] = saturate<uint64_t>(v);
      return;
    case DType::Float16:
      std::memcpy(out.raw() + 2 * i, NDArray::scalar(DType::Float16, v).raw(), 2);
      return;
    case DType::Float32:
      out.data<float>()[i] = static_cast<float>(v);
      return;
    case DType::Float64:
      out.data<double>()[i] = v;
      return;
  }
}

// cast: integers and bool go through int64 (exact; uint64 keeps its bits), anything else through
// double (exact for every float source).
std::vector<NDArray> cast_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0];
  NDArray out(cast_dtype(attrs), x.shape());
  const bool exact_int = !is_float(x.dtype()) && !is_float(out.dtype());
  for (int64_t i = 0, n = x.size(); i < n; ++i) {
    if (exact_int)
      store(out, i, x.element_as_int(i));
    else
      store(out, i, x.element_as_double(i));
  }
  return {out};
}

// A unary kernel applying Fn to dtypes of family F.
template <typename Fn, Family F>
std::vector<NDArray> unary_kernel(const std::vector<NDArray> &args, const Attrs &) {
  const NDArray &x = args[0];
  NDArray out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (in_family_v<T>(F)) {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = Fn()(in[i]);
    } else {
      check_family(F, x.dtype());
    }
  });
  return {out};
}

// A bound converted to T as TVM's make_const does: rounded for floats, truncated toward zero (and
// saturated) for integers.
template <typename T>
T bound_as(double v) {
  if constexpr (kIsInt<T>) {
    if (std::isnan(v)) throw OpError("clip bound is NaN");
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::min();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
  return static_cast<T>(v);
}

// clip(x) = max(min(x, a_max), a_min), TVM's order (it matters only when a_min > a_max).
std::vector<NDArray> clip_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const ClipAttrs bounds = clip_attrs(attrs);
  const double a_min = bounds.a_min, a_max = bounds.a_max;
  const NDArray &x = args[0];
  NDArray out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (in_family_v<T>(Family::Numeric)) {
      const T lo = bound_as<T>(a_min), hi = bound_as<T>(a_max);
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) {
        const T v = in[i] < hi ? in[i] : hi;
        o[i] = v > lo ? v : lo;
      }
    } else {
      check_family(Family::Numeric, x.dtype());
    }
  });
  return {out};
}

// x > 0 ? x : x * alpha, alpha rounded to the tensor's dtype (TVM's topi.nn.leaky_relu).
std::vector<NDArray> leaky_relu_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const double alpha = leaky_relu_alpha(attrs);
  const NDArray &x = args[0];
  NDArray out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      const T a = static_cast<T>(alpha);
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = in[i] > T(0) ? in[i] : in[i] * a;
    } else {
      check_family(Family::Float, x.dtype());
    }
  });
  return {out};
}

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
    return a + b;
  }
};
struct Subtract {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
    return a - b;
  }
};
struct Multiply {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
    return a * b;
  }
};
struct Divide {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) throw OpError("integer division by zero");
      // The one quotient that overflows wraps to itself, as in two's complement hardware.
      if (b == -1) return Negative()(a);
    }
    return a / b;
  }
};

struct Maximum {
  template <typename T>
  T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
// Computed in double and rounded once.
struct Power {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
};
struct LogicalAnd {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOr {
  bool operator()(bool a, bool b) const { return a || b; }
};

struct Equal {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Less {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Greater {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

// A binary kernel with broadcasting:
//   1. the dtypes must agree (and be of family F);
//   2. the result shape is the broadcast of the concrete shapes: a `?` the type allowed that met a
//      mismatching size fails here, naming both shapes;
//   3. walk the result, reading each input through its broadcast strides.
template <typename Fn, Family F, bool kCompare>
std::vector<NDArray> binary_kernel(const std::vector<NDArray> &args, const Attrs &) {
  const NDArray &a = args[0], &b = args[1];
  check_same_dtype(a.dtype(), b.dtype());
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  NDArray out(kCompare ? DType::Bool : a.dtype(), shape);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (in_family_v<T>(F)) {
      using R = std::conditional_t<kCompare, bool, T>;
      const T *pa = a.data<T>(), *pb = b.data<T>();
      R *o = out.data<R>();
      BroadcastIndex it(shape, {a.shape(), b.shape()});
      for (int64_t i = 0; i < it.size(); ++i, it.next()) o[i] = Fn()(pa[it[0]], pb[it[1]]);
    } else {
      check_family(F, a.dtype());
    }
  });
  return {out};
}

std::vector<NDArray> where_kernel(const std::vector<NDArray> &args, const Attrs &) {
  const NDArray &c = args[0], &x = args[1], &y = args[2];
  check_family(Family::Bool, c.dtype(), "condition: ");
  check_same_dtype(x.dtype(), y.dtype());
  const Shape shape = broadcast_shapes(c.shape(), broadcast_shapes(x.shape(), y.shape()));
  NDArray out(x.dtype(), shape);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool *pc = c.data<bool>();
    const T *px = x.data<T>(), *py = y.data<T>();
    T *o = out.data<T>();
    BroadcastIndex it(shape, {c.shape(), x.shape(), y.shape()});
    for (int64_t i = 0; i < it.size(); ++i, it.next()) o[i] = pc[it[0]] ? px[it[1]] : py[it[2]];
  });
  return {out};
}

// broadcast_to moves bytes, so it works for every dtype.
std::vector<NDArray> broadcast_to_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0];
  const Shape shape = broadcast_to_shape(x.shape(), attrs);
  NDArray out(x.dtype(), shape);
  const size_t esize = dtype_bytes(x.dtype());
  BroadcastIndex it(shape, {x.shape()});
  for (int64_t i = 0; i < it.size(); ++i, it.next())
    std::memcpy(out.raw() + i * esize, x.raw() + it[0] * esize, esize);
  return {out};
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

OpDef float_unary(const char *name, TypeRelation rel, OpKernel kernel) {
  return {name, 1, OpPattern::ElemWise, {}, rel, kernel};
}

template <typename Fn>
OpDef arith(const char *name) {
  return {name,
          2,
          OpPattern::Broadcast,
          {},
          binary_rel<Family::Numeric, false>,
          binary_kernel<Fn, Family::Numeric, false>};
}

template <typename Fn, Family F>
OpDef broadcast_op(const char *name) {
  return {name, 2, OpPattern::Broadcast, {}, binary_rel<F, false>, binary_kernel<Fn, F, false>};
}

template <typename Fn>
OpDef compare(const char *name) {
  return {
      name, 2, OpPattern::Broadcast, {}, binary_rel<Family::Any, true>, binary_kernel<Fn, Family::Any, true>};
}

}  // namespace

double leaky_relu_alpha(const Attrs &attrs) {
  const double alpha = attr_float(attrs, "alpha", 0.25);
  if (!(alpha >= 0.0)) throw OpError(fmt::format("attribute 'alpha' must be >= 0, found {}", alpha));
  return alpha;
}

std::vector<OpDef> elementwise_ops() {
  const TypeRelation float_rel = unary_rel<Family::Float>;
  const TypeRelation numeric_rel = unary_rel<Family::Numeric>;
  return {
      float_unary("exp", float_rel, float_math_kernel<op_exp>),
      float_unary("log", float_rel, float_math_kernel<op_log>),
      float_unary("sqrt", float_rel, float_math_kernel<op_sqrt>),
      float_unary("tanh", float_rel, float_math_kernel<op_tanh>),
      float_unary("sigmoid", float_rel, float_math_kernel<op_sigmoid>),
      float_unary("erf", float_rel, float_math_kernel<op_erf>),
      {"negative", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Negative, Family::Numeric>},
      {"abs", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Abs, Family::Numeric>},
      {"nn.relu", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Relu, Family::Numeric>},
      {"floor", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Floor, Family::Numeric>},
      {"ceil", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Ceil, Family::Numeric>},
      {"round", 1, OpPattern::ElemWise, {}, numeric_rel, unary_kernel<Round, Family::Numeric>},
      {"nn.leaky_relu", 1, OpPattern::ElemWise, {"alpha"}, leaky_relu_rel, leaky_relu_kernel},
      {"clip", 1, OpPattern::ElemWise, {"a_min", "a_max"}, clip_rel, clip_kernel},
      {"copy", 1, OpPattern::ElemWise, {}, unary_rel<Family::Any>, copy_kernel},
      {"cast", 1, OpPattern::ElemWise, {"dtype"}, cast_rel, cast_kernel},
      {"logical_not",
       1,
       OpPattern::ElemWise,
       {},
       unary_rel<Family::Bool>,
       unary_kernel<LogicalNot, Family::Bool>},
      arith<Add>("add"),
      arith<Subtract>("subtract"),
      arith<Multiply>("multiply"),
      arith<Divide>("divide"),
      arith<Maximum>("maximum"),
      arith<Minimum>("minimum"),
      broadcast_op<Power, Family::Float>("power"),
      broadcast_op<LogicalAnd, Family::Bool>("logical_and"),
      broadcast_op<LogicalOr, Family::Bool>("logical_or"),
      compare<Equal>("equal"),
      compare<NotEqual>("not_equal"),
      compare<Less>("less"),
      compare<Greater>("greater"),
      compare<LessEqual>("less_equal"),
      compare<GreaterEqual>("greater_equal"),
      {"where", 3, OpPattern::Broadcast, {}, where_rel, where_kernel},
      {"broadcast_to", 1, OpPattern::Broadcast, {"shape"}, broadcast_to_rel, broadcast_to_kernel},
  };
}

}  // namespace grove::relay
