// The tree generators reject arguments that give no tree, with a message naming the argument.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "datasets/Generators.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using grove::testing::user_error_of;

TEST(GeneratorErrors, TooSmall) {
  EXPECT_EQ(user_error_of([] { random_binary_tree(1, 0, 10); }),
            "random_binary_tree: num_leaves must be at least 1, got 0");
  EXPECT_EQ(user_error_of([] { random_binary_tree(1, 5, 0); }),
            "random_binary_tree: vocab_size must be at least 1, got 0");
  EXPECT_EQ(user_error_of([] { perfect_binary_tree(-1, 10); }),
            "perfect_binary_tree: height must be at least 0, got -1");
  EXPECT_EQ(user_error_of([] { binary_chain(0, 10); }), "binary_chain: num_leaves must be at least 1, got 0");
  EXPECT_EQ(user_error_of([] { unary_chain(-3, 10); }), "unary_chain: num_nodes must be at least 1, got -3");
  EXPECT_EQ(user_error_of([] { unary_chain(3, -1); }), "unary_chain: vocab_size must be at least 1, got -1");
  EXPECT_EQ(user_error_of([] { random_tree(1, 0, 2, 10); }),
            "random_tree: num_nodes must be at least 1, got 0");
  EXPECT_EQ(user_error_of([] { random_tree(1, 10, 0, 10); }),
            "random_tree: max_children must be at least 1, got 0");
}

TEST(GeneratorErrors, TooLarge) {
  EXPECT_EQ(user_error_of([] { perfect_binary_tree(31, 10); }),
            "perfect_binary_tree: height must be at most 30, got 31");
  EXPECT_EQ(user_error_of([] { binary_chain(1073741825, 10); }),
            "binary_chain: num_leaves must be at most 1073741824, got 1073741825");
  EXPECT_EQ(user_error_of([] { random_binary_tree(1, 1073741825, 10); }),
            "random_binary_tree: num_leaves must be at most 1073741824, got 1073741825");
}

}  // namespace
}  // namespace grove
