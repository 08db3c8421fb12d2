// Neural-network operators (TVM's src/relay/op/nn/{nn,convolution,pooling,pad}.cc): dense,
// batch_matmul, bias_add, conv2d, max/avg and global average pooling, inference batch_norm,
// layer_norm and pad. As in Transform.cpp, each op's shape
// rule is one function over shapes that may hold `?`, called by the type relation on the argument
// types and by the kernel on the concrete shapes, so a mismatch a `?` hid is caught at run time
// with the same message. Only the NCHW data layout and OIHW kernel layout exist here.
//
// Kernels compute float32 and float64 natively; other dtypes (integers, or an out_dtype that
// differs from the input's) are computed in double and converted to the result dtype. float16
// arrives as float32 and leaves rounded to float16 (the table's float16_in_float32, Op.h).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"

namespace grove::relay {

namespace {

// The tensor type of argument i; null while it is an IncompleteType; OpError for a non-tensor.
const TensorType *tensor_arg(const std::vector<Type> &args, size_t i, const char *what) {
  if (i >= args.size() || !args[i].defined() || args[i].as<IncompleteType>()) return nullptr;
  if (const auto *t = args[i].as<TensorType>()) return t;
  throw OpError(fmt::format("expected the {} to be a tensor, found {}", what, to_string(args[i])));
}

std::string dim_str(int64_t d) { return known(d) ? std::to_string(d) : "?"; }

int64_t prod(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

void check_rank(const Shape &s, size_t rank, const char *what) {
  if (s.size() != rank)
    throw OpError(
        fmt::format("expected the {} to have rank {}, found shape {}", what, rank, shape_to_string(s)));
}

void check_same_dtype(DType found, DType data, const char *what) {
  if (found != data)
    throw OpError(
        fmt::format("the {}'s dtype is {} but the data's is {}", what, to_string(found), to_string(data)));
}

// Two known sizes that must agree; a `?` on either side is checked at run time.
void check_dim(int64_t a, int64_t b, const std::string &what) {
  if (known(a) && known(b) && a != b) throw OpError(what);
}

DType out_dtype(const std::string &name, DType fallback) {
  if (name.empty()) return fallback;
  std::optional<DType> d = parse_dtype(name);
  if (!d) throw OpError(fmt::format("out_dtype \"{}\" is not a dtype grove knows", name));
  return *d;
}

// A layout attribute as written (`found`); an out_layout may be "" (the data's).
void check_layout(const std::string &found, const char *name, const char *expected,
                  bool may_be_empty = false) {
  if (found != expected && !(found.empty() && may_be_empty))
    throw OpError(fmt::format("grove supports {} {} only, found \"{}\"", name, expected, found));
}

// The output size of a sliding window over `in` (TVM's conv/pool formula); `?` in, `?` out.
int64_t window_out(int64_t in, int64_t pad, int64_t kernel, int64_t stride, int64_t dilation, bool ceil_mode,
                   const char *what) {
  if (!known(in) || !known(kernel)) return kAnyDim;
  const int64_t span = (kernel - 1) * dilation + 1;
  if (in + pad < span)
    throw OpError(fmt::format("the input {} {} plus padding {} is smaller than the dilated window {}", what,
                              in, pad, span));
  return (in + pad - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
}

// ---------------------------------------------------------------------------------------------
// Numeric plumbing: run a kernel core on float32/float64 natively, anything else through double.
// ---------------------------------------------------------------------------------------------

std::vector<double> to_doubles(const NDArray &a) {
  std::vector<double> v(a.size());
  for (int64_t i = 0; i < a.size(); ++i) v[i] = a.element_as_double(i);
  return v;
}

template <typename T>
void store_cast(NDArray &out, const std::vector<double> &v) {
  T *p = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
}

void store_doubles(NDArray &out, const std::vector<double> &v) {
  switch (out.dtype()) {
    case DType::Bool: {
      uint8_t *p = out.data<uint8_t>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
      return;
    }
    case DType::Int8:
      return store_cast<int8_t>(out, v);
    case DType::Int16:
      return store_cast<int16_t>(out, v);
    case DType::Int32:
      return store_cast<int32_t>(out, v);
    case DType::Int64:
      return store_cast<int64_t>(out, v);
    case DType::UInt8:
      return store_cast<uint8_t>(out, v);
    case DType::UInt16:
      return store_cast<uint16_t>(out, v);
    case DType::UInt32:
      return store_cast<uint32_t>(out, v);
    case DType::UInt64:
      return store_cast<uint64_t>(out, v);
    case DType::Float32:
      return store_cast<float>(out, v);
    case DType::Float64:
      return store_cast<double>(out, v);
    case DType::Float16:
      for (size_t i = 0; i < v.size(); ++i)
        std::memcpy(out.raw() + 2 * i, NDArray::scalar(DType::Float16, v[i]).raw(), 2);
      return;
  }
}

// Calls core(inputs as `const T *`, output as `T *`) with T = float or double for float32/float64
// when the result dtype is the input's; otherwise with T = double on converted copies.
template <typename Core>
NDArray compute(const std::vector<const NDArray *> &ins, DType result_dtype, const Shape &oshape, Core core) {
  NDArray out(result_dtype, oshape);
  const DType in = ins[0]->dtype();
  if (in == result_dtype && in == DType::Float32) {
    std::vector<const float *> p;
    for (const NDArray *a : ins) p.push_back(a->data<float>());
    core(p, out.data<float>());
  } else if (in == result_dtype && in == DType::Float64) {
    std::vector<const double *> p;
    for (const NDArray *a : ins) p.push_back(a->data<double>());
    core(p, out.data<double>());
  } else {
    std::vector<std::vector<double>> copies;
    std::vector<const double *> p;
    for (const NDArray *a : ins) copies.push_back(to_doubles(*a));
    for (const auto &c : copies) p.push_back(c.data());
    std::vector<double> y(out.size());
    core(p, y.data());
    store_doubles(out, y);
  }
  return out;
}

void check_same_dtypes(const std::vector<const NDArray *> &ins, const char *const *names) {
  for (size_t i = 1; i < ins.size(); ++i) check_same_dtype(ins[i]->dtype(), ins[0]->dtype(), names[i]);
}

// sum_i a[i * sa] * b[i * sb] in double: the reference should not lose digits. Four partial sums
// let the loads and multiplies of neighbouring terms overlap.
template <typename T>
double dot(const T *a, const T *b, int64_t n, int64_t sa = 1, int64_t sb = 1) {
  double acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) acc[j] += static_cast<double>(a[(i + j) * sa]) * b[(i + j) * sb];
  for (; i < n; ++i) acc[0] += static_cast<double>(a[i * sa]) * b[i * sb];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// ---------------------------------------------------------------------------------------------
// nn.dense: data [..., K] x weight [N, K] -> [..., N]
// ---------------------------------------------------------------------------------------------

Shape dense_shape(const Shape &data, const Shape &weight, const Attrs &attrs) {
  if (data.empty()) throw OpError("expected the data to have rank >= 1, found a scalar");
  check_rank(weight, 2, "weight");
  check_dim(weight[1], data.back(),
            fmt::format("the weight's last dimension is {} but the data's is {} (data {}, weight {})",
                        weight[1], data.back(), shape_to_string(data), shape_to_string(weight)));
  int64_t units = weight[0];
  if (const std::optional<int64_t> u = dense_attrs(attrs).units) {
    const int64_t n = *u;
    check_dim(weight[0], n,
              fmt::format("units={} but the weight {} has {} rows", n, shape_to_string(weight), weight[0]));
    units = n;
  }
  Shape out(data.begin(), data.end() - 1);
  out.push_back(units);
  return out;
}

Type dense_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data"), *weight = tensor_arg(args, 1, "weight");
  if (!data || !weight) return {};
  check_same_dtype(weight->dtype, data->dtype, "weight");
  return TensorType::make(dense_shape(data->shape, weight->shape, attrs),
                          out_dtype(dense_attrs(attrs).out_dtype, data->dtype));
}

// TVM's DenseRel assigns an untyped weight [units, K] of the data's dtype when units is given.
std::vector<Type> dense_args(const std::vector<Type> &args, const Attrs &attrs, bool explain) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data || !args[1].as<IncompleteType>()) return {};
  if (data->shape.empty()) throw OpError("expected the data to have rank >= 1, found a scalar");
  const std::optional<int64_t> units = dense_attrs(attrs).units;
  if (!units) {
    if (explain)
      throw OpError(
          "cannot infer the weight's type without units (the weight is [units, in]): give units=N or "
          "annotate the weight");
    return {};
  }
  if (*units <= 0) throw OpError(fmt::format("units must be positive, found {}", *units));
  return {Type(), TensorType::make({*units, data->shape.back()}, data->dtype)};
}

std::vector<NDArray> dense_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0], &weight = args[1];
  check_same_dtype(weight.dtype(), data.dtype(), "weight");
  const Shape oshape = dense_shape(data.shape(), weight.shape(), attrs);
  const int64_t rows = prod(data.shape(), 0, data.shape().size() - 1), n = weight.shape()[0],
                k = weight.shape()[1];
  const DType dtype = out_dtype(dense_attrs(attrs).out_dtype, data.dtype());
  return {compute({&data, &weight}, dtype, oshape, [&](const auto &p, auto *y) {
    for (int64_t r = 0; r < rows; ++r) {
      const auto *x = p[0] + r * k;
      for (int64_t j = 0; j < n; ++j) {
        const auto *w = p[1] + j * k;
        y[r * n + j] = static_cast<std::remove_pointer_t<decltype(y)>>(dot(x, w, k));
      }
    }
  })};
}

// ---------------------------------------------------------------------------------------------
// nn.batch_matmul: x [B, M, K] (transpose_a: [B, K, M]) x y [B, N, K] (transpose_b=False:
// [B, K, N]) -> [B, M, N]; a batch of 1 broadcasts.
// ---------------------------------------------------------------------------------------------

struct BatchMatmul {
  int64_t bx, by, batch, m, n, k;
  bool ta, tb;
};

BatchMatmul batch_matmul_geometry(const Shape &x, const Shape &y, const Attrs &attrs) {
  check_rank(x, 3, "first argument");
  check_rank(y, 3, "second argument");
  BatchMatmul g;
  const BatchMatmulAttrs a = batch_matmul_attrs(attrs);
  g.ta = a.transpose_a;
  g.tb = a.transpose_b;
  g.bx = x[0];
  g.by = y[0];
  g.m = g.ta ? x[2] : x[1];
  const int64_t kx = g.ta ? x[1] : x[2];
  g.n = g.tb ? y[1] : y[2];
  const int64_t ky = g.tb ? y[2] : y[1];
  g.k = known(kx) ? kx : ky;
  check_dim(kx, ky,
            fmt::format(
                "the reduction dimensions differ: {} in x {} and {} in y {} (transpose_a={}, transpose_b={})",
                kx, shape_to_string(x), ky, shape_to_string(y), g.ta, g.tb));
  if (known(g.bx) && known(g.by)) {
    if (g.bx != g.by && g.bx != 1 && g.by != 1)
      throw OpError(fmt::format("the batch dimensions {} of x {} and {} of y {} differ and neither is 1",
                                g.bx, shape_to_string(x), g.by, shape_to_string(y)));
    g.batch = std::max(g.bx, g.by);
  } else {
    // As in broadcasting: `?` against n > 1 gives n (checked at run time), against 1 or `?` gives `?`.
    const int64_t other = known(g.bx) ? g.bx : g.by;
    g.batch = known(other) && other != 1 ? other : kAnyDim;
  }
  return g;
}

Type batch_matmul_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *x = tensor_arg(args, 0, "first argument"), *y = tensor_arg(args, 1, "second argument");
  if (!x || !y) return {};
  check_same_dtype(y->dtype, x->dtype, "second argument");
  const BatchMatmul g = batch_matmul_geometry(x->shape, y->shape, attrs);
  return TensorType::make({g.batch, g.m, g.n}, out_dtype(batch_matmul_attrs(attrs).out_dtype, x->dtype));
}

std::vector<NDArray> batch_matmul_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &x = args[0], &y = args[1];
  check_same_dtype(y.dtype(), x.dtype(), "second argument");
  const BatchMatmul g = batch_matmul_geometry(x.shape(), y.shape(), attrs);
  const DType dtype = out_dtype(batch_matmul_attrs(attrs).out_dtype, x.dtype());
  return {compute({&x, &y}, dtype, {g.batch, g.m, g.n}, [&](const auto &p, auto *out) {
    using T = std::remove_pointer_t<decltype(out)>;
    // Element strides of a(m, k) and b(n, k) under the transposes.
    const int64_t am = g.ta ? 1 : g.k, ak = g.ta ? g.m : 1;
    const int64_t bn = g.tb ? g.k : 1, bk = g.tb ? 1 : g.n;
    for (int64_t b = 0; b < g.batch; ++b) {
      const auto *xa = p[0] + (g.bx == 1 ? 0 : b) * g.m * g.k;
      const auto *yb = p[1] + (g.by == 1 ? 0 : b) * g.n * g.k;
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          out[(b * g.m + i) * g.n + j] = static_cast<T>(dot(xa + i * am, yb + j * bn, g.k, ak, bk));
    }
  })};
}

// ---------------------------------------------------------------------------------------------
// nn.bias_add: data + bias along `axis` (default 1)
// ---------------------------------------------------------------------------------------------

int64_t bias_axis(const Shape &data, const Shape &bias, const Attrs &attrs) {
  const int64_t axis = normalize_axis(bias_add_attrs(attrs).axis, static_cast<int64_t>(data.size()));
  check_rank(bias, 1, "bias");
  check_dim(bias[0], data[axis],
            fmt::format("the bias has {} elements but axis {} of the data {} has size {}", bias[0], axis,
                        shape_to_string(data), data[axis]));
  return axis;
}

Type bias_add_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data"), *bias = tensor_arg(args, 1, "bias");
  if (!data || !bias) return {};
  check_same_dtype(bias->dtype, data->dtype, "bias");
  bias_axis(data->shape, bias->shape, attrs);
  Shape shape = data->shape;
  return TensorType::make(shape, data->dtype);
}

// TVM's BiasAddRel assigns an untyped bias [the data's size along axis] of the data's dtype.
std::vector<Type> bias_add_args(const std::vector<Type> &args, const Attrs &attrs, bool explain) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data || !args[1].as<IncompleteType>()) return {};
  const int64_t axis = normalize_axis(bias_add_attrs(attrs).axis, static_cast<int64_t>(data->shape.size()));
  return {Type(), TensorType::make({data->shape[axis]}, data->dtype)};
}

std::vector<NDArray> bias_add_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0], &bias = args[1];
  check_same_dtype(bias.dtype(), data.dtype(), "bias");
  const int64_t axis = bias_axis(data.shape(), bias.shape(), attrs);
  const int64_t outer = prod(data.shape(), 0, axis), c = data.shape()[axis];
  const int64_t inner = prod(data.shape(), axis + 1, data.shape().size());
  return {compute({&data, &bias}, data.dtype(), data.shape(), [&](const auto &p, auto *y) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t base = (o * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) y[base + i] = p[0][base + i] + p[1][ch];
      }
  })};
}

// ---------------------------------------------------------------------------------------------
// nn.conv2d: data [N, C, H, W] (NCHW) x weight [O, C/groups, KH, KW] (OIHW) -> [N, O, OH, OW]
// ---------------------------------------------------------------------------------------------

struct Conv2D {
  int64_t n, c, h, w;    // data
  int64_t o, i, kh, kw;  // weight
  int64_t groups;
  std::array<int64_t, 2> stride, dilation;
  Pad pad;
  int64_t oh, ow;
};

// 1. Only NCHW data / OIHW kernels; 4-d data and weight.
// 2. channels and kernel_size, when given, must match the weight; C = I * groups; O % groups == 0.
// 3. OH = (H + top + bottom - ((KH - 1) * dilation + 1)) / stride + 1, likewise OW; `?` stays `?`.
void check_conv2d_layouts(const Conv2DAttrs &a) {
  check_layout(a.data_layout, "data_layout", "NCHW");
  check_layout(a.kernel_layout, "kernel_layout", "OIHW");
  check_layout(a.out_layout, "out_layout", "NCHW", true);
}

Conv2D conv2d_geometry(const Shape &data, const Shape &weight, const Conv2DAttrs &a) {
  check_conv2d_layouts(a);
  check_rank(data, 4, "data");
  check_rank(weight, 4, "weight");
  Conv2D g;
  g.n = data[0], g.c = data[1], g.h = data[2], g.w = data[3];
  g.o = weight[0], g.i = weight[1], g.kh = weight[2], g.kw = weight[3];
  g.groups = a.groups;
  g.stride = a.strides;
  g.dilation = a.dilation;
  g.pad = a.padding;
  if (a.channels) {
    const int64_t channels = *a.channels;
    check_dim(g.o, channels,
              fmt::format("channels={} but the weight {} has {} output channels", channels,
                          shape_to_string(weight), g.o));
    g.o = channels;
  }
  if (a.kernel_size) {
    const std::array<int64_t, 2> ks = *a.kernel_size;
    if ((known(g.kh) && g.kh != ks[0]) || (known(g.kw) && g.kw != ks[1]))
      throw OpError(fmt::format("kernel_size=({}, {}) but the weight {} has a {}x{} kernel", ks[0], ks[1],
                                shape_to_string(weight), dim_str(g.kh), dim_str(g.kw)));
    g.kh = ks[0], g.kw = ks[1];
  }
  if (known(g.c) && known(g.i) && g.c != g.i * g.groups)
    throw OpError(
        fmt::format("the data {} has {} input channels but the weight {} expects {} x groups {} = {}",
                    shape_to_string(data), g.c, shape_to_string(weight), g.i, g.groups, g.i * g.groups));
  if (known(g.o) && g.o % g.groups != 0)
    throw OpError(fmt::format("the {} output channels do not divide into groups={}", g.o, g.groups));
  g.oh = window_out(g.h, g.pad.top + g.pad.bottom, g.kh, g.stride[0], g.dilation[0], false, "height");
  g.ow = window_out(g.w, g.pad.left + g.pad.right, g.kw, g.stride[1], g.dilation[1], false, "width");
  return g;
}

Type conv2d_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data"), *weight = tensor_arg(args, 1, "weight");
  if (!data || !weight) return {};
  check_same_dtype(weight->dtype, data->dtype, "weight");
  const Conv2DAttrs a = conv2d_attrs(attrs);
  const Conv2D g = conv2d_geometry(data->shape, weight->shape, a);
  return TensorType::make({g.n, g.o, g.oh, g.ow}, out_dtype(a.out_dtype, data->dtype));
}

// TVM's Conv2DRel assigns an untyped weight OIHW [channels, C / groups, KH, KW] of the data's dtype
// when channels and kernel_size are given.
std::vector<Type> conv2d_args(const std::vector<Type> &args, const Attrs &attrs, bool explain) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data || !args[1].as<IncompleteType>()) return {};
  const Conv2DAttrs a = conv2d_attrs(attrs);
  check_layout(a.data_layout, "data_layout", "NCHW");
  check_layout(a.kernel_layout, "kernel_layout", "OIHW");
  check_rank(data->shape, 4, "data");
  std::vector<std::string> missing;
  if (!a.channels) missing.push_back("channels");
  if (!a.kernel_size) missing.push_back("kernel_size");
  if (!missing.empty()) {
    if (explain)
      throw OpError(fmt::format(
          "cannot infer the weight's type without {} (the weight is OIHW: [channels, in_channels / groups, "
          "kernel_size]): give {} or annotate the weight",
          fmt::join(missing, " and "), fmt::join(missing, " and ")));
    return {};
  }
  const int64_t channels = *a.channels;
  if (channels <= 0) throw OpError(fmt::format("channels must be positive, found {}", channels));
  const std::array<int64_t, 2> ks = *a.kernel_size;
  const int64_t groups = a.groups;
  const int64_t c = data->shape[1];
  if (known(c) && c % groups != 0)
    throw OpError(fmt::format("the data {} has {} input channels, which do not divide into groups={}",
                              shape_to_string(data->shape), c, groups));
  const int64_t in = known(c) ? c / groups : kAnyDim;
  return {Type(), TensorType::make({channels, in, ks[0], ks[1]}, data->dtype)};
}

// ceil(a / b) and floor(a / b) for b > 0 and any sign of a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Direct convolution, accumulated in the output plane. For each weight tap the output columns whose
// input column falls inside the data are computed up front, so the innermost loop has no branch.
template <typename T>
void conv2d_nchw(const T *x, const T *wt, T *y, const Conv2D &g) {
  const int64_t opg = g.o / g.groups, plane = g.oh * g.ow;
  std::fill(y, y + g.n * g.o * plane, T(0));
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oc = 0; oc < g.o; ++oc) {
      T *yp = y + (b * g.o + oc) * plane;
      const int64_t group = oc / opg;
      for (int64_t ic = 0; ic < g.i; ++ic) {
        const T *xp = x + (b * g.c + group * g.i + ic) * g.h * g.w;
        const T *wp = wt + (oc * g.i + ic) * g.kh * g.kw;
        for (int64_t r = 0; r < g.kh; ++r)
          for (int64_t s = 0; s < g.kw; ++s) {
            const T wv = wp[r * g.kw + s];
            const int64_t col0 = s * g.dilation[1] - g.pad.left;  // input column of output column 0
            const int64_t lo = std::max<int64_t>(0, ceil_div(-col0, g.stride[1]));
            const int64_t hi = std::min<int64_t>(g.ow, floor_div(g.w - 1 - col0, g.stride[1]) + 1);
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.stride[0] - g.pad.top + r * g.dilation[0];
              if (iy < 0 || iy >= g.h) continue;
              const T *xr = xp + iy * g.w + col0;
              T *yr = yp + oy * g.ow;
              if (g.stride[1] == 1)
                for (int64_t ox = lo; ox < hi; ++ox) yr[ox] += wv * xr[ox];
              else
                for (int64_t ox = lo; ox < hi; ++ox) yr[ox] += wv * xr[ox * g.stride[1]];
            }
          }
      }
    }
}

std::vector<NDArray> conv2d_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0], &weight = args[1];
  check_same_dtype(weight.dtype(), data.dtype(), "weight");
  const Conv2DAttrs a = conv2d_attrs(attrs);
  const Conv2D g = conv2d_geometry(data.shape(), weight.shape(), a);
  return {compute({&data, &weight}, out_dtype(a.out_dtype, data.dtype()), {g.n, g.o, g.oh, g.ow},
                  [&](const auto &p, auto *y) { conv2d_nchw(p[0], p[1], y, g); })};
}

// ---------------------------------------------------------------------------------------------
// nn.max_pool2d, nn.avg_pool2d (NCHW)
// ---------------------------------------------------------------------------------------------

struct Pool2D {
  int64_t n, c, h, w;
  std::array<int64_t, 2> size, stride, dilation;
  Pad pad;
  bool ceil_mode, count_include_pad;
  int64_t oh, ow;
};

// As TVM's Pool2DRel: OH = (H + top + bottom - ((KH - 1) * dilation + 1) [+ stride - 1 when
// ceil_mode]) / stride + 1. (PyTorch's ceil_mode also drops a last window that would start in the
// bottom padding; TVM and grove keep it.)
Pool2D pool2d_geometry(const Shape &data, const Attrs &attrs) {
  const Pool2DAttrs a = pool2d_attrs(attrs);
  check_layout(a.layout, "layout", "NCHW");
  check_layout(a.out_layout, "out_layout", "NCHW", true);
  check_rank(data, 4, "data");
  Pool2D g;
  g.n = data[0], g.c = data[1], g.h = data[2], g.w = data[3];
  g.size = a.pool_size;
  g.stride = a.strides;
  g.dilation = a.dilation;
  g.pad = a.padding;
  g.ceil_mode = a.ceil_mode;
  g.count_include_pad = a.count_include_pad;
  g.oh =
      window_out(g.h, g.pad.top + g.pad.bottom, g.size[0], g.stride[0], g.dilation[0], g.ceil_mode, "height");
  g.ow =
      window_out(g.w, g.pad.left + g.pad.right, g.size[1], g.stride[1], g.dilation[1], g.ceil_mode, "width");
  return g;
}

Type pool2d_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  const Pool2D g = pool2d_geometry(data->shape, attrs);
  return TensorType::make({g.n, g.c, g.oh, g.ow}, data->dtype);
}

// Max over the window's taps inside the data (padding never wins; a window wholly in padding gives
// the dtype's lowest value, as TVM's padded max). Average over the taps inside the data, or with
// count_include_pad over the taps inside the padded data (never the extra ceil_mode rows).
template <bool kMax, typename T>
void pool2d_nchw(const T *x, T *y, const Pool2D &g) {
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T *xp = x + plane * g.h * g.w;
    T *yp = y + plane * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        for (int64_t r = 0; r < g.size[0]; ++r) {
          const int64_t iy = oy * g.stride[0] - g.pad.top + r * g.dilation[0];
          if (iy >= g.h + g.pad.bottom) break;
          for (int64_t s = 0; s < g.size[1]; ++s) {
            const int64_t ix = ox * g.stride[1] - g.pad.left + s * g.dilation[1];
            if (ix >= g.w + g.pad.right) break;
            const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
            if (inside) {
              const double v = xp[iy * g.w + ix];
              acc = kMax ? std::max(acc, v) : acc + v;
            }
            if (inside || (g.count_include_pad && iy >= -g.pad.top && ix >= -g.pad.left)) ++count;
          }
        }
        if (kMax)
          yp[oy * g.ow + ox] = count ? static_cast<T>(acc) : std::numeric_limits<T>::lowest();
        else
          yp[oy * g.ow + ox] = count ? static_cast<T>(acc / count) : T(0);
      }
  }
}

template <bool kMax>
std::vector<NDArray> pool2d_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0];
  const Pool2D g = pool2d_geometry(data.shape(), attrs);
  return {compute({&data}, data.dtype(), {g.n, g.c, g.oh, g.ow},
                  [&](const auto &p, auto *y) { pool2d_nchw<kMax>(p[0], y, g); })};
}

// ---------------------------------------------------------------------------------------------
// nn.batch_norm (inference): (data - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta,
// returning (out, moving_mean, moving_var) as TVM's compute does.
// ---------------------------------------------------------------------------------------------

constexpr const char *kBatchNormArgs[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};

int64_t batch_norm_axis(const std::vector<Shape> &shapes, const Attrs &attrs) {
  if (shapes[0].empty()) throw OpError("expected the data to have rank >= 1, found a scalar");
  const int64_t axis = normalize_axis(norm_attrs(attrs, 1).axis, static_cast<int64_t>(shapes[0].size()));
  for (size_t i = 1; i < shapes.size(); ++i) {
    check_rank(shapes[i], 1, kBatchNormArgs[i]);
    check_dim(shapes[i][0], shapes[0][axis],
              fmt::format("the {} has {} elements but axis {} of the data {} has size {}", kBatchNormArgs[i],
                          shapes[i][0], axis, shape_to_string(shapes[0]), shapes[0][axis]));
  }
  return axis;
}

Type batch_norm_rel(const std::vector<Type> &args, const Attrs &attrs) {
  std::vector<Shape> shapes;
  const TensorType *data = nullptr;
  for (size_t i = 0; i < 5; ++i) {
    const TensorType *t = tensor_arg(args, i, kBatchNormArgs[i]);
    if (!t) return {};
    if (i == 0) data = t;
    check_same_dtype(t->dtype, data->dtype, kBatchNormArgs[i]);
    shapes.push_back(t->shape);
  }
  const int64_t axis = batch_norm_axis(shapes, attrs);
  // The channel count: the data's, else any parameter's that is known.
  int64_t c = shapes[0][axis];
  for (size_t i = 1; i < 5 && !known(c); ++i) c = shapes[i][0];
  const Type vec = TensorType::make({c}, data->dtype);
  return TupleType::make({TensorType::make(data->shape, data->dtype), vec, vec});
}

std::vector<NDArray> batch_norm_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  std::vector<Shape> shapes;
  std::vector<const NDArray *> ins;
  for (const NDArray &a : args) {
    shapes.push_back(a.shape());
    ins.push_back(&a);
  }
  if (args.size() != 5) throw OpError(fmt::format("expected 5 arguments, found {}", args.size()));
  check_same_dtypes(ins, kBatchNormArgs);
  const int64_t axis = batch_norm_axis(shapes, attrs);
  const NormAttrs a = norm_attrs(attrs, 1);
  const double eps = a.epsilon;
  const bool center = a.center, scale = a.scale;
  const Shape &s = shapes[0];
  const int64_t outer = prod(s, 0, axis), c = s[axis], inner = prod(s, axis + 1, s.size());
  NDArray out = compute(ins, args[0].dtype(), s, [&](const auto &p, auto *y) {
    using T = std::remove_pointer_t<decltype(y)>;
    for (int64_t ch = 0; ch < c; ++ch) {
      // In the op's own dtype, as TVM's compute: (x - mean) / sqrt(var + eps) [* gamma] [+ beta].
      const T mean = p[3][ch], denom = static_cast<T>(std::sqrt(p[4][ch] + static_cast<T>(eps)));
      const T gamma = scale ? p[1][ch] : T(1), beta = center ? p[2][ch] : T(0);
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t base = (o * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) y[base + i] = (p[0][base + i] - mean) / denom * gamma + beta;
      }
    }
  });
  // Fresh copies: results never share storage with arguments.
  auto copy = [](const NDArray &a) {
    NDArray c(a.dtype(), a.shape());
    if (c.nbytes()) std::memcpy(c.raw(), a.raw(), c.nbytes());
    return c;
  };
  return {out, copy(args[3]), copy(args[4])};
}

// ---------------------------------------------------------------------------------------------
// nn.global_avg_pool2d: NCHW data -> (N, C, 1, 1), the mean of each plane
// ---------------------------------------------------------------------------------------------

Shape global_pool_shape(const Shape &data, const Attrs &attrs) {
  check_layout(attr_string(attrs, "layout", "NCHW"), "layout", "NCHW");
  check_layout(attr_string(attrs, "out_layout", ""), "out_layout", "NCHW", true);
  check_rank(data, 4, "data");
  return {data[0], data[1], 1, 1};
}

Type global_avg_pool2d_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(global_pool_shape(data->shape, attrs), data->dtype);
}

// Summed in double; an integer mean truncates toward zero (TVM's integer division).
std::vector<NDArray> global_avg_pool2d_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0];
  const Shape oshape = global_pool_shape(data.shape(), attrs);
  const int64_t planes = oshape[0] * oshape[1], n = data.shape()[2] * data.shape()[3];
  if (n == 0 && planes > 0)
    throw OpError(fmt::format("cannot average the empty planes of data {}", shape_to_string(data.shape())));
  return {compute({&data}, data.dtype(), oshape, [&](const auto &p, auto *y) {
    using T = std::remove_pointer_t<decltype(y)>;
    for (int64_t plane = 0; plane < planes; ++plane) {
      double acc = 0.0;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[0][plane * n + i]);
      y[plane] = static_cast<T>(acc / static_cast<double>(n));
    }
  })};
}

// ---------------------------------------------------------------------------------------------
// nn.layer_norm(data, gamma, beta): normalize along `axis` (default -1) with the biased variance
// ---------------------------------------------------------------------------------------------

constexpr const char *kLayerNormArgs[] = {"data", "gamma", "beta"};

// TVM's LayerNormRel: gamma and beta are vectors of the axis' size; the result is the data's type.
int64_t layer_norm_axis(const std::vector<Shape> &shapes, const Attrs &attrs) {
  const int64_t axis = normalize_axis(norm_attrs(attrs, -1).axis, static_cast<int64_t>(shapes[0].size()));
  const int64_t c = shapes[0][axis];
  for (size_t i = 1; i < 3; ++i) {
    check_rank(shapes[i], 1, kLayerNormArgs[i]);
    check_dim(shapes[i][0], c,
              fmt::format("the {} has {} elements but axis {} of the data {} has {}", kLayerNormArgs[i],
                          shapes[i][0], axis, shape_to_string(shapes[0]), dim_str(c)));
  }
  return axis;
}

Type layer_norm_rel(const std::vector<Type> &args, const Attrs &attrs) {
  std::vector<Shape> shapes;
  const TensorType *data = nullptr;
  for (size_t i = 0; i < 3; ++i) {
    const TensorType *t = tensor_arg(args, i, kLayerNormArgs[i]);
    if (!t) return {};
    if (i == 0) data = t;
    shapes.push_back(t->shape);
  }
  if (!is_float(data->dtype))
    throw OpError(fmt::format("expected the data to be a float tensor, found {}", to_string(data->dtype)));
  for (size_t i = 1; i < 3; ++i)
    check_same_dtype(args[i].as<TensorType>()->dtype, data->dtype, kLayerNormArgs[i]);
  layer_norm_axis(shapes, attrs);
  return TensorType::make(data->shape, data->dtype);
}

// Per (outer, inner) line along the axis: mean and biased variance in double, then
// (x - mean) / sqrt(var + epsilon) [* gamma] [+ beta], rounded once to the result dtype.
std::vector<NDArray> layer_norm_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  std::vector<Shape> shapes;
  std::vector<const NDArray *> ins;
  for (const NDArray &a : args) {
    shapes.push_back(a.shape());
    ins.push_back(&a);
  }
  if (!is_float(args[0].dtype()))
    throw OpError(
        fmt::format("expected the data to be a float tensor, found {}", to_string(args[0].dtype())));
  check_same_dtypes(ins, kLayerNormArgs);
  const int64_t axis = layer_norm_axis(shapes, attrs);
  const NormAttrs a = norm_attrs(attrs, -1);
  const double eps = a.epsilon;
  const bool center = a.center, scale = a.scale;
  const Shape &s = shapes[0];
  const int64_t outer = prod(s, 0, axis), c = s[axis], inner = prod(s, axis + 1, s.size());
  return {compute(ins, args[0].dtype(), s, [&](const auto &p, auto *y) {
    using T = std::remove_pointer_t<decltype(y)>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t base = o * c * inner + k;
        double mean = 0.0, var = 0.0;
        for (int64_t ch = 0; ch < c; ++ch) mean += static_cast<double>(p[0][base + ch * inner]);
        mean /= static_cast<double>(c);
        for (int64_t ch = 0; ch < c; ++ch) {
          const double d = static_cast<double>(p[0][base + ch * inner]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(c);
        const double denom = std::sqrt(var + eps);
        for (int64_t ch = 0; ch < c; ++ch) {
          double v = (static_cast<double>(p[0][base + ch * inner]) - mean) / denom;
          if (scale) v *= static_cast<double>(p[1][ch]);
          if (center) v += static_cast<double>(p[2][ch]);
          y[base + ch * inner] = static_cast<T>(v);
        }
      }
  })};
}

// ---------------------------------------------------------------------------------------------
// nn.pad(data, pad_value, pad_width=[[before, after], ...], pad_mode="constant")
// ---------------------------------------------------------------------------------------------

// TVM's PadRel: the typed pad_width and pad_mode (pad_attrs) with one pair per data dimension; a
// "reflect" pad (mirrored without repeating the edge) must be smaller than its dimension, an
// "edge" pad needs a non-empty dimension.
PadAttrs pad_width(const Shape &data, const Attrs &attrs) {
  const PadAttrs p = pad_attrs(attrs);
  if (p.before.size() != data.size())
    throw OpError(fmt::format("pad_width has {} pair(s) but the data {} has rank {}", p.before.size(),
                              shape_to_string(data), data.size()));
  for (size_t d = 0; d < data.size(); ++d) {
    if (!known(data[d]) || (p.before[d] == 0 && p.after[d] == 0)) continue;
    if (p.mode == "edge" && data[d] == 0)
      throw OpError(fmt::format("pad_mode \"edge\" cannot pad dimension {} of the data {}: it is empty", d,
                                shape_to_string(data)));
    if (p.mode == "reflect" && (p.before[d] >= data[d] || p.after[d] >= data[d]))
      throw OpError(
          fmt::format("pad_mode \"reflect\" needs pads smaller than the dimension: dimension {} of "
                      "the data {} is padded by [{}, {}]",
                      d, shape_to_string(data), p.before[d], p.after[d]));
  }
  return p;
}

Shape pad_shape(const Shape &data, const PadAttrs &p) {
  Shape out;
  for (size_t d = 0; d < data.size(); ++d)
    out.push_back(known(data[d]) ? data[d] + p.before[d] + p.after[d] : kAnyDim);
  return out;
}

void check_pad_value(const Shape &value, DType value_dtype, DType data_dtype) {
  if (!value.empty())
    throw OpError(
        fmt::format("expected the pad_value to be a scalar, found shape {}", shape_to_string(value)));
  check_same_dtype(value_dtype, data_dtype, "pad_value");
}

Type pad_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data"), *value = tensor_arg(args, 1, "pad_value");
  if (!data || !value) return {};
  check_pad_value(value->shape, value->dtype, data->dtype);
  return TensorType::make(pad_shape(data->shape, pad_width(data->shape, attrs)), data->dtype);
}

// Per result element and dimension, the source index: i - before, then for an index outside the
// data, "constant" takes pad_value, "edge" clamps and "reflect" mirrors (-1 -> 1, n -> n - 2).
// Bytes are copied, so every dtype works.
std::vector<NDArray> pad_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0], &value = args[1];
  check_pad_value(value.shape(), value.dtype(), data.dtype());
  const PadAttrs p = pad_width(data.shape(), attrs);
  const Shape &in = data.shape();
  NDArray out(data.dtype(), pad_shape(in, p));
  const Shape &oshape = out.shape();
  const size_t esize = dtype_bytes(data.dtype()), rank = in.size();
  std::vector<int64_t> stride(rank, 1), idx(rank, 0);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * in[d];
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t src = 0;
    bool padding = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t j = idx[d] - p.before[d];
      if (j < 0 || j >= in[d]) {
        if (p.mode == "constant")
          padding = true;
        else if (p.mode == "edge")
          j = j < 0 ? 0 : in[d] - 1;
        else
          j = j < 0 ? -j : 2 * (in[d] - 1) - j;
      }
      src += j * stride[d];
    }
    std::memcpy(out.raw() + i * esize, padding ? value.raw() : data.raw() + src * esize, esize);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
  return {out};
}

}  // namespace

std::vector<OpDef> nn_ops() {
  using P = OpPattern;
  return {
      {"nn.dense", 2, P::OutEWiseFusable, {"units", "out_dtype"}, dense_rel, dense_kernel, dense_args},
      {"nn.batch_matmul",
       2,
       P::OutEWiseFusable,
       {"out_dtype", "transpose_a", "transpose_b"},
       batch_matmul_rel,
       batch_matmul_kernel},
      {"nn.bias_add", 2, P::Broadcast, {"axis"}, bias_add_rel, bias_add_kernel, bias_add_args},
      {"nn.conv2d",
       2,
       P::OutEWiseFusable,
       {"strides", "padding", "dilation", "groups", "channels", "kernel_size", "data_layout", "kernel_layout",
        "out_layout", "out_dtype"},
       conv2d_rel,
       conv2d_kernel,
       conv2d_args},
      {"nn.max_pool2d",
       1,
       P::OutEWiseFusable,
       {"pool_size", "strides", "dilation", "padding", "layout", "out_layout", "ceil_mode"},
       pool2d_rel,
       pool2d_kernel<true>},
      {"nn.avg_pool2d",
       1,
       P::OutEWiseFusable,
       {"pool_size", "strides", "dilation", "padding", "layout", "out_layout", "ceil_mode",
        "count_include_pad"},
       pool2d_rel,
       pool2d_kernel<false>},
      {"nn.global_avg_pool2d",
       1,
       P::OutEWiseFusable,
       {"layout", "out_layout"},
       global_avg_pool2d_rel,
       global_avg_pool2d_kernel},
      {"nn.layer_norm",
       3,
       P::OutEWiseFusable,
       {"axis", "epsilon", "center", "scale"},
       layer_norm_rel,
       layer_norm_kernel},
      {"nn.pad", 2, P::Injective, {"pad_width", "pad_mode"}, pad_rel, pad_kernel},
      {"nn.batch_norm",
       5,
       P::OutEWiseFusable,
       {"axis", "epsilon", "center", "scale"},
       batch_norm_rel,
       batch_norm_kernel},
  };
}

}  // namespace grove::relay
