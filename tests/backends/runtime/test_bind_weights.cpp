// Binding size variables from a weight file's shapes, and printing size expressions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/runtime/BindWeights.h"
#include "tests/backends/runtime/BindWeightsFixtures.h"

namespace grove {
namespace {

using ilir::Expr;
using ilir::TensorKind;
using ::testing::ElementsAre;
using ::testing::Pair;

using bind_weights_fixtures::size;
using bind_weights_fixtures::treelstm;

Weights treelstm_weights(int64_t H, int64_t D, int64_t V) {
  Weights w;
  w["emb"] = Tensor({V, D});
  w["W_iou"] = Tensor({3 * H, D});
  w["U_iou"] = Tensor({3 * H, 2 * H});
  w["b_iou"] = Tensor({3 * H});
  w["U_f"] = Tensor({2 * H, 2 * H});
  w["b_f"] = Tensor({H});
  return w;
}

TEST(BindWeights, BindsEverySizeOfTheTreeLstm) {
  EXPECT_THAT(bind_weights(treelstm(), treelstm_weights(256, 300, 21701), "w.safetensors"),
              ElementsAre(Pair("D", 300), Pair("H", 256), Pair("V", 21701)));
  EXPECT_THAT(bind_weights(treelstm(), treelstm_weights(1, 1, 1), "w.safetensors"),
              ElementsAre(Pair("D", 1), Pair("H", 1), Pair("V", 1)));
}

TEST(BindWeights, SolvesOffsetsAndConstantDims) {
  Expr H = size("H");
  ilir::Program p;
  p.name = "m";
  p.size_vars = {"H"};
  p.tensors = {{"w", TensorKind::Param, {H + 1, 3}}, {"v", TensorKind::Param, {2 * H - 1}}};
  Weights w;
  w["w"] = Tensor({9, 3});
  w["v"] = Tensor({15});
  EXPECT_THAT(bind_weights(p, w, "w.safetensors"), ElementsAre(Pair("H", 8)));
}

TEST(BindWeights, SolvesSizesThatDependOnEachOther) {
  // H can be solved from `a` only after `b` has given D: the binder repeats until nothing changes.
  Expr H = size("H"), D = size("D");
  ilir::Program p;
  p.name = "m";
  p.size_vars = {"H", "D"};
  p.tensors = {{"a", TensorKind::Param, {H + D}}, {"b", TensorKind::Param, {2 * D}}};
  Weights w;
  w["a"] = Tensor({10});
  w["b"] = Tensor({6});
  EXPECT_THAT(bind_weights(p, w, "w.safetensors"), ElementsAre(Pair("D", 3), Pair("H", 7)));
}

TEST(BindWeights, ScalarsAndEmptyModels) {
  ilir::Program p;
  p.name = "m";
  p.tensors = {{"scale", TensorKind::Param, {}}};
  Weights w;
  w["scale"] = Tensor(std::vector<int64_t>{});
  EXPECT_TRUE(bind_weights(p, w, "w.safetensors").empty());
}

TEST(SizeExprString, PrintsSizesCompactly) {
  Expr H = size("H"), D = size("D");
  EXPECT_EQ(size_expr_string(H), "H");
  EXPECT_EQ(size_expr_string(Expr(4)), "4");
  EXPECT_EQ(size_expr_string(3 * H), "3H");
  EXPECT_EQ(size_expr_string(H * 2), "2H");
  EXPECT_EQ(size_expr_string(H + 1), "H + 1");
  EXPECT_EQ(size_expr_string(H - 1), "H - 1");
  EXPECT_EQ(size_expr_string(H - (D + 1)), "H - (D + 1)");
  EXPECT_EQ(size_expr_string(3 * (H + 1)), "3(H + 1)");
  EXPECT_EQ(size_expr_string(H * D), "H*D");
  EXPECT_EQ(size_expr_string(2 * H * D), "2H*D");
  EXPECT_EQ(size_expr_string(3 * (2 * H)), "3*2H");
  EXPECT_EQ(size_expr_string(2 * H + D), "2H + D");
}

}  // namespace
}  // namespace grove
