#pragma once
// Typed operator attributes (TVM's Conv2DAttrs, ReduceAttrs, ...): per operator family a struct,
// read from a call's textual Attrs by one function, which every consumer calls — the type
// relations and interpreter kernels (ops/), the Halide kernels (backends/relay/halide), oneDNN and
// the C source emitter (backends/relay/byoc), the VM's row test (backends/relay/vm/RowWise) and the
// translation of recursive functions to the model language (backends/relay/recursive/CaseWriter.h).
// The textual Attrs stay on the Call for printing and equality (a call prints as written); the
// structs say what the attributes mean: defaults filled in, `padding` normalized to four sides,
// pairs to two values, an absent optional attribute distinguished from a given one.
//
// Each parse throws OpError naming the attribute and what was expected ("padding must have 1, 2 or
// 4 values, found 3"); the type checker adds the call's file:line:col and the op's name, so a
// malformed attribute is reported once, where it is written, before any back end reads it.
// What an attribute means for a given input shape (an axis in range, the sizes of split's pieces)
// is the op's shape rule (ops/Transform.h, ops/Reduce.h), which takes the struct.
//
// Each struct is parsed once per call: type inference caches it on the call's Attrs
// (cache_typed_attrs, Attrs::typed), and every reader below returns that cached struct; attributes
// built later (or never typed) are parsed where they are read, with the same result.
//
// Also here, the helpers the attribute readers share: normalize_axis and axis_attr.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"

namespace grove::relay {

// Type inference's one parse of a call of `op`: the struct of op's family cached on `attrs` (the
// call's own), read by every reader after it. Nothing is cached for an op without a family here, or
// for malformed attributes, which the op's relation then reports with the call's place.
void cache_typed_attrs(const std::string &op, const Attrs &attrs);

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

// `axis` in [-rank, rank) made non-negative (`extra` widens the range, as expand_dims's new axes do);
// OpError "axis 3 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)" otherwise,
// naming the attribute `name`.
int64_t normalize_axis(int64_t axis, int64_t rank, const char *name = "axis", int64_t extra = 0);

// The integer attribute `axis` (`fallback` when absent) normalized against `rank`.
int64_t axis_attr(const Attrs &attrs, int64_t fallback, int64_t rank);

// Whether `name` is absent or None.
bool attr_none(const Attrs &attrs, const std::string &name);

// ---------------------------------------------------------------------------------------------
// Sliding windows over NCHW data: nn.conv2d and the 2-D pools
// ---------------------------------------------------------------------------------------------

// `padding`: 1 value for all sides, 2 for (top/bottom, left/right), 4 for (top, left, bottom, right);
// none negative. Absent: no padding.
struct Pad {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool any() const { return top != 0 || left != 0 || bottom != 0 || right != 0; }
};
Pad padding_attr(const Attrs &attrs);

// A 2-value attribute (strides, dilation, pool_size, kernel_size): one value stands for both; both
// positive. `fallback` when absent.
std::array<int64_t, 2> pair_attr(const Attrs &attrs, const std::string &name, std::vector<int64_t> fallback);

// nn.conv2d. Layouts are as written (the relation accepts NCHW/OIHW only); out_layout and
// out_dtype are "" when absent (the data's).
struct Conv2DAttrs {
  std::array<int64_t, 2> strides{1, 1}, dilation{1, 1};
  Pad padding;
  int64_t groups = 1;                                 // positive
  std::optional<int64_t> channels;                    // the weight's O, when given
  std::optional<std::array<int64_t, 2>> kernel_size;  // the weight's (KH, KW), when given
  std::string data_layout = "NCHW", kernel_layout = "OIHW", out_layout, out_dtype;
};
Conv2DAttrs conv2d_attrs(const Attrs &attrs);

// nn.max_pool2d, nn.avg_pool2d: pool_size is required.
struct Pool2DAttrs {
  std::array<int64_t, 2> pool_size{1, 1}, strides{1, 1}, dilation{1, 1};
  Pad padding;
  std::string layout = "NCHW", out_layout;
  bool ceil_mode = false;
  bool count_include_pad = false;  // avg_pool2d's
};
Pool2DAttrs pool2d_attrs(const Attrs &attrs);

// ---------------------------------------------------------------------------------------------
// Other nn and elementwise families
// ---------------------------------------------------------------------------------------------

// nn.dense: data [..., K] by weight [N, K]. units: N when given (checked against the weight by the
// relation); out_dtype "" when absent (the data's).
struct DenseAttrs {
  std::optional<int64_t> units;
  std::string out_dtype;
};
DenseAttrs dense_attrs(const Attrs &attrs);

// nn.bias_add: the data's axis the bias runs along, as written (1 when absent).
struct BiasAddAttrs {
  int64_t axis = 1;
};
BiasAddAttrs bias_add_attrs(const Attrs &attrs);

// nn.pad: pad_width is required, a list of [before, after] pairs of non-negative integers (one per
// dimension of the data: the relation checks the count); pad_mode "constant" (the pad value, the
// default), "edge" (the nearest element) or "reflect".
struct PadAttrs {
  std::vector<int64_t> before, after;  // one per dimension
  std::string mode = "constant";
};
PadAttrs pad_attrs(const Attrs &attrs);

// nn.batch_matmul: x [B, M, K] (transpose_a: [B, K, M]) by y [B, N, K] (transpose_b, the default)
// or [B, K, N].
struct BatchMatmulAttrs {
  bool transpose_a = false, transpose_b = true;
  std::string out_dtype;  // "" when absent
};
BatchMatmulAttrs batch_matmul_attrs(const Attrs &attrs);

// nn.batch_norm (axis 1 by default) and nn.layer_norm (axis -1): the axis as written.
struct NormAttrs {
  int64_t axis = 1;
  double epsilon = 1e-5;
  bool center = true, scale = true;
};
NormAttrs norm_attrs(const Attrs &attrs, int64_t default_axis);

// clip: both bounds are required.
struct ClipAttrs {
  double a_min = 0.0, a_max = 0.0;
};
ClipAttrs clip_attrs(const Attrs &attrs);

// ---------------------------------------------------------------------------------------------
// Transforms and reductions
// ---------------------------------------------------------------------------------------------

// concatenate: the axis as written (0 when absent).
struct ConcatenateAttrs {
  int64_t axis = 0;
};
ConcatenateAttrs concatenate_attrs(const Attrs &attrs);

// expand_dims: axis is required (as written: -rank-1 <= axis <= rank); num_newaxis >= 0, 1 when absent.
struct ExpandDimsAttrs {
  int64_t axis = 0;
  int64_t num_newaxis = 1;
};
ExpandDimsAttrs expand_dims_attrs(const Attrs &attrs);

// zeros, ones, full: shape is required, no dimension negative; dtype "" when absent or None (each
// op's default: float32, or full's fill value's).
struct InitAttrs {
  Shape shape;
  std::string dtype;
};
InitAttrs init_attrs(const Attrs &attrs);

// take: axis none (None or absent) takes from the flattened data; grove supports batch_dims 0 only;
// mode "clip" (the default), "wrap" or "fast" (an out-of-range index is an error).
struct TakeAttrs {
  std::optional<int64_t> axis;  // as written
  int64_t batch_dims = 0;
  std::string mode = "clip";
};
TakeAttrs take_attrs(const Attrs &attrs);

// one_hot: depth >= 0 (1 when absent), the axis as written (-1, the default: last), dtype none
// (None or absent) for the on value's.
struct OneHotAttrs {
  int64_t depth = 1;
  int64_t axis = -1;
  std::optional<DType> dtype;
};
OneHotAttrs one_hot_attrs(const Attrs &attrs);

// split: indices_or_sections is required, an integer (equal sections) or a list of indices.
struct SplitAttrs {
  std::optional<int64_t> sections;  // indices_or_sections as an integer
  std::vector<int64_t> indices;     // ... as a list
  int64_t axis = 0;                 // as written
};
SplitAttrs split_attrs(const Attrs &attrs);

// reshape: newshape is required (TVM's special values 0, -1, -2, -3, -4 as written).
struct ReshapeAttrs {
  std::vector<int64_t> newshape;
  bool allowzero = false;
};
ReshapeAttrs reshape_attrs(const Attrs &attrs);

// squeeze: the axes to drop, or none (None or absent) for every dimension of size 1.
struct SqueezeAttrs {
  std::optional<std::vector<int64_t>> axis;
};
SqueezeAttrs squeeze_attrs(const Attrs &attrs);

// transpose: the permutation, or none (None or absent) for the reversed axes.
struct TransposeAttrs {
  std::optional<std::vector<int64_t>> axes;
};
TransposeAttrs transpose_attrs(const Attrs &attrs);

// strided_slice: begin and end are required; axes none (None or absent) slices from axis 0.
struct StridedSliceAttrs {
  std::vector<int64_t> begin, end, strides;
  std::optional<std::vector<int64_t>> axes;
  bool size_mode = false;  // slice_mode "size" (else "end", the default)
};
StridedSliceAttrs strided_slice_attrs(const Attrs &attrs);

// sum, mean, max, argmax: the axes as written (empty: every axis), keepdims, exclude.
struct ReduceAttrs {
  std::vector<int64_t> axis;
  bool keepdims = false, exclude = false;
  bool select_last_index = false;  // argmax's
};
ReduceAttrs reduce_attrs(const Attrs &attrs);

}  // namespace grove::relay
