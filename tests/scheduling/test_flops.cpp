// FLOP counts from the ILIR (tools/Flops.h) against hand counts of docs/MODELS.md's products (the
// convention of experiments/peers/flops.py: 2·M·K per matrix–vector product per node), and against
// the peers' own count on the SST test trees.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "tools/Flops.h"

namespace grove::tool {
namespace {

ilir::Program model(const std::string &stem) {
  return dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/" + stem + ".grove");
}

TEST(NodeFlops, TreeFCIsOneProductOfH_By2H) {
  NodeFlops f = node_flops(model("treefc"), {{"H", 8}, {"V", 10}});
  EXPECT_EQ(f.leaf, 0);                 // an embedding lookup
  EXPECT_EQ(f.internal, 2.0 * 8 * 16);  // W [H, 2H] · [h_l; h_r]
  EXPECT_EQ(f.internal_per_child, 0);
}

TEST(NodeFlops, TreeLSTMCountsW_iouAtLeavesAndU_iouU_fInside) {
  NodeFlops f = node_flops(model("treelstm"), {{"H", 8}, {"D", 12}, {"V", 10}});
  EXPECT_EQ(f.leaf, 2.0 * 24 * 12);                      // W_iou [3H, D] · x
  EXPECT_EQ(f.internal, 2.0 * 24 * 16 + 2.0 * 16 * 16);  // U_iou [3H, 2H], U_f [2H, 2H] · [h_l; h_r]
  EXPECT_EQ(f.internal_per_child, 0);
}

TEST(NodeFlops, ChildSumTreeLSTMCountsOneForgetProductPerChild) {
  NodeFlops f = node_flops(model("childsum_treelstm"), {{"H", 8}, {"D", 8}, {"V", 10}});
  EXPECT_EQ(f.leaf, 2.0 * 24 * 8);               // W_iou x
  EXPECT_EQ(f.internal, 2.0 * 24 * 8);           // U_iou t (t = Σ h_k is elementwise)
  EXPECT_EQ(f.internal_per_child, 2.0 * 8 * 8);  // U_f h_k for every child k
  EXPECT_EQ(f.of_node(3), 2.0 * 24 * 8 + 3 * 2.0 * 8 * 8);
}

TEST(NodeFlops, TreeGRUAndMVRNNMatchMODELS) {
  NodeFlops gru = node_flops(model("treegru"), {{"H", 8}, {"D", 8}, {"V", 10}});
  EXPECT_EQ(gru.leaf, 2.0 * 8 * 8);       // W_x x
  EXPECT_EQ(gru.internal, 16.0 * 8 * 8);  // U_z 4H², U_r 8H², U_h 4H²
  NodeFlops mv = node_flops(model("mvrnn"), {{"H", 8}, {"V", 10}});
  EXPECT_EQ(mv.leaf, 0);
  EXPECT_EQ(mv.internal, 8.0 * 8 * 8 + 4.0 * 8 * 8 * 8);  // B a, A b, W: 8H²; W_M [A; B]: 4H³
}

TEST(TreesFlops, SumsLeavesAndInternalNodesOfEveryTree) {
  NodeFlops lstm = node_flops(model("treelstm"), {{"H", 8}, {"D", 8}, {"V", 10}});
  std::vector<Tree> perfect{perfect_binary_tree(2, 10), perfect_binary_tree(0, 10)};
  EXPECT_EQ(trees_flops(lstm, perfect), 5 * 384.0 + 3 * 1280.0);  // 4 + 1 leaves, 3 internal nodes
  NodeFlops childsum = node_flops(model("childsum_treelstm"), {{"H", 8}, {"D", 8}, {"V", 10}});
  std::vector<Tree> chain{unary_chain(3, 10)};  // a leaf under two one-child nodes
  EXPECT_EQ(trees_flops(childsum, chain), 384.0 + 2 * (384.0 + 128.0));
}

// experiments/peers/results/treelstm-sst-test100.csv: 306,891,980 FLOPs per batch of 10 trees.
TEST(TreesFlops, AgreesWithThePeersCountOnSst) {
  Vocab vocab = Vocab::load(GROVE_SST_DIR "/vocab.txt");
  std::vector<Tree> trees = read_ptb_trees(GROVE_SST_DIR "/test.txt", &vocab);
  trees.resize(100);
  NodeFlops f = node_flops(model("treelstm"), {{"H", 256}, {"D", 256}, {"V", vocab.size()}});
  EXPECT_NEAR(trees_flops(f, trees) / 10, 306891980.0, 1.0);
}

}  // namespace
}  // namespace grove::tool
