// Tensor transforms: ops that move, select or create elements without arithmetic (TVM's
// src/relay/op/tensor/transform.cc): concatenate, split, strided_slice, take, reshape, transpose,
// squeeze, expand_dims, zeros, ones, full, tile, one_hot, layout_transform (permutations of one
// layout's dimensions), nn.batch_flatten, zeros_like and ones_like (broadcast_to is in
// Elementwise.cpp). Each op's
// shape rule is one function over shapes that may hold
// `?`; the type relation calls it on the argument types and the kernel calls it again on the
// concrete shapes, so every check a `?` postponed happens at run time with the same message.
// Kernels move bytes (dtype_bytes per element), so they work for every dtype.

#include "frontend/relay/ops/Transform.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
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

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t prod(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

std::vector<int64_t> strides_of(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::string ints_to_string(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<NDArray> one(NDArray a) { return {std::move(a)}; }

// A copy of `in`'s bytes under a new shape with the same number of elements.
// The same elements, sharing `in`'s storage (NDArrays are not written once made).
NDArray with_shape(const NDArray &in, Shape shape) { return in.reshaped(std::move(shape)); }

template <typename T>
void gather_typed(const T *src, T *dst, const Shape &oshape, int64_t base, const std::vector<int64_t> &step) {
  const size_t rank = oshape.size();
  if (rank == 0) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = oshape[rank - 1], inner_step = step[rank - 1];
  const int64_t rows = prod(oshape, 0, rank - 1);
  std::vector<int64_t> idx(rank - 1, 0);
  int64_t offset = base;
  for (int64_t r = 0; r < rows; ++r) {
    const T *s = src + offset;
    for (int64_t j = 0; j < inner; ++j) dst[j] = s[j * inner_step];
    dst += inner;
    // Advance the odometer over the outer dimensions, keeping `offset` in step.
    for (size_t k = rank - 1; k-- > 0;) {
      offset += step[k];
      if (++idx[k] < oshape[k]) break;
      offset -= step[k] * oshape[k];
      idx[k] = 0;
    }
  }
}

// out[i_0, ..., i_n] = in[base + sum_k i_k * step[k]] (offsets in elements), for any dtype.
NDArray gather(const NDArray &in, Shape oshape, int64_t base, const std::vector<int64_t> &step) {
  NDArray out(in.dtype(), std::move(oshape));
  if (out.size() == 0) return out;
  switch (dtype_bytes(in.dtype())) {
    case 1:
      gather_typed(in.data<uint8_t>(), out.data<uint8_t>(), out.shape(), base, step);
      break;
    case 2:
      gather_typed(in.data<uint16_t>(), out.data<uint16_t>(), out.shape(), base, step);
      break;
    case 4:
      gather_typed(in.data<uint32_t>(), out.data<uint32_t>(), out.shape(), base, step);
      break;
    default:
      gather_typed(in.data<uint64_t>(), out.data<uint64_t>(), out.shape(), base, step);
      break;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// concatenate
// ---------------------------------------------------------------------------------------------

// Non-axis dimensions must agree where known (a `?` takes the known size, checked at run time);
// the axis dimension is the sum, `?` if any part is `?`.
Shape concat_shape(const std::vector<Shape> &shapes, int64_t *axis_inout) {
  if (shapes.empty()) throw OpError("expected a non-empty tuple of tensors");
  const size_t rank = shapes[0].size();
  if (rank == 0) throw OpError("cannot concatenate rank-0 tensors");
  const int64_t axis = normalize_axis(*axis_inout, static_cast<int64_t>(rank));
  *axis_inout = axis;
  Shape out = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    if (s.size() != rank)
      throw OpError(fmt::format("all tensors must have the same rank, but field 0 is {} and field {} is {}",
                                shape_to_string(shapes[0]), i, shape_to_string(s)));
    for (size_t d = 0; d < rank; ++d) {
      if (static_cast<int64_t>(d) == axis) {
        out[d] = known(out[d]) && known(s[d]) ? out[d] + s[d] : kAnyDim;
      } else if (!known(out[d])) {
        out[d] = s[d];
      } else if (known(s[d]) && s[d] != out[d]) {
        throw OpError(
            fmt::format("the tensors must agree on every dimension but axis {}: field {} is {} but an "
                        "earlier field has {} in dimension {}",
                        axis, i, shape_to_string(s), out[d], d));
      }
    }
  }
  return out;
}

Type concatenate_rel(const std::vector<Type> &args, const Attrs &attrs) {
  if (args.empty() || !args[0].defined() || args[0].as<IncompleteType>()) return {};
  const auto *tuple = args[0].as<TupleType>();
  if (!tuple) throw OpError(fmt::format("expected a tuple of tensors, found {}", to_string(args[0])));
  std::vector<Shape> shapes;
  DType dtype = DType::Float32;
  for (size_t i = 0; i < tuple->fields.size(); ++i) {
    const TensorType *t = tensor_arg(tuple->fields, i, "tuple field");
    if (!t) return {};
    if (i == 0) dtype = t->dtype;
    if (t->dtype != dtype)
      throw OpError(fmt::format("all tensors must have the same dtype, but field 0 is {} and field {} is {}",
                                to_string(dtype), i, to_string(t->dtype)));
    shapes.push_back(t->shape);
  }
  int64_t axis = concatenate_attrs(attrs).axis;
  return TensorType::make(concat_shape(shapes, &axis), dtype);
}

std::vector<NDArray> concatenate_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  std::vector<Shape> shapes;
  for (const NDArray &a : args) {
    if (a.dtype() != args[0].dtype()) throw OpError("all tensors must have the same dtype");
    shapes.push_back(a.shape());
  }
  int64_t axis = concatenate_attrs(attrs).axis;
  Shape oshape = concat_shape(shapes, &axis);
  NDArray out(args.empty() ? DType::Float32 : args[0].dtype(), oshape);
  const size_t esize = dtype_bytes(out.dtype());
  const int64_t outer = prod(oshape, 0, axis);
  const int64_t inner = prod(oshape, axis + 1, oshape.size());
  std::byte *dst = out.raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const NDArray &a : args) {
      const size_t chunk = static_cast<size_t>(a.shape()[axis] * inner) * esize;
      if (chunk) std::memcpy(dst, a.raw() + o * chunk, chunk);
      dst += chunk;
    }
  }
  return one(out);
}

// ---------------------------------------------------------------------------------------------
// split
// ---------------------------------------------------------------------------------------------

// The sizes of the pieces along the axis (kAnyDim where the axis is `?`).
std::vector<int64_t> split_sizes(int64_t dim, const SplitAttrs &a) {
  std::vector<int64_t> sizes;
  if (a.sections) {
    const int64_t sections = *a.sections;
    if (known(dim) && dim % sections != 0)
      throw OpError(fmt::format("cannot split a dimension of size {} into {} equal sections", dim, sections));
    sizes.assign(sections, known(dim) ? dim / sections : kAnyDim);
    return sizes;
  }
  const std::vector<int64_t> &indices = a.indices;
  int64_t begin = 0;
  for (int64_t index : indices) {  // strictly ascending and positive (split_attrs)
    sizes.push_back(index - begin);
    begin = index;
  }
  if (known(dim) && begin >= dim)
    throw OpError(fmt::format("the split indices {} must be less than the dimension's size {}",
                              ints_to_string(indices), dim));
  sizes.push_back(known(dim) ? dim - begin : kAnyDim);
  return sizes;
}

Type split_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  if (data->shape.empty()) throw OpError("cannot split a rank-0 tensor");
  const SplitAttrs a = split_attrs(attrs);
  const int64_t axis = normalize_axis(a.axis, static_cast<int64_t>(data->shape.size()));
  std::vector<Type> fields;
  for (int64_t size : split_sizes(data->shape[axis], a)) {
    Shape s = data->shape;
    s[axis] = size;
    fields.push_back(TensorType::make(s, data->dtype));
  }
  return TupleType::make(std::move(fields));
}

std::vector<NDArray> split_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &in = args[0];
  if (in.ndim() == 0) throw OpError("cannot split a rank-0 tensor");
  const SplitAttrs a = split_attrs(attrs);
  const int64_t axis = normalize_axis(a.axis, in.ndim());
  const Shape &shape = in.shape();
  const size_t esize = dtype_bytes(in.dtype());
  const int64_t outer = prod(shape, 0, axis);
  const int64_t inner = prod(shape, axis + 1, shape.size());
  const size_t row = static_cast<size_t>(shape[axis] * inner) * esize;
  std::vector<NDArray> outs;
  int64_t begin = 0;
  for (int64_t size : split_sizes(shape[axis], a)) {
    Shape s = shape;
    s[axis] = size;
    NDArray out(in.dtype(), s);
    const size_t chunk = static_cast<size_t>(size * inner) * esize;
    for (int64_t o = 0; o < outer && chunk; ++o)
      std::memcpy(out.raw() + o * chunk, in.raw() + o * row + begin * inner * esize, chunk);
    begin += size;
    outs.push_back(out);
  }
  return outs;
}

// ---------------------------------------------------------------------------------------------
// strided_slice
// ---------------------------------------------------------------------------------------------

// TVM's CanonicalizeIndex: a negative index counts from the end; then clamp to the valid range
// (which reaches -1 for a negative stride, meaning "before the first element").
int64_t canonical_index(int64_t index, int64_t extent, int64_t stride) {
  const int64_t lo = stride < 0 ? -1 : 0, hi = stride < 0 ? extent - 1 : extent;
  if (index < 0) index += extent;
  return std::min(std::max(index, lo), hi);
}

// 1. Read begin/end/strides (and axes); without axes, pad the lists to the rank as TVM does.
// 2. In "size" mode strides are 1 and end = begin + size (a negative size: to the end).
// 3. Canonicalize begin and end per axis against the known extent; size = ceil(|end-begin|/|stride|).
std::vector<SliceAxis> slice_axes(const Shape &shape, const StridedSliceAttrs &attrs) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> begin = attrs.begin, end = attrs.end, strides = attrs.strides;
  const std::string mode = attrs.size_mode ? "size" : "end";
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> axes;
  if (attrs.axes) {
    axes = *attrs.axes;
    if (strides.empty()) strides.assign(axes.size(), 1);
    if (begin.size() != axes.size() || end.size() != axes.size() || strides.size() != axes.size())
      throw OpError(
          fmt::format("axes, begin, end and strides must have the same length, found {}, {}, {} and {}",
                      axes.size(), begin.size(), end.size(), strides.size()));
    for (int64_t &a : axes) a = normalize_axis(a, rank, "axes entry");
  } else {
    if (begin.size() > shape.size() || end.size() > shape.size() || strides.size() > shape.size())
      throw OpError(
          fmt::format("begin, end and strides may not be longer than the data's rank {}, found {}, {} and {}",
                      rank, begin.size(), end.size(), strides.size()));
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    strides.resize(rank, 1);
    for (size_t i = begin.size(); i < shape.size(); ++i) begin.push_back(strides[i] > 0 ? 0 : kMax);
    // In "size" mode a missing size means "to the end" (-1), which also avoids begin + kMax.
    for (size_t i = end.size(); i < shape.size(); ++i)
      end.push_back(mode == "size" ? -1 : strides[i] < 0 ? 0 : kMax);
  }
  std::vector<SliceAxis> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t stride = mode == "size" ? 1 : strides[i];
    if (stride == 0) throw OpError(fmt::format("strides may not be 0, found {}", ints_to_string(strides)));
    int64_t e = end[i];
    if (mode == "size") e = e < 0 || begin[i] > kMax - e ? kMax : begin[i] + e;
    const int64_t dim = shape[axes[i]];
    if (!known(dim)) {
      out.push_back({axes[i], begin[i], stride, kAnyDim});
      continue;
    }
    const int64_t b = canonical_index(begin[i], dim, stride);
    const int64_t c = canonical_index(e, dim, stride);
    if (stride > 0 ? b > c : c > b)
      throw OpError(fmt::format("begin {} and end {} select nothing with stride {} on axis {} of size {}",
                                begin[i], end[i], stride, axes[i], dim));
    const int64_t step = stride < 0 ? -stride : stride;
    out.push_back({axes[i], b, stride, ((b > c ? b - c : c - b) + step - 1) / step});
  }
  return out;
}

Type strided_slice_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  Shape shape = data->shape;
  for (const SliceAxis &a : slice_axes(data->shape, strided_slice_attrs(attrs))) shape[a.axis] = a.size;
  return TensorType::make(shape, data->dtype);
}

std::vector<NDArray> strided_slice_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &in = args[0];
  std::vector<int64_t> step = strides_of(in.shape());
  Shape shape = in.shape();
  int64_t base = 0;
  for (const SliceAxis &a : slice_axes(in.shape(), strided_slice_attrs(attrs))) {
    shape[a.axis] = a.size;
    if (a.size > 0) base += a.begin * step[a.axis];
    step[a.axis] *= a.stride;
  }
  return one(gather(in, shape, base, step));
}

// ---------------------------------------------------------------------------------------------
// take
// ---------------------------------------------------------------------------------------------

// Output shape: indices' shape (axis None), else data[:axis] + indices + data[axis+1:].
Shape take_shape(const Shape &data, const Shape &indices, const TakeAttrs &attrs, int64_t *axis_out) {
  if (!attrs.axis) {
    *axis_out = -1;
    return indices;
  }
  const int64_t axis = normalize_axis(*attrs.axis, static_cast<int64_t>(data.size()));
  *axis_out = axis;
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

Type take_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  const TensorType *indices = tensor_arg(args, 1, "indices");
  if (!data || !indices) return {};
  if (!is_int(indices->dtype))
    throw OpError(fmt::format("the indices must be integers, found {}", to_string(indices->dtype)));
  int64_t axis;
  return TensorType::make(take_shape(data->shape, indices->shape, take_attrs(attrs), &axis), data->dtype);
}

std::vector<NDArray> take_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &data = args[0], &indices = args[1];
  if (!is_int(indices.dtype()))
    throw OpError(fmt::format("the indices must be integers, found {}", to_string(indices.dtype())));
  int64_t axis;
  const TakeAttrs a = take_attrs(attrs);
  NDArray out(data.dtype(), take_shape(data.shape(), indices.shape(), a, &axis));
  const std::string &mode = a.mode;
  const size_t esize = dtype_bytes(data.dtype());
  // Without an axis, take reads the flattened data: one "row" of one element.
  const int64_t n = axis < 0 ? data.size() : data.shape()[axis];
  const int64_t outer = axis < 0 ? 1 : prod(data.shape(), 0, axis);
  const int64_t inner = axis < 0 ? 1 : prod(data.shape(), axis + 1, data.shape().size());
  const int64_t count = indices.size();
  if (out.size() == 0) return one(out);
  if (n == 0)
    throw OpError(
        fmt::format("cannot take from an empty dimension of data {}", shape_to_string(data.shape())));
  std::vector<int64_t> idx(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t k = indices.element_as_int(i);
    if (mode == "clip") {
      k = std::min(std::max<int64_t>(k, 0), n - 1);
    } else if (mode == "wrap") {
      k = ((k % n) + n) % n;
    } else if (k < 0 || k >= n) {
      // TVM leaves an out-of-range index in "fast" mode undefined; grove reports it.
      throw OpError(fmt::format("index {} is out of range for a dimension of size {} (mode \"fast\")", k, n));
    }
    idx[i] = k;
  }
  const size_t chunk = static_cast<size_t>(inner) * esize;
  std::byte *dst = out.raw();
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte *src = data.raw() + static_cast<size_t>(o * n) * chunk;
    for (int64_t i = 0; i < count; ++i, dst += chunk) std::memcpy(dst, src + idx[i] * chunk, chunk);
  }
  return one(out);
}

// ---------------------------------------------------------------------------------------------
// reshape
// ---------------------------------------------------------------------------------------------

// TVM's InferNewShape: newshape entries > 0 are sizes; 0 copies the input dimension (unless
// allowzero); -1 is inferred from the rest; -2 copies all remaining input dimensions; -3 merges
// two input dimensions; -4 splits one input dimension into the next two entries (one may be -1).
// Then, with every dimension known, the element counts must agree.
Shape reshape_shape(const Shape &in, const ReshapeAttrs &attrs) {
  const std::vector<int64_t> &newshape = attrs.newshape;
  const bool allowzero = attrs.allowzero;
  auto bad = [&](const std::string &why) {
    return OpError(fmt::format("cannot reshape {} with newshape={}: {}", shape_to_string(in),
                               ints_to_string(newshape), why));
  };
  Shape out;
  std::vector<bool> used_in(in.size(), false), used_out;
  size_t src = 0;
  int64_t infer_at = -1;
  auto push = [&](int64_t d, bool used) {
    out.push_back(d);
    used_out.push_back(used);
  };
  for (size_t i = 0; i < newshape.size(); ++i) {
    const int64_t v = newshape[i];
    if (v > 0 || (v == 0 && allowzero)) {
      push(v, false);
      ++src;
    } else if (v == 0) {
      if (src >= in.size()) throw bad("a 0 entry has no input dimension to copy");
      used_in[src] = true;
      push(in[src++], true);
    } else if (v == -1) {
      if (infer_at >= 0) throw bad("at most one entry may be -1");
      infer_at = static_cast<int64_t>(out.size());
      push(1, false);
      ++src;
    } else if (v == -2) {
      while (src < in.size()) {
        used_in[src] = true;
        push(in[src++], true);
      }
    } else if (v == -3) {
      if (src + 1 >= in.size()) throw bad("a -3 entry needs two input dimensions to merge");
      const int64_t d1 = in[src], d2 = in[src + 1];
      used_in[src] = used_in[src + 1] = true;
      src += 2;
      push(known(d1) && known(d2) ? d1 * d2 : kAnyDim, true);
    } else if (v == -4) {
      if (i + 2 >= newshape.size()) throw bad("a -4 entry must be followed by two sizes");
      if (src >= in.size()) throw bad("a -4 entry has no input dimension to split");
      const int64_t d0 = in[src];
      used_in[src++] = true;
      const int64_t d1 = newshape[++i], d2 = newshape[++i];
      if (d1 == -1 && d2 == -1) throw bad("the two sizes after -4 cannot both be -1");
      if ((d1 <= 0 && d1 != -1) || (d2 <= 0 && d2 != -1))
        throw bad("the sizes after -4 must be positive or -1");
      const int64_t other = d1 == -1 ? d2 : d1;
      if (known(d0) && d0 % other != 0)
        throw bad(fmt::format("{} does not divide the input dimension {}", other, d0));
      const int64_t rest = known(d0) ? d0 / other : kAnyDim;
      push(d1 == -1 ? rest : d1, true);
      push(d2 == -1 ? rest : d2, true);
    } else {
      throw bad(fmt::format("{} is not a size or one of the special values 0, -1, -2, -3, -4", v));
    }
  }
  if (infer_at >= 0) {
    int64_t have = 1, take = 1;
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i)
      if (!used_in[i]) {
        if (!known(in[i]))
          any = true;
        else
          have *= in[i];
      }
    for (size_t i = 0; i < out.size(); ++i)
      if (!used_out[i] && static_cast<int64_t>(i) != infer_at) {
        if (!known(out[i]))
          any = true;
        else
          take *= out[i];
      }
    if (any) {
      out[infer_at] = kAnyDim;
    } else {
      if (take == 0 || have % take != 0)
        throw bad(
            fmt::format("the -1 entry cannot be inferred: {} elements do not divide by {}", have, take));
      out[infer_at] = have / take;
    }
  }
  if (std::all_of(in.begin(), in.end(), known) && std::all_of(out.begin(), out.end(), known) &&
      numel(in) != numel(out))
    throw bad(fmt::format("the result {} has {} elements but the data has {}", shape_to_string(out),
                          numel(out), numel(in)));
  return out;
}

Type reshape_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(reshape_shape(data->shape, reshape_attrs(attrs)), data->dtype);
}

std::vector<NDArray> reshape_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  return one(with_shape(args[0], reshape_shape(args[0].shape(), reshape_attrs(attrs))));
}

// ---------------------------------------------------------------------------------------------
// transpose
// ---------------------------------------------------------------------------------------------

std::vector<int64_t> transpose_axes(int64_t rank, const TransposeAttrs &attrs) {
  std::vector<int64_t> axes;
  if (!attrs.axes) {
    for (int64_t i = rank - 1; i >= 0; --i) axes.push_back(i);
    return axes;
  }
  axes = *attrs.axes;
  if (static_cast<int64_t>(axes.size()) != rank)
    throw OpError(fmt::format("axes {} has {} entries but the data has rank {}", ints_to_string(axes),
                              axes.size(), rank));
  std::vector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    a = normalize_axis(a, rank, "axes entry");
    if (seen[a]) throw OpError(fmt::format("axes {} names axis {} twice", ints_to_string(*attrs.axes), a));
    seen[a] = true;
  }
  return axes;
}

Type transpose_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  Shape shape;
  for (int64_t a : transpose_axes(static_cast<int64_t>(data->shape.size()), transpose_attrs(attrs)))
    shape.push_back(data->shape[a]);
  return TensorType::make(shape, data->dtype);
}

std::vector<NDArray> transpose_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &in = args[0];
  const std::vector<int64_t> st = strides_of(in.shape());
  Shape shape;
  std::vector<int64_t> step;
  for (int64_t a : transpose_axes(in.ndim(), transpose_attrs(attrs))) {
    shape.push_back(in.shape()[a]);
    step.push_back(st[a]);
  }
  return one(gather(in, shape, 0, step));
}

// ---------------------------------------------------------------------------------------------
// squeeze, expand_dims
// ---------------------------------------------------------------------------------------------

Shape squeeze_shape(const Shape &in, const SqueezeAttrs &attrs) {
  Shape out;
  if (!attrs.axis) {
    // As TVM: squeezing "every 1" needs every dimension known.
    for (int64_t d : in) {
      if (!known(d))
        throw OpError(
            fmt::format("squeeze with axis=None needs every dimension known, found {}", shape_to_string(in)));
      if (d != 1) out.push_back(d);
    }
    return out;
  }
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : *attrs.axis) {
    const int64_t k = normalize_axis(a, static_cast<int64_t>(in.size()));
    if (known(in[k]) && in[k] != 1)
      throw OpError(
          fmt::format("cannot squeeze axis {} of {}: its size is {}, not 1", a, shape_to_string(in), in[k]));
    drop[k] = true;
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return out;
}

Type squeeze_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(squeeze_shape(data->shape, squeeze_attrs(attrs)), data->dtype);
}

std::vector<NDArray> squeeze_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  return one(with_shape(args[0], squeeze_shape(args[0].shape(), squeeze_attrs(attrs))));
}

Shape expand_dims_shape(const Shape &in, const Attrs &attrs) {
  const ExpandDimsAttrs a = expand_dims_attrs(attrs);
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t pivot = normalize_axis(a.axis, rank, "axis", 1);
  const int64_t count = a.num_newaxis;
  Shape out(in.begin(), in.begin() + pivot);
  out.insert(out.end(), count, 1);
  out.insert(out.end(), in.begin() + pivot, in.end());
  return out;
}

Type expand_dims_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(expand_dims_shape(data->shape, attrs), data->dtype);
}

std::vector<NDArray> expand_dims_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  return one(with_shape(args[0], expand_dims_shape(args[0].shape(), attrs)));
}

// ---------------------------------------------------------------------------------------------
// zeros, ones, full
// ---------------------------------------------------------------------------------------------

// The dtype `a` names, else `fallback` (the op's default).
DType init_dtype(const InitAttrs &a, const std::string &fallback) {
  const std::string &name = a.dtype.empty() ? fallback : a.dtype;
  std::optional<DType> d = parse_dtype(name);
  if (!d) throw OpError(fmt::format("dtype \"{}\" is not a dtype grove knows", name));
  return *d;
}

// An array of `shape` with every element `value` converted to dtype.
NDArray filled(DType dtype, const Shape &shape, double value) {
  NDArray out(dtype, shape);
  const NDArray one_element = NDArray::scalar(dtype, value);
  const size_t esize = dtype_bytes(dtype);
  for (int64_t i = 0; i < out.size(); ++i) std::memcpy(out.raw() + i * esize, one_element.raw(), esize);
  return out;
}

Type init_rel(const std::vector<Type> &, const Attrs &attrs) {
  const InitAttrs a = init_attrs(attrs);
  return TensorType::make(a.shape, init_dtype(a, "float32"));
}

std::vector<NDArray> zeros_kernel(const std::vector<NDArray> &, const Attrs &attrs) {
  const InitAttrs a = init_attrs(attrs);
  return one(filled(init_dtype(a, "float32"), a.shape, 0.0));
}

std::vector<NDArray> ones_kernel(const std::vector<NDArray> &, const Attrs &attrs) {
  const InitAttrs a = init_attrs(attrs);
  return one(filled(init_dtype(a, "float32"), a.shape, 1.0));
}

Type full_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *fill = tensor_arg(args, 0, "fill value");
  if (!fill) return {};
  if (!fill->shape.empty())
    throw OpError(
        fmt::format("the fill value must be a scalar, found shape {}", shape_to_string(fill->shape)));
  const InitAttrs a = init_attrs(attrs);
  return TensorType::make(a.shape, init_dtype(a, to_string(fill->dtype)));
}

std::vector<NDArray> full_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &fill = args[0];
  if (fill.ndim() != 0)
    throw OpError(
        fmt::format("the fill value must be a scalar, found shape {}", shape_to_string(fill.shape())));
  const InitAttrs a = init_attrs(attrs);
  const DType dtype = init_dtype(a, to_string(fill.dtype()));
  // Integers go through int64 so that large values survive exactly.
  if (is_int(dtype) && is_int(fill.dtype())) {
    NDArray out(dtype, a.shape);
    const size_t esize = dtype_bytes(dtype);
    const int64_t v = fill.element_as_int(0);
    for (int64_t i = 0; i < out.size(); ++i) std::memcpy(out.raw() + i * esize, &v, esize);  // little-endian
    return one(out);
  }
  return one(filled(dtype, a.shape, fill.element_as_double(0)));
}

// ---------------------------------------------------------------------------------------------
// layout_transform, nn.batch_flatten, zeros_like, ones_like
// ---------------------------------------------------------------------------------------------

// A layout names each dimension with an upper-case letter, once each ("NCHW", "OIHW", "NWC").
// TVM's packed layouts ("NCHW4c": a lower-case sub-dimension with its factor) split a dimension;
// grove supports permutations only, so a digit or a lower-case letter is an error naming the layout.
std::string checked_layout(const Attrs &attrs, const std::string &name) {
  require_attr(attrs, name);
  const std::string layout = attr_string(attrs, name, "");
  if (layout.empty()) throw OpError(fmt::format("{} is empty", name));
  for (size_t i = 0; i < layout.size(); ++i) {
    const char c = layout[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      throw OpError(
          fmt::format("{} \"{}\" is a packed layout; grove supports layouts that permute the "
                      "dimensions only (e.g. NCHW, NHWC)",
                      name, layout));
    if (c < 'A' || c > 'Z')
      throw OpError(
          fmt::format("{} \"{}\" is not a layout: '{}' is not a dimension letter", name, layout, c));
    if (layout.find(c) != i)
      throw OpError(fmt::format("{} \"{}\" names dimension {} twice", name, layout, c));
  }
  return layout;
}

Attrs axes_as_attrs(const std::vector<int64_t> &axes) {
  std::vector<AttrValue> list;
  for (int64_t a : axes) list.push_back(AttrValue::of_int(a));
  return Attrs().with("axes", AttrValue::of_list(std::move(list)));
}

Type layout_transform_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  Shape shape;
  for (int64_t a : layout_axes(data->shape.size(), attrs)) shape.push_back(data->shape[a]);
  return TensorType::make(shape, data->dtype);
}

std::vector<NDArray> layout_transform_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  return transpose_kernel(args, axes_as_attrs(layout_axes(args[0].shape().size(), attrs)));
}

// TVM's BatchFlattenRel: [N, a, b, ...] to [N, a * b * ...] ([N] to [N, 1]); a `?` among a, b, ...
// makes the second dimension `?`.
Shape batch_flatten_shape(const Shape &in) {
  if (in.empty()) throw OpError("expected the data to have rank 1 or more, found a scalar");
  int64_t rest = 1;
  for (size_t d = 1; d < in.size(); ++d) rest = known(in[d]) && known(rest) ? rest * in[d] : kAnyDim;
  return {in[0], rest};
}

Type batch_flatten_rel(const std::vector<Type> &args, const Attrs &) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(batch_flatten_shape(data->shape), data->dtype);
}

std::vector<NDArray> batch_flatten_kernel(const std::vector<NDArray> &args, const Attrs &) {
  return one(with_shape(args[0], batch_flatten_shape(args[0].shape())));
}

// zeros_like and ones_like: the data's type (TVM's IdentityRel), every dtype.
Type like_rel(const std::vector<Type> &args, const Attrs &) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(data->shape, data->dtype);
}

template <int kValue>
std::vector<NDArray> like_kernel(const std::vector<NDArray> &args, const Attrs &) {
  return one(filled(args[0].dtype(), args[0].shape(), kValue));
}

// ---------------------------------------------------------------------------------------------
// tile
// ---------------------------------------------------------------------------------------------

// TVM's TileRel: the shorter of data's shape and reps is padded with leading 1s; each result
// dimension is the data's times its repetition count (`?` stays `?`, unless the count is 0).
Shape tile_shape(const Shape &in, const Attrs &attrs, Shape *padded_in) {
  require_attr(attrs, "reps");
  std::vector<int64_t> reps = attr_ints(attrs, "reps", {});
  for (int64_t r : reps)
    if (r < 0) throw OpError(fmt::format("reps {} has a negative entry", ints_to_string(reps)));
  const size_t rank = std::max(in.size(), reps.size());
  Shape data(rank - in.size(), 1);
  data.insert(data.end(), in.begin(), in.end());
  reps.insert(reps.begin(), rank - reps.size(), 1);
  Shape out;
  for (size_t d = 0; d < rank; ++d)
    out.push_back(reps[d] == 0 ? 0 : known(data[d]) ? data[d] * reps[d] : kAnyDim);
  if (padded_in) *padded_in = data;
  return out;
}

Type tile_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *data = tensor_arg(args, 0, "data");
  if (!data) return {};
  return TensorType::make(tile_shape(data->shape, attrs, nullptr), data->dtype);
}

// out[i_0, ..., i_n] = in[i_0 % d_0, ..., i_n % d_n] over the padded input shape, byte by byte.
std::vector<NDArray> tile_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &in = args[0];
  Shape padded;
  NDArray out(in.dtype(), tile_shape(in.shape(), attrs, &padded));
  const size_t esize = dtype_bytes(in.dtype());
  const std::vector<int64_t> st = strides_of(padded);
  const Shape &oshape = out.shape();
  std::vector<int64_t> idx(oshape.size(), 0);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < oshape.size(); ++d) src += (idx[d] % padded[d]) * st[d];
    std::memcpy(out.raw() + i * esize, in.raw() + src * esize, esize);
    for (size_t d = oshape.size(); d-- > 0;) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
  return one(out);
}

// ---------------------------------------------------------------------------------------------
// one_hot
// ---------------------------------------------------------------------------------------------

// TVM's OneHotRel: integer indices, scalar on/off values; the result is the indices' shape with a
// dimension of size `depth` inserted at `axis` (-1: last; 0 ... rank), of dtype `dtype` (the
// on value's when absent).
struct OneHot {
  int64_t depth, axis;
  DType dtype;
};

OneHot one_hot_plan(const Attrs &attrs, int64_t rank, DType on_dtype) {
  const OneHotAttrs a = one_hot_attrs(attrs);
  OneHot h;
  h.depth = a.depth;
  if (a.axis < -1 || a.axis > rank)
    throw OpError(fmt::format("axis {} is out of range for indices of rank {} (expected -1 <= axis <= {})",
                              a.axis, rank, rank));
  h.axis = a.axis == -1 ? rank : a.axis;
  h.dtype = a.dtype.value_or(on_dtype);
  return h;
}

void check_one_hot_args(const Shape &indices, DType indices_dtype, const Shape &on, const Shape &off) {
  if (!is_int(indices_dtype))
    throw OpError(fmt::format("the indices must be integers, found {}", to_string(indices_dtype)));
  if (!on.empty() || !off.empty())
    throw OpError(fmt::format("on_value and off_value must be scalars, found shapes {} and {}",
                              shape_to_string(on), shape_to_string(off)));
}

Type one_hot_rel(const std::vector<Type> &args, const Attrs &attrs) {
  const TensorType *indices = tensor_arg(args, 0, "indices");
  const TensorType *on = tensor_arg(args, 1, "on_value");
  const TensorType *off = tensor_arg(args, 2, "off_value");
  if (!indices || !on || !off) return {};
  check_one_hot_args(indices->shape, indices->dtype, on->shape, off->shape);
  const OneHot h = one_hot_plan(attrs, static_cast<int64_t>(indices->shape.size()), on->dtype);
  Shape shape = indices->shape;
  shape.insert(shape.begin() + h.axis, h.depth);
  return TensorType::make(shape, h.dtype);
}

// A scalar converted to `dtype`: integers to integers exactly (through int64), anything else
// through double.
NDArray scalar_as(DType dtype, const NDArray &v) {
  if (is_int(dtype) && is_int(v.dtype())) {
    NDArray out(dtype, {});
    const int64_t x = v.element_as_int(0);
    std::memcpy(out.raw(), &x, dtype_bytes(dtype));  // little-endian: the low bytes
    return out;
  }
  return NDArray::scalar(dtype, v.element_as_double(0));
}

// Viewing the result as (outer, depth, inner) around the axis: element (o, j, k) is on_value where
// indices[o, k] == j, else off_value (an index outside [0, depth) matches nothing).
std::vector<NDArray> one_hot_kernel(const std::vector<NDArray> &args, const Attrs &attrs) {
  const NDArray &indices = args[0], &on = args[1], &off = args[2];
  check_one_hot_args(indices.shape(), indices.dtype(), on.shape(), off.shape());
  const OneHot h = one_hot_plan(attrs, indices.ndim(), on.dtype());
  Shape shape = indices.shape();
  shape.insert(shape.begin() + h.axis, h.depth);
  NDArray out(h.dtype, shape);
  const NDArray on_v = scalar_as(h.dtype, on), off_v = scalar_as(h.dtype, off);
  const size_t esize = dtype_bytes(h.dtype);
  const int64_t outer = prod(indices.shape(), 0, h.axis),
                inner = prod(indices.shape(), h.axis, indices.ndim());
  std::byte *dst = out.raw();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < h.depth; ++j)
      for (int64_t k = 0; k < inner; ++k, dst += esize)
        std::memcpy(dst, (indices.element_as_int(o * inner + k) == j ? on_v : off_v).raw(), esize);
  return one(out);
}

}  // namespace

std::vector<SliceAxis> strided_slice_axes(const Shape &shape, const StridedSliceAttrs &attrs) {
  return slice_axes(shape, attrs);
}

std::vector<int64_t> transpose_permutation(int64_t rank, const TransposeAttrs &attrs) {
  return transpose_axes(rank, attrs);
}

std::vector<int64_t> layout_axes(size_t rank, const Attrs &attrs) {
  const std::string src = checked_layout(attrs, "src_layout"), dst = checked_layout(attrs, "dst_layout");
  if (src.size() != rank)
    throw OpError(
        fmt::format("src_layout \"{}\" has {} dimensions but the data has rank {}", src, src.size(), rank));
  if (dst.size() != src.size())
    throw OpError(fmt::format("src_layout \"{}\" and dst_layout \"{}\" have different ranks", src, dst));
  std::vector<int64_t> axes;
  for (char c : dst) {
    const size_t k = src.find(c);
    if (k == std::string::npos)
      throw OpError(
          fmt::format("dst_layout \"{}\" has dimension {}, which src_layout \"{}\" lacks", dst, c, src));
    axes.push_back(static_cast<int64_t>(k));
  }
  return axes;
}

std::vector<OpDef> transform_ops() {
  using P = OpPattern;
  return {
      {"concatenate", 1, P::Injective, {"axis"}, concatenate_rel, concatenate_kernel},
      {"split", 1, P::Injective, {"indices_or_sections", "axis"}, split_rel, split_kernel},
      {"strided_slice",
       1,
       P::Injective,
       {"begin", "end", "strides", "axes", "slice_mode"},
       strided_slice_rel,
       strided_slice_kernel},
      {"take", 2, P::Injective, {"axis", "batch_dims", "mode"}, take_rel, take_kernel},
      {"reshape", 1, P::Injective, {"newshape", "allowzero"}, reshape_rel, reshape_kernel},
      {"transpose", 1, P::Injective, {"axes"}, transpose_rel, transpose_kernel},
      {"squeeze", 1, P::Injective, {"axis"}, squeeze_rel, squeeze_kernel},
      // TVM marks expand_dims Broadcast.
      {"expand_dims", 1, P::Broadcast, {"axis", "num_newaxis"}, expand_dims_rel, expand_dims_kernel},
      {"zeros", 0, P::ElemWise, {"shape", "dtype"}, init_rel, zeros_kernel},
      {"ones", 0, P::ElemWise, {"shape", "dtype"}, init_rel, ones_kernel},
      {"full", 1, P::ElemWise, {"shape", "dtype"}, full_rel, full_kernel},
      {"tile", 1, P::Injective, {"reps"}, tile_rel, tile_kernel},
      {"one_hot", 3, P::OutEWiseFusable, {"depth", "axis", "dtype"}, one_hot_rel, one_hot_kernel},
      {"layout_transform",
       1,
       P::Injective,
       {"src_layout", "dst_layout"},
       layout_transform_rel,
       layout_transform_kernel},
      {"nn.batch_flatten", 1, P::Injective, {}, batch_flatten_rel, batch_flatten_kernel},
      {"zeros_like", 1, P::ElemWise, {}, like_rel, like_kernel<0>},
      {"ones_like", 1, P::ElemWise, {}, like_rel, like_kernel<1>},
  };
}

}  // namespace grove::relay
