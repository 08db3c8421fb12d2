// Reductions (sum, mean, max, argmax) and nn.softmax. Type relations follow TVM's ReduceRel,
// ArgReduceRel and SoftmaxRel:
//   * `axis` is an integer, a list of integers, or None; None and [] reduce every axis (TVM's
//     GetReduceAxes), whatever `exclude` says; negative axes count from the end; an axis out of
//     range, or listed twice, is an OpError;
//   * `exclude=True` reduces the axes *not* listed; `keepdims=True` keeps reduced axes as size 1;
//   * the result has the input's dtype. sum and mean take float or integer tensors, max any dtype
//     (on bool it is `any`). mean of integers divides the integer sum by the count, truncating,
//     as TVM's MeanCompute does;
//   * argmax takes float, integer or bool tensors and gives int32: per result element, the
//     row-major index of its largest element within the reduced axes; ties go to the first index
//     (the last with select_last_index=True). As in TVM's combiner, an element replaces the best
//     so far unless the best is larger (or equal, without select_last_index), so a NaN is taken
//     where it occurs and replaced by the next element;
//   * nn.softmax(axis=-1) takes float tensors and keeps the type; TVM's pattern for it is
//     OutEWiseFusable.
// Kernels accumulate float sums in double (float32 results are rounded once) and integer sums with
// two's-complement wrap-around; float16 is computed as float32 and rounded to float16 (Op.h).

#include "frontend/relay/ops/Reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"

namespace grove::relay {
namespace {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

void check_dtype(bool ok, const char *expected, DType found) {
  if (!ok) throw OpError(fmt::format("expected {}, found {}", expected, to_string(found)));
}

// ReduceRel; kNumeric: sum and mean reject bool.
template <bool kNumeric>
Type reduce_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  if (kNumeric) check_dtype(is_float(x->dtype) || is_int(x->dtype), "a float or integer tensor", x->dtype);
  return TensorType::make(plan_reduce(x->shape, reduce_attrs(attrs)).out_shape, x->dtype);
}

enum class Reduction { Sum, Mean, Max };

// A reduction kernel:
//   1. plan the axes on the concrete shape; count = the number of elements folded into each result;
//   2. walk the input in row-major order; BroadcastIndex over (input shape, kept_shape) gives the
//      result element each input element folds into (reduced axes have stride 0);
//   3. finish: mean divides by count; max of zero elements is an error (it has no identity).
template <Reduction R>
std::vector<NDArray> reduce_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0];
  if (R != Reduction::Max)
    check_dtype(is_float(x.dtype()) || is_int(x.dtype()), "a float or integer tensor", x.dtype());
  const ReducePlan plan = plan_reduce(x.shape(), reduce_attrs(attrs));
  int64_t count = 1;
  for (size_t d = 0; d < plan.reduced.size(); ++d)
    if (plan.reduced[d]) count *= x.shape()[d];
  NDArray out(x.dtype(), plan.out_shape);
  const int64_t out_size = out.size();
  if (count == 0 && out_size > 0 && (R == Reduction::Max || (R == Reduction::Mean && is_int(x.dtype())))) {
    throw OpError(fmt::format("{} over zero elements: the reduced axes of {} are empty",
                              R == Reduction::Max ? "max" : "integer mean", shape_to_string(x.shape())));
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    T *o = out.data<T>();
    BroadcastIndex it(x.shape(), {plan.kept_shape});
    if constexpr (R == Reduction::Max) {
      std::fill(o, o + out_size, std::numeric_limits<T>::lowest());
      for (int64_t i = 0; i < it.size(); ++i, it.next()) {
        T &a = o[it[0]];
        if constexpr (kIsFloat<T>) {
          if (std::isnan(in[i]) || in[i] > a) a = in[i];  // NaN wins, as in NumPy
        } else {
          if (in[i] > a) a = in[i];
        }
      }
    } else if constexpr (kIsFloat<T>) {
      std::vector<double> acc(out_size, 0.0);
      for (int64_t i = 0; i < it.size(); ++i, it.next()) acc[it[0]] += static_cast<double>(in[i]);
      for (int64_t j = 0; j < out_size; ++j)
        o[j] = static_cast<T>(R == Reduction::Mean ? acc[j] / static_cast<double>(count) : acc[j]);
    } else if constexpr (kIsInt<T>) {
      using U = std::make_unsigned_t<T>;
      std::vector<U> acc(out_size, 0);
      for (int64_t i = 0; i < it.size(); ++i, it.next()) acc[it[0]] += static_cast<U>(in[i]);
      for (int64_t j = 0; j < out_size; ++j) {
        const T sum = static_cast<T>(acc[j]);
        o[j] = R == Reduction::Mean ? static_cast<T>(static_cast<int64_t>(sum) / count) : sum;
      }
    }
  });
  return {out};
}

// ArgReduceRel: the reduction's shape, int32.
Type argmax_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  return TensorType::make(plan_reduce(x->shape, reduce_attrs(attrs)).out_shape, DType::Int32);
}

// argmax: as reduce_kernel, with a second broadcast index whose offset is the element's row-major
// index within the reduced axes (the non-reduced axes have size 1 in `reduced_shape`).
std::vector<NDArray> argmax_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0];
  const ReduceAttrs a = reduce_attrs(attrs);
  const ReducePlan plan = plan_reduce(x.shape(), a);
  const bool last = a.select_last_index;
  Shape reduced_shape;
  int64_t count = 1;
  for (size_t d = 0; d < plan.reduced.size(); ++d) {
    reduced_shape.push_back(plan.reduced[d] ? x.shape()[d] : 1);
    count *= reduced_shape.back();
  }
  NDArray out(DType::Int32, plan.out_shape);
  const int64_t out_size = out.size();
  if (count == 0 && out_size > 0)
    throw OpError(fmt::format("argmax over zero elements: the reduced axes of {} are empty",
                              shape_to_string(x.shape())));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>();
    int32_t *o = out.data<int32_t>();
    std::vector<T> best(out_size);
    std::vector<bool> seen(out_size, false);
    BroadcastIndex it(x.shape(), {plan.kept_shape, reduced_shape});
    for (int64_t i = 0; i < it.size(); ++i, it.next()) {
      const int64_t r = it[0];
      // TVM's argmax combiner: the element replaces the best so far unless the best is larger, or
      // equal without select_last_index.
      if (!seen[r] || !(best[r] > in[i] || (best[r] == in[i] && !last))) {
        seen[r] = true;
        best[r] = in[i];
        o[r] = static_cast<int32_t>(it[1]);
      }
    }
  });
  return {out};
}

// SoftmaxRel: a float tensor, an axis in range; the type passes through.
Type softmax_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *x = tensor_arg(args, 0);
  if (!x) return {};
  check_dtype(is_float(x->dtype), "a float tensor", x->dtype);
  axis_attr(attrs, -1, static_cast<int64_t>(x->shape.size()));
  return TensorType::make(x->shape, x->dtype);
}

// Softmax along one axis, viewing the tensor as (outer, n, inner): per (outer, inner) line, subtract
// the line's max before exponentiating (no overflow), then divide by the sum. Computed in double.
std::vector<NDArray> softmax_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0];
  check_dtype(is_float(x.dtype()), "a float tensor", x.dtype());
  const Shape &shape = x.shape();
  const int64_t axis = axis_attr(attrs, -1, x.ndim());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < x.ndim(); ++d) inner *= shape[d];
  const int64_t n = shape[axis];
  NDArray out(x.dtype(), shape);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      std::vector<double> e(n);
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t b = 0; b < inner; ++b) {
          const int64_t base = a * n * inner + b;
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(in[base + i * inner]));
          double sum = 0.0;
          for (int64_t i = 0; i < n; ++i)
            sum += e[i] = std::exp(static_cast<double>(in[base + i * inner]) - mx);
          for (int64_t i = 0; i < n; ++i) o[base + i * inner] = static_cast<T>(e[i] / sum);
        }
      }
    }
  });
  return {out};
}

}  // namespace

// 1. axis (None and [] mean every axis), keepdims and exclude as reduce_attrs read them;
// 2. normalize each listed axis against the input rank, rejecting repeats;
// 3. with exclude, reduce the complement of the listed axes;
// 4. build the result shape: reduced axes become 1 (keepdims) or disappear; others, `?` included,
//    pass through.
ReducePlan plan_reduce(const Shape &in, const ReduceAttrs &attrs) {
  const std::vector<int64_t> &axes = attrs.axis;
  const bool keepdims = attrs.keepdims, exclude = attrs.exclude;
  const int64_t rank = static_cast<int64_t>(in.size());
  ReducePlan plan;
  plan.reduced.assign(in.size(), axes.empty());
  if (!axes.empty()) {
    std::vector<bool> listed(in.size(), false);
    for (int64_t a : axes) {
      const int64_t axis = normalize_axis(a, rank);
      if (listed[axis]) throw OpError(fmt::format("axis {} is listed twice (as {})", axis, a));
      listed[axis] = true;
    }
    for (size_t d = 0; d < in.size(); ++d) plan.reduced[d] = listed[d] != exclude;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    plan.kept_shape.push_back(plan.reduced[d] ? 1 : in[d]);
    if (!plan.reduced[d] || keepdims) plan.out_shape.push_back(plan.reduced[d] ? 1 : in[d]);
  }
  return plan;
}

std::vector<OpDef> reduce_ops() {
  const std::vector<std::string> names = {"axis", "keepdims", "exclude"};
  return {
      {"sum", 1, OpPattern::CommReduce, names, reduce_rel<true>, reduce_kernel<Reduction::Sum>},
      {"mean", 1, OpPattern::CommReduce, names, reduce_rel<true>, reduce_kernel<Reduction::Mean>},
      {"max", 1, OpPattern::CommReduce, names, reduce_rel<false>, reduce_kernel<Reduction::Max>},
      {"argmax",
       1,
       OpPattern::CommReduce,
       {"axis", "keepdims", "exclude", "select_last_index"},
       argmax_rel,
       argmax_kernel},
      {"nn.softmax", 1, OpPattern::OutEWiseFusable, {"axis"}, softmax_rel, softmax_kernel},
  };
}

}  // namespace grove::relay
