#include "frontend/relay/ops/Broadcast.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/Error.h"

namespace grove::relay {

// Broadcasting, as Relay's ConcreteBroadcast (type_relations.cc):
//   1. align the shapes from the right; the result has the larger rank;
//   2. per aligned pair, in this order: a 1 takes the other side; a `?` takes the other side
//      (optimistically: it must turn out 1 or equal, which the kernel checks); equal sizes pass;
//      anything else is an error;
//   3. the leading dimensions of the longer shape pass through.
// The order makes `?` against 1 give `?` (not 1) and `?` against `?` give `?`.
Shape broadcast_shapes(const Shape &a, const Shape &b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 1; i <= rank; ++i) {
    const size_t o = rank - i;
    if (i > a.size()) {
      out[o] = b[b.size() - i];
      continue;
    }
    if (i > b.size()) {
      out[o] = a[a.size() - i];
      continue;
    }
    const int64_t da = a[a.size() - i], db = b[b.size() - i];
    if (da == 1) {
      out[o] = db;
    } else if (db == 1) {
      out[o] = da;
    } else if (da == kAnyDim) {
      out[o] = db;
    } else if (db == kAnyDim) {
      out[o] = da;
    } else if (da == db) {
      out[o] = da;
    } else {
      throw OpError(fmt::format("cannot broadcast {} and {}: dimension {} is {} and {}", shape_to_string(a),
                                shape_to_string(b), o, da, db));
    }
  }
  return out;
}

BroadcastIndex::BroadcastIndex(const Shape &out, const std::vector<Shape> &inputs)
    : out_(out), counter_(out.size(), 0), offsets_(inputs.size(), 0) {
  for (int64_t d : out_) size_ *= d;
  // An input's stride along a result dimension is its row-major stride there, or 0 where the input
  // has no such dimension or has size 1 (every result index reads the same element).
  for (const Shape &in : inputs) {
    GROVE_CHECK(in.size() <= out.size(), "broadcast input {} has a higher rank than the result {}",
                shape_to_string(in), shape_to_string(out));
    std::vector<int64_t> strides(out.size(), 0);
    int64_t stride = 1;
    for (size_t i = 1; i <= in.size(); ++i) {
      const int64_t d = in[in.size() - i];
      const size_t o = out.size() - i;
      GROVE_CHECK(d == out[o] || d == 1, "input {} does not broadcast to {}", shape_to_string(in),
                  shape_to_string(out));
      strides[o] = d == 1 ? 0 : stride;
      stride *= d;
    }
    strides_.push_back(std::move(strides));
  }
}

// Odometer increment: bump the last dimension; on wrapping, rewind that dimension's contribution to
// every offset and carry into the one before.
void BroadcastIndex::next() {
  for (size_t d = out_.size(); d-- > 0;) {
    if (++counter_[d] < out_[d]) {
      for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
      return;
    }
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * (out_[d] - 1);
    counter_[d] = 0;
  }
}

const TensorType *tensor_arg(const std::vector<Type> &args, size_t index) {
  GROVE_CHECK(index < args.size(), "type relation reads argument {} of {}", index, args.size());
  const Type &t = args[index];
  if (const auto *tt = t.as<TensorType>()) return tt;
  if (!t.defined() || t.as<IncompleteType>()) return nullptr;
  throw OpError(fmt::format("argument {}: expected a tensor, found {}", index + 1, to_string(t)));
}

float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even on the bits: a normal result drops 13 mantissa bits, adding half an ulp
// minus one plus the kept lowest bit (so that ties go to even); a subnormal one is the magnitude
// in units of 2^-24, rounded by nearbyint (the default rounding mode is to nearest even).
uint16_t float_to_float16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00 | static_cast<uint16_t>((ax >> 13) & 0x3ff);  // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00;  // 65520 and above (and infinity): infinity
  if (ax < 0x38800000u) {                       // below 2^-14: subnormal or zero
    float a;
    std::memcpy(&a, &ax, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  const uint32_t v = ax - 0x38000000u;  // rebias 127 -> 15
  return sign | static_cast<uint16_t>((v + 0xfffu + ((v >> 13) & 1u)) >> 13);
}

NDArray widen_float16(const NDArray &a) {
  GROVE_CHECK(a.dtype() == DType::Float16, "widening a {} array", to_string(a.dtype()));
  NDArray out(DType::Float32, a.shape());
  const uint16_t *in = a.data<uint16_t>();
  float *o = out.data<float>();
  for (int64_t i = 0, n = a.size(); i < n; ++i) o[i] = float16_to_float(in[i]);
  return out;
}

NDArray narrow_to_float16(const NDArray &a) {
  GROVE_CHECK(a.dtype() == DType::Float32, "narrowing a {} array to float16", to_string(a.dtype()));
  NDArray out(DType::Float16, a.shape());
  const float *in = a.data<float>();
  uint16_t *o = out.data<uint16_t>();
  for (int64_t i = 0, n = a.size(); i < n; ++i) o[i] = float_to_float16(in[i]);
  return out;
}

void throw_unsupported_dtype(DType dtype) {
  throw OpError(
      fmt::format("unsupported dtype {}: the interpreter computes with float32, float64, int32, "
                  "int64 and bool",
                  to_string(dtype)));
}

}  // namespace grove::relay
