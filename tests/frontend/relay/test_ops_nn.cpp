// The nn ops (nn.dense, nn.batch_matmul, nn.bias_add, nn.conv2d, nn.max_pool2d, nn.avg_pool2d,
// nn.batch_norm): type relations and kernels against PyTorch (tests/relay/fixtures/ops_nn.json, made
// by make_op_fixtures.py), unknown dims `?`, the run-time checks a `?` postpones, and the error
// messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::array_of;
using testing::arrays_close;
using testing::attrs_of;
using testing::elements_of;
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

// pad_width as TVM prints it: [[before, after], ...].
AttrValue pairs(std::vector<std::pair<int64_t, int64_t>> v) {
  std::vector<AttrValue> list;
  for (auto [b, a] : v) list.push_back(ints({b, a}));
  return AttrValue::of_list(std::move(list));
}

// nn.layer_norm, nn.pad and nn.global_avg_pool2d as TVM defines them: shapes with `?`, dtypes,
// patterns, and what the errors say.
TEST(NNOps, LayerNormPadGlobalPoolRelations) {
  auto type = [](const std::string &name, std::vector<Type> args, Attrs attrs = {}) {
    return to_string(op(name).relation(args, attrs));
  };
  auto rel_error = [](const std::string &name, std::vector<Type> args, Attrs attrs = {}) {
    return op_error([&] { op(name).relation(args, attrs); });
  };
  EXPECT_EQ(op("nn.layer_norm").pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(op("nn.global_avg_pool2d").pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(op("nn.pad").pattern, OpPattern::Injective);
  EXPECT_EQ(op("nn.pad").num_args, 2);
  EXPECT_EQ(op("nn.pad").attr_names, (std::vector<std::string>{"pad_width", "pad_mode"}));
  EXPECT_EQ(op("nn.layer_norm").attr_names, (std::vector<std::string>{"axis", "epsilon", "center", "scale"}));

  EXPECT_EQ(type("nn.layer_norm", {tensor({Q, 8}), tensor({8}), tensor({8})}), "Tensor[(?, 8), float32]");
  EXPECT_EQ(
      type("nn.layer_norm",
           {tensor({2, 3, 4}, DType::Float64), tensor({3}, DType::Float64), tensor({3}, DType::Float64)},
           attrs_of({{"axis", i(1)}})),
      "Tensor[(2, 3, 4), float64]");
  EXPECT_THAT(rel_error("nn.layer_norm", {tensor({2, 8}), tensor({4}), tensor({8})}),
              HasSubstr("the gamma has 4 elements but axis 1 of the data (2, 8) has 8"));
  EXPECT_THAT(rel_error("nn.layer_norm", {tensor({2, 8}), tensor({8}), tensor({8}, DType::Float64)}),
              HasSubstr("the beta's dtype is float64 but the data's is float32"));
  EXPECT_THAT(rel_error("nn.layer_norm",
                        {tensor({2, 8}, DType::Int32), tensor({8}, DType::Int32), tensor({8}, DType::Int32)}),
              HasSubstr("expected the data to be a float tensor, found int32"));
  EXPECT_THAT(
      rel_error("nn.layer_norm", {tensor({2, 8}), tensor({8}), tensor({8})}, attrs_of({{"axis", i(2)}})),
      HasSubstr("axis 2 is out of range for a tensor of rank 2"));

  const Attrs pad = attrs_of({{"pad_width", pairs({{0, 0}, {0, 0}, {1, 1}, {2, 0}})}});
  EXPECT_EQ(type("nn.pad", {tensor({1, 2, 3, 3}), tensor({})}, pad), "Tensor[(1, 2, 5, 5), float32]");
  EXPECT_EQ(type("nn.pad", {tensor({Q, 2, 3, 3}, DType::Int32), tensor({}, DType::Int32)}, pad),
            "Tensor[(?, 2, 5, 5), int32]");
  EXPECT_THAT(rel_error("nn.pad", {tensor({2, 3}), tensor({})}, pad),
              HasSubstr("pad_width has 4 pair(s) but the data (2, 3) has rank 2"));
  EXPECT_THAT(rel_error("nn.pad", {tensor({3}), tensor({})}, attrs_of({{"pad_width", pairs({{-1, 0}})}})),
              HasSubstr("pad_width must be a list of [before, after] pairs of non-negative integers"));
  EXPECT_THAT(rel_error("nn.pad", {tensor({3}), tensor({})},
                        attrs_of({{"pad_width", pairs({{1, 0}})}, {"pad_mode", s("wrap")}})),
              HasSubstr("pad_mode must be \"constant\", \"edge\" or \"reflect\", found \"wrap\""));
  EXPECT_THAT(
      rel_error("nn.pad", {tensor({3}), tensor({})},
                attrs_of({{"pad_width", pairs({{3, 0}})}, {"pad_mode", s("reflect")}})),
      HasSubstr("pad_mode \"reflect\" needs pads smaller than the dimension: dimension 0 of the data (3,) "
                "is padded by [3, 0]"));
  EXPECT_THAT(rel_error("nn.pad", {tensor({3}), tensor({1})}, attrs_of({{"pad_width", pairs({{1, 0}})}})),
              HasSubstr("expected the pad_value to be a scalar, found shape (1,)"));
  EXPECT_THAT(rel_error("nn.pad", {tensor({3}), tensor({}, DType::Int32)},
                        attrs_of({{"pad_width", pairs({{1, 0}})}})),
              HasSubstr("the pad_value's dtype is int32 but the data's is float32"));
  EXPECT_THAT(rel_error("nn.pad", {tensor({3}), tensor({})}), HasSubstr("attribute 'pad_width' is required"));

  EXPECT_EQ(type("nn.global_avg_pool2d", {tensor({2, 3, Q, Q})}), "Tensor[(2, 3, 1, 1), float32]");
  EXPECT_THAT(rel_error("nn.global_avg_pool2d", {tensor({2, 3, 4})}),
              HasSubstr("expected the data to have rank 4, found shape (2, 3, 4)"));
  EXPECT_THAT(rel_error("nn.global_avg_pool2d", {tensor({2, 3, 4, 4})}, attrs_of({{"layout", s("NHWC")}})),
              HasSubstr("grove supports layout NCHW only, found \"NHWC\""));
  EXPECT_FALSE(op("nn.pad").relation({IncompleteType::make(), tensor({})}, pad).defined());
  EXPECT_FALSE(
      op("nn.layer_norm").relation({tensor({2, 8}), IncompleteType::make(), tensor({8})}, {}).defined());
}

// Hand-computed layer norm: rows [1, 2, 3, 4] (mean 2.5, biased variance 1.25) and [2, 2, 2, 2]
// (variance 0: the result is beta); gamma and beta apply per column unless scale/center are off.
TEST(NNOps, LayerNormHandComputed) {
  const NDArray x = array_of({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2}), gamma = array_of({4}, {1, 1, 2, 2}),
                beta = array_of({4}, {0, 0, 1, 1});
  const double d = std::sqrt(1.25 + 1e-5);
  const NDArray y = op("nn.layer_norm").kernel({x, gamma, beta}, {})[0];
  const std::vector<double> want = {-1.5 / d, -0.5 / d, 2 * 0.5 / d + 1, 2 * 1.5 / d + 1, 0, 0, 1, 1};
  EXPECT_TRUE(arrays_close(y, array_of({2, 4}, want), 1e-6, 1e-7));
  const NDArray plain = op("nn.layer_norm")
                            .kernel({x, gamma, beta}, attrs_of({{"epsilon", AttrValue::of_float(0.25)}})
                                                          .with("center", AttrValue::of_bool(false))
                                                          .with("scale", AttrValue::of_bool(false)))[0];
  EXPECT_TRUE(arrays_close(plain,
                           array_of({2, 4}, {-1.5 / std::sqrt(1.5), -0.5 / std::sqrt(1.5),
                                             0.5 / std::sqrt(1.5), 1.5 / std::sqrt(1.5), 0, 0, 0, 0}),
                           1e-6, 1e-7));
  // Along axis 0 of the transposed data: the same numbers, column by column.
  const NDArray xt = array_of({4, 2}, {1, 2, 2, 2, 3, 2, 4, 2});
  const NDArray yt = op("nn.layer_norm")
                         .kernel({xt, array_of({4}, {1, 1, 1, 1}), array_of({4}, {0, 0, 0, 0})},
                                 attrs_of({{"axis", i(0)}}))[0];
  EXPECT_TRUE(
      arrays_close(yt, array_of({4, 2}, {-1.5 / d, 0, -0.5 / d, 0, 0.5 / d, 0, 1.5 / d, 0}), 1e-6, 1e-7));
}

// Hand-computed pads of [1, 2, 3] by [2, 1], in each mode, and a 2-d constant pad of int32.
TEST(NNOps, PadHandComputed) {
  const NDArray x = array_of({3}, {1, 2, 3}), nine = NDArray::scalar(DType::Float32, 9);
  auto pad = [&](const char *mode) {
    return elements_of(
        op("nn.pad").kernel({x, nine}, attrs_of({{"pad_width", pairs({{2, 1}})}, {"pad_mode", s(mode)}}))[0]);
  };
  EXPECT_THAT(pad("constant"), ::testing::ElementsAre(9, 9, 1, 2, 3, 9));
  EXPECT_THAT(pad("edge"), ::testing::ElementsAre(1, 1, 1, 2, 3, 3));
  EXPECT_THAT(pad("reflect"), ::testing::ElementsAre(3, 2, 1, 2, 3, 2));
  const NDArray m = array_of({2, 2}, {1, 2, 3, 4}, DType::Int32);
  const NDArray p = op("nn.pad").kernel({m, NDArray::scalar(DType::Int32, -1)},
                                        attrs_of({{"pad_width", pairs({{1, 0}, {0, 1}})}}))[0];
  EXPECT_EQ(p.shape(), (Shape{3, 3}));
  EXPECT_THAT(elements_of(p), ::testing::ElementsAre(-1, -1, -1, 1, 2, -1, 3, 4, -1));
}

// Hand-computed plane means; integers truncate toward zero.
TEST(NNOps, GlobalAvgPoolHandComputed) {
  const NDArray x = array_of({1, 2, 2, 2}, {1, 2, 3, 5, -1, -2, -3, -5});
  const NDArray y = op("nn.global_avg_pool2d").kernel({x}, {})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_THAT(elements_of(y), ::testing::ElementsAre(2.75, -2.75));
  const NDArray yi = op("nn.global_avg_pool2d")
                         .kernel({array_of({1, 2, 2, 2}, {1, 2, 3, 5, -1, -2, -3, -5}, DType::Int32)}, {})[0];
  EXPECT_THAT(elements_of(yi), ::testing::ElementsAre(2, -2));
}

}  // namespace
}  // namespace grove::relay
