// Checkpoints: a round trip keeps every tensor bit for bit and splits model, head and optimizer;
// the weight check takes a checkpoint as model weights (head.* and optimizer.* skipped); a checkpoint
// is never written over an input; a malformed trainer state is a user error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/runtime/BindWeights.h"
#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"
#include "tests/backends/runtime/BindWeightsFixtures.h"
#include "training/Checkpoint.h"
#include "training/Head.h"
#include "training/Optimizer.h"

namespace grove::training {
namespace {

using grove::testing::TempDir;
using grove::testing::user_error_of;

Weights treelstm_weights(int64_t h, int64_t d, int64_t v) {
  Weights w;
  auto fill = [&](const std::string &name, std::vector<int64_t> shape) {
    Tensor t(std::move(shape));
    for (int64_t i = 0; i < t.size(); ++i) t.data[i] = 0.001f * static_cast<float>(i % 997) - 0.3f;
    w[name] = std::move(t);
  };
  fill("emb", {v, d});
  fill("W_iou", {3 * h, d});
  fill("U_iou", {3 * h, 2 * h});
  fill("b_iou", {3 * h});
  fill("U_f", {2 * h, 2 * h});
  fill("b_f", {h});
  return w;
}

Checkpoint sample() {
  Checkpoint c;
  c.model = treelstm_weights(3, 4, 5);
  c.head = init_head(3, 5, 2);
  c.optimizer["optimizer.step"] = Tensor({2});
  c.optimizer["optimizer.step"].data = {0.0f, 17.0f};
  c.optimizer["optimizer.adagrad.b_f"] = Tensor({3});
  c.optimizer["optimizer.adagrad.b_f"].data = {0.1f, 1e-30f, 3.0f};
  c.trainer = {4, 3, 812, 1};
  return c;
}

TEST(Checkpoint, RoundTripIsBitIdentical) {
  TempDir dir;
  const Checkpoint c = sample();
  write_checkpoint(dir.file("c.safetensors"), c, {});
  Checkpoint back = read_checkpoint(dir.file("c.safetensors"));
  ASSERT_EQ(back.model.size(), c.model.size());
  for (const auto &[name, t] : c.model) {
    EXPECT_EQ(back.model.at(name).shape, t.shape) << name;
    EXPECT_EQ(back.model.at(name).data, t.data) << name;
  }
  EXPECT_EQ(back.head.at(kHeadWeight).data, c.head.at(kHeadWeight).data);
  EXPECT_EQ(back.head.at(kHeadBias).data, c.head.at(kHeadBias).data);
  EXPECT_EQ(back.optimizer.size(), 2u);
  EXPECT_EQ(back.optimizer.at("optimizer.adagrad.b_f").data, c.optimizer.at("optimizer.adagrad.b_f").data);
  EXPECT_EQ(back.trainer.epoch, 4);
  EXPECT_EQ(back.trainer.best_epoch, 3);
  EXPECT_EQ(back.trainer.best_correct, 812);
  EXPECT_EQ(back.trainer.bad_epochs, 1);
  // Nothing but the checkpoint in the directory: no temporary left behind.
  EXPECT_THAT(dir.entries(), ::testing::ElementsAre("c.safetensors"));
}

TEST(Checkpoint, WeightCheckTakesItAsModelWeights) {
  TempDir dir;
  write_checkpoint(dir.file("c.safetensors"), sample(), {});
  Weights all = read_safetensors(dir.file("c.safetensors"));
  EXPECT_TRUE(all.count("head.weight") && all.count("optimizer.trainer"));
  EXPECT_THAT(
      bind_weights(bind_weights_fixtures::treelstm(), all, "c.safetensors"),
      ::testing::ElementsAre(::testing::Pair("D", 4), ::testing::Pair("H", 3), ::testing::Pair("V", 5)));
  // Any other unknown tensor is still refused.
  all["extra"] = Tensor({1});
  EXPECT_THAT(user_error_of([&] { bind_weights(bind_weights_fixtures::treelstm(), all, "c.safetensors"); }),
              ::testing::HasSubstr("tensor 'extra' is not a parameter of model 'treelstm'"));
  EXPECT_TRUE(is_training_state("head.bias"));
  EXPECT_TRUE(is_training_state("optimizer.adam.emb.m"));
  EXPECT_FALSE(is_training_state("heads"));
}

TEST(Checkpoint, NeverOverAnInput) {
  TempDir dir;
  const std::string input = dir.file("init.safetensors");
  write_safetensors(input, treelstm_weights(3, 4, 5));
  const std::vector<std::string> inputs = {dir.file("train.txt"), input};
  EXPECT_EQ(user_error_of([&] { write_checkpoint(dir.file("./init.safetensors"), sample(), inputs); }),
            "cannot write checkpoint '" + dir.file("./init.safetensors") + "': it is the input file '" +
                input + "'; choose another --out directory");
  // The input is untouched.
  EXPECT_EQ(read_safetensors(input).count("head.weight"), 0u);
}

TEST(Checkpoint, TrainerStateErrors) {
  TempDir dir;
  write_safetensors(dir.file("w.safetensors"), treelstm_weights(3, 4, 5));
  EXPECT_EQ(
      user_error_of([&] { read_checkpoint(dir.file("w.safetensors")); }),
      dir.file("w.safetensors") +
          ": no trainer state ('optimizer.trainer' is missing); resume from a checkpoint grove train wrote");
  Weights bad = treelstm_weights(3, 4, 5);
  bad["optimizer.trainer"] = Tensor({4});
  bad["optimizer.trainer"].data = {1.5f, 0, 0, 0};
  write_safetensors(dir.file("b.safetensors"), bad);
  EXPECT_EQ(user_error_of([&] { read_checkpoint(dir.file("b.safetensors")); }),
            dir.file("b.safetensors") +
                ": tensor 'optimizer.trainer' is not a trainer state [epoch, best epoch, best correct, bad "
                "epochs]");
}

}  // namespace
}  // namespace grove::training
