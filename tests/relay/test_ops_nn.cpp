// The nn ops (nn.dense, nn.batch_matmul, nn.bias_add, nn.conv2d, nn.max_pool2d, nn.avg_pool2d,
// nn.batch_norm): type relations and kernels against PyTorch (tests/relay/fixtures/ops_nn.json, made
// by make_op_fixtures.py), unknown dims `?`, the run-time checks a `?` postpones, and the error
// messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::arrays_close;
using testing::attrs_of;
using ::testing::HasSubstr;
using testing::i;
using testing::input_types;
using testing::ints;
using testing::less_precise;
using testing::load_op_cases;
using testing::op;
using testing::op_error;
using testing::OpCase;
using testing::result_shapes;
using testing::s;
using testing::shape_of;
using testing::tensor;
using testing::type_of;

constexpr int64_t Q = kAnyDim;

// Tolerances (relative, absolute). The fixtures are PyTorch's float64 results on the same inputs,
// rounded once: float32 kernels differ by their own rounding, 1e-5 relative (and 1e-5 absolute for
// results near 0 after cancellation; the inputs are in [-1, 1]). float64: 1e-12. Integers: exact.
std::pair<double, double> tolerance(DType dtype) {
  if (dtype == DType::Float32) return {1e-5, 1e-5};
  if (dtype == DType::Float64) return {1e-12, 1e-12};
  return {0.0, 0.0};
}

TEST(NNOps, RelationsAndKernelsMatchPyTorch) {
  const std::vector<OpCase> cases = load_op_cases("ops_nn.json");
  ASSERT_GE(cases.size(), 30u);
  for (const OpCase &c : cases) {
    SCOPED_TRACE(c.name);
    const OpDef &def = op(c.op);
    const Type result = def.relation(input_types(c), c.attrs);
    ASSERT_TRUE(result.defined());
    if (c.outputs.size() == 1) {
      EXPECT_EQ(to_string(result), to_string(type_of(c.outputs[0])));
    } else {
      std::vector<Type> fields;
      for (const NDArray &o : c.outputs) fields.push_back(type_of(o));
      EXPECT_EQ(to_string(result), to_string(TupleType::make(fields)));
    }
    const std::vector<NDArray> got = def.kernel(c.inputs, c.attrs);
    ASSERT_EQ(got.size(), c.outputs.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const auto [rtol, atol] = tolerance(c.outputs[k].dtype());
      EXPECT_TRUE(arrays_close(got[k], c.outputs[k], rtol, atol)) << "output " << k;
    }
  }
}

// Replacing any one input dimension by `?` gives a result that is `?` or the concrete size in every
// dimension.
TEST(NNOps, UnknownDimsGiveLessPreciseResults) {
  for (const OpCase &c : load_op_cases("ops_nn.json")) {
    const OpDef &def = op(c.op);
    const std::vector<Type> concrete = input_types(c);
    const std::vector<Shape> want = result_shapes(def.relation(concrete, c.attrs));
    for (size_t a = 0; a < concrete.size(); ++a)
      for (size_t d = 0; d < c.inputs[a].shape().size(); ++d) {
        SCOPED_TRACE(c.name + ", input " + std::to_string(a) + " dim " + std::to_string(d) + " = ?");
        std::vector<Type> types = concrete;
        Shape shape = c.inputs[a].shape();
        shape[d] = Q;
        types[a] = tensor(shape, c.inputs[a].dtype());
        const std::vector<Shape> got = result_shapes(def.relation(types, c.attrs));
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(less_precise(got[k], want[k]));
      }
  }
}

TEST(NNOps, UnknownDimsPropagateAsTvm) {
  EXPECT_EQ(shape_of(op("nn.dense").relation({tensor({Q, 16}), tensor({8, 16})}, {})), (Shape{Q, 8}));
  EXPECT_EQ(shape_of(op("nn.dense").relation({tensor({4, Q}), tensor({Q, 16})}, attrs_of({{"units", i(8)}}))),
            (Shape{4, 8}));
  const Attrs pad1 = attrs_of({{"padding", ints({1, 1})}});
  EXPECT_EQ(shape_of(op("nn.conv2d").relation({tensor({1, 3, Q, 8}), tensor({4, 3, 3, 3})}, {})),
            (Shape{1, 4, Q, 6}));
  EXPECT_EQ(shape_of(op("nn.conv2d").relation({tensor({Q, Q, 8, 8}), tensor({4, 3, 3, 3})}, pad1)),
            (Shape{Q, 4, 8, 8}));
  EXPECT_EQ(shape_of(op("nn.conv2d").relation({tensor({1, 3, 8, 8}), tensor({4, 3, Q, 3})}, {})),
            (Shape{1, 4, Q, 6}));
  // The batch of batch_matmul broadcasts as in Broadcast: `?` against 2 is 2, against 1 is `?`.
  EXPECT_EQ(shape_of(op("nn.batch_matmul").relation({tensor({Q, 3, 5}), tensor({2, 4, 5})}, {})),
            (Shape{2, 3, 4}));
  EXPECT_EQ(shape_of(op("nn.batch_matmul").relation({tensor({Q, 3, 5}), tensor({1, 4, 5})}, {})),
            (Shape{Q, 3, 4}));
  EXPECT_EQ(shape_of(op("nn.max_pool2d")
                         .relation({tensor({1, 2, Q, 7})},
                                   attrs_of({{"pool_size", ints({3, 3})}, {"strides", ints({2, 2})}}))),
            (Shape{1, 2, Q, 3}));
  EXPECT_EQ(
      to_string(op("nn.batch_norm")
                    .relation({tensor({2, Q}), tensor({Q}), tensor({3}), tensor({Q}), tensor({Q})}, {})),
      "(Tensor[(2, ?), float32], Tensor[(3), float32], Tensor[(3), float32])");
  EXPECT_EQ(shape_of(op("nn.bias_add").relation({tensor({2, Q, 4}), tensor({5})}, {})), (Shape{2, Q, 4}));
}

TEST(NNOps, IncompleteArgumentsGiveNoTypeYet) {
  const Type hole = IncompleteType::make();
  EXPECT_FALSE(op("nn.dense").relation({tensor({2, 3}), hole}, {}).defined());
  EXPECT_FALSE(op("nn.conv2d").relation({hole, tensor({4, 3, 3, 3})}, {}).defined());
  EXPECT_FALSE(op("nn.batch_norm")
                   .relation({tensor({2, 3}), tensor({3}), hole, tensor({3}), tensor({3})}, {})
                   .defined());
  EXPECT_FALSE(op("nn.max_pool2d").relation({hole}, attrs_of({{"pool_size", i(2)}})).defined());
}

TEST(NNOps, TablePatternsFollowTvm) {
  for (const char *name :
       {"nn.dense", "nn.batch_matmul", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.batch_norm"})
    EXPECT_EQ(op(name).pattern, OpPattern::OutEWiseFusable) << name;
  EXPECT_EQ(op("nn.bias_add").pattern, OpPattern::Broadcast);
  EXPECT_EQ(op("nn.batch_norm").num_args, 5);
}

TEST(NNOps, ErrorsSayWhatWasExpectedAndFound) {
  auto rel_error = [](const std::string &name, std::vector<Type> args, Attrs attrs) {
    return op_error([&] { op(name).relation(args, attrs); });
  };
  EXPECT_THAT(rel_error("nn.dense", {tensor({4, 16}), tensor({3, 8})}, {}),
              HasSubstr("the weight's last dimension is 8 but the data's is 16"));
  EXPECT_THAT(rel_error("nn.dense", {tensor({4, 16}), tensor({3, 16})}, attrs_of({{"units", i(5)}})),
              HasSubstr("units=5 but the weight (3, 16) has 3 rows"));
  EXPECT_THAT(rel_error("nn.dense", {tensor({4, 16}), tensor({3, 16}, DType::Float64)}, {}),
              HasSubstr("the weight's dtype is float64 but the data's is float32"));
  EXPECT_THAT(rel_error("nn.dense", {tensor({4, 16}), tensor({16})}, {}),
              HasSubstr("expected the weight to have rank 2, found shape (16,)"));
  EXPECT_THAT(
      rel_error("nn.batch_matmul", {tensor({2, 3, 5}), tensor({3, 4, 5})}, {}),
      HasSubstr("the batch dimensions 2 of x (2, 3, 5) and 3 of y (3, 4, 5) differ and neither is 1"));
  EXPECT_THAT(rel_error("nn.batch_matmul", {tensor({2, 3, 5}), tensor({2, 4, 6})}, {}),
              HasSubstr("the reduction dimensions differ: 5 in x (2, 3, 5) and 6 in y (2, 4, 6)"));
  EXPECT_THAT(rel_error("nn.bias_add", {tensor({2, 3}), tensor({2})}, {}),
              HasSubstr("the bias has 2 elements but axis 1 of the data (2, 3) has size 3"));

  const Type data = tensor({1, 4, 8, 8}), weight = tensor({6, 2, 3, 3});
  EXPECT_THAT(rel_error("nn.conv2d", {data, weight}, attrs_of({{"data_layout", s("NHWC")}})),
              HasSubstr("grove supports data_layout NCHW only, found \"NHWC\""));
  EXPECT_THAT(rel_error("nn.conv2d", {data, weight}, attrs_of({{"kernel_layout", s("HWIO")}})),
              HasSubstr("grove supports kernel_layout OIHW only"));
  EXPECT_THAT(
      rel_error("nn.conv2d", {data, weight}, {}),
      HasSubstr(
          "the data (1, 4, 8, 8) has 4 input channels but the weight (6, 2, 3, 3) expects 2 x groups 1 = 2"));
  EXPECT_THAT(rel_error("nn.conv2d", {data, weight}, attrs_of({{"groups", i(2)}, {"channels", i(8)}})),
              HasSubstr("channels=8 but the weight (6, 2, 3, 3) has 6 output channels"));
  EXPECT_THAT(
      rel_error("nn.conv2d", {data, weight}, attrs_of({{"groups", i(2)}, {"kernel_size", ints({5, 5})}})),
      HasSubstr("kernel_size=(5, 5) but the weight (6, 2, 3, 3) has a 3x3 kernel"));
  EXPECT_THAT(
      rel_error("nn.conv2d", {tensor({1, 4, 8, 8}), tensor({6, 1, 3, 3})}, attrs_of({{"groups", i(4)}})),
      HasSubstr("the 6 output channels do not divide into groups=4"));
  EXPECT_THAT(
      rel_error("nn.conv2d", {data, weight}, attrs_of({{"groups", i(2)}, {"padding", ints({1, 1, 1})}})),
      HasSubstr("padding must have 1, 2 or 4 values, found 3"));
  EXPECT_THAT(rel_error("nn.conv2d", {tensor({1, 2, 2, 8}), weight}, {}),
              HasSubstr("the input height 2 plus padding 0 is smaller than the dilated window 3"));
  EXPECT_THAT(rel_error("nn.conv2d", {data, weight}, attrs_of({{"groups", i(2)}, {"strides", ints({0, 1})}})),
              HasSubstr("strides must be positive, found (0, 1)"));
  EXPECT_THAT(rel_error("nn.max_pool2d", {data}, {}), HasSubstr("attribute 'pool_size' is required"));
  EXPECT_THAT(rel_error("nn.avg_pool2d", {data}, attrs_of({{"pool_size", i(2)}, {"layout", s("NHWC")}})),
              HasSubstr("grove supports layout NCHW only, found \"NHWC\""));
  EXPECT_THAT(
      rel_error("nn.batch_norm", {tensor({2, 3}), tensor({3}), tensor({3}), tensor({4}), tensor({3})}, {}),
      HasSubstr("the moving_mean has 4 elements but axis 1 of the data (2, 3) has size 3"));
  EXPECT_THAT(rel_error("nn.batch_norm", {tensor({2, 3}), tensor({3}), tensor({3}), tensor({3}), tensor({3})},
                        attrs_of({{"axis", i(2)}})),
              HasSubstr("axis 2 is out of range for a tensor of rank 2"));
  EXPECT_THAT(rel_error("nn.dense", {TupleType::make({}), tensor({3, 16})}, {}),
              HasSubstr("expected the data to be a tensor, found ()"));
}

// What a `?` hid in the type is checked by the kernel, with the shapes in the message.
TEST(NNOps, KernelsCheckWhatUnknownDimsHid) {
  NDArray x(DType::Float32, {2, 8}), w(DType::Float32, {4, 16});
  EXPECT_THAT(
      op_error([&] {
        op("nn.dense").kernel({x, w}, {});
      }),
      HasSubstr("the weight's last dimension is 16 but the data's is 8 (data (2, 8), weight (4, 16))"));
  NDArray data(DType::Float32, {1, 3, 5, 5}), kernel(DType::Float32, {2, 4, 3, 3});
  EXPECT_THAT(op_error([&] {
                op("nn.conv2d").kernel({data, kernel}, {});
              }),
              HasSubstr("has 3 input channels but the weight (2, 4, 3, 3) expects 4"));
  NDArray a(DType::Float32, {2, 3, 5}), b(DType::Float32, {3, 4, 5});
  EXPECT_THAT(op_error([&] {
                op("nn.batch_matmul").kernel({a, b}, {});
              }),
              HasSubstr("differ and neither is 1"));
}

// A conv2d of a small CNN's size, spot-checked against a direct sum in double.
TEST(NNOps, LargerConvMatchesDirectSum) {
  const int64_t n = 1, c = 32, h = 32, w = 32, o = 64, k = 3;
  NDArray x(DType::Float32, {n, c, h, w}), wt(DType::Float32, {o, c, k, k});
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t e = 0; e < x.size(); ++e) x.data<float>()[e] = dist(gen);
  for (int64_t e = 0; e < wt.size(); ++e) wt.data<float>()[e] = dist(gen);
  const std::vector<NDArray> y =
      op("nn.conv2d").kernel({x, wt}, attrs_of({{"padding", ints({1, 1})}, {"strides", ints({1, 1})}}));
  ASSERT_EQ(y[0].shape(), (Shape{1, 64, 32, 32}));
  for (auto [oc, oy, ox] : {std::array<int64_t, 3>{0, 0, 0}, {63, 31, 31}, {17, 5, 30}, {40, 16, 0}}) {
    double want = 0;
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t r = 0; r < k; ++r)
        for (int64_t q = 0; q < k; ++q) {
          const int64_t iy = oy - 1 + r, ix = ox - 1 + q;
          if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
          want += double(x.data<float>()[(ic * h + iy) * w + ix]) *
                  wt.data<float>()[((oc * c + ic) * k + r) * k + q];
        }
    EXPECT_NEAR(y[0].data<float>()[(oc * 32 + oy) * 32 + ox], want, 1e-4) << oc << "," << oy << "," << ox;
  }
}

}  // namespace
}  // namespace grove::relay
