// Every error of the inspector, matched on its message: trees that are not trees, arities the model
// does not take, bad tokens.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/runtime/Inspector.h"
#include "datasets/Generators.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using ::testing::HasSubstr;

// A tree from per-node child lists; leaves get token 1 unless `tokens` says otherwise.
Tree make_tree(const std::vector<std::vector<int32_t>> &children, int32_t root,
               std::vector<int32_t> tokens = {}) {
  Tree tree;
  tree.child_begin.push_back(0);
  for (size_t v = 0; v < children.size(); ++v) {
    tree.token.push_back(tokens.empty() ? (children[v].empty() ? 1 : -1) : tokens[v]);
    tree.children.insert(tree.children.end(), children[v].begin(), children[v].end());
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
  }
  tree.root = root;
  return tree;
}

InspectorOptions options(int32_t min_children = 2, int32_t max_children = 2, int64_t vocab_size = -1,
                         int64_t first_tree_number = 1) {
  InspectorOptions result;
  result.arity = {min_children, max_children};
  result.vocab_size = vocab_size;
  result.first_tree_number = first_tree_number;
  return result;
}

std::string error_of(const std::vector<Tree> &trees, const InspectorOptions &opts) {
  return grove::testing::user_error_of([&] { linearize(trees, opts); });
}

const Tree kGood = make_tree({{}, {}, {0, 1}}, 2);

TEST(InspectorErrors, ChildOutOfRange) {
  EXPECT_EQ(error_of({kGood, make_tree({{}, {}, {0, 5}}, 2)}, options()),
            "tree 2: node 2 has child 5, which is out of range: the tree has 3 nodes");
  EXPECT_THAT(error_of({make_tree({{}, {}, {-1, 1}}, 2)}, options()),
              HasSubstr("tree 1: node 2 has child -1"));
}

TEST(InspectorErrors, SharedChild) {
  // Node 0 hangs under both node 2 and node 3.
  EXPECT_EQ(
      error_of({make_tree({{}, {}, {0, 1}, {2, 0}}, 3)}, options()),
      "tree 1: node 0 is reached twice: it is a child of both node 2 and node 3; a node has one parent");
}

TEST(InspectorErrors, RepeatedChild) {
  EXPECT_EQ(
      error_of({make_tree({{}, {0, 0}}, 1)}, options()),
      "tree 1: node 0 is reached twice: node 1 lists it as a child more than once; a node has one parent");
}

TEST(InspectorErrors, Cycle) {
  EXPECT_EQ(error_of({make_tree({{}, {0, 2}, {1, 0}}, 2)}, options()),
            "tree 1: node 2 is reached twice: node 1 lists it as a child but descends from it (a cycle)");
  EXPECT_EQ(error_of({make_tree({{}, {0, 1}}, 1)}, options()),
            "tree 1: node 1 is reached twice: it lists itself as a child (a cycle)");
}

TEST(InspectorErrors, Unreachable) {
  EXPECT_EQ(error_of({make_tree({{}, {}, {0, 1}, {}}, 2)}, options()),
            "tree 1: node 3 is not reachable from the root (node 2)");
  EXPECT_THAT(error_of({make_tree({{}, {}, {0, 1}}, 0)}, options()),
              HasSubstr("tree 1: node 1 is not reachable from the root (node 0)"));
}

TEST(InspectorErrors, Arity) {
  Tree wide = make_tree({{}, {}, {}, {}, {}, {1, 2, 3}, {0, 5, 4}}, 6);
  EXPECT_EQ(error_of({wide}, options(2, 2, -1, 12)), "tree 12: node 5 has 3 children; this model takes 2");
  EXPECT_EQ(error_of({kGood, make_tree({{}, {}, {}, {}, {}, {0, 1, 2, 3, 4}}, 5)}, options(1, 4, -1, 10)),
            "tree 11: node 5 has 5 children; this model takes 1 to 4");
  EXPECT_EQ(error_of({unary_chain(3, 5)}, options()), "tree 1: node 1 has 1 children; this model takes 2");
}

TEST(InspectorErrors, NegativeLeafToken) {
  EXPECT_EQ(error_of({make_tree({{}, {}, {0, 1}}, 2, {4, -1, -1})}, options()),
            "tree 1, node 1: leaf token -1 is negative; a leaf's token must be >= 0");
}

TEST(InspectorErrors, TokenOutOfRange) {
  std::vector<int32_t> tokens(9, 1);
  tokens[7] = 30000;
  tokens[8] = -1;
  Tree third = make_tree({{}, {}, {}, {}, {}, {}, {}, {}, {0, 1, 2, 3, 4, 5, 6, 7}}, 8, tokens);
  EXPECT_EQ(error_of({kGood, kGood, third}, options(1, 8, 21702)),
            "tree 3, node 7: token 30000 is out of range: the vocabulary has 21702 entries");
  // Without a vocabulary size, any token >= 0 goes.
  EXPECT_NO_THROW(linearize(std::vector<Tree>{third}, options(1, 8)));
}

TEST(InspectorErrors, InternalNodeWithToken) {
  EXPECT_EQ(error_of({make_tree({{}, {}, {0, 1}}, 2, {1, 1, 4})}, options()),
            "tree 1, node 2: internal node has token 4; internal nodes must have token -1");
}

TEST(InspectorErrors, EmptyTree) {
  EXPECT_EQ(error_of({kGood, Tree{}}, options()),
            "tree 2: the tree is empty (0 nodes); a tree has at least one node");
}

TEST(InspectorErrors, MalformedArrays) {
  Tree short_begin = kGood;
  short_begin.child_begin.pop_back();
  EXPECT_EQ(error_of({short_begin}, options()),
            "tree 1: malformed tree: child_begin has 3 entries; expected 4 (one more than the 3 nodes)");
  Tree decreasing = kGood;
  decreasing.child_begin = {0, 1, 0, 2};
  EXPECT_THAT(error_of({decreasing}, options()),
              HasSubstr("tree 1: malformed tree: child_begin[2] = 0 is less than child_begin[1] = 1"));
  Tree extra = kGood;
  extra.children.push_back(0);
  EXPECT_THAT(error_of({extra}, options()),
              HasSubstr("tree 1: malformed tree: child_begin[3] = 2 but there are 3 child entries"));
  Tree bad_root = kGood;
  bad_root.root = 3;
  EXPECT_EQ(error_of({bad_root}, options()), "tree 1: root 3 is out of range: the tree has 3 nodes");
}

TEST(InspectorErrors, DeepChainErrorsAtTheBottom) {
  Tree chain = unary_chain(1000000, 5);
  chain.token[0] = 9;
  EXPECT_EQ(error_of({chain}, options(1, 1, 5, 7)),
            "tree 7, node 0: token 9 is out of range: the vocabulary has 5 entries");
  Tree binary = binary_chain(500000, 5);
  binary.children[0] = 999998;  // the first internal node points back at the root
  EXPECT_THAT(error_of({binary}, options()),
              HasSubstr("tree 1: node 999998 is reached twice: node 2 lists it"));
}

}  // namespace
}  // namespace grove
