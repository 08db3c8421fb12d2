// The reductions (sum, mean, max) and nn.softmax: type relations and kernels against NumPy and
// PyTorch (tests/relay/fixtures/ops_reduce.json, made by make_op_fixtures.py), unknown dims `?`, and
// the error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::arrays_close;
using ::testing::HasSubstr;
using testing::less_precise;
using testing::load_op_cases;
using testing::op;
using testing::op_error;
using testing::tensor;
using testing::type_of;

constexpr int64_t Q = kAnyDim;

// Tolerances (relative, absolute). Kernels sum floats in double and round once, as the fixtures do,
// so float32 sum/mean/max agree to the last bit; 1e-6 relative plus 1e-6 absolute leaves room for
// NumPy's pairwise summation order where a sum cancels to near zero. nn.softmax (libm exp): 1e-5.
// float64: 1e-12 (plus 1e-12 absolute). Integers and bool: exact.
std::pair<double, double> tolerance(const std::string &op, DType dtype) {
  if (dtype == DType::Float32) return op == "nn.softmax" ? std::pair{1e-5, 1e-7} : std::pair{1e-6, 1e-6};
  if (dtype == DType::Float64) return {1e-12, 1e-12};
  return {0.0, 0.0};
}

Shape result_shape(const Type &t) {
  const auto *tt = t.as<TensorType>();
  if (!tt) throw std::runtime_error("relation result is not a tensor: " + to_string(t));
  return tt->shape;
}

Attrs axis_attrs(std::vector<int64_t> axes, bool keepdims = false, bool exclude = false) {
  std::vector<AttrValue> list;
  for (int64_t a : axes) list.push_back(AttrValue::of_int(a));
  return Attrs()
      .with("axis", AttrValue::of_list(std::move(list)))
      .with("keepdims", AttrValue::of_bool(keepdims))
      .with("exclude", AttrValue::of_bool(exclude));
}

// Every fixture case: the relation gives the output's type (also with the input's dims all `?`),
// and the kernel matches NumPy / PyTorch.
TEST(ReduceOps, MatchNumPyFixtures) {
  const auto cases = load_op_cases("ops_reduce.json");
  ASSERT_GT(cases.size(), 100u);
  std::set<std::string> covered;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    const OpDef &def = op(c.op);
    covered.insert(c.op);
    ASSERT_EQ(c.inputs.size(), 1u);
    const Type result = def.relation({type_of(c.inputs[0])}, c.attrs);
    ASSERT_TRUE(result.as<TensorType>());
    EXPECT_EQ(result.as<TensorType>()->dtype, c.outputs[0].dtype());
    EXPECT_EQ(result_shape(result), c.outputs[0].shape());
    const Type unknown = def.relation({tensor(Shape(c.inputs[0].ndim(), Q), c.inputs[0].dtype())}, c.attrs);
    EXPECT_TRUE(less_precise(result_shape(unknown), c.outputs[0].shape()));
    const std::vector<NDArray> got = def.kernel(c.inputs, c.attrs);
    ASSERT_EQ(got.size(), 1u);
    const auto [rtol, atol] = tolerance(c.op, c.inputs[0].dtype());
    EXPECT_TRUE(arrays_close(got[0], c.outputs[0], rtol, atol));
  }
  for (const OpDef &def : reduce_ops()) EXPECT_TRUE(covered.count(def.name)) << def.name << " has no fixture";
}

TEST(ReduceOps, TableEntriesFollowTvm) {
  for (const char *name : {"sum", "mean", "max"}) {
    EXPECT_EQ(op(name).pattern, OpPattern::CommReduce);
    EXPECT_EQ(op(name).attr_names, (std::vector<std::string>{"axis", "keepdims", "exclude"}));
  }
  EXPECT_EQ(op("nn.softmax").pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(op("nn.softmax").attr_names, (std::vector<std::string>{"axis"}));
}

// Kept dims carry `?` through; reduced ones disappear or become 1.
TEST(ReduceOps, UnknownDims) {
  const OpDef &sum = op("sum");
  EXPECT_EQ(result_shape(sum.relation({tensor({Q, 4})}, axis_attrs({0}))), (Shape{4}));
  EXPECT_EQ(result_shape(sum.relation({tensor({Q, 4})}, axis_attrs({1}))), (Shape{Q}));
  EXPECT_EQ(result_shape(sum.relation({tensor({Q, 4})}, axis_attrs({1}, true))), (Shape{Q, 1}));
  EXPECT_EQ(result_shape(sum.relation({tensor({Q, 4, Q})}, axis_attrs({0}, false, true))), (Shape{Q}));
  EXPECT_EQ(result_shape(op("max").relation({tensor({Q, Q})}, {})), (Shape{}));
  EXPECT_EQ(
      result_shape(op("mean").relation({tensor({Q, Q})}, Attrs().with("keepdims", AttrValue::of_bool(true)))),
      (Shape{1, 1}));
  EXPECT_EQ(result_shape(op("nn.softmax").relation({tensor({Q, 3})}, {})), (Shape{Q, 3}));
}

TEST(ReduceOps, RelationsWaitForIncompleteTypes) {
  EXPECT_FALSE(op("sum").relation({IncompleteType::make()}, axis_attrs({0})).defined());
  EXPECT_FALSE(op("nn.softmax").relation({IncompleteType::make()}, {}).defined());
}

TEST(ReduceOps, AxisErrors) {
  EXPECT_EQ(op_error([] {
              op("sum").relation({tensor({2, 3, 4})}, axis_attrs({3}));
            }),
            "axis 3 is out of range for a tensor of rank 3 (expected -3 <= axis < 3)");
  EXPECT_EQ(op_error([] {
              op("mean").relation({tensor({2, 3})}, axis_attrs({-3}));
            }),
            "axis -3 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_EQ(op_error([] {
              op("max").relation({tensor({2, 3})}, axis_attrs({0, -2}));
            }),
            "axis 0 is listed twice (as -2)");
  EXPECT_EQ(op_error([] { op("sum").relation({tensor({})}, axis_attrs({0})); }),
            "axis 0 is out of range for a tensor of rank 0 (expected 0 <= axis < 0)");
  EXPECT_EQ(op_error([] {
              op("nn.softmax").relation({tensor({2, 3})}, Attrs().with("axis", AttrValue::of_int(2)));
            }),
            "axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_THAT(op_error([] {
                op("sum").relation({tensor({2, 3})}, Attrs().with("axis", AttrValue::of_string("x")));
              }),
              HasSubstr("attribute 'axis' must be a list of integers"));
  // The kernel checks the concrete rank too.
  EXPECT_THAT(op_error([] { op("sum").kernel({NDArray(DType::Float32, {2})}, axis_attrs({1})); }),
              HasSubstr("axis 1 is out of range for a tensor of rank 1"));
}

TEST(ReduceOps, DtypeErrors) {
  EXPECT_EQ(op_error([] { op("sum").relation({tensor({2}, DType::Bool)}, {}); }),
            "expected a float or integer tensor, found bool");
  EXPECT_EQ(op_error([] { op("nn.softmax").relation({tensor({2}, DType::Int32)}, {}); }),
            "expected a float tensor, found int32");
  EXPECT_EQ(op_error([] { op("nn.softmax").kernel({NDArray(DType::Int64, {2})}, {}); }),
            "expected a float tensor, found int64");
  EXPECT_THAT(op_error([] { op("sum").kernel({NDArray(DType::Int8, {2})}, {}); }),
              HasSubstr("unsupported dtype int8"));
}

// Hand-computed: integer mean truncates toward zero (TVM divides the int sum by the count); max of
// nothing has no value; sum of nothing is 0.
TEST(ReduceOps, EdgeCases) {
  NDArray x(DType::Int32, {2});
  x.data<int32_t>()[0] = -7;
  x.data<int32_t>()[1] = 0;
  EXPECT_EQ(op("mean").kernel({x}, {})[0].data<int32_t>()[0], -3);
  EXPECT_THAT(op_error([] {
                op("max").kernel({NDArray(DType::Float32, {2, 0})}, axis_attrs({1}));
              }),
              HasSubstr("max over zero elements: the reduced axes of (2, 0) are empty"));
  const NDArray s = op("sum").kernel({NDArray(DType::Float32, {2, 0})}, axis_attrs({1}))[0];
  EXPECT_EQ(s.shape(), (Shape{2}));
  EXPECT_EQ(s.data<float>()[0], 0.0f);
  // axis=None with exclude reduces every axis, as TVM's ReduceRel does.
  EXPECT_EQ(
      result_shape(op("sum").relation({tensor({2, 3})}, Attrs().with("exclude", AttrValue::of_bool(true)))),
      (Shape{}));
}

// argmax (TVM's ArgReduceRel): the reduction's shape, always int32; its attributes are the
// reductions' plus select_last_index.
TEST(ReduceOps, ArgmaxRelation) {
  const OpDef &argmax = op("argmax");
  EXPECT_EQ(argmax.pattern, OpPattern::CommReduce);
  EXPECT_EQ(argmax.attr_names,
            (std::vector<std::string>{"axis", "keepdims", "exclude", "select_last_index"}));
  EXPECT_EQ(to_string(argmax.relation({tensor({Q, 4})}, axis_attrs({1}))), "Tensor[(?), int32]");
  EXPECT_EQ(to_string(argmax.relation({tensor({2, 4}, DType::Int64)}, axis_attrs({1}, true))),
            "Tensor[(2, 1), int32]");
  EXPECT_EQ(to_string(argmax.relation({tensor({2, 3, 4}, DType::Float64)}, axis_attrs({1}, false, true))),
            "Tensor[(3), int32]");
  EXPECT_EQ(to_string(argmax.relation({tensor({2, 3})}, {})), "int32");
  EXPECT_FALSE(argmax.relation({IncompleteType::make()}, {}).defined());
  EXPECT_EQ(op_error([] {
              op("argmax").relation({tensor({2, 3})}, axis_attrs({2}));
            }),
            "axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_THAT(op_error([] {
                op("argmax").relation({tensor({2})},
                                      Attrs().with("select_last_index", AttrValue::of_string("y")));
              }),
              HasSubstr("attribute 'select_last_index' must be True or False, not a string"));
}

// Hand-computed: ties take the first index (the last with select_last_index); several axes give
// the row-major index within them; a NaN compares as in TVM's combiner (it replaces the best so far
// and the next element replaces it); nothing to reduce is an error.
TEST(ReduceOps, ArgmaxHandComputed) {
  NDArray x(DType::Float32, {2, 3});
  const float v[] = {1, 5, 5, std::nanf(""), -1, 2};
  std::copy(v, v + 6, x.data<float>());
  const NDArray first = op("argmax").kernel({x}, axis_attrs({1}))[0];
  EXPECT_EQ(first.data<int32_t>()[0], 1);
  EXPECT_EQ(first.data<int32_t>()[1], 2);
  const NDArray last =
      op("argmax").kernel({x}, axis_attrs({1}).with("select_last_index", AttrValue::of_bool(true)))[0];
  EXPECT_EQ(last.data<int32_t>()[0], 2);
  const NDArray all = op("argmax").kernel({x}, {})[0];
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_EQ(all.data<int32_t>()[0], 5);  // NaN took over from 5, then -1 and 2 from it
  EXPECT_THAT(op_error([] {
                op("argmax").kernel({NDArray(DType::Float32, {2, 0})}, axis_attrs({1}));
              }),
              HasSubstr("argmax over zero elements: the reduced axes of (2, 0) are empty"));
}

}  // namespace
}  // namespace grove::relay
