// float16 computed in float32 and stored as float16 (ops/Op.h): the kernels of the ops that
// compute, on float16 inputs, against NumPy references computed in float64 and rounded to float32,
// then to float16 (tests/relay/fixtures/ops_float16.json, made by make_op_fixtures.py); the
// rounding to nearest even on every bit pattern; mixed precision (float16 in, float32 out).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::array_of;
using testing::arrays_close;
using testing::attrs_of;
using testing::load_op_cases;
using testing::op;
using testing::OpCase;
using testing::s;
using testing::tensor;
using testing::type_of;

// The references round a float64 result to float32 and then to float16, as the kernels do, and
// float16 sums and products are exact in float64: every case must match bit for bit except those
// through libm (exp, tanh, ...: the float64 result may differ in its last bit, which can move a
// float16 result by one unit, 2^-10 relative) and the ones with a square root or division of a
// sum (layer_norm, softmax).
double tolerance(const std::string &op) {
  static const std::set<std::string> kLibm = {"exp", "tanh",       "sigmoid",      "erf",
                                              "log", "nn.softmax", "nn.layer_norm"};
  return kLibm.count(op) ? 1e-3 : 0.0;
}

std::vector<Type> arg_types(const OpCase &c) {
  std::vector<Type> types;
  for (const NDArray &a : c.inputs) types.push_back(type_of(a));
  return types;
}

TEST(Float16Ops, ComputedInFloat32AndRoundedOnce) {
  const std::vector<OpCase> cases = load_op_cases("ops_float16.json");
  ASSERT_GE(cases.size(), 40u);
  for (const OpCase &c : cases) {
    SCOPED_TRACE(c.name);
    const OpDef &def = op(c.op);
    const Type result = def.relation(arg_types(c), c.attrs);
    ASSERT_TRUE(result.as<TensorType>()) << to_string(result);
    EXPECT_EQ(to_string(result), to_string(type_of(c.outputs[0])));
    const std::vector<NDArray> got = def.kernel(c.inputs, c.attrs);
    ASSERT_EQ(got.size(), 1u);
    const double tol = tolerance(c.op);
    EXPECT_TRUE(arrays_close(got[0], c.outputs[0], tol, tol == 0 ? 0.0 : 1e-4));
    if (tol == 0) EXPECT_TRUE(got[0].bitwise_equal(c.outputs[0]));
  }
}

// Every float16 bit pattern widens exactly and narrows back to itself (NaNs stay NaNs, quiet).
TEST(Float16Ops, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = float16_to_float(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(float_to_float16(f), h | 0x200) << h;
    } else {
      EXPECT_EQ(float_to_float16(f), h) << h;
    }
  }
}

// Round to nearest even, at the ties and the ends of the range.
TEST(Float16Ops, RoundsToNearestEven) {
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // a tie: to the even 1
  EXPECT_EQ(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // a tie: up to even
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_float16(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_float16(65520.0f), 0x7c00);  // the tie above the largest: infinity
  EXPECT_EQ(float_to_float16(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -25)), 0x0000);      // a tie: to the even 0
  EXPECT_EQ(float_to_float16(3 * std::ldexp(1.0f, -25)), 0x0002);  // a tie: up to even 2
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
  EXPECT_EQ(float_to_float16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_float16(NAN) & 0x7e00, 0x7e00);
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float16_to_float(0xc000), -2.0f);
}

// float16 arithmetic rounds each op's result: (1 + 2^-11) + 2^-11 is 1 in float16, one op at a time.
TEST(Float16Ops, EachOpRoundsItsResult) {
  const NDArray one = array_of({1}, {1.0}, DType::Float16),
                tiny = array_of({1}, {std::ldexp(1.0, -11)}, DType::Float16);
  const NDArray once = op("add").kernel({one, tiny}, {})[0];
  EXPECT_EQ(once.dtype(), DType::Float16);
  EXPECT_EQ(once.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(op("add").kernel({once, tiny}, {})[0].data<uint16_t>()[0], 0x3c00);
  // Overflow is infinity, as a float16 store is.
  const NDArray big = array_of({1}, {60000.0}, DType::Float16);
  EXPECT_EQ(op("add").kernel({big, big}, {})[0].data<uint16_t>()[0], 0x7c00);
}

// Mixed precision, as TVM's ToMixedPrecision writes it: float16 operands, out_dtype="float32" — the
// float32 result, not rounded to float16; a cast to float32 is exact.
TEST(Float16Ops, MixedPrecisionKeepsFloat32Results) {
  const NDArray x = array_of({1, 2}, {1.0, std::ldexp(1.0, -11)}, DType::Float16);
  const NDArray w = array_of({1, 2}, {1.0, 1.0}, DType::Float16);
  const Attrs to32 = attrs_of({{"out_dtype", s("float32")}});
  EXPECT_EQ(to_string(op("nn.dense").relation({type_of(x), type_of(w)}, to32)), "Tensor[(1, 1), float32]");
  const NDArray y = op("nn.dense").kernel({x, w}, to32)[0];
  ASSERT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.data<float>()[0], 1.0f + std::ldexp(1.0f, -11));
  const NDArray y16 = op("nn.dense").kernel({x, w}, {})[0];
  ASSERT_EQ(y16.dtype(), DType::Float16);
  EXPECT_EQ(y16.data<uint16_t>()[0], 0x3c00);
  const NDArray c = op("cast").kernel({x}, attrs_of({{"dtype", s("float32")}}))[0];
  EXPECT_EQ(c.data<float>()[1], std::ldexp(1.0f, -11));
  EXPECT_EQ(to_string(op("exp").relation({tensor({2}, DType::Float16)}, {})), "Tensor[(2), float16]");
}

}  // namespace
}  // namespace grove::relay
