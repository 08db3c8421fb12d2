// The example programs of models/relay against PyTorch: each program is parsed, type-checked and run
// by the reference interpreter on the inputs and weights of its fixture
// (models/relay/fixtures/make_fixtures.py), and its result compared with what PyTorch computed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "datasets/PTBReader.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"

namespace grove::relay {
namespace {

const std::string kModels = std::string(GROVE_SOURCE_DIR) + "/models/relay/";

struct Loaded {
  Module module;
  std::map<std::string, NDArray> fixture;
};

Loaded load(const std::string &name) {
  Loaded l{parse_relay_file(kModels + name + ".relay"),
           read_safetensors_arrays(kModels + "fixtures/" + name + ".safetensors")};
  infer_types(l.module);
  return l;
}

// The arguments of @main, by parameter name, from the fixture (or from `special` when given there).
std::vector<Value> main_args(const Loaded &l, const std::map<std::string, Value> &special = {}) {
  std::vector<Value> args;
  for (const Expr &p : l.module.find_function("main")->as<Function>()->params) {
    const std::string &name = p.as<Var>()->name_hint;
    if (auto it = special.find(name); it != special.end()) {
      args.push_back(it->second);
      continue;
    }
    auto it = l.fixture.find(name);
    EXPECT_NE(it, l.fixture.end()) << "the fixture has no " << name;
    args.push_back(tensor_value(it->second));
  }
  return args;
}

Value list_value(const Module &m, const std::vector<Value> &items) {
  Value list = adt_value(*m.find_constructor("Nil"), {});
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    list = adt_value(*m.find_constructor("Cons"), {*it, list});
  return list;
}

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
  Loaded l = load("mlp");
  Value out = run_main(l.module, main_args(l));
  const NDArray &expected = l.fixture.at("expected");
  EXPECT_EQ(tensor_of(out).shape(), expected.shape());
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "mlp");
}

TEST(RelayModels, MlpTakesAnyBatchSize) {
  // x is Tensor[(?, 16)]: one row of the fixture's batch gives that row's result.
  Loaded l = load("mlp");
  Value out = run_main(l.module, main_args(l, {{"x", tensor_value(row_of(l.fixture.at("x"), 2))}}));
  const NDArray &expected = l.fixture.at("expected");
  expect_close(tensor_of(out), row_of(expected, 2), expected.data<float>() + 2 * 10, kAtol, kRtol,
               "mlp row 2");
}

TEST(RelayModels, CnnEqualsPyTorch) {
  Loaded l = load("cnn");
  Value out = run_main(l.module, main_args(l));
  const NDArray &expected = l.fixture.at("expected");
  EXPECT_EQ(tensor_of(out).shape(), expected.shape());
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "cnn");
}

TEST(RelayModels, LstmOverAListEqualsTorchLstm) {
  Loaded l = load("lstm");
  const NDArray &xs = l.fixture.at("xs");  // [T, 1, D]
  std::vector<Value> steps;
  for (int64_t t = 0; t < xs.shape()[0]; ++t) {
    NDArray x(DType::Float32, {1, xs.shape()[2]});
    std::copy_n(xs.data<float>() + t * x.size(), x.size(), x.data<float>());
    steps.push_back(tensor_value(x));
  }
  Value out = run_main(l.module, main_args(l, {{"xs", list_value(l.module, steps)}}));
  const NDArray &expected = l.fixture.at("expected");
  expect_close(tensor_of(out), expected, expected.data<float>(), kAtol, kRtol, "lstm h_T");
}

// A PTB tree (post-order nodes) as a Tree[int32] value: Leaf(token) or Node(left, right).
Value tree_value(const Module &m, const Tree &tree) {
  std::vector<Value> node_values(tree.size());
  for (int32_t n = 0; n < tree.size(); ++n) {
    if (tree.num_children(n) == 0) {
      NDArray token(DType::Int32, {});
      token.data<int32_t>()[0] = tree.token[n];
      node_values[n] = adt_value(*m.find_constructor("Leaf"), {tensor_value(token)});
    } else {
      EXPECT_EQ(tree.num_children(n), 2) << "the fixture's trees are binary";
      node_values[n] = adt_value(*m.find_constructor("Node"),
                                 {node_values[tree.child(n, 0)], node_values[tree.child(n, 1)]});
    }
  }
  return node_values[tree.root];
}

TEST(RelayModels, TreeLstmOfTheRelayPaperEqualsPerNodePyTorch) {
  Loaded l = load("treelstm");
  std::vector<Tree> trees = read_ptb_trees(kModels + "fixtures/treelstm_trees.txt", nullptr);
  std::vector<Value> tree_values;
  for (const Tree &t : trees) tree_values.push_back(tree_value(l.module, t));
  Value out = run_main(l.module, main_args(l, {{"trees", list_value(l.module, tree_values)}}));
  const NDArray &expected = l.fixture.at("expected");  // [trees, H], computed in float64
  const int64_t h = expected.shape()[1];
  Value list = out;
  for (size_t i = 0; i < trees.size(); ++i) {
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
