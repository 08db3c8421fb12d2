// Lowering a Primitive function to one Halide pipeline (HalideLower.h): each op call becomes a
// Halide Func over its result's dimensions (Halide's dimension 0 is the innermost, so indices are
// the row-major ones reversed). Elementwise, broadcast and injective ops (tile, nn.pad and one_hot
// among them) stay inline in their consumers (Halide's default); reductions (global_avg_pool2d's
// mean too), softmax's and layer_norm's statistics, pools and the anchor ops (dense, batch_matmul,
// conv2d: HalideNN.cpp) are computed as root stages with their own schedules; the outputs are
// vectorized over the innermost dimension and, when big enough (worth_parallel), parallel over the
// outermost.

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "backends/relay/halide/HalideLowerer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "frontend/relay/ops/Reduce.h"
#include "frontend/relay/ops/Transform.h"
#include "support/Error.h"

namespace grove::relay::halide_internal {
namespace {

// Integer arithmetic wraps around (two's complement), as the interpreter's does: computed in the
// unsigned type of the same width, where Halide defines overflow.
HExpr wrapping(char op, HExpr a, HExpr b) {
  const Halide::Type t = a.type();
  auto apply = [op](HExpr x, HExpr y) { return op == '+' ? x + y : op == '-' ? x - y : x * y; };
  if (!t.is_int()) return apply(a, b);
  const Halide::Type u = Halide::UInt(t.bits());
  return Halide::reinterpret(t, apply(Halide::reinterpret(u, a), Halide::reinterpret(u, b)));
}

// cast as the interpreter's kernel converts (ops/Elementwise.cpp): to bool, nonzero is 1; a float
// to an integer truncates toward zero, saturates at the integer's range (whose bounds are powers of
// two, exact in every float type) and gives 0 for NaN; integers narrow by wrapping (Halide's cast).
HExpr cast_as_interpreter(HExpr x, Halide::Type to, bool to_bool) {
  const Halide::Type from = x.type();
  if (to_bool)
    return Halide::select(x != Halide::Internal::make_zero(from), Halide::Internal::make_one(to),
                          Halide::Internal::make_zero(to));
  if (!from.is_float() || to.is_float()) return Halide::cast(to, x);
  const int bits = to.bits();
  const double lo = to.is_int() ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = to.is_int() ? std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits);  // exclusive
  HExpr lo_f = Halide::cast(from, HExpr(lo)), hi_f = Halide::cast(from, HExpr(hi));
  return Halide::select(
      Halide::is_nan(x), Halide::Internal::make_zero(to),
      Halide::select(x >= hi_f, to.max(), Halide::select(x <= lo_f, to.min(), Halide::cast(to, x))));
}

// The lines of a tensor of shape `x` along `axis`, for a statistic per line (softmax's max and sum,
// layer_norm's mean and variance): the shape without the axis, its Vars (and reversed: the order a
// Func takes them), a reduction domain over the axis, and the two index conversions.
struct AxisLines {
  int64_t axis;
  Shape shape;
  std::vector<HVar> vars, rev;
  RDom r;
  AxisLines(const Shape &x, int64_t axis, const std::string &r_name)
      : axis(axis),
        shape(without(x, axis)),
        vars(make_vars(shape.size())),
        rev(vars.rbegin(), vars.rend()),
        r(0, static_cast<int>(x[axis]), r_name) {}
  // The tensor's index for the line `o` at `a` along the axis.
  std::vector<HExpr> with_axis(std::vector<HExpr> o, HExpr a) const {
    o.insert(o.begin() + axis, std::move(a));
    return o;
  }
  // A statistic's index (reversed) for the tensor's index `i`.
  std::vector<HExpr> line_of(std::vector<HExpr> i) const {
    i.erase(i.begin() + axis);
    return {i.rbegin(), i.rend()};
  }

 private:
  static Shape without(Shape s, int64_t axis) {
    s.erase(s.begin() + axis);
    return s;
  }
};

// Integer division rounding toward zero by a positive constant (Halide's rounds down).
HExpr trunc_div(HExpr a, int64_t b) {
  HExpr d = Halide::Internal::make_const(a.type(), b);
  return Halide::select(a < 0 && a % d != 0, a / d + 1, a / d);
}

}  // namespace

Halide::Type Lowerer::htype(DType d, const Span &span) const {
  switch (d) {
    case DType::Bool:
      return Halide::UInt(8);  // stored as bytes 0/1, as NDArray does
    case DType::Int8:
      return Halide::Int(8);
    case DType::Int16:
      return Halide::Int(16);
    case DType::Int32:
      return Halide::Int(32);
    case DType::Int64:
      return Halide::Int(64);
    case DType::UInt8:
      return Halide::UInt(8);
    case DType::UInt16:
      return Halide::UInt(16);
    case DType::UInt32:
      return Halide::UInt(32);
    case DType::UInt64:
      return Halide::UInt(64);
    case DType::Float16:
    case DType::Float32:
      return Halide::Float(32);
    case DType::Float64:
      return Halide::Float(64);
  }
  unsupported(fmt::format("dtype {}", to_string(d)), span);
}

Halide::Type Lowerer::storage_type(DType d, const Span &span) const {
  return d == DType::Float16 ? Halide::Float(16) : htype(d, span);
}

// Halide converts float to Float(16) rounding to nearest even (F16C's vcvtps2ph, or its emulation
// on targets without it), as the interpreter's narrow_to_float16 does.
LValue Lowerer::round_float16(const LValue &v) {
  if (v.is_tuple) {
    LValue r = v;
    for (LValue &f : r.fields) f = round_float16(f);
    return r;
  }
  if (v.tensor.dtype != DType::Float16) return v;
  const Tensor &t = v.tensor;
  return of(define("float16", DType::Float16, t.shape, [&](const std::vector<HExpr> &i) {
    return Halide::cast(Halide::Float(32), Halide::cast(Halide::Float(16), at(t, i)));
  }));
}

Tensor Lowerer::define(const std::string &base, DType dtype, const Shape &shape,
                       const std::function<HExpr(const std::vector<HExpr> &)> &value) {
  for (int64_t d : shape)
    if (d <= 0)
      unsupported(fmt::format("empty tensors (shape {}) in {}", shape_to_string(shape), op_), span_);
  if (numel(shape) > std::numeric_limits<int32_t>::max())
    unsupported(fmt::format("tensors of 2^31 or more elements (shape {})", shape_to_string(shape)), span_);
  std::vector<HVar> vars = make_vars(shape.size());
  Tensor t{Func(fresh(base)), dtype, shape, false};
  HExpr v = value(exprs(vars));
  const Halide::Type ht = htype(dtype, span_);
  if (v.type() != ht) v = Halide::cast(ht, v);
  t.f(std::vector<HVar>(vars.rbegin(), vars.rend())) = v;
  return t;
}

// A root copy of `t` unless it is materialized already (anchor ops read their inputs many times).
Tensor Lowerer::materialize(const Tensor &t) {
  if (t.root) return t;
  Tensor r = define("copy", t.dtype, t.shape, [&](const std::vector<HExpr> &i) { return at(t, i); });
  r.f.compute_root();
  schedule_stage(r.f, r.shape, r.dtype, 0);
  r.root = true;
  return r;
}

// A root stage: vectorized over the innermost dimension, parallel over the outermost when it is
// worth a parallel loop.
void Lowerer::schedule_stage(Func f, const Shape &shape, DType dtype, int64_t update_steps) {
  scheduled_.insert(f.name());
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) return;
  const std::vector<HVar> vars = make_vars(shape.size());  // same names as define() uses
  const HVar inner = vars.back(), outer = vars.front();
  const int w = lanes(dtype);
  const bool parallel = worth_parallel(numel(shape) * kElementWork * std::max<int64_t>(update_steps, 1));
  // Pure definitions shift the last vector inwards (the region stays exact: an intermediate's would
  // otherwise be rounded up, reading its inputs out of bounds). Updates must not compute a point
  // twice, so they have no tail at all: the widest power-of-two width that divides the extent.
  // (GuardWithIf is not enough: Halide 14 drops the guard of an update that reads another root
  // stage, e.g. layer_norm's variance over 5 lines in pairs, writing and reading a sixth.)
  // Returns whether the stage got a schedule.
  auto apply = [&](auto &&stage, int width, Halide::TailStrategy tail) {
    bool scheduled = false;
    if (width > 1 && shape.back() >= width) stage.vectorize(inner, width, tail), scheduled = true;
    if (rank >= 2 && shape.front() > 1 && parallel) stage.parallel(outer), scheduled = true;
    return scheduled;
  };
  apply(f, w, Halide::TailStrategy::ShiftInwards);
  if (update_steps > 0) {
    int exact = w;
    while (exact > 1 && shape.back() % exact != 0) exact /= 2;
    Halide::Stage u = f.update();
    // A serial update is meant (Halide would warn that it has no schedule where the pure one has).
    if (!apply(u, exact, Halide::TailStrategy::RoundUp)) u.unscheduled();
  }
}

// The same elements (row-major order) seen with another shape.
Tensor Lowerer::reshape(const Tensor &t, const Shape &shape) {
  if (shape == t.shape) return t;
  const std::vector<int64_t> in_shape = t.shape;
  return define("reshape", t.dtype, shape, [&](const std::vector<HExpr> &i) {
    HExpr flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * static_cast<int>(shape[d]) + i[d];
    std::vector<HExpr> idx(in_shape.size());
    int64_t stride = 1;
    for (size_t d = in_shape.size(); d-- > 0;) {
      idx[d] = (flat / static_cast<int>(stride)) % static_cast<int>(in_shape[d]);
      stride *= in_shape[d];
    }
    return at(t, idx);
  });
}

// NumPy broadcasting: `t` aligned to the right of `out_shape`, size-1 dimensions stretched.
HExpr Lowerer::broadcast_at(const Tensor &t, const std::vector<HExpr> &idx, const Shape &out_shape) {
  const size_t r = t.shape.size(), offset = out_shape.size() - r;
  std::vector<HExpr> in(r);
  for (size_t d = 0; d < r; ++d) in[d] = t.shape[d] == 1 ? HExpr(0) : idx[offset + d];
  return at(t, in);
}

Tensor Lowerer::elementwise(const std::string &op, const Call &call, const std::vector<Tensor> &a,
                            const TensorType &out) {
  const Halide::Type t = htype(a.back().dtype, call.span);
  const bool is_f = t.is_float();
  const Halide::Type u8 = Halide::UInt(8);
  auto bool_of = [&](HExpr c) { return Halide::select(c, one(u8), zero(u8)); };
  std::function<HExpr(const std::vector<HExpr> &)> f;
  auto arg = [&](size_t k, const std::vector<HExpr> &i) { return broadcast_at(a[k], i, out.shape); };
  auto unary = [&](std::function<HExpr(HExpr)> g) {
    f = [&, g](const std::vector<HExpr> &i) { return g(arg(0, i)); };
  };
  auto binary = [&](std::function<HExpr(HExpr, HExpr)> g) {
    f = [&, g](const std::vector<HExpr> &i) { return g(arg(0, i), arg(1, i)); };
  };
  auto float_only = [&]() {
    if (!is_f) unsupported(fmt::format("{} of {}", op, to_string(a[0].dtype)), call.span);
  };
  if (op == "exp")
    float_only(), unary([](HExpr x) { return Halide::exp(x); });
  else if (op == "log")
    float_only(), unary([](HExpr x) { return Halide::log(x); });
  else if (op == "sqrt")
    float_only(), unary([](HExpr x) { return Halide::sqrt(x); });
  else if (op == "tanh")
    float_only(), unary([](HExpr x) { return Halide::tanh(x); });
  else if (op == "sigmoid")
    float_only(), unary([t](HExpr x) { return one(t) / (one(t) + Halide::exp(-x)); });
  else if (op == "negative")
    unary([t](HExpr x) { return wrapping('-', zero(t), x); });
  else if (op == "abs")
    unary([t](HExpr x) { return Halide::select(x < zero(t), wrapping('-', zero(t), x), x); });
  else if (op == "nn.relu")
    unary([t](HExpr x) { return Halide::max(x, zero(t)); });
  else if (op == "nn.leaky_relu")
    float_only(), unary([t, alpha = leaky_relu_alpha(call.attrs)](HExpr x) {
      return Halide::select(x > zero(t), x, x * Halide::cast(t, HExpr(alpha)));
    });
  else if (op == "zeros_like")
    unary([t](HExpr) { return zero(t); });
  else if (op == "ones_like")
    unary([t](HExpr) { return one(t); });
  else if (op == "logical_not")
    unary([&](HExpr x) { return bool_of(x == zero(u8)); });
  else if (op == "copy" || op == "broadcast_to")
    unary([](HExpr x) { return x; });
  else if (op == "floor" || op == "ceil" || op == "round") {
    // Integers stay as they are. round takes halves away from zero (std::round, TVM's llvm.round;
    // Halide's round takes them to even): x - trunc(x) is exact.
    if (!is_f)
      unary([](HExpr x) { return x; });
    else if (op == "floor")
      unary([](HExpr x) { return Halide::floor(x); });
    else if (op == "ceil")
      unary([](HExpr x) { return Halide::ceil(x); });
    else
      unary([t](HExpr x) {
        HExpr r = Halide::trunc(x);
        HExpr half = Halide::cast(t, HExpr(0.5));
        return Halide::select(x - r >= half, r + one(t), Halide::select(r - x >= half, r - one(t), r));
      });
  } else if (op == "cast")
    unary([to = htype(out.dtype, call.span), to_bool = out.dtype == DType::Bool](HExpr x) {
      return cast_as_interpreter(x, to, to_bool);
    });
  else if (op == "clip") {
    const ClipAttrs bounds = clip_attrs(call.attrs);
    const double lo_d = bounds.a_min, hi_d = bounds.a_max;
    // Bounds converted as the interpreter converts them: rounded for floats, truncated toward zero
    // and saturated for integers.
    auto bound = [&](double v) -> HExpr {
      if (is_f) return Halide::cast(t, HExpr(v));
      if (std::isnan(v)) unsupported("clip with a NaN bound on integers", call.span);
      const double lo = t.bits() == 64 ? -9.2233720368547758e18 : -std::ldexp(1.0, t.bits() - 1);
      const double hi = -lo;
      if (v <= lo) return t.min();
      if (v >= hi) return t.max();
      return Halide::Internal::make_const(t, static_cast<int64_t>(v));
    };
    HExpr lo = bound(lo_d), hi = bound(hi_d);
    unary([lo, hi](HExpr x) {
      HExpr v = Halide::select(x < hi, x, hi);
      return Halide::select(v > lo, v, lo);
    });
  } else if (op == "add")
    binary([](HExpr x, HExpr y) { return wrapping('+', x, y); });
  else if (op == "subtract")
    binary([](HExpr x, HExpr y) { return wrapping('-', x, y); });
  else if (op == "multiply")
    binary([](HExpr x, HExpr y) { return wrapping('*', x, y); });
  else if (op == "maximum")  // as TVM's Max lowers and the interpreter computes: a NaN in y wins
    binary([](HExpr x, HExpr y) { return Halide::select(x > y, x, y); });
  else if (op == "minimum")
    binary([](HExpr x, HExpr y) { return Halide::select(x < y, x, y); });
  else if (op == "power")
    float_only(), binary([](HExpr x, HExpr y) { return Halide::pow(x, y); });
  else if (op == "logical_and")
    binary([&](HExpr x, HExpr y) { return bool_of(x != zero(u8) && y != zero(u8)); });
  else if (op == "logical_or")
    binary([&](HExpr x, HExpr y) { return bool_of(x != zero(u8) || y != zero(u8)); });
  else if (op == "divide") {
    // Integer division by zero is an error in the interpreter; a pipeline cannot report it.
    if (!is_f) unsupported(fmt::format("integer divide ({})", to_string(a[0].dtype)), call.span);
    binary([](HExpr x, HExpr y) { return x / y; });
  } else if (op == "equal")
    binary([&](HExpr x, HExpr y) { return bool_of(x == y); });
  else if (op == "not_equal")
    binary([&](HExpr x, HExpr y) { return bool_of(x != y); });
  else if (op == "less")
    binary([&](HExpr x, HExpr y) { return bool_of(x < y); });
  else if (op == "greater")
    binary([&](HExpr x, HExpr y) { return bool_of(x > y); });
  else if (op == "less_equal")
    binary([&](HExpr x, HExpr y) { return bool_of(x <= y); });
  else if (op == "greater_equal")
    binary([&](HExpr x, HExpr y) { return bool_of(x >= y); });
  else if (op == "where")
    f = [&](const std::vector<HExpr> &i) {
      return Halide::select(arg(0, i) != zero(u8), arg(1, i), arg(2, i));
    };
  else if (op == "nn.bias_add") {
    const int64_t axis =
        normalize_axis(bias_add_attrs(call.attrs).axis, static_cast<int64_t>(out.shape.size()));
    f = [&, axis](const std::vector<HExpr> &i) { return at(a[0], i) + at(a[1], {i[axis]}); };
  } else {
    GROVE_CHECK(false, "no elementwise lowering for {}", op);
  }
  // Float arithmetic as written (no fused multiply-adds or reassociation), so results equal the
  // interpreter's bit for bit; the whole inlined expression is strict.
  if (is_float(out.dtype)) f = [g = f](const std::vector<HExpr> &i) { return Halide::strict_float(g(i)); };
  return define(op, out.dtype, out.shape, f);
}

Tensor Lowerer::reduce(const std::string &op, const Call &call, const Tensor &x, const TensorType &out) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const ReduceAttrs attrs = reduce_attrs(call.attrs);
  const bool keepdims = attrs.keepdims;
  const std::vector<bool> reduced = plan_reduce(x.shape, attrs).reduced;
  // The reduction domain, innermost input dimension first (Halide's RDom order).
  std::vector<Halide::Range> ranges;
  std::vector<int64_t> rdims;
  int64_t count = 1;
  for (int64_t d = rank; d-- > 0;)
    if (reduced[d]) {
      ranges.emplace_back(0, static_cast<int>(x.shape[d]));
      rdims.push_back(d);
      count *= x.shape[d];
    }
  const Halide::Type t = htype(x.dtype, call.span);
  const bool is_max = op == "max";
  // Sums accumulate in float64 (floats) or the unsigned type of the same width (integers, which
  // wrap), as the interpreter's do.
  const Halide::Type acc_t = is_max ? t : t.is_float() ? Halide::Float(64) : Halide::UInt(t.bits());
  auto input_index = [&](const std::vector<HExpr> &o, const RDom &r) {
    std::vector<HExpr> idx(rank);
    size_t od = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        idx[d] = r[static_cast<int>(std::find(rdims.begin(), rdims.end(), d) - rdims.begin())];
        if (keepdims) ++od;
      } else {
        idx[d] = o[od++];
      }
    }
    return idx;
  };
  Shape acc_shape = out.shape;
  const std::vector<HVar> vars = make_vars(acc_shape.size());
  const std::vector<HVar> rev(vars.rbegin(), vars.rend());
  Func acc(fresh(op + "_acc"));
  if (op == "argmax") {
    // A (index, value) update in the interpreter's order (row-major over the reduced axes, which
    // the RDom's innermost-first order walks), with TVM's combiner: the element replaces the best so
    // far unless the best is larger, or equal without select_last_index. `flat` is the element's
    // row-major index within the reduced axes.
    if (count == 0) unsupported("argmax over zero elements", call.span);
    if (ranges.empty())
      return define("argmax", DType::Int32, out.shape, [](const std::vector<HExpr> &) { return HExpr(0); });
    const bool last = attrs.select_last_index;
    RDom r(ranges, fresh("r"));
    HExpr flat = 0;
    int64_t stride = 1;
    for (size_t k = 0; k < rdims.size(); ++k) {
      flat = flat + r[static_cast<int>(k)] * static_cast<int>(stride);
      stride *= x.shape[rdims[k]];
    }
    const HExpr v = at(x, input_index(exprs(vars), r));
    acc(rev) = Halide::Tuple(HExpr(-1), zero(t));
    const HExpr best_i = acc(rev)[0], best = acc(rev)[1];
    const HExpr keep = last ? best > v : best > v || best == v;
    const HExpr take = best_i < 0 || !keep;
    acc(rev) = Halide::Tuple(Halide::select(take, flat, best_i), Halide::select(take, v, best));
    acc.compute_root();
    schedule_stage(acc, acc_shape, DType::Int32, count);
    return define("argmax", DType::Int32, out.shape, [&](const std::vector<HExpr> &o) {
      return acc(std::vector<HExpr>(o.rbegin(), o.rend()))[0];
    });
  }
  if (ranges.empty()) {
    acc(rev) = Halide::cast(acc_t, at(x, input_index(exprs(vars), RDom())));
  } else {
    RDom r(ranges, fresh("r"));
    HExpr v = at(x, input_index(exprs(vars), r));
    if (is_max) {
      const HExpr lowest =
          t.is_float() ? Halide::cast(t, HExpr(t.bits() == 32 ? -double(FLT_MAX) : -DBL_MAX)) : t.min();
      acc(rev) = lowest;
      HExpr cur = acc(rev);
      HExpr better = t.is_float() ? (Halide::is_nan(v) || v > cur) : v > cur;  // NaN wins, as in NumPy
      acc(rev) = Halide::select(better, v, cur);
    } else {
      acc(rev) = zero(acc_t);
      acc(rev) = acc(rev) + (t.is_float() ? Halide::cast(acc_t, v) : Halide::reinterpret(acc_t, v));
    }
    acc.compute_root();
    schedule_stage(acc, acc_shape, is_max ? x.dtype : DType::Float64, std::max<int64_t>(count, 1));
  }
  return define(op, out.dtype, out.shape, [&](const std::vector<HExpr> &o) -> HExpr {
    HExpr v = acc(std::vector<HExpr>(o.rbegin(), o.rend()));
    if (is_max || ranges.empty()) return Halide::cast(t, v);
    if (t.is_float())
      return Halide::cast(
          t,
          op == "mean" ? v / Halide::Internal::make_const(Halide::Float(64), static_cast<double>(count)) : v);
    HExpr s = Halide::reinterpret(t, v);
    return op == "mean" ? trunc_div(Halide::cast(Halide::Int(64), s), count) : s;
  });
}

// softmax = exp(x - max) / sum(exp(x - max)) along the axis, computed in float64 as the
// interpreter computes it; the max and the sum are root stages.
Tensor Lowerer::softmax(const Call &call, const Tensor &x) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = axis_attr(call.attrs, -1, rank);
  const Halide::Type f64 = Halide::Float(64);
  const AxisLines lines(x.shape, axis, fresh("r"));
  const std::vector<HVar> &rev = lines.rev;
  auto x_at = [&](HExpr a) { return Halide::cast(f64, at(x, lines.with_axis(exprs(lines.vars), a))); };
  Func mx(fresh("softmax_max")), sum(fresh("softmax_sum"));
  mx(rev) = Halide::cast(f64, -INFINITY);
  mx(rev) = Halide::max(mx(rev), x_at(lines.r));
  sum(rev) = zero(f64);
  sum(rev) += Halide::exp(x_at(lines.r) - mx(rev));
  for (Func f : {mx, sum}) {
    f.compute_root();
    schedule_stage(f, lines.shape, DType::Float64, std::max<int64_t>(x.shape[axis], 1));
  }
  return define("nn.softmax", x.dtype, x.shape, [&](const std::vector<HExpr> &i) {
    const std::vector<HExpr> ro = lines.line_of(i);
    return Halide::exp(Halide::cast(f64, at(x, i)) - mx(ro)) / sum(ro);
  });
}

// strided_slice's axes as the interpreter canonicalizes them (ops/Transform.h, strided_slice_axes).
Tensor Lowerer::strided_slice(const Call &call, const Tensor &x, const TensorType &out) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  for (const SliceAxis &a : strided_slice_axes(x.shape, strided_slice_attrs(call.attrs))) {
    first[a.axis] = a.begin;
    step[a.axis] = a.stride;
  }
  return define("strided_slice", out.dtype, out.shape, [&](const std::vector<HExpr> &i) {
    std::vector<HExpr> idx(rank);
    for (int64_t d = 0; d < rank; ++d) idx[d] = static_cast<int>(first[d]) + i[d] * static_cast<int>(step[d]);
    return at(x, idx);
  });
}

Tensor Lowerer::take(const Call &call, const Tensor &data, const Tensor &indices, const TensorType &out) {
  const TakeAttrs attrs = take_attrs(call.attrs);
  const std::string &mode = attrs.mode;
  // "fast" makes an out-of-range index an error, which a pipeline cannot report.
  if (mode != "clip" && mode != "wrap") unsupported(fmt::format("take with mode \"{}\"", mode), call.span);
  const bool flat = !attrs.axis;
  const Tensor src = flat ? reshape(data, {numel(data.shape)}) : data;
  const int64_t axis = flat ? 0 : normalize_axis(*attrs.axis, static_cast<int64_t>(data.shape.size()));
  const int64_t n = src.shape[axis], ni = static_cast<int64_t>(indices.shape.size());
  const Halide::Type i64 = Halide::Int(64);
  return define("take", out.dtype, out.shape, [&](const std::vector<HExpr> &i) {
    std::vector<HExpr> ind(i.begin() + axis, i.begin() + axis + ni);
    HExpr k = Halide::cast(i64, at(indices, ind));
    const HExpr nn = Halide::Internal::make_const(i64, n);
    k = mode == "clip" ? Halide::clamp(k, zero(i64), nn - 1) : k % nn;  // Halide's % is never negative
    std::vector<HExpr> idx(i.begin(), i.begin() + axis);
    idx.push_back(Halide::cast(Halide::Int(32), k));
    idx.insert(idx.end(), i.begin() + axis + ni, i.end());
    return at(src, idx);
  });
}

LValue Lowerer::lower_call(const Call &call, const std::vector<LValue> &args, const Type &result) {
  const std::string &op = op_;
  std::vector<Tensor> t;
  for (const LValue &a : args)
    if (!a.is_tuple) t.push_back(a.tensor);
  if (const auto *tt = result.as<TupleType>()) {
    std::vector<const TensorType *> outs;
    for (const Type &f : tt->fields) {
      const auto *ft = f.as<TensorType>();
      GROVE_CHECK(ft, "{} returned a nested tuple", op);
      outs.push_back(ft);
    }
    LValue v;
    v.is_tuple = true;
    if (op == "split") {
      const int64_t axis =
          normalize_axis(split_attrs(call.attrs).axis, static_cast<int64_t>(t[0].shape.size()));
      int64_t begin = 0;
      for (const TensorType *ft : outs) {
        const int b = static_cast<int>(begin);
        v.fields.push_back(of(define("split", ft->dtype, ft->shape, [&](const std::vector<HExpr> &i) {
          std::vector<HExpr> idx = i;
          idx[axis] = idx[axis] + b;
          return at(t[0], idx);
        })));
        begin += ft->shape[axis];
      }
      return v;
    }
    if (op == "nn.batch_norm") {
      const NormAttrs attrs = norm_attrs(call.attrs, 1);
      const int64_t axis = normalize_axis(attrs.axis, static_cast<int64_t>(t[0].shape.size()));
      const double eps = attrs.epsilon;
      const bool center = attrs.center, scale = attrs.scale;
      if (!is_float(t[0].dtype))
        unsupported(fmt::format("nn.batch_norm of {}", to_string(t[0].dtype)), call.span);
      const Halide::Type ht = htype(t[0].dtype, call.span);
      v.fields.push_back(
          of(define("batch_norm", outs[0]->dtype, outs[0]->shape, [&](const std::vector<HExpr> &i) {
            HExpr c = i[axis];
            HExpr denom = Halide::sqrt(at(t[4], {c}) + Halide::cast(ht, HExpr(eps)));
            HExpr y = (at(t[0], i) - at(t[3], {c})) / denom;
            if (scale) y = y * at(t[1], {c});
            if (center) y = y + at(t[2], {c});
            return y;
          })));
      for (int k : {3, 4})
        v.fields.push_back(of(define("batch_norm_stat", t[k].dtype, t[k].shape,
                                     [&](const std::vector<HExpr> &i) { return at(t[k], i); })));
      return v;
    }
    unsupported(op, call.span);
  }
  const auto *out = result.as<TensorType>();
  GROVE_CHECK(out, "{} returned {}", op, to_string(result));
  static const std::set<std::string> kElementwise = {
      "exp",         "log",           "sqrt",         "tanh",          "sigmoid",    "negative",
      "abs",         "nn.relu",       "clip",         "logical_not",   "add",        "subtract",
      "multiply",    "divide",        "equal",        "not_equal",     "less",       "greater",
      "less_equal",  "greater_equal", "where",        "nn.bias_add",   "copy",       "cast",
      "floor",       "ceil",          "round",        "maximum",       "minimum",    "power",
      "logical_and", "logical_or",    "broadcast_to", "nn.leaky_relu", "zeros_like", "ones_like"};
  if (kElementwise.count(op)) return of(elementwise(op, call, t, *out));
  if (op == "sum" || op == "mean" || op == "max" || op == "argmax") return of(reduce(op, call, t[0], *out));
  if (op == "nn.softmax") return of(softmax(call, t[0]));
  if (op == "reshape" || op == "squeeze" || op == "expand_dims" || op == "nn.batch_flatten")
    return of(reshape(t[0], out->shape));
  if (op == "transpose" || op == "layout_transform") {
    const int64_t rank = static_cast<int64_t>(t[0].shape.size());
    std::vector<int64_t> axes;
    if (op == "layout_transform")
      axes = layout_axes(static_cast<size_t>(rank), call.attrs);
    else
      axes = transpose_permutation(rank, transpose_attrs(call.attrs));
    return of(define("transpose", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      std::vector<HExpr> idx(rank);
      for (int64_t d = 0; d < rank; ++d) idx[axes[d]] = i[d];
      return at(t[0], idx);
    }));
  }
  if (op == "concatenate") {
    GROVE_CHECK(args.size() == 1 && args[0].is_tuple, "concatenate of a non-tuple");
    std::vector<Tensor> parts;
    for (const LValue &f : args[0].fields) {
      if (f.is_tuple) unsupported("concatenate of nested tuples", call.span);
      parts.push_back(f.tensor);
    }
    const int64_t axis =
        normalize_axis(concatenate_attrs(call.attrs).axis, static_cast<int64_t>(out->shape.size()));
    return of(define("concatenate", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      // Each part's index is clamped into its bounds: select evaluates every branch's bounds.
      HExpr value;
      int64_t end = 0;
      std::vector<int64_t> starts;
      for (const Tensor &p : parts) starts.push_back(end), end += p.shape[axis];
      for (size_t k = parts.size(); k-- > 0;) {
        std::vector<HExpr> idx = i;
        idx[axis] = Halide::clamp(i[axis] - static_cast<int>(starts[k]), 0,
                                  static_cast<int>(parts[k].shape[axis] - 1));
        HExpr v = at(parts[k], idx);
        value = value.defined() ? Halide::select(i[axis] < static_cast<int>(starts[k + 1]), v, value) : v;
      }
      return value;
    }));
  }
  if (op == "strided_slice") return of(strided_slice(call, t[0], *out));
  if (op == "take") return of(take(call, t[0], t[1], *out));
  if (op == "tile") {
    // Result dimension d reads input dimension d - offset (the input padded with leading 1s).
    const Tensor &x = t[0];
    const size_t offset = out->shape.size() - x.shape.size();
    return of(define("tile", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      std::vector<HExpr> idx;
      for (size_t d = 0; d < x.shape.size(); ++d) idx.push_back(i[d + offset] % static_cast<int>(x.shape[d]));
      return at(x, idx);
    }));
  }
  if (op == "nn.pad") {
    // The source index per dimension: i - before, then clamped ("edge"), mirrored ("reflect") or,
    // outside the data, the pad value ("constant"; the index is clamped all the same, since select
    // evaluates both branches' bounds).
    const Tensor &x = t[0], &value = t[1];
    const PadAttrs pad = pad_attrs(call.attrs);
    const std::string &mode = pad.mode;
    const std::vector<int64_t> &before = pad.before;
    return of(define("pad", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      std::vector<HExpr> idx;
      HExpr inside = Halide::Internal::const_true();
      for (size_t d = 0; d < x.shape.size(); ++d) {
        const int n = static_cast<int>(x.shape[d]);
        HExpr j = i[d] - static_cast<int>(before[d]);
        if (mode == "reflect") j = Halide::select(j < 0, -j, Halide::select(j >= n, 2 * (n - 1) - j, j));
        if (mode == "constant") inside = inside && j >= 0 && j < n;
        idx.push_back(Halide::clamp(j, 0, n - 1));
      }
      return mode == "constant" ? Halide::select(inside, at(x, idx), at(value, {})) : at(x, idx);
    }));
  }
  if (op == "one_hot") {
    // Element i is on_value where the index at i without the axis equals i[axis], else off_value;
    // both converted to the result dtype as cast converts.
    const int64_t a = one_hot_attrs(call.attrs).axis;
    const int64_t axis = a == -1 ? static_cast<int64_t>(out->shape.size()) - 1 : a;
    const Halide::Type to = htype(out->dtype, call.span);
    const bool to_bool = out->dtype == DType::Bool;
    return of(define("one_hot", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      std::vector<HExpr> idx = i;
      idx.erase(idx.begin() + axis);
      HExpr k = Halide::cast(Halide::Int(64), at(t[0], idx));
      HExpr on = cast_as_interpreter(at(t[1], {}), to, to_bool),
            off = cast_as_interpreter(at(t[2], {}), to, to_bool);
      return Halide::select(k == Halide::cast(Halide::Int(64), i[axis]), on, off);
    }));
  }
  if (op == "nn.layer_norm") {
    // As the interpreter computes it, in float64: the mean and the biased variance along the axis
    // are root stages, then (x - mean) / sqrt(var + epsilon) [* gamma] [+ beta].
    const Tensor &x = t[0];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const NormAttrs attrs = norm_attrs(call.attrs, -1);
    const int64_t axis = normalize_axis(attrs.axis, rank);
    const double eps = attrs.epsilon;
    const bool center = attrs.center, scale = attrs.scale;
    const Halide::Type f64 = Halide::Float(64);
    const HExpr c = Halide::Internal::make_const(f64, static_cast<double>(x.shape[axis]));
    const AxisLines lines(x.shape, axis, fresh("r"));
    const std::vector<HVar> &rev = lines.rev;
    auto x_at = [&](HExpr a) { return Halide::cast(f64, at(x, lines.with_axis(exprs(lines.vars), a))); };
    Func sum(fresh("layer_norm_sum")), mean(fresh("layer_norm_mean")), var(fresh("layer_norm_var"));
    sum(rev) = zero(f64);
    sum(rev) += x_at(lines.r);
    mean(rev) = sum(rev) / c;
    HExpr d = x_at(lines.r) - mean(rev);
    var(rev) = zero(f64);
    var(rev) += d * d;
    for (Func f : {sum, var}) {
      f.compute_root();
      schedule_stage(f, lines.shape, DType::Float64, std::max<int64_t>(x.shape[axis], 1));
    }
    return of(define("layer_norm", out->dtype, out->shape, [&](const std::vector<HExpr> &i) {
      const std::vector<HExpr> ro = lines.line_of(i);
      HExpr v = (Halide::cast(f64, at(x, i)) - mean(ro)) / Halide::sqrt(var(ro) / c + HExpr(eps));
      if (scale) v = v * Halide::cast(f64, at(t[1], {i[axis]}));
      if (center) v = v + Halide::cast(f64, at(t[2], {i[axis]}));
      return Halide::strict_float(v);
    }));
  }
  if (op == "nn.global_avg_pool2d") {
    // The mean over (H, W) with keepdims, as the interpreter sums: in float64, row-major.
    const Expr mean =
        Call::make(call.op, call.args,
                   Attrs()
                       .with("axis", AttrValue::of_list({AttrValue::of_int(2), AttrValue::of_int(3)}))
                       .with("keepdims", AttrValue::of_bool(true)),
                   {}, call.span);
    return of(reduce("mean", *mean.as<Call>(), t[0], *out));
  }
  if (op == "nn.dense") return of(dense(call, t[0], t[1], *out));
  if (op == "nn.batch_matmul") return of(batch_matmul(call, t[0], t[1], *out));
  if (op == "nn.conv2d") return of(conv2d(call, t[0], t[1], *out));
  if (op == "nn.max_pool2d" || op == "nn.avg_pool2d")
    return of(pool2d(op == "nn.max_pool2d", call, t[0], *out));
  unsupported(op, call.span);
}

namespace {

Type type_of(const LValue &v) {
  if (!v.is_tuple) return TensorType::make(v.tensor.shape, v.tensor.dtype);
  std::vector<Type> fields;
  for (const LValue &f : v.fields) fields.push_back(type_of(f));
  return TupleType::make(std::move(fields));
}

void flatten(const LValue &v, std::vector<Tensor> *out) {
  if (!v.is_tuple) return out->push_back(v.tensor);
  for (const LValue &f : v.fields) flatten(f, out);
}

// Dense row-major layout with these extents, on a Halide buffer's dimensions.
void constrain(Halide::OutputImageParam buffer, const Shape &shape) {
  const int rank = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t extent = shape[rank - 1 - d];
    buffer.dim(d).set_bounds(0, static_cast<int>(extent)).set_stride(static_cast<int>(stride));
    stride *= extent;
  }
}

}  // namespace

LoweredPipeline Lowerer::run(const Function &fn, const std::vector<DType> &dtypes,
                             const std::vector<Shape> &shapes) {
  LoweredPipeline result;
  std::unordered_map<Expr, LValue, ExprHash, ExprEqual> memo;
  // 1. Parameters: one ImageParam per flattened tensor, with the concrete shape.
  size_t next = 0;
  std::function<LValue(const Type &, const Span &)> param = [&](const Type &type,
                                                                const Span &span) -> LValue {
    if (const auto *tt = type.as<TupleType>()) {
      LValue v;
      v.is_tuple = true;
      for (const Type &f : tt->fields) v.fields.push_back(param(f, span));
      return v;
    }
    const auto *tensor = type.as<TensorType>();
    if (!tensor) unsupported(fmt::format("a parameter of type {}", to_string(type)), span);
    if (next >= dtypes.size())
      user_error("the kernel got {} inputs, but its parameters need more (at {})", dtypes.size(),
                 to_string(span));
    const DType dtype = dtypes[next];
    const Shape &shape = shapes[next];
    if (dtype != tensor->dtype || shape.size() != tensor->shape.size())
      user_error("input {} is a {} tensor of shape {}, but its parameter is {} (at {})", next,
                 to_string(dtype), shape_to_string(shape), to_string(type), to_string(span));
    for (size_t d = 0; d < shape.size(); ++d)
      if (tensor->shape[d] != kAnyDim && tensor->shape[d] != shape[d])
        user_error("input {} has shape {}, but its parameter is {} (at {})", next, shape_to_string(shape),
                   to_string(type), to_string(span));
    Halide::ImageParam ip(storage_type(dtype, span), static_cast<int>(shape.size()),
                          fmt::format("in{}", next));
    constrain(ip, shape);
    result.inputs.push_back(ip);
    ++next;
    span_ = span;
    op_ = "a parameter";
    Tensor t = define("param", dtype, shape, [&](const std::vector<HExpr> &i) {
      return ip(std::vector<HExpr>(i.rbegin(), i.rend()));
    });
    t.root = true;  // reading it is a load from the input
    return of(t);
  };
  for (const Expr &p : fn.params) {
    const Type &type = p->checked_type.defined() ? p->checked_type : p.as<Var>()->type_annotation;
    if (!type.defined()) unsupported("an untyped parameter (run type inference first)", p->span);
    memo[p] = param(type, p->span);
  }
  if (next != dtypes.size())
    user_error("the kernel got {} inputs, but its parameters take {} (at {})", dtypes.size(), next,
               to_string(fn.span));

  // 2. The body, children first.
  std::vector<std::string> ops;
  post_order_visit(fn.body, [&](const Expr &e) {
    if (memo.count(e)) return;
    span_ = e->span;
    switch (e->kind) {
      case ExprKind::Op:
        return;
      case ExprKind::Constant: {
        const NDArray &data = e.as<Constant>()->data;
        std::vector<int> extents;
        for (size_t d = data.ndim(); d-- > 0;) extents.push_back(static_cast<int>(data.shape()[d]));
        op_ = "a constant";
        Halide::Buffer<> buf(storage_type(data.dtype(), e->span), extents);
        if (data.nbytes()) std::memcpy(buf.data(), data.raw(), data.nbytes());
        Tensor t = define("const", data.dtype(), data.shape(), [&](const std::vector<HExpr> &i) {
          return buf(std::vector<HExpr>(i.rbegin(), i.rend()));
        });
        t.root = true;
        memo[e] = of(t);
        return;
      }
      case ExprKind::Tuple: {
        LValue v;
        v.is_tuple = true;
        for (const Expr &f : e.as<Tuple>()->fields) v.fields.push_back(memo.at(f));
        memo[e] = v;
        return;
      }
      case ExprKind::TupleGetItem: {
        const auto *g = e.as<TupleGetItem>();
        const LValue &t = memo.at(g->tuple);
        GROVE_CHECK(t.is_tuple && g->index >= 0 && g->index < static_cast<int>(t.fields.size()),
                    "bad projection");
        memo[e] = t.fields[g->index];
        return;
      }
      case ExprKind::Call: {
        const auto *call = e.as<Call>();
        const auto *op = call->op.as<Op>();
        if (!op) unsupported("calls of anything but operators", e->span);
        op_ = op->name;
        std::vector<LValue> args;
        std::vector<Type> arg_types;
        for (const Expr &a : call->args) {
          args.push_back(memo.at(a));
          arg_types.push_back(type_of(args.back()));
        }
        Type type;
        try {
          type = op->def->relation(arg_types, call->attrs);
        } catch (const OpError &err) {
          user_error("{}: error in {}: {}", to_string(e->span), op->name, err.what());
        }
        if (!type.defined()) unsupported(op->name, e->span);
        ops.push_back(op->name);
        // A float16 result is stored as float16: rounded once, whatever the op computed in.
        memo[e] = round_float16(lower_call(*call, args, type));
        return;
      }
      case ExprKind::Var:
        unsupported(fmt::format("a variable that is not a parameter (%{})", e.as<Var>()->name_hint), e->span);
      default:
        unsupported(fmt::format("{} expressions", to_string(e->kind)), e->span);
    }
  });

  // 3. Outputs: distinct Funcs (a field repeated gets a copy), with dense row-major buffers.
  std::vector<Tensor> outs;
  flatten(memo.at(fn.body), &outs);
  std::set<std::string> used;
  op_ = "the result";
  for (Tensor t : outs) {
    if (used.count(t.f.name()))
      t = define("out", t.dtype, t.shape, [&](const std::vector<HExpr> &i) { return at(t, i); });
    if (t.dtype == DType::Float16) {
      // Its values are float16's already (round_float16): the conversion is exact.
      const std::vector<HVar> vars = make_vars(t.shape.size());
      Func store(fresh("out_float16"));
      store(std::vector<HVar>(vars.rbegin(), vars.rend())) =
          Halide::cast(Halide::Float(16), at(t, exprs(vars)));
      t.f = store;
    }
    used.insert(t.f.name());
    if (!scheduled_.count(t.f.name())) {
      t.f.compute_root();
      schedule_stage(t.f, t.shape, t.dtype, t.f.has_update_definition() ? 1 : 0);
    }
    constrain(t.f.output_buffer(), t.shape);
    result.outputs.push_back(t.f);
    result.out_dtypes.push_back(t.dtype);
    result.out_shapes.push_back(t.shape);
  }
  for (size_t i = 0; i < ops.size(); ++i) result.ops += (i ? "+" : "") + ops[i];
  return result;
}

LoweredPipeline lower_primitive(const Function &function, const std::vector<DType> &dtypes,
                                const std::vector<Shape> &shapes, int vector_bytes) {
  GROVE_CHECK(dtypes.size() == shapes.size(), "{} dtypes for {} shapes", dtypes.size(), shapes.size());
  return Lowerer(vector_bytes).run(function, dtypes, shapes);
}

}  // namespace grove::relay::halide_internal
