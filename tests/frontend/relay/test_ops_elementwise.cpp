// The elementwise ops (unary math, rounding, clip, logical_not, copy, cast, arithmetic, maximum,
// minimum, power, logical and/or and comparisons with broadcasting, where, broadcast_to): type relations and
// kernels against NumPy (tests/relay/fixtures/ops_elementwise.json, made by make_op_fixtures.py),
// broadcasting with unknown dims `?`, and the error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::array_of;
using testing::arrays_close;
using testing::elements_of;
using ::testing::HasSubstr;
using testing::less_precise;
using testing::load_op_cases;
using testing::op;
using testing::op_error;
using testing::tensor;
using testing::type_of;

constexpr int64_t Q = kAnyDim;

// Tolerances (relative, absolute). float32 arithmetic, comparisons, abs/negative/relu/clip and where
// are exact: the fixtures round a float64 result once, as IEEE float32 arithmetic does, so 1e-6
// relative only covers printing. exp/log/tanh/sigmoid/erf (and sqrt) go through libm: 1e-5.
// float64: 1e-12. Integers and bool: exact.
std::pair<double, double> tolerance(const std::string &op, DType dtype) {
  static const std::set<std::string> kTranscendental = {"exp",     "log", "sqrt", "tanh",
                                                        "sigmoid", "erf", "power"};
  if (dtype == DType::Float32)
    return kTranscendental.count(op) ? std::pair{1e-5, 1e-7} : std::pair{1e-6, 0.0};
  if (dtype == DType::Float64) return {1e-12, 1e-14};
  return {0.0, 0.0};
}

// The shape of a relation's result, which must be a TensorType.
Shape result_shape(const Type &t) {
  const auto *tt = t.as<TensorType>();
  if (!tt) throw std::runtime_error("relation result is not a tensor: " + to_string(t));
  return tt->shape;
}

// Every fixture case: the relation gives the output's type (also with one input's dims all `?`:
// the result is then less precise but compatible), and the kernel matches NumPy.
TEST(ElementwiseOps, MatchNumPyFixtures) {
  const auto cases = load_op_cases("ops_elementwise.json");
  ASSERT_GT(cases.size(), 100u);
  std::set<std::string> covered;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    const OpDef &def = op(c.op);
    covered.insert(c.op);
    ASSERT_EQ(def.num_args, static_cast<int>(c.inputs.size()));
    std::vector<Type> types;
    for (const NDArray &x : c.inputs) types.push_back(type_of(x));
    const Type result = def.relation(types, c.attrs);
    ASSERT_TRUE(result.as<TensorType>());
    EXPECT_EQ(result.as<TensorType>()->dtype, c.outputs[0].dtype());
    EXPECT_EQ(result_shape(result), c.outputs[0].shape());
    for (size_t k = 0; k < types.size(); ++k) {
      std::vector<Type> unknown = types;
      unknown[k] = tensor(Shape(c.inputs[k].ndim(), Q), c.inputs[k].dtype());
      EXPECT_TRUE(less_precise(result_shape(def.relation(unknown, c.attrs)), c.outputs[0].shape()));
    }
    const std::vector<NDArray> got = def.kernel(c.inputs, c.attrs);
    ASSERT_EQ(got.size(), 1u);
    const auto [rtol, atol] = tolerance(c.op, c.inputs.back().dtype());
    EXPECT_TRUE(arrays_close(got[0], c.outputs[0], rtol, atol));
  }
  for (const OpDef &def : elementwise_ops())
    EXPECT_TRUE(covered.count(def.name)) << def.name << " has no fixture";
}

TEST(ElementwiseOps, TableEntriesFollowTvm) {
  EXPECT_EQ(op("exp").pattern, OpPattern::ElemWise);
  EXPECT_EQ(op("nn.relu").pattern, OpPattern::ElemWise);
  EXPECT_EQ(op("add").pattern, OpPattern::Broadcast);
  EXPECT_EQ(op("less_equal").pattern, OpPattern::Broadcast);
  EXPECT_EQ(op("where").pattern, OpPattern::Broadcast);
  EXPECT_EQ(op("where").num_args, 3);
  EXPECT_EQ(op("clip").attr_names, (std::vector<std::string>{"a_min", "a_max"}));
  EXPECT_TRUE(op("add").attr_names.empty());
}

// Relay's ConcreteBroadcast: 1 against d gives d, `?` against d gives d, `?` against 1 or `?` gives
// `?`, leading dims pass through.
TEST(Broadcasting, ShapesWithUnknownDims) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 3}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {3, 2}), (Shape{3, 2}));
  EXPECT_EQ(broadcast_shapes({}, {}), (Shape{}));
  EXPECT_EQ(broadcast_shapes({Q, 3}, {4, 3}), (Shape{4, 3}));
  EXPECT_EQ(broadcast_shapes({4, 3}, {Q, 3}), (Shape{4, 3}));
  EXPECT_EQ(broadcast_shapes({Q, 1}, {1, Q}), (Shape{Q, Q}));
  EXPECT_EQ(broadcast_shapes({Q}, {1}), (Shape{Q}));
  EXPECT_EQ(broadcast_shapes({Q}, {Q}), (Shape{Q}));
  EXPECT_EQ(broadcast_shapes({2, Q, 3}, {4, 3}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({Q}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({0, 3}, {1, 3}), (Shape{0, 3}));
}

TEST(Broadcasting, RelationsCarryUnknownDims) {
  EXPECT_EQ(result_shape(op("add").relation({tensor({Q, 3}), tensor({1, 3})}, {})), (Shape{Q, 3}));
  EXPECT_EQ(result_shape(op("multiply").relation({tensor({Q, 1}), tensor({5})}, {})), (Shape{Q, 5}));
  const Type cmp = op("less").relation({tensor({Q, 4}), tensor({})}, {});
  EXPECT_EQ(result_shape(cmp), (Shape{Q, 4}));
  EXPECT_EQ(cmp.as<TensorType>()->dtype, DType::Bool);
  const Type w = op("where").relation({tensor({Q, 1}, DType::Bool), tensor({3}), tensor({1, Q})}, {});
  EXPECT_EQ(result_shape(w), (Shape{Q, 3}));
  EXPECT_EQ(result_shape(op("exp").relation({tensor({Q, 2, Q})}, {})), (Shape{Q, 2, Q}));
}

TEST(Broadcasting, MismatchIsAnError) {
  EXPECT_EQ(op_error([] {
              broadcast_shapes({2, 3}, {4, 3});
            }),
            "cannot broadcast (2, 3) and (4, 3): dimension 0 is 2 and 4");
  EXPECT_THAT(op_error([] {
                op("add").relation({tensor({2, 1, 3}), tensor({4, 2})}, {});
              }),
              HasSubstr("cannot broadcast (2, 1, 3) and (4, 2): dimension 2 is 3 and 2"));
  EXPECT_THAT(op_error([] {
                op("where").relation({tensor({5}, DType::Bool), tensor({2, 3}), tensor({3})}, {});
              }),
              HasSubstr("cannot broadcast (5,) and (2, 3): dimension 1 is 5 and 3"));
}

// A `?` the type allowed that meets a mismatching size at run time: the kernel names both shapes.
TEST(Broadcasting, KernelChecksUnknownDimsAtRunTime) {
  EXPECT_EQ(result_shape(op("add").relation({tensor({Q, 3}), tensor({4, 3})}, {})), (Shape{4, 3}));
  const std::vector<NDArray> args = {NDArray(DType::Float32, {2, 3}), NDArray(DType::Float32, {4, 3})};
  EXPECT_EQ(op_error([&] { op("add").kernel(args, {}); }),
            "cannot broadcast (2, 3) and (4, 3): dimension 0 is 2 and 4");
  const std::vector<NDArray> where_args = {NDArray(DType::Bool, {3}), NDArray(DType::Int32, {2, 1}),
                                           NDArray(DType::Int32, {2})};
  EXPECT_THAT(op_error([&] { op("where").kernel(where_args, {}); }),
              HasSubstr("cannot broadcast (3,) and (2, 2)"));
}

// The index walk reads (2, 3) + (3,) + (2, 1) element by element.
TEST(Broadcasting, IndexWalksInputsInRowMajorOrder) {
  BroadcastIndex it({2, 3}, {{2, 3}, {3}, {2, 1}});
  ASSERT_EQ(it.size(), 6);
  std::vector<int64_t> a, b, c;
  for (int64_t i = 0; i < it.size(); ++i, it.next()) {
    a.push_back(it[0]);
    b.push_back(it[1]);
    c.push_back(it[2]);
  }
  EXPECT_EQ(a, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(c, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
}

TEST(ElementwiseOps, RelationsWaitForIncompleteTypes) {
  EXPECT_FALSE(op("add").relation({IncompleteType::make(), tensor({2})}, {}).defined());
  EXPECT_FALSE(
      op("where").relation({tensor({2}, DType::Bool), tensor({2}), IncompleteType::make()}, {}).defined());
  EXPECT_FALSE(op("exp").relation({IncompleteType::make()}, {}).defined());
}

TEST(ElementwiseOps, DtypeErrors) {
  EXPECT_EQ(op_error([] {
              op("add").relation({tensor({2}), tensor({2}, DType::Int32)}, {});
            }),
            "dtypes differ: float32 and int32");
  EXPECT_EQ(op_error([] { op("exp").relation({tensor({2}, DType::Int32)}, {}); }),
            "expected a float tensor, found int32");
  EXPECT_EQ(op_error([] {
              op("subtract").relation({tensor({2}, DType::Bool), tensor({2}, DType::Bool)}, {});
            }),
            "expected a float or integer tensor, found bool");
  EXPECT_EQ(op_error([] { op("logical_not").relation({tensor({2})}, {}); }),
            "expected a bool tensor, found float32");
  EXPECT_EQ(op_error([] {
              op("where").relation({tensor({2}), tensor({2}), tensor({2})}, {});
            }),
            "condition: expected a bool tensor, found float32");
  EXPECT_EQ(op_error([] {
              op("where").relation({tensor({2}, DType::Bool), tensor({2}), tensor({2}, DType::Int64)}, {});
            }),
            "dtypes differ: float32 and int64");
  EXPECT_THAT(op_error([] {
                op("add").relation({TupleType::make({tensor({2}), tensor({2})}), tensor({2})}, {});
              }),
              HasSubstr("argument 1: expected a tensor, found"));
  // Kernels check too: the interpreter may run code no type checker saw.
  EXPECT_EQ(op_error([] { op("sqrt").kernel({NDArray(DType::Int64, {2})}, {}); }),
            "expected a float tensor, found int64");
  EXPECT_EQ(op_error([] {
              op("equal").kernel({NDArray(DType::Int32, {2}), NDArray(DType::Int64, {2})}, {});
            }),
            "dtypes differ: int32 and int64");
  EXPECT_THAT(op_error([] {
                op("add").kernel({NDArray(DType::Int8, {2}), NDArray(DType::Int8, {2})}, {});
              }),
              HasSubstr("unsupported dtype int8"));
}

TEST(ElementwiseOps, ClipNeedsBounds) {
  EXPECT_EQ(
      op_error([] { op("clip").relation({tensor({2})}, Attrs().with("a_max", AttrValue::of_float(1))); }),
      "attribute 'a_min' is required");
  EXPECT_EQ(op_error([] { op("clip").kernel({NDArray(DType::Float32, {2})}, {}); }),
            "attribute 'a_min' is required");
}

// Hand-computed integer semantics: two's-complement wrap-around, division truncating toward zero.
TEST(ElementwiseOps, IntegerArithmetic) {
  auto scalar = [](int32_t v) { return NDArray::scalar(DType::Int32, v); };
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(op("add").kernel({scalar(kMax), scalar(1)}, {})[0].data<int32_t>()[0], kMin);
  EXPECT_EQ(op("divide").kernel({scalar(-7), scalar(2)}, {})[0].data<int32_t>()[0], -3);
  EXPECT_EQ(op("divide").kernel({scalar(7), scalar(-2)}, {})[0].data<int32_t>()[0], -3);
  EXPECT_EQ(op("divide").kernel({scalar(kMin), scalar(-1)}, {})[0].data<int32_t>()[0], kMin);
  EXPECT_EQ(op("negative").kernel({scalar(kMin)}, {})[0].data<int32_t>()[0], kMin);
  EXPECT_EQ(op_error([&] { op("divide").kernel({scalar(1), scalar(0)}, {}); }), "integer division by zero");
  // clip bounds are truncated toward zero for integers, as TVM's make_const does.
  const Attrs bounds =
      Attrs().with("a_min", AttrValue::of_float(-1.5)).with("a_max", AttrValue::of_float(2.7));
  EXPECT_EQ(op("clip").kernel({scalar(-5)}, bounds)[0].data<int32_t>()[0], -1);
  EXPECT_EQ(op("clip").kernel({scalar(5)}, bounds)[0].data<int32_t>()[0], 2);
}

TEST(ElementwiseOps, EmptyTensors) {
  const std::vector<NDArray> out =
      op("add").kernel({NDArray(DType::Float32, {0, 3}), NDArray(DType::Float32, {1, 3})}, {});
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
}

// The ops TVM-printed modules use (issue 25): each relation's shape and dtype, with `?`.
TEST(ElementwiseOps, TvmPrintedOpsRelations) {
  auto type = [](const std::string &name, std::vector<Type> args, Attrs attrs = {}) {
    return to_string(op(name).relation(args, attrs));
  };
  const Attrs f16 = Attrs().with("dtype", AttrValue::of_string("float16"));
  EXPECT_EQ(type("cast", {tensor({Q, 3})}, f16), "Tensor[(?, 3), float16]");
  EXPECT_EQ(type("cast", {tensor({2}, DType::Float16)}, Attrs().with("dtype", AttrValue::of_string("int64"))),
            "Tensor[(2), int64]");
  EXPECT_EQ(type("copy", {tensor({2, Q}, DType::Bool)}), "Tensor[(2, ?), bool]");
  EXPECT_EQ(type("floor", {tensor({3}, DType::Int32)}), "Tensor[(3), int32]");
  EXPECT_EQ(type("round", {tensor({Q}, DType::Float64)}), "Tensor[(?), float64]");
  EXPECT_EQ(type("maximum", {tensor({Q, 1}), tensor({5})}), "Tensor[(?, 5), float32]");
  EXPECT_EQ(type("minimum", {tensor({2, 1, 3}, DType::Int64), tensor({4, 3}, DType::Int64)}),
            "Tensor[(2, 4, 3), int64]");
  EXPECT_EQ(type("power", {tensor({3}), tensor({})}), "Tensor[(3), float32]");
  EXPECT_EQ(type("logical_and", {tensor({2, 1}, DType::Bool), tensor({3}, DType::Bool)}),
            "Tensor[(2, 3), bool]");
  EXPECT_EQ(type("logical_or", {tensor({Q}, DType::Bool), tensor({1}, DType::Bool)}), "Tensor[(?), bool]");
  const Attrs to234 = Attrs().with("shape", testing::ints({2, 3, 4}));
  EXPECT_EQ(type("broadcast_to", {tensor({3, 1}, DType::Int32)}, to234), "Tensor[(2, 3, 4), int32]");
  EXPECT_EQ(type("broadcast_to", {tensor({Q, Q})}, to234), "Tensor[(2, 3, 4), float32]");
  EXPECT_EQ(op("cast").attr_names, (std::vector<std::string>{"dtype"}));
  EXPECT_EQ(op("broadcast_to").attr_names, (std::vector<std::string>{"shape"}));
  for (const char *name : {"cast", "copy", "floor", "ceil", "round"})
    EXPECT_EQ(op(name).pattern, OpPattern::ElemWise) << name;
  for (const char *name : {"maximum", "minimum", "power", "logical_and", "logical_or", "broadcast_to"})
    EXPECT_EQ(op(name).pattern, OpPattern::Broadcast) << name;
  EXPECT_FALSE(op("cast").relation({IncompleteType::make()}, f16).defined());
}

TEST(ElementwiseOps, TvmPrintedOpsErrors) {
  auto rel_error = [](const std::string &name, std::vector<Type> args, Attrs attrs = {}) {
    return op_error([&] { op(name).relation(args, attrs); });
  };
  EXPECT_EQ(rel_error("cast", {tensor({2})}), "attribute 'dtype' is required");
  EXPECT_EQ(rel_error("cast", {tensor({2})}, Attrs().with("dtype", AttrValue::of_string("float8"))),
            "dtype \"float8\" is not a dtype grove knows");
  EXPECT_EQ(rel_error("floor", {tensor({2}, DType::Bool)}), "expected a float or integer tensor, found bool");
  EXPECT_EQ(rel_error("round", {tensor({2}, DType::Bool)}), "expected a float or integer tensor, found bool");
  EXPECT_THAT(rel_error("copy", {TupleType::make({tensor({2})})}),
              HasSubstr("argument 1: expected a tensor, found"));
  EXPECT_EQ(rel_error("logical_or", {tensor({2}, DType::Bool), tensor({2}, DType::Int32)}),
            "dtypes differ: bool and int32");
  EXPECT_EQ(rel_error("maximum", {tensor({2}), tensor({2}, DType::Int32)}),
            "dtypes differ: float32 and int32");
  EXPECT_EQ(rel_error("minimum", {tensor({2, 3}), tensor({4, 3})}),
            "cannot broadcast (2, 3) and (4, 3): dimension 0 is 2 and 4");
  EXPECT_EQ(rel_error("power", {tensor({2}, DType::Int32), tensor({2}, DType::Int32)}),
            "expected a float tensor, found int32");
  EXPECT_EQ(rel_error("logical_and", {tensor({2}), tensor({2})}), "expected a bool tensor, found float32");
  EXPECT_EQ(rel_error("broadcast_to", {tensor({2, 3})}, Attrs().with("shape", testing::ints({4, 3}))),
            "cannot broadcast (2, 3) and (4, 3): dimension 0 is 2 and 4");
  EXPECT_EQ(rel_error("broadcast_to", {tensor({3})}, Attrs().with("shape", testing::ints({-2, 3}))),
            "shape (-2, 3) has a negative dimension");
  EXPECT_EQ(rel_error("broadcast_to", {tensor({3})}), "attribute 'shape' is required");
  EXPECT_EQ(op_error([] { op("ceil").kernel({NDArray(DType::Bool, {2})}, {}); }),
            "expected a float or integer tensor, found bool");
}

// Hand-computed: float16 is stored with 11 significant bits (65504 its largest finite value, larger
// values overflow to infinity); float to integer truncates toward zero and saturates (NaN: 0);
// integer narrowing wraps around.
TEST(ElementwiseOps, CastConvertsAsTvm) {
  auto cast = [](const NDArray &x, const char *to) {
    return op("cast").kernel({x}, Attrs().with("dtype", AttrValue::of_string(to)))[0];
  };
  const double inf = std::numeric_limits<double>::infinity();
  const NDArray h = cast(array_of({6}, {1.5, 65504, 70000, -2049, 1e-8, 0.1}, DType::Float32), "float16");
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_THAT(elements_of(h), ::testing::ElementsAre(1.5, 65504, inf, -2048, 0, 0.0999755859375));
  EXPECT_THAT(elements_of(cast(h, "float32")),
              ::testing::ElementsAre(1.5, 65504, inf, -2048, 0, 0.0999755859375));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(elements_of(cast(array_of({5}, {-3.7, 3.7, 3e9, -1e20, nan}, DType::Float32), "int32")),
              ::testing::ElementsAre(-3, 3, 2147483647, -2147483648.0, 0));
  EXPECT_THAT(elements_of(cast(array_of({2}, {-1, 300.5}, DType::Float64), "uint8")),
              ::testing::ElementsAre(0, 255));
  EXPECT_THAT(elements_of(cast(array_of({2}, {300, -1}, DType::Int32), "uint8")),
              ::testing::ElementsAre(44, 255));
  EXPECT_THAT(elements_of(cast(array_of({1}, {-1}, DType::Int32), "int64")), ::testing::ElementsAre(-1));
  EXPECT_EQ(cast(array_of({1}, {-1}, DType::Int64), "uint64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_THAT(elements_of(cast(array_of({2}, {0.5, 0}, DType::Float16), "bool")),
              ::testing::ElementsAre(1, 0));
}

// maximum/minimum compare as TVM's Max/Min lower (a > b ? a : b): a NaN in b wins, one in a loses.
// round takes halves away from zero; rounding keeps integers. copy makes a fresh tensor.
TEST(ElementwiseOps, TvmPrintedOpsHandComputed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const NDArray a = array_of({3}, {nan, 1, -0.5}, DType::Float32),
                b = array_of({3}, {1, nan, 2}, DType::Float32);
  const NDArray mx = op("maximum").kernel({a, b}, {})[0], mn = op("minimum").kernel({a, b}, {})[0];
  EXPECT_EQ(mx.data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(mx.data<float>()[1]));
  EXPECT_EQ(mx.data<float>()[2], 2.0f);
  EXPECT_EQ(mn.data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(mn.data<float>()[1]));
  EXPECT_EQ(mn.data<float>()[2], -0.5f);
  EXPECT_THAT(
      elements_of(op("round").kernel({array_of({5}, {-2.5, -0.5, 0.5, 1.5, 2.5}, DType::Float64)}, {})[0]),
      ::testing::ElementsAre(-3, -1, 1, 2, 3));
  EXPECT_THAT(
      elements_of(op("power").kernel(
          {array_of({3}, {2, 9, 0}, DType::Float32), array_of({3}, {10, 0.5, 0}, DType::Float32)}, {})[0]),
      ::testing::ElementsAre(1024, 3, 1));
  const NDArray x = array_of({2}, {7, -8}, DType::Int64);
  const NDArray c = op("copy").kernel({x}, {})[0];
  EXPECT_TRUE(c.bitwise_equal(x));
  EXPECT_NE(c.raw(), x.raw());
  EXPECT_THAT(elements_of(op("floor").kernel({x}, {})[0]), ::testing::ElementsAre(7, -8));
}

TEST(ElementwiseOps, LeakyReluErrorsAndDefault) {
  EXPECT_EQ(op("nn.leaky_relu").pattern, OpPattern::ElemWise);
  EXPECT_EQ(op("nn.leaky_relu").attr_names, (std::vector<std::string>{"alpha"}));
  EXPECT_EQ(op_error([] { op("nn.leaky_relu").relation({tensor({2}, DType::Int32)}, {}); }),
            "expected a float tensor, found int32");
  Attrs negative;
  negative = negative.with("alpha", AttrValue::of_float(-0.5));
  EXPECT_EQ(op_error([&] { op("nn.leaky_relu").relation({tensor({2})}, negative); }),
            "attribute 'alpha' must be >= 0, found -0.5");
  // Without alpha, TVM's attribute default 0.25.
  const NDArray y = op("nn.leaky_relu").kernel({array_of({2}, {-2.0, 3.0})}, {})[0];
  EXPECT_EQ(elements_of(y), (std::vector<double>{-0.5, 3.0}));
}

}  // namespace
}  // namespace grove::relay
