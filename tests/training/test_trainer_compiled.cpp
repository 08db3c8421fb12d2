// The trainer over the compiled training programs (backends/cpu/TrainableModel.h) against the same
// trainer over the independent reference gradients: from the same weights, seed and batches, the
// per-epoch training loss and dev accuracies agree (fp32 against double) over SST trees.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/TrainableModel.h"
#include "datasets/PTBReader.h"
#include "frontend/dsl/Frontend.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceGradients.h"
#include "training/Trainer.h"

namespace grove::training {
namespace {

using reference::ModelKind;

LabelledTrees sst(int64_t skip, int64_t count) {
  static const Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  static const LabelledTrees all = read_labelled_ptb_trees(GROVE_SST_DIR "/test.txt", &vocab, 5);
  LabelledTrees set;
  set.trees.assign(all.trees.begin() + skip, all.trees.begin() + skip + count);
  set.labels.assign(all.labels.begin() + skip, all.labels.begin() + skip + count);
  return set;
}

TEST(TrainerCompiled, AgreesWithTheReferenceGradients) {
  for (ModelKind kind : {ModelKind::TreeLSTM, ModelKind::TreeFC}) {
    const int64_t H = 16, D = kind == ModelKind::TreeFC ? 16 : 12, V = 21702;
    const Weights start = reference::random_model_weights(kind, H, D, V, 3);
    ilir::Program program = dsl::parse_model_file(
        fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(kind)));
    std::unique_ptr<cpu::TrainableModel> compiled = cpu::TrainableModel::compile(program, start, {});
    reference::ReferenceGradientModel ref(kind, H, D, V);
    TrainerOptions o;
    o.epochs = 2;
    o.batch = 25;
    o.seed = 4;
    o.dropout = 0.5;
    o.optimizer.weight_decay = 1e-4;
    LabelledTrees train = sst(0, 200), dev = sst(200, 100);
    Trainer a(*compiled, start, init_head(H, 5, 1), o), b(ref, start, init_head(H, 5, 1), o);
    std::vector<EpochReport> ra = a.train(train, dev), rb = b.train(train, dev);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t e = 0; e < ra.size(); ++e) {
      EXPECT_NEAR(ra[e].train_loss, rb[e].train_loss, 1e-4 * rb[e].train_loss) << reference::model_name(kind);
      // A prediction may flip where two classes are within rounding: allow one tree or node.
      EXPECT_NEAR(ra[e].dev.roots_correct, rb[e].dev.roots_correct, 1) << reference::model_name(kind);
      EXPECT_NEAR(ra[e].dev.nodes_correct, rb[e].dev.nodes_correct, 2) << reference::model_name(kind);
      std::printf("%s epoch %zu: loss %.6f / %.6f, root %.3f / %.3f, binary %.3f / %.3f, nodes %.3f / %.3f\n",
                  reference::model_name(kind).c_str(), e + 1, ra[e].train_loss, rb[e].train_loss,
                  ra[e].dev.root(), rb[e].dev.root(), ra[e].dev.binary_root(), rb[e].dev.binary_root(),
                  ra[e].dev.all_nodes(), rb[e].dev.all_nodes());
    }
  }
}

}  // namespace
}  // namespace grove::training
