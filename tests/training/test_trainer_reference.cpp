// The trainer over the independent reference gradients (tests/reference/ReferenceGradients.h) of
// TreeLSTM and TreeFC on SST trees: the training loss falls, embedding rows no training tree reads stay
// bit-identical, the same seed gives the same weights, and a resumed run equals the uninterrupted one.
#include <gtest/gtest.h>

#include <set>

#include "datasets/PTBReader.h"
#include "tests/TestFiles.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceGradients.h"
#include "training/Trainer.h"

namespace grove::training {
namespace {

using reference::ModelKind;

// The first `count` trees of SST's test split after `skip`, with the SST vocabulary.
LabelledTrees sst(int64_t skip, int64_t count) {
  static const Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  static const LabelledTrees all = read_labelled_ptb_trees(GROVE_SST_DIR "/test.txt", &vocab, 5);
  LabelledTrees set;
  set.trees.assign(all.trees.begin() + skip, all.trees.begin() + skip + count);
  set.labels.assign(all.labels.begin() + skip, all.labels.begin() + skip + count);
  return set;
}

constexpr int64_t kH = 8, kD = 6, kV = 21702;

TrainerOptions recipe() {
  TrainerOptions o;
  o.epochs = 3;
  o.batch = 10;
  o.seed = 5;
  o.dropout = 0.5;
  o.optimizer.kind = OptimizerKind::Adagrad;
  o.optimizer.lr = 0.05;
  o.optimizer.emb_lr = 0.1;
  o.optimizer.weight_decay = 1e-4;
  return o;
}

Weights initial(ModelKind kind) {
  return reference::random_model_weights(kind, kH, kind == ModelKind::TreeFC ? kH : kD, kV, 3);
}

TEST(TrainerReference, TreeLstmLossFallsAndUnreadRowsStayBitIdentical) {
  reference::ReferenceGradientModel model(ModelKind::TreeLSTM, kH, kD, kV);
  const Weights start = initial(ModelKind::TreeLSTM);
  TrainerOptions o = recipe();
  o.dropout = 0.0;
  o.epochs = 4;
  Trainer trainer(model, start, init_head(kH, 5, 1), o);
  LabelledTrees train = sst(0, 60), dev = sst(60, 20);
  std::vector<EpochReport> reports = trainer.train(train, dev);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_LT(reports.back().train_loss, reports.front().train_loss);
  EXPECT_EQ(reports.back().dev.roots, 20);
  std::set<int32_t> read;
  for (const Tree &t : train.trees)
    for (int32_t token : t.token)
      if (token >= 0) read.insert(token);
  const Tensor &before = start.at("emb"), &after = trainer.weights().at("emb");
  int64_t moved = 0;
  for (int64_t row = 0; row < kV; ++row) {
    const bool same = std::equal(before.data.begin() + row * kD, before.data.begin() + (row + 1) * kD,
                                 after.data.begin() + row * kD);
    if (!read.count(static_cast<int32_t>(row))) {
      ASSERT_TRUE(same) << "row " << row << " no tree reads";
    } else {
      moved += !same;
    }
  }
  EXPECT_EQ(moved, static_cast<int64_t>(read.size()));
}

TEST(TrainerReference, ResumeAndSeedsGiveBitIdenticalWeights) {
  for (ModelKind kind : {ModelKind::TreeLSTM, ModelKind::TreeFC}) {
    grove::testing::TempDir dir;
    LabelledTrees train = sst(100, 30), dev = sst(130, 10);
    reference::ReferenceGradientModel m1(kind, kH, kind == ModelKind::TreeFC ? kH : kD, kV);
    Trainer whole(m1, initial(kind), init_head(kH, 5, 2), recipe());
    whole.train(train, dev);

    reference::ReferenceGradientModel m2(kind, kH, kind == ModelKind::TreeFC ? kH : kD, kV);
    Trainer same_seed(m2, initial(kind), init_head(kH, 5, 2), recipe());
    same_seed.train(train, dev);

    TrainerOptions first = recipe();
    first.epochs = 1;
    first.out = dir.file("");
    reference::ReferenceGradientModel m3(kind, kH, kind == ModelKind::TreeFC ? kH : kD, kV);
    Trainer part(m3, initial(kind), init_head(kH, 5, 2), first);
    part.train(train, dev);
    reference::ReferenceGradientModel m4(kind, kH, kind == ModelKind::TreeFC ? kH : kD, kV);
    Trainer resumed(m4, initial(kind), init_head(kH, 5, 2), recipe());
    resumed.resume(read_checkpoint(dir.file("last.safetensors")), "last.safetensors");
    resumed.train(train, dev);

    for (const auto &[name, t] : whole.weights()) {
      EXPECT_EQ(t.data, same_seed.weights().at(name).data) << reference::model_name(kind) << " " << name;
      EXPECT_EQ(t.data, resumed.weights().at(name).data) << reference::model_name(kind) << " " << name;
    }
    EXPECT_EQ(whole.head().at(kHeadWeight).data, resumed.head().at(kHeadWeight).data);
  }
}

}  // namespace
}  // namespace grove::training
