// The epoch loop over a GradientModel (BagModel.h, exact gradients): the whole loss's gradient through
// model and head against finite differences, learning a separable task, the same seed giving
// bit-identical weights, a resumed run equal to the uninterrupted one, checkpoints, early stopping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"
#include "tests/training/BagModel.h"
#include "training/Random.h"
#include "training/Trainer.h"

namespace grove::training {
namespace {

using grove::testing::BagModel;
using grove::testing::TempDir;

constexpr int64_t kVocab = 12, kDim = 4, kHidden = 6;

Weights bag_weights(uint64_t seed) {
  Weights w;
  HashStream words(seed);
  auto fill = [&](const std::string &name, std::vector<int64_t> shape, double bound) {
    Tensor t(std::move(shape));
    for (float &v : t.data) v = static_cast<float>((2 * unit_double(words.next()) - 1) * bound);
    w[name] = std::move(t);
  };
  fill("W", {kHidden, kDim}, 0.5);
  fill("b", {kHidden}, 0.1);
  fill("emb", {kVocab, kDim}, 0.5);
  return w;
}

// Sentiment by word: tokens 0-3 are negative, 4-7 neutral, 8-11 positive; a node's label is the
// sign of its words' sum (0 negative, 2 neutral, 4 positive).
LabelledTrees synthetic(int64_t count, uint64_t seed) {
  LabelledTrees set;
  HashStream words(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int leaves = 2 + static_cast<int>(below(words.next(), 4));
    std::vector<int32_t> tokens;
    for (int l = 0; l < leaves; ++l) tokens.push_back(static_cast<int32_t>(below(words.next(), kVocab)));
    // A left-branching tree in post-order: leaf 0, leaf 1, (0 1), leaf 2, ((0 1) 2), ...
    std::vector<int32_t> parent, token, score;
    auto polarity = [](int32_t t) { return t < 4 ? -1 : (t < 8 ? 0 : 1); };
    parent.push_back(-1);
    token.push_back(tokens[0]);
    score.push_back(polarity(tokens[0]));
    int32_t top = 0;
    for (int l = 1; l < leaves; ++l) {
      const auto leaf = static_cast<int32_t>(token.size());
      parent.push_back(-1);
      token.push_back(tokens[l]);
      score.push_back(polarity(tokens[l]));
      const auto node = static_cast<int32_t>(token.size());
      parent.push_back(-1);
      token.push_back(-1);
      score.push_back(score[top] + score[leaf]);
      parent[top] = node;
      parent[leaf] = node;
      top = node;
    }
    Tree tree = tree_from_parents(parent, token);
    std::vector<int32_t> labels;
    for (int32_t s : score) labels.push_back(s < 0 ? 0 : (s == 0 ? 2 : 4));
    set.trees.push_back(std::move(tree));
    set.labels.push_back(std::move(labels));
  }
  return set;
}

TrainerOptions options() {
  TrainerOptions o;
  o.epochs = 3;
  o.batch = 8;
  o.seed = 11;
  o.dropout = 0.2;
  o.optimizer.kind = OptimizerKind::Adagrad;
  o.optimizer.lr = 0.1;
  o.optimizer.emb_lr = 0.2;
  o.optimizer.weight_decay = 1e-4;
  o.optimizer.clip = 5.0;
  return o;
}

TEST(Trainer, SyntheticTreesAreInPostOrder) {
  LabelledTrees set = synthetic(20, 1);
  for (const Tree &t : set.trees) {
    EXPECT_EQ(t.root, t.size() - 1);
    for (int32_t n = 0; n < t.size(); ++n)
      for (int32_t c = 0; c < t.num_children(n); ++c) EXPECT_LT(t.child(n, c), n);
  }
}

// The model's gradient, joined with the head's as the trainer joins them, against central
// differences of the head's loss in every model parameter.
TEST(Trainer, ModelAndHeadGradientMatchFiniteDifferences) {
  BagModel model(kVocab, kDim, kHidden);
  Weights w = bag_weights(3), head = init_head(kHidden, 5, 4);
  LabelledTrees set = synthetic(5, 2);
  auto loss = [&](const Weights &weights) {
    model.set_weights(weights);
    const NodeStates &s = model.forward(set.trees);
    return head_loss(s, set.trees, set.labels, head, {}, 1);
  };
  HeadResult r = loss(w);
  Gradients g = model.backward(r.d_rows);
  const float eps = 1e-3f;
  auto check = [&](const std::string &name, int64_t i, double analytic) {
    Weights up = w, down = w;
    up[name].data[i] += eps;
    down[name].data[i] -= eps;
    const double numeric = (loss(up).loss - loss(down).loss) /
                           (static_cast<double>(up[name].data[i]) - static_cast<double>(down[name].data[i]));
    EXPECT_NEAR(analytic, numeric, 2e-5) << name << "[" << i << "]";
  };
  for (const std::string name : {"W", "b"})
    for (int64_t i = 0; i < w[name].size(); ++i) check(name, i, g.dense.at(name).data[i]);
  std::vector<float> dense_emb(kVocab * kDim, 0.0f);
  for (size_t r2 = 0; r2 < g.embedding_rows.size(); ++r2)
    for (int64_t k = 0; k < kDim; ++k)
      dense_emb[g.embedding_rows[r2] * kDim + k] = g.embedding_grad.data[r2 * kDim + k];
  for (int64_t i = 0; i < kVocab * kDim; ++i) check("emb", i, dense_emb[i]);
}

TEST(Trainer, LearnsASeparableTask) {
  BagModel model(kVocab, kDim, kHidden);
  TrainerOptions o = options();
  o.epochs = 15;
  o.dropout = 0.0;
  Trainer trainer(model, bag_weights(1), init_head(kHidden, 5, 1), o);
  LabelledTrees train = synthetic(200, 5), dev = synthetic(50, 6);
  const Accuracy before = trainer.evaluate(dev);
  std::vector<EpochReport> reports = trainer.train(train, dev);
  ASSERT_EQ(reports.size(), 15u);
  EXPECT_LT(reports.back().train_loss, 0.6 * reports.front().train_loss);
  EXPECT_GT(reports.back().dev.all_nodes(), 0.8);
  EXPECT_GT(reports.back().dev.root(), before.root());
  EXPECT_EQ(reports.back().dev.roots, 50);
  EXPECT_GT(reports.back().dev.binary, 0);
  EXPECT_GT(reports.back().sentences_per_s, 0.0);
  EXPECT_EQ(trainer.optimizer().steps(), 15 * 25);
}

TEST(Trainer, SameSeedGivesBitIdenticalWeights) {
  LabelledTrees train = synthetic(60, 7), dev = synthetic(10, 8);
  auto run = [&](uint64_t seed) {
    BagModel model(kVocab, kDim, kHidden);
    TrainerOptions o = options();
    o.seed = seed;
    Trainer trainer(model, bag_weights(1), init_head(kHidden, 5, 1), o);
    trainer.train(train, dev);
    return std::make_pair(trainer.weights(), trainer.head());
  };
  auto a = run(11), b = run(11), c = run(12);
  for (const auto &[name, t] : a.first) EXPECT_EQ(t.data, b.first.at(name).data) << name;
  EXPECT_EQ(a.second.at(kHeadWeight).data, b.second.at(kHeadWeight).data);
  EXPECT_NE(a.first.at("W").data, c.first.at("W").data);
}

TEST(Trainer, ResumedRunEqualsTheUninterruptedOne) {
  for (OptimizerKind kind : {OptimizerKind::Adagrad, OptimizerKind::Adam, OptimizerKind::Sgd}) {
    TempDir dir;
    LabelledTrees train = synthetic(50, 9), dev = synthetic(12, 10);
    TrainerOptions o = options();
    o.optimizer.kind = kind;
    o.optimizer.embedding_same = kind == OptimizerKind::Adam;
    // Uninterrupted: 3 epochs.
    BagModel whole_model(kVocab, kDim, kHidden);
    Trainer whole(whole_model, bag_weights(1), init_head(kHidden, 5, 1), o);
    whole.train(train, dev);
    // Interrupted after epoch 2 (its last checkpoint), resumed by a fresh trainer to epoch 3.
    TrainerOptions first = o;
    first.epochs = 2;
    first.out = dir.file("");
    BagModel m1(kVocab, kDim, kHidden);
    Trainer part(m1, bag_weights(1), init_head(kHidden, 5, 1), first);
    part.train(train, dev);
    BagModel m2(kVocab, kDim, kHidden);
    Trainer resumed(m2, bag_weights(99), init_head(kHidden, 5, 99), o);
    resumed.resume(read_checkpoint(dir.file("last.safetensors")), "last.safetensors");
    EXPECT_EQ(resumed.state().epoch, 2);
    std::vector<EpochReport> rest = resumed.train(train, dev);
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].epoch, 3);
    for (const auto &[name, t] : whole.weights()) EXPECT_EQ(t.data, resumed.weights().at(name).data) << name;
    EXPECT_EQ(whole.head().at(kHeadWeight).data, resumed.head().at(kHeadWeight).data);
    EXPECT_EQ(whole.optimizer().steps(), resumed.optimizer().steps());
  }
}

TEST(Trainer, CheckpointsBestAndLast) {
  TempDir dir;
  LabelledTrees train = synthetic(40, 3), dev = synthetic(10, 4);
  TrainerOptions o = options();
  o.out = dir.file("");
  BagModel model(kVocab, kDim, kHidden);
  Trainer trainer(model, bag_weights(1), init_head(kHidden, 5, 1), o);
  std::vector<EpochReport> reports = trainer.train(train, dev);
  EXPECT_TRUE(reports[0].best);
  Checkpoint last = read_checkpoint(dir.file("last.safetensors"));
  EXPECT_EQ(last.trainer.epoch, 3);
  EXPECT_EQ(last.model.at("W").data, trainer.weights().at("W").data);
  EXPECT_EQ(last.head.at(kHeadBias).data, trainer.head().at(kHeadBias).data);
  EXPECT_TRUE(last.optimizer.count("optimizer.adagrad.W"));
  EXPECT_FALSE(last.optimizer.count("optimizer.adagrad.emb"));  // the embedding by plain SGD
  Checkpoint best = read_checkpoint(dir.file("best.safetensors"));
  EXPECT_EQ(best.trainer.epoch, best.trainer.best_epoch);
  EXPECT_EQ(best.trainer.best_correct, last.trainer.best_correct);
  // A checkpoint is never written over an input.
  TrainerOptions over = o;
  over.inputs = {dir.file("last.safetensors")};
  BagModel m2(kVocab, kDim, kHidden);
  Trainer refused(m2, bag_weights(1), init_head(kHidden, 5, 1), over);
  EXPECT_THAT(grove::testing::user_error_of([&] { refused.train(train, dev); }),
              ::testing::HasSubstr("it is the input file"));
}

TEST(Trainer, EarlyStoppingAfterPatience) {
  LabelledTrees train = synthetic(30, 3), dev = synthetic(10, 4);
  TrainerOptions o = options();
  o.epochs = 50;
  o.patience = 2;
  o.optimizer.lr = 0.0;  // nothing improves after the first epoch
  o.optimizer.emb_lr = 0.0;
  BagModel model(kVocab, kDim, kHidden);
  Trainer trainer(model, bag_weights(1), init_head(kHidden, 5, 1), o);
  std::vector<EpochReport> reports = trainer.train(train, dev);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_TRUE(reports[0].best);
  EXPECT_EQ(trainer.state().bad_epochs, 2);
}

TEST(Trainer, ShuffleIsAPermutationPerEpoch) {
  std::vector<int64_t> a = shuffled_order(100, 1, 1), b = shuffled_order(100, 1, 2);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, shuffled_order(100, 1, 1));
  // Fixed values: the generator is platform-independent.
  EXPECT_EQ(shuffled_order(5, 7, 3), shuffled_order(5, 7, 3));
}

TEST(Trainer, LabelsBeyondTheHeadsClasses) {
  LabelledTrees train = synthetic(5, 3);
  BagModel model(kVocab, kDim, kHidden);
  Trainer trainer(model, bag_weights(1), init_head(kHidden, 3, 1), options());
  EXPECT_THAT(grove::testing::user_error_of([&] { trainer.train(train, {}); }),
              ::testing::HasSubstr("is not one of the head's 3 classes"));
}

}  // namespace
}  // namespace grove::training
