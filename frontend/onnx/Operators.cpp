// One translation per ONNX operator (Importer_Internal.h): each reads its inputs and attributes,
// rejects what grove does not support with a UserError naming the node, and emits Relay ops through
// NodeContext::call (which folds calls whose arguments are all known). Shape values (Shape, and the
// integer arithmetic torch.onnx.export builds reshapes from) are computed element by element here.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontend/onnx/Importer_Internal.h"

namespace grove::onnx_frontend {

using namespace relay;

namespace {

AttrValue ints_attr(const std::vector<int64_t> &v) {
  std::vector<AttrValue> list;
  for (int64_t x : v) list.push_back(AttrValue::of_int(x));
  return AttrValue::of_list(std::move(list));
}

std::string ints_text(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + (x == kUnknown ? std::string("?") : std::to_string(x));
  return "[" + s + "]";
}

// `axis` in [-rank, rank) as an index in [0, rank).
int64_t normalize_axis(const NodeContext &n, const char *name, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    n.bad_attr(name, std::to_string(axis), fmt::format("expected an axis in [{}, {})", -rank, rank));
  return axis < 0 ? axis + rank : axis;
}

OnnxValue scalar_like(const OnnxValue &like, double value) {
  return constant_value(NDArray::scalar(like.dtype, value));
}

// The elements of a shape value or a small known integer tensor; nullopt otherwise.
std::optional<std::vector<int64_t>> int_elements(const OnnxValue &v) {
  if (v.elements) return v.elements;
  if (v.known() && is_int(v.dtype) && v.rank() <= 1) {
    std::vector<int64_t> out(size_t(v.constant->size()));
    for (int64_t i = 0; i < v.constant->size(); ++i) out[i] = v.constant->element_as_int(i);
    return out;
  }
  return std::nullopt;
}

bool is_shape_value(const OnnxValue &v) { return v.elements.has_value() && !v.known(); }

// ---------------------------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------------------------

template <const char *Op>
std::vector<OnnxValue> unary(NodeContext &n) {
  n.accept_attrs({});
  return {n.call(Op, {n.input(0, "X")})};
}

constexpr char kRelu[] = "nn.relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kErf[] = "erf",
               kSqrt[] = "sqrt", kExp[] = "exp", kLog[] = "log", kNeg[] = "negative", kAbs[] = "abs";

// Integer arithmetic on shape values, elementwise with a scalar broadcast; kUnknown is contagious.
std::optional<OnnxValue> shape_arithmetic(const OnnxValue &a, const OnnxValue &b, char op) {
  if (!is_shape_value(a) && !is_shape_value(b)) return std::nullopt;
  auto ea = int_elements(a), eb = int_elements(b);
  if (!ea || !eb) return std::nullopt;
  const size_t len = std::max(ea->size(), eb->size());
  if ((ea->size() != len && ea->size() != 1) || (eb->size() != len && eb->size() != 1)) return std::nullopt;
  std::vector<int64_t> out(len);
  for (size_t i = 0; i < len; ++i) {
    const int64_t x = (*ea)[ea->size() == 1 ? 0 : i], y = (*eb)[eb->size() == 1 ? 0 : i];
    if (x == kUnknown || y == kUnknown || (op == '/' && y == 0)) {
      out[i] = kUnknown;
      continue;
    }
    out[i] = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
  }
  return shape_value(out, a.rank() == 0 && b.rank() == 0);
}

template <const char *Op, char Symbol>
std::vector<OnnxValue> binary(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &a = n.input(0, "A"), &b = n.input(1, "B");
  if (auto s = shape_arithmetic(a, b, Symbol)) return {*s};
  return {n.call(Op, {a, b})};
}

constexpr char kAdd[] = "add", kSub[] = "subtract", kMul[] = "multiply", kDiv[] = "divide";

std::vector<OnnxValue> equal(NodeContext &n) {
  n.accept_attrs({});
  return {n.call("equal", {n.input(0, "A"), n.input(1, "B")})};
}

std::vector<OnnxValue> where(NodeContext &n) {
  n.accept_attrs({});
  return {n.call("where", {n.input(0, "condition"), n.input(1, "X"), n.input(2, "Y")})};
}

std::vector<OnnxValue> pow(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &x = n.input(0, "X");
  const NDArray &y = n.known_input(1, "Y", ": grove supports Pow with a constant exponent");
  if (y.size() != 1)
    n.bad_attr("Y", "a tensor of shape " + shape_to_string(y.shape()), "expected a scalar exponent");
  const double e = y.element_as_double(0);
  if (e == 1) return {x};
  if (e == 2) return {n.call("multiply", {x, x})};
  if (e == 3) return {n.call("multiply", {n.call("multiply", {x, x}), x})};
  if (e == 0.5) return {n.call("sqrt", {x})};
  if (e == -1) return {n.call("divide", {scalar_like(x, 1), x})};
  n.bad_attr("Y", fmt::format("{}", e), "grove computes Pow for the exponents -1, 0.5, 1, 2 and 3");
}

std::vector<OnnxValue> clip(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &x = n.input(0, "input");
  const double lo = n.has_input(1) ? n.known_input(1, "min").element_as_double(0) : -INFINITY;
  const double hi = n.has_input(2) ? n.known_input(2, "max").element_as_double(0) : INFINITY;
  Attrs attrs = Attrs().with("a_min", AttrValue::of_float(lo)).with("a_max", AttrValue::of_float(hi));
  return {n.call("clip", {x}, attrs)};
}

std::vector<OnnxValue> cast(NodeContext &n) {
  n.accept_attrs({"to", "saturate"});
  const OnnxValue &x = n.input(0, "input");
  const DType to = dtype_of(int(n.attr_int("to", 0)), n.where(), "the attribute to");
  if (to == x.dtype) return {x};
  if (x.elements && is_int(to)) {
    OnnxValue v = shape_value(*x.elements, x.rank() == 0, x.origins);
    if (v.known()) {  // the same integers in the new type
      NDArray a(to, v.shape);
      for (int64_t i = 0; i < a.size(); ++i) {
        NDArray s = NDArray::scalar(to, double(v.constant->element_as_int(i)));
        std::memcpy(a.raw() + i * dtype_bytes(to), s.raw(), dtype_bytes(to));
      }
      return {constant_value(a)};
    }
    return {v};
  }
  if (x.known()) {
    NDArray a(to, x.shape);
    for (int64_t i = 0; i < a.size(); ++i) {
      NDArray s = is_float(x.dtype) ? NDArray::scalar(to, x.constant->element_as_double(i))
                                    : NDArray::scalar(to, double(x.constant->element_as_int(i)));
      std::memcpy(a.raw() + i * dtype_bytes(to), s.raw(), dtype_bytes(to));
    }
    return {constant_value(a)};
  }
  n.bad_attr("to", to_string(to),
             fmt::format("grove casts only tensors known at import time, and this one is a computed {}",
                         to_string(x.dtype)));
}

// ---------------------------------------------------------------------------------------------
// Softmax, reductions, normalization
// ---------------------------------------------------------------------------------------------

// Softmax's axis: opset 13 normalizes one axis (default -1); before, the input was flattened to 2-D
// at `axis` (default 1), the same as one axis only when it is the last.
int64_t softmax_axis(NodeContext &n, const OnnxValue &x) {
  n.accept_attrs({"axis"});
  const int64_t axis = normalize_axis(n, "axis", n.attr_int("axis", n.opset() >= 13 ? -1 : 1), x.rank());
  if (n.opset() < 13 && axis != x.rank() - 1)
    n.bad_attr(
        "axis", std::to_string(axis),
        "before opset 13 Softmax flattens the input at the axis; grove reads it only for the last axis");
  return axis;
}

std::vector<OnnxValue> softmax(NodeContext &n) {
  const OnnxValue &x = n.input(0, "input");
  const int64_t axis = softmax_axis(n, x);
  return {n.call("nn.softmax", {x}, Attrs().with("axis", AttrValue::of_int(axis)))};
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max))), along one axis.
std::vector<OnnxValue> log_softmax(NodeContext &n) {
  const OnnxValue &x = n.input(0, "input");
  const int64_t axis = softmax_axis(n, x);
  Attrs keep = Attrs().with("axis", ints_attr({axis})).with("keepdims", AttrValue::of_bool(true));
  OnnxValue shifted = n.call("subtract", {x, n.call("max", {x}, keep)});
  OnnxValue lse = n.call("log", {n.call("sum", {n.call("exp", {shifted})}, keep)});
  return {n.call("subtract", {shifted, lse})};
}

template <const char *Op>
std::vector<OnnxValue> reduce(NodeContext &n) {
  const bool axes_input = std::string(Op) == "sum" && n.opset() >= 13;
  if (axes_input)
    n.accept_attrs({"keepdims", "noop_with_empty_axes"});
  else
    n.accept_attrs({"axes", "keepdims"});
  const OnnxValue &x = n.input(0, "data");
  std::vector<int64_t> axes = axes_input ? (n.has_input(1) ? n.known_ints(1, "axes") : std::vector<int64_t>{})
                                         : n.attr_ints("axes", {});
  if (axes.empty()) {
    if (axes_input && n.attr_int("noop_with_empty_axes", 0) != 0) return {x};
    axes.resize(size_t(x.rank()));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t &a : axes) a = normalize_axis(n, "axes", a, x.rank());
  Attrs attrs = Attrs()
                    .with("axis", ints_attr(axes))
                    .with("keepdims", AttrValue::of_bool(n.attr_int("keepdims", 1) != 0));
  return {n.call(Op, {x}, attrs)};
}

constexpr char kMean[] = "mean", kSum[] = "sum", kMax[] = "max";

// (x - mean) / sqrt(var + epsilon) * scale + bias over the axes from `axis` to the last.
std::vector<OnnxValue> layer_normalization(NodeContext &n) {
  n.accept_attrs({"axis", "epsilon", "stash_type"});
  const OnnxValue &x = n.input(0, "X"), &scale = n.input(1, "Scale");
  const int64_t axis = normalize_axis(n, "axis", n.attr_int("axis", -1), x.rank());
  if (n.output_used(1) || n.output_used(2))
    user_error(msg::kUnusedOutputOnly, n.where(), n.output_used(1) ? 1 : 2,
               n.node().output(n.output_used(1) ? 1 : 2), "Y (output 0)");
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < x.rank(); ++a) axes.push_back(a);
  Attrs keep = Attrs().with("axis", ints_attr(axes)).with("keepdims", AttrValue::of_bool(true));
  OnnxValue centered = n.call("subtract", {x, n.call("mean", {x}, keep)});
  OnnxValue var = n.call("mean", {n.call("multiply", {centered, centered})}, keep);
  OnnxValue eps = scalar_like(x, n.attr_float("epsilon", 1e-5f));
  OnnxValue y = n.call("divide", {centered, n.call("sqrt", {n.call("add", {var, eps})})});
  y = n.call("multiply", {y, scale});
  if (n.has_input(2)) y = n.call("add", {y, n.input(2, "B")});
  return {y};
}

std::vector<OnnxValue> batch_normalization(NodeContext &n) {
  n.accept_attrs({"epsilon", "momentum", "training_mode"});
  if (n.attr_int("training_mode", 0) != 0)
    n.bad_attr("training_mode", std::to_string(n.attr_int("training_mode", 0)),
               "grove imports models for inference");
  for (int k = 1; k < 5; ++k)
    if (n.output_used(k))
      user_error(msg::kUnusedOutputOnly, n.where(), k, n.node().output(k), "Y (output 0)");
  const OnnxValue &x = n.input(0, "X");
  if (x.rank() < 2) user_error(msg::kRank, n.where(), 0, x.rank(), "expected [N, C, ...]");
  Attrs attrs = Attrs()
                    .with("axis", AttrValue::of_int(1))
                    .with("epsilon", AttrValue::of_float(n.attr_float("epsilon", 1e-5f)));
  return {n.call_field(
      "nn.batch_norm",
      {x, n.input(1, "scale"), n.input(2, "B"), n.input(3, "input_mean"), n.input(4, "input_var")}, attrs,
      0)};
}

// ---------------------------------------------------------------------------------------------
// Dense, convolution, pooling
// ---------------------------------------------------------------------------------------------

OnnxValue transpose_2d(const NodeContext &n, const OnnxValue &w) {
  return n.call("transpose", {w}, Attrs().with("axes", ints_attr({1, 0})));
}

std::vector<OnnxValue> gemm(NodeContext &n) {
  n.accept_attrs({"alpha", "beta", "transA", "transB"});
  OnnxValue a = n.input(0, "A"), b = n.input(1, "B");
  if (a.rank() != 2 || b.rank() != 2)
    user_error(msg::kRank, n.where(), a.rank() != 2 ? 0 : 1, a.rank() != 2 ? a.rank() : b.rank(),
               "Gemm multiplies matrices");
  if (n.attr_int("transA", 0)) a = transpose_2d(n, a);
  OnnxValue w = n.attr_int("transB", 0) ? b : transpose_2d(n, b);  // nn.dense takes [N, K]
  OnnxValue y = n.call("nn.dense", {a, w});
  const float alpha = n.attr_float("alpha", 1), beta = n.attr_float("beta", 1);
  if (alpha != 1) y = n.call("multiply", {y, scalar_like(y, alpha)});
  if (n.has_input(2) && beta != 0) {
    OnnxValue c = n.input(2, "C");
    if (beta != 1) c = n.call("multiply", {c, scalar_like(c, beta)});
    y = n.call("add", {y, c});
  }
  return {y};
}

// Relay newshape entries for `target` (shape elements, kUnknown unknown): an unknown that is the
// reshaped tensor's own dimension at the same position becomes 0 (copy it), a single other unknown
// becomes -1.
std::vector<int64_t> newshape_of(const NodeContext &n, int input, const std::vector<int64_t> &target,
                                 const std::vector<std::pair<Expr, int64_t>> &origins = {},
                                 const Expr &data = {}) {
  std::vector<int64_t> out = target;
  for (size_t i = 0; i < out.size() && i < origins.size(); ++i)
    if (out[i] == kUnknown && data.defined() && origins[i].first.same_as(data) &&
        origins[i].second == int64_t(i))
      out[i] = 0;
  int unknown = 0;
  for (int64_t &d : out)
    if (d == kUnknown || d == -1) {
      d = -1;
      ++unknown;
    }
  if (unknown > 1)
    user_error(msg::kUnknownShapeValue, n.where(), input, n.node().input(input), ints_text(target),
               "grove reshapes with at most one dimension left to the run time");
  return out;
}

OnnxValue reshape_to(const NodeContext &n, const OnnxValue &x, const std::vector<int64_t> &newshape) {
  return n.call("reshape", {x}, Attrs().with("newshape", ints_attr(newshape)));
}

// MatMul: [.., M, K] x [K, N] is nn.dense with the transposed weight; [B, M, K] x [B, K, N] is
// nn.batch_matmul; higher ranks are reshaped to three (their leading dimensions merged).
std::vector<OnnxValue> matmul(NodeContext &n) {
  n.accept_attrs({});
  OnnxValue a = n.input(0, "A"), b = n.input(1, "B");
  if (a.rank() < 2 || b.rank() < 2)
    user_error(msg::kRank, n.where(), a.rank() < 2 ? 0 : 1, a.rank() < 2 ? a.rank() : b.rank(),
               "grove's MatMul multiplies matrices or batches of them (rank 2 or more)");
  if (b.rank() == 2) return {n.call("nn.dense", {a, transpose_2d(n, b)})};
  if (a.rank() == 2) a = n.call("expand_dims", {a}, Attrs().with("axis", AttrValue::of_int(0)));
  if (a.rank() != b.rank())
    user_error(msg::kRank, n.where(), 0, a.rank(),
               fmt::format("grove's MatMul needs both ranks equal, found {} and {}", a.rank(), b.rank()));
  Attrs bmm =
      Attrs().with("transpose_a", AttrValue::of_bool(false)).with("transpose_b", AttrValue::of_bool(false));
  if (a.rank() == 3) return {n.call("nn.batch_matmul", {a, b}, bmm)};
  // Merge the leading dimensions, multiply, and split them again.
  const int64_t r = a.rank();
  const int64_t m = a.shape[r - 2], k = a.shape[r - 1], nn = b.shape[r - 1];
  if (m == kAnyDim || k == kAnyDim || nn == kAnyDim || b.shape[r - 2] == kAnyDim)
    user_error(msg::kRank, n.where(), 0, r,
               "grove's batched MatMul above rank 3 needs the matrices' sizes known");
  std::vector<int64_t> lead(a.shape.begin(), a.shape.end() - 2);
  for (int64_t &d : lead)
    if (d == kAnyDim) d = kUnknown;
  OnnxValue a3 = reshape_to(n, a, {-1, m, k}), b3 = reshape_to(n, b, {-1, b.shape[r - 2], nn});
  OnnxValue y = n.call("nn.batch_matmul", {a3, b3}, bmm);
  lead.push_back(m);
  lead.push_back(nn);
  return {reshape_to(n, y, newshape_of(n, 0, lead))};
}

struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

// The 2-D window attributes of Conv and the pools; auto_pad NOTSET or VALID only.
// The 2-D window attributes of Conv and the pools; auto_pad NOTSET or VALID only. A 1-D window (on
// [N, C, L]) is read as a 2-D one of height 1: kernel [1, k], pads [0, begin, 0, end].
Window window_attrs(NodeContext &n, const OnnxValue &x, std::vector<int64_t> kernel) {
  if (x.rank() != 4 && x.rank() != 3)
    user_error(msg::kRank, n.where(), 0, x.rank(),
               "grove imports 1-D and 2-D convolutions and pools, on [N, C, L] or [N, C, H, W]");
  const bool one_d = x.rank() == 3;
  const size_t dims = one_d ? 1 : 2;
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    n.bad_attr("auto_pad", auto_pad, "grove reads explicit pads (NOTSET) or VALID");
  Window w;
  w.kernel = n.attr_ints("kernel_shape", kernel);
  w.strides = n.attr_ints("strides", std::vector<int64_t>(dims, 1));
  w.dilations = n.attr_ints("dilations", std::vector<int64_t>(dims, 1));
  w.pads = n.attr_ints("pads", std::vector<int64_t>(2 * dims, 0));
  if (auto_pad == "VALID") w.pads.assign(2 * dims, 0);
  if (w.kernel.size() != dims)
    n.bad_attr("kernel_shape", ints_text(w.kernel),
               fmt::format("expected {} size(s), one per spatial axis", dims));
  if (w.strides.size() != dims)
    n.bad_attr("strides", ints_text(w.strides), fmt::format("expected {} stride(s)", dims));
  if (w.dilations.size() != dims)
    n.bad_attr("dilations", ints_text(w.dilations), fmt::format("expected {} dilation(s)", dims));
  if (w.pads.size() != 2 * dims)
    n.bad_attr("pads", ints_text(w.pads),
               fmt::format("expected {} pads (the begins, then the ends)", 2 * dims));
  if (one_d) {
    w.kernel = {1, w.kernel[0]};
    w.strides = {1, w.strides[0]};
    w.dilations = {1, w.dilations[0]};
    w.pads = {0, w.pads[0], 0, w.pads[1]};
  }
  return w;
}

// A 1-D input [N, C, L] as [N, C, 1, L]; and the result back.
OnnxValue lift_1d(const NodeContext &n, const OnnxValue &x) {
  return x.rank() == 3 ? n.call("expand_dims", {x}, Attrs().with("axis", AttrValue::of_int(2))) : x;
}
OnnxValue lower_1d(const NodeContext &n, const OnnxValue &x, const OnnxValue &y) {
  return x.rank() == 3 ? n.call("squeeze", {y}, Attrs().with("axis", ints_attr({2}))) : y;
}

std::vector<OnnxValue> conv(NodeContext &n) {
  n.accept_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const OnnxValue &x = n.input(0, "X"), &w = n.input(1, "W");
  if (w.rank() != x.rank())
    user_error(msg::kRank, n.where(), 1, w.rank(),
               "expected a weight [M, C/group, k...] of the input's rank");
  std::vector<int64_t> kernel(w.shape.begin() + std::min<int64_t>(2, w.rank()), w.shape.end());
  Window win = window_attrs(n, x, kernel);
  // ONNX's pads [x1_begin, x2_begin, x1_end, x2_end] are Relay's [top, left, bottom, right].
  Attrs attrs = Attrs()
                    .with("strides", ints_attr(win.strides))
                    .with("padding", ints_attr(win.pads))
                    .with("dilation", ints_attr(win.dilations))
                    .with("groups", AttrValue::of_int(n.attr_int("group", 1)))
                    .with("channels", AttrValue::of_int(w.shape[0]))
                    .with("kernel_size", ints_attr(win.kernel));
  OnnxValue y = n.call("nn.conv2d", {lift_1d(n, x), lift_1d(n, w)}, attrs);
  if (n.has_input(2))
    y = n.call("nn.bias_add", {y, n.input(2, "B")}, Attrs().with("axis", AttrValue::of_int(1)));
  return {lower_1d(n, x, y)};
}

std::vector<OnnxValue> max_pool(NodeContext &n) {
  n.accept_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  if (n.output_used(1)) user_error(msg::kUnusedOutputOnly, n.where(), 1, n.node().output(1), "Y (output 0)");
  const OnnxValue &x = n.input(0, "X");
  if (!n.attr("kernel_shape")) user_error(msg::kMissingAttr, n.where(), "kernel_shape");
  Window win = window_attrs(n, x, {});
  Attrs attrs = Attrs()
                    .with("pool_size", ints_attr(win.kernel))
                    .with("strides", ints_attr(win.strides))
                    .with("dilation", ints_attr(win.dilations))
                    .with("padding", ints_attr(win.pads))
                    .with("ceil_mode", AttrValue::of_bool(n.attr_int("ceil_mode", 0) != 0));
  return {lower_1d(n, x, n.call("nn.max_pool2d", {lift_1d(n, x)}, attrs))};
}

std::vector<OnnxValue> average_pool(NodeContext &n) {
  n.accept_attrs({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  const OnnxValue &x = n.input(0, "X");
  if (!n.attr("kernel_shape")) user_error(msg::kMissingAttr, n.where(), "kernel_shape");
  Window win = window_attrs(n, x, {});
  Attrs attrs = Attrs()
                    .with("pool_size", ints_attr(win.kernel))
                    .with("strides", ints_attr(win.strides))
                    .with("padding", ints_attr(win.pads))
                    .with("ceil_mode", AttrValue::of_bool(n.attr_int("ceil_mode", 0) != 0))
                    .with("count_include_pad", AttrValue::of_bool(n.attr_int("count_include_pad", 0) != 0));
  return {lower_1d(n, x, n.call("nn.avg_pool2d", {lift_1d(n, x)}, attrs))};
}

// LeakyRelu: where(x > 0, x, alpha * x).
std::vector<OnnxValue> leaky_relu(NodeContext &n) {
  n.accept_attrs({"alpha"});
  const OnnxValue &x = n.input(0, "X");
  OnnxValue positive = n.call("greater", {x, scalar_like(x, 0)});
  return {
      n.call("where", {positive, x, n.call("multiply", {x, scalar_like(x, n.attr_float("alpha", 0.01f))})})};
}

// Max and Min of any number of inputs (numpy broadcasting), pairwise: where(a > b, a, b).
template <bool IsMax>
std::vector<OnnxValue> extremum(NodeContext &n) {
  n.accept_attrs({});
  OnnxValue y = n.input(0, "data_0");
  for (int i = 1; i < n.num_inputs(); ++i) {
    const OnnxValue &b = n.input(i, "data_i");
    y = n.call("where", {n.call(IsMax ? "greater" : "less", {y, b}), y, b});
  }
  return {y};
}

template <const char *Op>
std::vector<OnnxValue> global_pool(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &x = n.input(0, "X");
  if (x.rank() < 3) user_error(msg::kRank, n.where(), 0, x.rank(), "expected [N, C, D1, ...]");
  std::vector<int64_t> axes;
  for (int64_t a = 2; a < x.rank(); ++a) axes.push_back(a);
  return {n.call(Op, {x}, Attrs().with("axis", ints_attr(axes)).with("keepdims", AttrValue::of_bool(true)))};
}

// Pad: grove has no padding operator outside convolutions and pools; zero pads (torch exports them
// before AveragePool) are an identity.
std::vector<OnnxValue> pad(NodeContext &n) {
  n.accept_attrs({"mode"});
  const std::vector<int64_t> pads = n.known_ints(1, "pads");
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    n.bad_attr("pads", ints_text(pads), "grove pads only inside Conv and the pools (their pads attribute)");
  return {n.input(0, "data")};
}

// ---------------------------------------------------------------------------------------------
// Shapes and layout
// ---------------------------------------------------------------------------------------------

std::vector<OnnxValue> shape(NodeContext &n) {
  n.accept_attrs({"start", "end"});
  const OnnxValue &x = n.input(0, "data");
  const int64_t r = x.rank();
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  const int64_t start = clamp(n.attr_int("start", 0)), end = clamp(n.attr_int("end", r));
  std::vector<int64_t> dims;
  std::vector<std::pair<Expr, int64_t>> origins;
  for (int64_t d = start; d < end; ++d) {
    dims.push_back(x.shape[d] == kAnyDim ? kUnknown : x.shape[d]);
    origins.emplace_back(x.shape[d] == kAnyDim ? x.expr : Expr(), d);
  }
  return {shape_value(dims, false, origins)};
}

std::vector<OnnxValue> reshape(NodeContext &n) {
  n.accept_attrs({"allowzero"});
  const OnnxValue &x = n.input(0, "data");
  std::vector<int64_t> target = n.shape_elements(1, "shape");
  if (n.attr_int("allowzero", 0) != 0 && std::find(target.begin(), target.end(), 0) != target.end())
    n.bad_attr("allowzero", "1", "grove reads a 0 in the shape as 'copy the input dimension' (allowzero=0)");
  if (x.elements) return {shape_value(*x.elements, target.empty(), x.origins)};
  return {reshape_to(n, x, newshape_of(n, 1, target, origins_of(n.input(1, "shape")), x.expr))};
}

std::vector<OnnxValue> flatten(NodeContext &n) {
  n.accept_attrs({"axis"});
  const OnnxValue &x = n.input(0, "input");
  const int64_t axis = n.attr_int("axis", 1);
  const int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a > x.rank())
    n.bad_attr("axis", std::to_string(axis),
               fmt::format("expected an axis in [{}, {}]", -x.rank(), x.rank()));
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d)
      p = (x.shape[d] == kAnyDim || p == kUnknown) ? kUnknown : p * x.shape[d];
    return p;
  };
  std::vector<int64_t> target{product(0, a), product(a, x.rank())};
  if (a == 1 && target[0] == kUnknown) target[0] = 0;  // the batch dimension, copied
  return {reshape_to(n, x, newshape_of(n, 0, target))};
}

std::vector<OnnxValue> transpose(NodeContext &n) {
  n.accept_attrs({"perm"});
  const OnnxValue &x = n.input(0, "data");
  std::vector<int64_t> reversed(size_t(x.rank()));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  std::vector<int64_t> perm = n.attr_ints("perm", reversed);
  return {n.call("transpose", {x}, Attrs().with("axes", ints_attr(perm)))};
}

std::vector<OnnxValue> concat(NodeContext &n) {
  n.accept_attrs({"axis"});
  if (!n.attr("axis")) user_error(msg::kMissingAttr, n.where(), "axis");
  std::vector<OnnxValue> parts;
  bool shapes = false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    parts.push_back(n.input(i, "inputs"));
    shapes = shapes || is_shape_value(parts.back());
  }
  if (parts.empty()) user_error(msg::kMissingInput, n.where(), 0, "inputs");
  if (shapes) {
    std::vector<int64_t> all;
    std::vector<std::pair<Expr, int64_t>> origins;
    for (size_t i = 0; i < parts.size(); ++i) {
      auto e = int_elements(parts[i]);
      if (!e)
        user_error(msg::kNotKnown, n.where(), int(i), n.node().input(int(i)),
                   " (it is concatenated with a shape)");
      all.insert(all.end(), e->begin(), e->end());
      auto o = origins_of(parts[i]);
      o.resize(e->size());
      origins.insert(origins.end(), o.begin(), o.end());
    }
    return {shape_value(all, false, origins)};
  }
  const int64_t axis = normalize_axis(n, "axis", n.attr_int("axis", 0), parts[0].rank());
  return {n.call_tuple("concatenate", parts, Attrs().with("axis", AttrValue::of_int(axis)))};
}

std::vector<OnnxValue> identity(NodeContext &n) {
  n.accept_attrs({});
  return {n.input(0, "input")};
}

std::vector<OnnxValue> dropout(NodeContext &n) {
  n.accept_attrs({"seed", "ratio"});
  if (n.has_input(2) && n.known_input(2, "training_mode").element_as_int(0) != 0)
    n.bad_attr("training_mode", "true", "grove imports models for inference, where Dropout is an identity");
  if (n.output_used(1))
    user_error(msg::kUnusedOutputOnly, n.where(), 1, n.node().output(1), "output (output 0)");
  return {n.input(0, "data")};
}

std::vector<OnnxValue> constant(NodeContext &n) {
  n.accept_attrs({"value", "value_float", "value_floats", "value_int", "value_ints", "sparse_value",
                  "value_string", "value_strings"});
  if (const auto *a = n.attr("value")) {
    if (a->type() != ::onnx::AttributeProto::TENSOR)
      user_error(msg::kAttrKind, n.where(), "value", "a tensor");
    return {constant_value(read_tensor(a->t(), n.where()))};
  }
  if (n.attr("value_float"))
    return {constant_value(NDArray::scalar(DType::Float32, n.attr_float("value_float", 0)))};
  if (n.attr("value_int"))
    return {constant_value(NDArray::scalar(DType::Int64, double(n.attr_int("value_int", 0))))};
  if (n.attr("value_ints")) return {shape_value(n.attr_ints("value_ints", {}), false)};
  if (const auto *a = n.attr("value_floats")) {
    if (a->type() != ::onnx::AttributeProto::FLOATS)
      user_error(msg::kAttrKind, n.where(), "value_floats", "a list of floats");
    NDArray arr(DType::Float32, {int64_t(a->floats_size())});
    std::copy(a->floats().begin(), a->floats().end(), arr.data<float>());
    return {constant_value(arr)};
  }
  if (n.attr("sparse_value")) n.bad_attr("sparse_value", "a sparse tensor", "grove reads dense constants");
  if (n.attr("value_string") || n.attr("value_strings"))
    n.bad_attr("value_string", "a string", "grove has no string tensors");
  user_error(msg::kMissingAttr, n.where(), "value");
}

OnnxValue expand_at_run_time(NodeContext &n, const OnnxValue &x, const std::vector<int64_t> &dims, int input);

std::vector<OnnxValue> constant_of_shape(NodeContext &n) {
  n.accept_attrs({"value"});
  const std::vector<int64_t> dims = n.shape_elements(0, "input");
  NDArray fill = NDArray::scalar(DType::Float32, 0);
  if (const auto *a = n.attr("value")) {
    if (a->type() != ::onnx::AttributeProto::TENSOR)
      user_error(msg::kAttrKind, n.where(), "value", "a tensor");
    fill = read_tensor(a->t(), n.where());
    if (fill.size() != 1) n.bad_attr("value", shape_to_string(fill.shape()), "expected a one-element tensor");
  }
  if (std::find(dims.begin(), dims.end(), kUnknown) != dims.end())  // the fill, broadcast at run time
    return {expand_at_run_time(n, constant_value(fill.reshaped(Shape(dims.size(), 1))), dims, 0)};
  Shape shape(dims.begin(), dims.end());
  checked_elements(shape, n.where(), n.node().output(0), kMaxMadeElements);
  NDArray out(fill.dtype(), shape);
  const size_t b = dtype_bytes(fill.dtype());
  for (int64_t i = 0; i < out.size(); ++i) std::memcpy(out.raw() + i * b, fill.raw(), b);
  return {constant_value(out)};
}

// Expand to a shape with dimensions known only at run time, each the extent of an axis of a tensor
// (what Shape read): x is broadcast by where(e == e, x, x) against a tensor e whose only non-1
// dimension is that extent, at its place in the result (a slice of the tensor, reshaped; == of e
// with itself, so its values do not matter), and to the known dimensions by adding zeros.
OnnxValue expand_at_run_time(NodeContext &n, const OnnxValue &x, const std::vector<int64_t> &dims,
                             int input) {
  const std::vector<std::pair<Expr, int64_t>> origins = origins_of(n.input(input, "shape"));
  const size_t rank = std::max(dims.size(), size_t(x.rank()));
  std::vector<int64_t> known(rank, 1);
  OnnxValue y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t at = rank - dims.size() + i;
    if (dims[i] != kUnknown) {
      known[at] = dims[i];
      continue;
    }
    const OnnxValue *source = nullptr;
    for (const auto &[name, v] : n.importer().values)
      if (origins[i].first.defined() && v.expr.defined() && v.expr.same_as(origins[i].first)) source = &v;
    if (!source)
      user_error(msg::kUnknownShapeValue, n.where(), input, n.node().input(input), ints_text(dims),
                 "grove expands to a run-time dimension only when it is a tensor's own (read by Shape)");
    std::vector<int64_t> begin(size_t(source->rank()), 0), end(size_t(source->rank()), 1);
    end[size_t(origins[i].second)] = int64_t(1) << 40;
    OnnxValue slice = n.call("strided_slice", {*source},
                             Attrs().with("begin", ints_attr(begin)).with("end", ints_attr(end)));
    std::vector<int64_t> placed(rank, 1);
    placed[at] = -1;
    OnnxValue extent = reshape_to(n, slice, placed);
    y = n.call("where", {n.call("equal", {extent, extent}), y, y});
  }
  if (std::any_of(known.begin(), known.end(), [](int64_t d) { return d != 1; })) {
    Attrs attrs =
        Attrs().with("shape", ints_attr(known)).with("dtype", AttrValue::of_string(to_string(x.dtype)));
    OnnxValue zeros = n.call("zeros", {}, attrs);
    y = x.dtype == DType::Bool ? n.call("logical_not", {n.call("equal", {y, zeros})})
                               : n.call("add", {y, zeros});
  }
  return y;
}

std::vector<OnnxValue> expand(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &x = n.input(0, "input");
  const std::vector<int64_t> dims = n.shape_elements(1, "shape");
  if (std::find(dims.begin(), dims.end(), kUnknown) != dims.end()) return {expand_at_run_time(n, x, dims, 1)};
  // Broadcast x against the shape, as numpy: the result's dims are the larger of the two.
  std::vector<int64_t> out(std::max(dims.size(), size_t(x.rank())), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t from_shape = i + dims.size() >= out.size() ? dims[i + dims.size() - out.size()] : 1;
    const int64_t from_x = i + size_t(x.rank()) >= out.size() ? x.shape[i + x.rank() - out.size()] : 1;
    out[i] = from_shape == 1 ? from_x : from_shape;
  }
  Shape shape(out.begin(), out.end());
  checked_elements(shape, n.where(), n.node().output(0), kMaxMadeElements);
  Attrs attrs = Attrs().with("shape", ints_attr(out)).with("dtype", AttrValue::of_string(to_string(x.dtype)));
  OnnxValue zeros = n.call("zeros", {}, attrs);
  if (x.dtype == DType::Bool) return {n.call("logical_not", {n.call("equal", {x, zeros})})};
  return {n.call("add", {x, zeros})};
}

std::vector<OnnxValue> gather(NodeContext &n) {
  n.accept_attrs({"axis"});
  const OnnxValue &data = n.input(0, "data"), &indices = n.input(1, "indices");
  const int64_t axis = normalize_axis(n, "axis", n.attr_int("axis", 0), data.rank());
  if (is_shape_value(data)) {
    auto idx = int_elements(indices);
    if (!idx) user_error(msg::kNotKnown, n.where(), 1, n.node().input(1), " (it indexes a shape)");
    std::vector<int64_t> out;
    std::vector<std::pair<Expr, int64_t>> origins, from = origins_of(data);
    for (int64_t i : *idx) {
      const int64_t len = int64_t(data.elements->size());
      if (i < -len || i >= len)
        n.bad_attr("indices", std::to_string(i), fmt::format("expected an index in [{}, {})", -len, len));
      out.push_back((*data.elements)[i < 0 ? i + len : i]);
      origins.push_back(from[i < 0 ? i + len : i]);
    }
    return {shape_value(out, indices.rank() == 0, origins)};
  }
  OnnxValue idx = indices;
  if (indices.known() && data.shape[axis] != kAnyDim) {  // ONNX's negative indices count from the end
    NDArray fixed(DType::Int64, indices.shape);
    for (int64_t i = 0; i < fixed.size(); ++i) {
      int64_t v = indices.constant->element_as_int(i);
      if (v < -data.shape[axis] || v >= data.shape[axis])
        n.bad_attr("indices", std::to_string(v),
                   fmt::format("expected an index in [{}, {})", -data.shape[axis], data.shape[axis]));
      fixed.data<int64_t>()[i] = v < 0 ? v + data.shape[axis] : v;
    }
    idx = constant_value(fixed);
  }
  return {n.call("take", {data, idx}, Attrs().with("axis", AttrValue::of_int(axis)))};
}

// Unsqueeze's and Squeeze's axes: an attribute before opset 13, an input from it.
std::vector<int64_t> axes_of(NodeContext &n, bool required) {
  if (n.opset() >= 13) {
    n.accept_attrs({});
    if (!n.has_input(1)) {
      if (required) user_error(msg::kMissingInput, n.where(), 1, "axes");
      return {};
    }
    return n.known_ints(1, "axes");
  }
  n.accept_attrs({"axes"});
  if (required && !n.attr("axes")) user_error(msg::kMissingAttr, n.where(), "axes");
  return n.attr_ints("axes", {});
}

std::vector<OnnxValue> unsqueeze(NodeContext &n) {
  std::vector<int64_t> axes = axes_of(n, true);
  OnnxValue x = n.input(0, "data");
  const int64_t out_rank = x.rank() + int64_t(axes.size());
  for (int64_t &a : axes) a = normalize_axis(n, "axes", a, out_rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    n.bad_attr("axes", ints_text(axes), "an axis is repeated");
  if (x.elements) {
    if (out_rank > 1) n.bad_attr("axes", ints_text(axes), "grove keeps shapes as vectors (rank 1)");
    return {shape_value(*x.elements, false, x.origins)};
  }
  for (int64_t a : axes) x = n.call("expand_dims", {x}, Attrs().with("axis", AttrValue::of_int(a)));
  return {x};
}

std::vector<OnnxValue> squeeze(NodeContext &n) {
  std::vector<int64_t> axes = axes_of(n, false);
  const OnnxValue &x = n.input(0, "data");
  for (int64_t &a : axes) a = normalize_axis(n, "axes", a, x.rank());
  if (x.elements) {
    if (x.elements->size() != 1) n.bad_attr("axes", ints_text(axes), "the shape has more than one element");
    return {shape_value(*x.elements, true, x.origins)};
  }
  Attrs attrs;
  if (!axes.empty()) attrs = attrs.with("axis", ints_attr(axes));
  return {n.call("squeeze", {x}, attrs)};
}

std::vector<OnnxValue> slice(NodeContext &n) {
  n.accept_attrs({});
  const OnnxValue &x = n.input(0, "data");
  std::vector<int64_t> starts = n.known_ints(1, "starts"), ends = n.known_ints(2, "ends");
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (n.has_input(3)) axes = n.known_ints(3, "axes");
  std::vector<int64_t> steps =
      n.has_input(4) ? n.known_ints(4, "steps") : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.bad_attr("starts", ints_text(starts), "starts, ends, axes and steps must have the same length");
  for (size_t i = 0; i < axes.size(); ++i) {
    axes[i] = normalize_axis(n, "axes", axes[i], x.rank());
    if (steps[i] == 0) n.bad_attr("steps", ints_text(steps), "a step is 0");
    // Relay's attributes are printed as text: clamp INT64_MAX-style ends to the dimension.
    const int64_t dim = x.shape[axes[i]] == kAnyDim ? int64_t(1) << 40 : x.shape[axes[i]];
    starts[i] = std::clamp(starts[i], -dim - 1, dim);
    ends[i] = std::clamp(ends[i], -dim - 1, dim);
  }
  if (x.elements) {
    if (axes.size() != 1) n.bad_attr("axes", ints_text(axes), "a shape has one axis");
    const int64_t len = int64_t(x.elements->size());
    int64_t b = starts[0] < 0 ? starts[0] + len : starts[0], e = ends[0] < 0 ? ends[0] + len : ends[0];
    std::vector<int64_t> out;
    std::vector<std::pair<Expr, int64_t>> origins, from = origins_of(x);
    auto pick = [&](int64_t i) {
      out.push_back((*x.elements)[i]);
      origins.push_back(from[i]);
    };
    if (steps[0] > 0)
      for (int64_t i = std::clamp(b, int64_t(0), len); i < std::clamp(e, int64_t(0), len); i += steps[0])
        pick(i);
    else
      for (int64_t i = std::clamp(b, int64_t(-1), len - 1); i > std::clamp(e, int64_t(-1), len - 1);
           i += steps[0])
        pick(i);
    return {shape_value(out, false, origins)};
  }
  Attrs attrs = Attrs()
                    .with("begin", ints_attr(starts))
                    .with("end", ints_attr(ends))
                    .with("strides", ints_attr(steps))
                    .with("axes", ints_attr(axes));
  return {n.call("strided_slice", {x}, attrs)};
}

}  // namespace

const std::vector<OperatorEntry> &operator_table() {
  static const std::vector<OperatorEntry> table = [] {
    std::vector<OperatorEntry> t = {
        {"Abs", 1, unary<kAbs>},
        {"Add", 7, binary<kAdd, '+'>},
        {"AveragePool", 11, average_pool},
        {"BatchNormalization", 9, batch_normalization},
        {"Cast", 9, cast},
        {"Clip", 11, clip},
        {"Concat", 4, concat},
        {"Constant", 9, constant},
        {"ConstantOfShape", 9, constant_of_shape},
        {"Conv", 1, conv},
        {"Div", 7, binary<kDiv, '/'>},
        {"Dropout", 7, dropout},
        {"Equal", 11, equal},
        {"Erf", 9, unary<kErf>},
        {"Exp", 6, unary<kExp>},
        {"Expand", 8, expand},
        {"Flatten", 11, flatten},
        {"Gather", 11, gather},
        {"Gemm", 11, gemm},
        {"GlobalAveragePool", 1, global_pool<kMean>},
        {"GlobalMaxPool", 1, global_pool<kMax>},
        {"Identity", 1, identity},
        {"LayerNormalization", 17, layer_normalization},
        {"LeakyRelu", 6, leaky_relu},
        {"Log", 6, unary<kLog>},
        {"LogSoftmax", 11, log_softmax},
        {"MatMul", 9, matmul},
        {"Max", 8, extremum<true>},
        {"MaxPool", 11, max_pool},
        {"Min", 8, extremum<false>},
        {"Mul", 7, binary<kMul, '*'>},
        {"Neg", 6, unary<kNeg>},
        {"Pad", 11, pad},
        {"Pow", 7, pow},
        {"ReduceMax", 11, reduce<kMax>},
        {"ReduceMean", 11, reduce<kMean>},
        {"ReduceSum", 11, reduce<kSum>},
        {"Relu", 6, unary<kRelu>},
        {"Reshape", 5, reshape},
        {"Shape", 1, shape},
        {"Sigmoid", 6, unary<kSigmoid>},
        {"Slice", 10, slice},
        {"Softmax", 11, softmax},
        {"Sqrt", 6, unary<kSqrt>},
        {"Squeeze", 11, squeeze},
        {"Sub", 7, binary<kSub, '-'>},
        {"Tanh", 6, unary<kTanh>},
        {"Transpose", 1, transpose},
        {"Unsqueeze", 11, unsqueeze},
        {"Where", 9, where},
    };
    for (OperatorEntry &e : recurrent_operators()) t.push_back(e);
    std::sort(t.begin(), t.end(),
              [](const OperatorEntry &a, const OperatorEntry &b) { return std::string(a.name) < b.name; });
    return t;
  }();
  return table;
}

}  // namespace grove::onnx_frontend
