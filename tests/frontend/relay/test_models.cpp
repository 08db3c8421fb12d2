// The example programs of models/relay against PyTorch: each program is parsed, type-checked and run
// by the reference interpreter on the inputs and weights of its fixture
// (models/relay/fixtures/make_fixtures.py), and its result compared with what PyTorch computed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frontend/relay/Interpreter.h"
#include "tests/relay/ModelFixtures.h"

namespace grove::relay {
namespace {

using testing::load_model;
using testing::main_args;

// Row `row` of a [rows, ...] float32 array as a [1, ...] array.
NDArray row_of(const NDArray &a, int64_t row) {
  Shape shape = a.shape();
  shape[0] = 1;
  NDArray r(DType::Float32, shape);
  std::copy_n(a.data<float>() + row * r.size(), r.size(), r.data<float>());
  return r;
}

// |actual - expected| <= atol + rtol * |expected| elementwise, over the same number of elements.
void expect_close(const NDArray &actual, const NDArray &expected, const float *expected_data, double atol,
                  double rtol, const std::string &what) {
  ASSERT_EQ(actual.dtype(), DType::Float32) << what;
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (int64_t i = 0; i < actual.size(); ++i) {
    double a = actual.data<float>()[i], e = expected_data[i];
    EXPECT_NEAR(a, e, atol + rtol * std::fabs(e)) << what << ", element " << i;
  }
}

// float32 arithmetic in a different order than PyTorch's: a few ulps on values of order 1.
constexpr double kAtol = 1e-5, kRtol = 1e-4;

TEST(RelayModels, MlpEqualsPyTorch) {
  auto l = load_model("mlp");
  Value out = run_main(l.module, main_args(l));
  const NDArray &expected = l.fixture.at("expected");
  EXPECT_EQ(tensor_of(out).shape(), expected.shape());
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "mlp");
}

TEST(RelayModels, MlpTakesAnyBatchSize) {
  // x is Tensor[(?, 16)]: one row of the fixture's batch gives that row's result.
  auto l = load_model("mlp");
  Value out = run_main(l.module, main_args(l, {{"x", tensor_value(row_of(l.fixture.at("x"), 2))}}));
  const NDArray &expected = l.fixture.at("expected");
  expect_close(tensor_of(out), row_of(expected, 2), expected.data<float>() + 2 * 10, kAtol, kRtol,
               "mlp row 2");
}

TEST(RelayModels, CnnEqualsPyTorch) {
  auto l = load_model("cnn");
  Value out = run_main(l.module, main_args(l));
  const NDArray &expected = l.fixture.at("expected");
  EXPECT_EQ(tensor_of(out).shape(), expected.shape());
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "cnn");
}

TEST(RelayModels, LstmOverAListEqualsTorchLstm) {
  auto l = load_model("lstm");
  Value out = run_main(l.module, main_args(l, {{"xs", testing::lstm_sequence(l)}}));
  const NDArray &expected = l.fixture.at("expected");
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "lstm h_T");
}

TEST(RelayModels, TreeLstmOfTheRelayPaperEqualsPerNodePyTorch) {
  auto l = load_model("treelstm");
  size_t trees = 0;
  Value out = run_main(l.module, main_args(l, {{"trees", testing::treelstm_trees(l, &trees)}}));
  const NDArray &expected = l.fixture.at("expected");  // [trees, H], computed in float64
  const int64_t h = expected.shape()[1];
  Value list = out;
  for (size_t i = 0; i < trees; ++i) {
    const auto *cons = list->as<ADTValue>();
    ASSERT_TRUE(cons != nullptr && cons->fields.size() == 2)
        << "the result list ends after " << i << " trees";
    const NDArray &root = tensor_of(cons->fields[0]);
    EXPECT_EQ(root.shape(), (Shape{1, h}));
    expect_close(root, row_of(expected, static_cast<int64_t>(i)), expected.data<float>() + i * h, kAtol,
                 kRtol, "tree " + std::to_string(i));
    list = cons->fields[1];
  }
  EXPECT_TRUE(list->as<ADTValue>() && list->as<ADTValue>()->fields.empty()) << "more results than trees";
}

}  // namespace
}  // namespace grove::relay
