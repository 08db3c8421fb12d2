// Weight files that do not fit the model: each mistake has its own message naming the tensor, the
// expected shape (in sizes and in numbers) and the shape found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/runtime/BindWeights.h"
#include "tests/UserError.h"
#include "tests/backends/runtime/BindWeightsFixtures.h"

namespace grove {
namespace {

using ilir::Expr;
using ilir::TensorKind;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

using bind_weights_fixtures::size;
using bind_weights_fixtures::treelstm;

Weights treelstm_weights() {
  const int64_t H = 256, D = 128, V = 100;
  Weights w;
  w["emb"] = Tensor({V, D});
  w["W_iou"] = Tensor({3 * H, D});
  w["U_iou"] = Tensor({3 * H, 2 * H});
  w["b_iou"] = Tensor({3 * H});
  w["U_f"] = Tensor({2 * H, 2 * H});
  w["b_f"] = Tensor({H});
  return w;
}

std::string bind_error(const ilir::Program &program, const Weights &weights) {
  return grove::testing::user_error_of([&] { bind_weights(program, weights, "model.safetensors"); });
}

TEST(BindWeightsErrors, MissingTensorShowsItsShapeInSizesAndNumbers) {
  Weights w = treelstm_weights();
  w.erase("U_f");
  EXPECT_THAT(bind_error(treelstm(), w),
              AllOf(HasSubstr("model.safetensors: missing tensor 'U_f'"),
                    HasSubstr("expects shape [2H, 2H] = [512, 512]"), Not(HasSubstr("also missing"))));
}

TEST(BindWeightsErrors, MissingTensorWhoseSizesAreOnlyPartlyKnown) {
  Weights w = treelstm_weights();
  w.erase("emb");  // the only tensor that gives V
  EXPECT_THAT(bind_error(treelstm(), w),
              HasSubstr("missing tensor 'emb' (the model expects shape [V, D] = [V, 128])"));
}

TEST(BindWeightsErrors, SeveralMissingTensors) {
  Weights w = treelstm_weights();
  w.erase("b_iou");
  w.erase("b_f");
  EXPECT_THAT(bind_error(treelstm(), w),
              AllOf(HasSubstr("missing tensor 'b_iou' (the model expects shape [3H] = [768])"),
                    HasSubstr("also missing: b_f")));
}

TEST(BindWeightsErrors, ExtraTensor) {
  Weights w = treelstm_weights();
  w["W_f"] = Tensor({256, 128});
  EXPECT_THAT(bind_error(treelstm(), w),
              AllOf(HasSubstr("model.safetensors: tensor 'W_f' is not a parameter of model 'treelstm'"),
                    HasSubstr("its parameters are: emb, W_iou, U_iou, b_iou, U_f, b_f")));
}

TEST(BindWeightsErrors, StateIsNotAParameter) {
  Weights w = treelstm_weights();
  w["h"] = Tensor({256});
  EXPECT_THAT(bind_error(treelstm(), w), HasSubstr("tensor 'h' is not a parameter of model 'treelstm'"));
}

TEST(BindWeightsErrors, WrongRank) {
  Weights w = treelstm_weights();
  w["W_iou"] = Tensor({768 * 128});
  EXPECT_THAT(bind_error(treelstm(), w),
              HasSubstr("model.safetensors: tensor 'W_iou' has shape [98304] (rank 1) but the model expects "
                        "shape [3H, D] (rank 2)"));
}

TEST(BindWeightsErrors, MismatchedDimension) {
  Weights w = treelstm_weights();
  w["U_iou"] = Tensor({768, 501});
  EXPECT_THAT(bind_error(treelstm(), w),
              HasSubstr("model.safetensors: tensor 'U_iou' has shape [768, 501] but the model expects shape "
                        "[3H, 2H] = [768, 512]"));
}

TEST(BindWeightsErrors, MismatchedConstantDimension) {
  Expr H = size("H");
  ilir::Program p;
  p.name = "m";
  p.size_vars = {"H"};
  p.tensors = {{"w", TensorKind::Param, {H, 3}}};
  Weights w;
  w["w"] = Tensor({5, 4});
  EXPECT_THAT(bind_error(p, w),
              HasSubstr("tensor 'w' has shape [5, 4] but the model expects shape [H, 3] = [5, 3]"));
}

TEST(BindWeightsErrors, SizeBoundInconsistently) {
  Weights w = treelstm_weights();
  w["b_f"] = Tensor({128});
  EXPECT_THAT(
      bind_error(treelstm(), w),
      AllOf(HasSubstr("model.safetensors: size H = 256 from tensor 'W_iou' but 128 from tensor 'b_f'"),
            HasSubstr("shape [128], the model expects shape [H] = [256]")));
  w = treelstm_weights();
  w["U_iou"] = Tensor({768, 500});
  EXPECT_THAT(bind_error(treelstm(), w),
              AllOf(HasSubstr("size H = 256 from tensor 'W_iou' but 250 from tensor 'U_iou'"),
                    HasSubstr("(shape [768, 500], the model expects shape [3H, 2H] = [768, 512])")));
}

TEST(BindWeightsErrors, DimensionNotAMultiple) {
  Weights w = treelstm_weights();
  w["W_iou"] = Tensor({770, 128});
  EXPECT_THAT(
      bind_error(treelstm(), w),
      HasSubstr("tensor 'W_iou' has shape [770, 128] but the model expects shape [3H, D] = [3H, 128]: "
                "dimension 0 is 770, which is not 3H for any H >= 1"));
  w["W_iou"] = Tensor({0, 128});
  EXPECT_THAT(bind_error(treelstm(), w), HasSubstr("dimension 0 is 0, which is not 3H for any H >= 1"));
}

TEST(BindWeightsErrors, SizeThatCannotBeSolved) {
  Expr H = size("H");
  ilir::Program p;
  p.name = "m";
  p.size_vars = {"H"};
  p.tensors = {{"w", TensorKind::Param, {H * H}}};
  Weights w;
  w["w"] = Tensor({16});
  EXPECT_THAT(bind_error(p, w),
              AllOf(HasSubstr("model.safetensors: cannot determine size H from the weights"),
                    HasSubstr("it appears in tensor 'w' dimension 0: H*H")));
}

TEST(BindWeightsErrors, SizeNoParameterUses) {
  Expr H = size("H"), K = size("K");
  ilir::Program p;
  p.name = "m";
  p.size_vars = {"H", "K"};
  p.tensors = {{"w", TensorKind::Param, {H}}, {"h", TensorKind::State, {K}}};
  Weights w;
  w["w"] = Tensor({16});
  EXPECT_THAT(bind_error(p, w),
              HasSubstr("cannot determine size K from the weights: no parameter's shape uses it"));
}

}  // namespace
}  // namespace grove
