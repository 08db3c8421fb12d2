// Typed operator attributes (OpAttrs.h): each family's struct read from the textual Attrs by one
// parse_* function, with the messages the relations gave when each of them read the attributes
// itself; the public readers return the struct type inference cached (cache_typed_attrs) or parse.

#include "frontend/relay/ops/OpAttrs.h"

#include <fmt/format.h>

#include <map>

namespace grove::relay {

namespace {

// The list attribute `name`, or none when absent or None.
std::optional<std::vector<int64_t>> optional_ints(const Attrs &attrs, const std::string &name) {
  if (attr_none(attrs, name)) return std::nullopt;
  return attr_ints(attrs, name, {});
}

}  // namespace

int64_t normalize_axis(int64_t axis, int64_t rank, const char *name, int64_t extra) {
  const int64_t n = rank + extra;
  if (axis < -n || axis >= n)
    throw OpError(fmt::format("{} {} is out of range for a tensor of rank {} (expected {} <= {} < {})", name,
                              axis, rank, -n, name, n));
  return axis < 0 ? axis + n : axis;
}

int64_t axis_attr(const Attrs &attrs, int64_t fallback, int64_t rank) {
  return normalize_axis(attr_int(attrs, "axis", fallback), rank);
}

bool attr_none(const Attrs &attrs, const std::string &name) {
  const AttrValue *v = attrs.find(name);
  return !v || v->kind == AttrValue::Kind::None;
}

std::array<int64_t, 2> pair_attr(const Attrs &attrs, const std::string &name, std::vector<int64_t> fallback) {
  std::vector<int64_t> v = attr_ints(attrs, name, fallback);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw OpError(fmt::format("{} must have 2 values, found {}", name, v.size()));
  if (v[0] <= 0 || v[1] <= 0)
    throw OpError(fmt::format("{} must be positive, found ({}, {})", name, v[0], v[1]));
  return {v[0], v[1]};
}

Pad padding_attr(const Attrs &attrs) {
  std::vector<int64_t> p = attr_ints(attrs, "padding", {0, 0});
  Pad pad;
  if (p.size() == 1)
    pad = {p[0], p[0], p[0], p[0]};
  else if (p.size() == 2)
    pad = {p[0], p[1], p[0], p[1]};
  else if (p.size() == 4)
    pad = {p[0], p[1], p[2], p[3]};
  else
    throw OpError(fmt::format("padding must have 1, 2 or 4 values, found {}", p.size()));
  if (pad.top < 0 || pad.left < 0 || pad.bottom < 0 || pad.right < 0)
    throw OpError("padding must be non-negative");
  return pad;
}

static Conv2DAttrs parse_conv2d_attrs(const Attrs &attrs) {
  Conv2DAttrs a;
  a.data_layout = attr_string(attrs, "data_layout", "NCHW");
  a.kernel_layout = attr_string(attrs, "kernel_layout", "OIHW");
  a.out_layout = attr_string(attrs, "out_layout", "");
  a.out_dtype = attr_string(attrs, "out_dtype", "");
  a.groups = attr_int(attrs, "groups", 1);
  if (a.groups <= 0) throw OpError(fmt::format("groups must be positive, found {}", a.groups));
  a.strides = pair_attr(attrs, "strides", {1, 1});
  a.dilation = pair_attr(attrs, "dilation", {1, 1});
  a.padding = padding_attr(attrs);
  if (!attr_none(attrs, "channels")) a.channels = attr_int(attrs, "channels", 0);
  if (!attr_none(attrs, "kernel_size")) a.kernel_size = pair_attr(attrs, "kernel_size", {});
  return a;
}

static Pool2DAttrs parse_pool2d_attrs(const Attrs &attrs) {
  Pool2DAttrs a;
  a.layout = attr_string(attrs, "layout", "NCHW");
  a.out_layout = attr_string(attrs, "out_layout", "");
  require_attr(attrs, "pool_size");
  a.pool_size = pair_attr(attrs, "pool_size", {});
  a.strides = pair_attr(attrs, "strides", {1, 1});
  a.dilation = pair_attr(attrs, "dilation", {1, 1});
  a.padding = padding_attr(attrs);
  a.ceil_mode = attr_bool(attrs, "ceil_mode", false);
  a.count_include_pad = attr_bool(attrs, "count_include_pad", false);
  return a;
}

static DenseAttrs parse_dense_attrs(const Attrs &attrs) {
  DenseAttrs a;
  if (!attr_none(attrs, "units")) a.units = attr_int(attrs, "units", 0);
  a.out_dtype = attr_string(attrs, "out_dtype", "");
  return a;
}

static BiasAddAttrs parse_bias_add_attrs(const Attrs &attrs) { return {attr_int(attrs, "axis", 1)}; }

static PadAttrs parse_pad_attrs(const Attrs &attrs) {
  require_attr(attrs, "pad_width");
  const AttrValue *v = attrs.find("pad_width");
  const OpError bad(
      "pad_width must be a list of [before, after] pairs of non-negative integers, one per dimension of the "
      "data");
  if (v->kind != AttrValue::Kind::List) throw bad;
  PadAttrs a;
  for (const AttrValue &pair : v->list) {
    if (pair.kind != AttrValue::Kind::List || pair.list.size() != 2) throw bad;
    for (const AttrValue &x : pair.list)
      if (x.kind != AttrValue::Kind::Int || x.i < 0) throw bad;
    a.before.push_back(pair.list[0].i);
    a.after.push_back(pair.list[1].i);
  }
  a.mode = attr_string(attrs, "pad_mode", "constant");
  if (a.mode != "constant" && a.mode != "edge" && a.mode != "reflect")
    throw OpError(
        fmt::format("pad_mode must be \"constant\", \"edge\" or \"reflect\", found \"{}\"", a.mode));
  return a;
}

static BatchMatmulAttrs parse_batch_matmul_attrs(const Attrs &attrs) {
  BatchMatmulAttrs a;
  a.transpose_a = attr_bool(attrs, "transpose_a", false);
  a.transpose_b = attr_bool(attrs, "transpose_b", true);
  a.out_dtype = attr_string(attrs, "out_dtype", "");
  return a;
}

NormAttrs norm_attrs(const Attrs &attrs, int64_t default_axis) {
  NormAttrs a;
  a.axis = attr_int(attrs, "axis", default_axis);
  a.epsilon = attr_float(attrs, "epsilon", 1e-5);
  a.center = attr_bool(attrs, "center", true);
  a.scale = attr_bool(attrs, "scale", true);
  return a;
}

static ClipAttrs parse_clip_attrs(const Attrs &attrs) {
  require_attr(attrs, "a_min");
  require_attr(attrs, "a_max");
  return {attr_float(attrs, "a_min", 0.0), attr_float(attrs, "a_max", 0.0)};
}

static ConcatenateAttrs parse_concatenate_attrs(const Attrs &attrs) { return {attr_int(attrs, "axis", 0)}; }

static ExpandDimsAttrs parse_expand_dims_attrs(const Attrs &attrs) {
  require_attr(attrs, "axis");
  ExpandDimsAttrs a;
  a.axis = attr_int(attrs, "axis", 0);
  a.num_newaxis = attr_int(attrs, "num_newaxis", 1);
  if (a.num_newaxis < 0) throw OpError(fmt::format("num_newaxis must be >= 0, found {}", a.num_newaxis));
  return a;
}

static InitAttrs parse_init_attrs(const Attrs &attrs) {
  require_attr(attrs, "shape");
  InitAttrs a;
  a.shape = attr_ints(attrs, "shape", {});
  for (int64_t d : a.shape)
    if (d < 0) throw OpError(fmt::format("shape [{}] has a negative dimension", fmt::join(a.shape, ", ")));
  a.dtype = attr_string(attrs, "dtype", "");
  return a;
}

static TakeAttrs parse_take_attrs(const Attrs &attrs) {
  TakeAttrs a;
  a.batch_dims = attr_int(attrs, "batch_dims", 0);
  if (a.batch_dims != 0) throw OpError("grove supports take with batch_dims=0 only");
  a.mode = attr_string(attrs, "mode", "clip");
  if (a.mode != "clip" && a.mode != "wrap" && a.mode != "fast")
    throw OpError(fmt::format("mode must be \"clip\", \"wrap\" or \"fast\", found \"{}\"", a.mode));
  if (!attr_none(attrs, "axis")) a.axis = attr_int(attrs, "axis", 0);
  return a;
}

static OneHotAttrs parse_one_hot_attrs(const Attrs &attrs) {
  OneHotAttrs a;
  a.depth = attr_int(attrs, "depth", 1);
  if (a.depth < 0) throw OpError(fmt::format("depth must be >= 0, found {}", a.depth));
  a.axis = attr_int(attrs, "axis", -1);
  if (!attr_none(attrs, "dtype")) {
    const std::string name = attr_string(attrs, "dtype", "");
    a.dtype = parse_dtype(name);
    if (!a.dtype) throw OpError(fmt::format("dtype \"{}\" is not a dtype grove knows", name));
  }
  return a;
}

static SplitAttrs parse_split_attrs(const Attrs &attrs) {
  SplitAttrs a;
  require_attr(attrs, "indices_or_sections");
  const AttrValue *v = attrs.find("indices_or_sections");
  if (v->kind == AttrValue::Kind::Int) {
    a.sections = v->i;
    if (v->i <= 0) throw OpError(fmt::format("indices_or_sections must be positive, found {}", v->i));
  } else {
    a.indices = attr_ints(attrs, "indices_or_sections", {});
    int64_t begin = 0;
    for (int64_t index : a.indices) {
      // As TVM: the indices must be strictly ascending and positive.
      if (index <= begin)
        throw OpError(fmt::format(
            "indices_or_sections must be a strictly ascending list of positive indices, found [{}]",
            fmt::join(a.indices, ", ")));
      begin = index;
    }
  }
  a.axis = attr_int(attrs, "axis", 0);
  return a;
}

static ReshapeAttrs parse_reshape_attrs(const Attrs &attrs) {
  require_attr(attrs, "newshape");
  ReshapeAttrs a;
  a.newshape = attr_ints(attrs, "newshape", {});
  a.allowzero = attr_bool(attrs, "allowzero", false);
  return a;
}

static SqueezeAttrs parse_squeeze_attrs(const Attrs &attrs) { return {optional_ints(attrs, "axis")}; }

static TransposeAttrs parse_transpose_attrs(const Attrs &attrs) { return {optional_ints(attrs, "axes")}; }

static StridedSliceAttrs parse_strided_slice_attrs(const Attrs &attrs) {
  require_attr(attrs, "begin");
  require_attr(attrs, "end");
  StridedSliceAttrs a;
  a.begin = attr_ints(attrs, "begin", {});
  a.end = attr_ints(attrs, "end", {});
  a.strides = attr_ints(attrs, "strides", {});
  const std::string mode = attr_string(attrs, "slice_mode", "end");
  if (mode != "end" && mode != "size")
    throw OpError(fmt::format("slice_mode must be \"end\" or \"size\", found \"{}\"", mode));
  a.size_mode = mode == "size";
  a.axes = optional_ints(attrs, "axes");
  return a;
}

static ReduceAttrs parse_reduce_attrs(const Attrs &attrs) {
  ReduceAttrs a;
  a.axis = attr_ints(attrs, "axis", {});
  a.keepdims = attr_bool(attrs, "keepdims", false);
  a.exclude = attr_bool(attrs, "exclude", false);
  a.select_last_index = attr_bool(attrs, "select_last_index", false);
  return a;
}

// ---------------------------------------------------------------------------------------------
// The readers every consumer calls, and the one parse type inference caches
// ---------------------------------------------------------------------------------------------

namespace {

// The struct type inference cached on these attributes, or a parse now (attributes built after type
// inference, or never typed).
template <typename T>
T typed_or_parse(const Attrs &attrs, T (*parse)(const Attrs &)) {
  if (const T *typed = attrs.typed<T>()) return *typed;
  return parse(attrs);
}

// Typing a module again (a copy shares the calls) finds the struct there and writes nothing.
template <typename T, T (*Parse)(const Attrs &)>
void cache(const Attrs &attrs) {
  if (attrs.typed<T>() == nullptr) attrs.cache_typed(Parse(attrs));
}

}  // namespace

Conv2DAttrs conv2d_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_conv2d_attrs); }
Pool2DAttrs pool2d_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_pool2d_attrs); }
DenseAttrs dense_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_dense_attrs); }
BiasAddAttrs bias_add_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_bias_add_attrs); }
PadAttrs pad_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_pad_attrs); }
BatchMatmulAttrs batch_matmul_attrs(const Attrs &attrs) {
  return typed_or_parse(attrs, parse_batch_matmul_attrs);
}
ClipAttrs clip_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_clip_attrs); }
ConcatenateAttrs concatenate_attrs(const Attrs &attrs) {
  return typed_or_parse(attrs, parse_concatenate_attrs);
}
ExpandDimsAttrs expand_dims_attrs(const Attrs &attrs) {
  return typed_or_parse(attrs, parse_expand_dims_attrs);
}
InitAttrs init_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_init_attrs); }
TakeAttrs take_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_take_attrs); }
OneHotAttrs one_hot_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_one_hot_attrs); }
SplitAttrs split_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_split_attrs); }
ReshapeAttrs reshape_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_reshape_attrs); }
SqueezeAttrs squeeze_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_squeeze_attrs); }
TransposeAttrs transpose_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_transpose_attrs); }
StridedSliceAttrs strided_slice_attrs(const Attrs &attrs) {
  return typed_or_parse(attrs, parse_strided_slice_attrs);
}
ReduceAttrs reduce_attrs(const Attrs &attrs) { return typed_or_parse(attrs, parse_reduce_attrs); }

void cache_typed_attrs(const std::string &op, const Attrs &attrs) {
  using Cache = void (*)(const Attrs &);
  static const std::map<std::string, Cache> kFamilies = {
      {"nn.conv2d", cache<Conv2DAttrs, parse_conv2d_attrs>},
      {"nn.max_pool2d", cache<Pool2DAttrs, parse_pool2d_attrs>},
      {"nn.avg_pool2d", cache<Pool2DAttrs, parse_pool2d_attrs>},
      {"nn.dense", cache<DenseAttrs, parse_dense_attrs>},
      {"nn.bias_add", cache<BiasAddAttrs, parse_bias_add_attrs>},
      {"nn.pad", cache<PadAttrs, parse_pad_attrs>},
      {"nn.batch_matmul", cache<BatchMatmulAttrs, parse_batch_matmul_attrs>},
      {"clip", cache<ClipAttrs, parse_clip_attrs>},
      {"concatenate", cache<ConcatenateAttrs, parse_concatenate_attrs>},
      {"expand_dims", cache<ExpandDimsAttrs, parse_expand_dims_attrs>},
      {"zeros", cache<InitAttrs, parse_init_attrs>},
      {"ones", cache<InitAttrs, parse_init_attrs>},
      {"full", cache<InitAttrs, parse_init_attrs>},
      {"take", cache<TakeAttrs, parse_take_attrs>},
      {"one_hot", cache<OneHotAttrs, parse_one_hot_attrs>},
      {"split", cache<SplitAttrs, parse_split_attrs>},
      {"reshape", cache<ReshapeAttrs, parse_reshape_attrs>},
      {"squeeze", cache<SqueezeAttrs, parse_squeeze_attrs>},
      {"transpose", cache<TransposeAttrs, parse_transpose_attrs>},
      {"strided_slice", cache<StridedSliceAttrs, parse_strided_slice_attrs>},
      {"sum", cache<ReduceAttrs, parse_reduce_attrs>},
      {"mean", cache<ReduceAttrs, parse_reduce_attrs>},
      {"max", cache<ReduceAttrs, parse_reduce_attrs>},
      {"argmax", cache<ReduceAttrs, parse_reduce_attrs>},
  };
  auto family = kFamilies.find(op);
  if (family == kFamilies.end()) return;
  try {
    family->second(attrs);
  } catch (const OpError &) {
    // Malformed: the op's relation reports it, with the call's place; nothing is cached.
  }
}

}  // namespace grove::relay
