// grove's input trees as Relay values (relay/TreeValues.h): binary List[Tree[int32]] and any-arity
// List[Rose[int32]], from PTB text with and without a vocabulary, a 100,000-node chain, and every
// error (the parameter's type, the module's ADTs, a non-binary node).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/PTBReader.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TreeValues.h"
#include "frontend/relay/TypeInfer.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

constexpr char kList[] = "type List[A] { Cons(A, List[A]), Nil, }\n";
constexpr char kTree[] = "type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]), }\n";
constexpr char kRose[] = "type Rose[A] { Rose(A, List[Rose[A]]), }\n";

// @size counts a tree's nodes; @main maps it over the list. Both recurse once per node (the
// interpreter keeps its own stack, so a 100,000-deep tree is fine).
constexpr char kBinaryProgram[] = R"(
def @size(%t: Tree[int32]) -> int32 {
  match (%t) {
    Leaf(%w) => 1,
    Node(%l, %r) => add(1, add(@size(%l), @size(%r))),
  }
}
def @main(%trees: List[Tree[int32]]) -> List[int32] {
  match (%trees) {
    Cons(%t, %rest) => Cons(@size(%t), @main(%rest)),
    Nil => Nil,
  }
}
)";

constexpr char kRoseProgram[] = R"(
def @size(%t: Rose[int32]) -> int32 {
  match (%t) {
    Rose(%w, %children) => add(1, @sizes(%children)),
  }
}
def @sizes(%ts: List[Rose[int32]]) -> int32 {
  match (%ts) {
    Cons(%t, %rest) => add(@size(%t), @sizes(%rest)),
    Nil => 0,
  }
}
def @main(%trees: List[Rose[int32]]) -> List[int32] {
  match (%trees) {
    Cons(%t, %rest) => Cons(@size(%t), @main(%rest)),
    Nil => Nil,
  }
}
)";

Module typed_module(const std::string &text) {
  Module m = parse_module("#[version = \"0.0.5\"]\n" + text, "test.relay");
  infer_types(m);
  return m;
}

const Type &main_param_type(const Module &m) {
  return m.find_function("main")->as<Function>()->params[0].type();
}

std::vector<Tree> ptb(const std::string &text, const Vocab *vocab = nullptr) {
  return read_ptb_tree_text(text, vocab, "trees.txt");
}

TEST(TreeValues, BinaryTreesInFileOrderWithLeafTokens) {
  Module m = typed_module(std::string(kList) + kTree + kBinaryProgram);
  Value v = trees_to_value(m, main_param_type(m), ptb("(1 (2 3) (4 (5 4) (6 5)))\n(0 7)\n"));
  EXPECT_EQ(value_to_string(v), "Cons(Node(Leaf(3), Node(Leaf(4), Leaf(5))), Cons(Leaf(7), Nil))");
  EXPECT_EQ(value_to_string(run_main(m, {v})), "Cons(5, Cons(1, Nil))");
}

TEST(TreeValues, RoseTreesHoldEveryChildInOrderAndMinusOneAtInternalNodes) {
  Module m = typed_module(std::string(kList) + kRose + kRoseProgram);
  Value v = trees_to_value(m, main_param_type(m), ptb("(0 (0 3) (0 (0 4)) (0 5))\n"));
  EXPECT_EQ(
      value_to_string(v),
      "Cons(Rose(-1, Cons(Rose(3, Nil), Cons(Rose(-1, Cons(Rose(4, Nil), Nil)), Cons(Rose(5, Nil), Nil)))), "
      "Nil)");
  EXPECT_EQ(value_to_string(run_main(m, {v})), "Cons(5, Nil)");
}

TEST(TreeValues, LeavesHoldVocabularyIds) {
  Module m = typed_module(std::string(kList) + kTree + kBinaryProgram);
  Vocab vocab = Vocab::parse("the\ncat\n<unk>\nsat\n", "vocab.txt");
  Value v = trees_to_value(m, main_param_type(m), ptb("(0 (0 the) (0 (0 cat) (0 dog)))\n(0 sat)", &vocab));
  EXPECT_EQ(value_to_string(v), "Cons(Node(Leaf(0), Node(Leaf(1), Leaf(2))), Cons(Leaf(3), Nil))");
}

// Chains 100,000 nodes deep: the binary one a left comb (each Node's right child a leaf; 200,001
// nodes), the rose one 99,999 unary nodes over one leaf, read from PTB text. Building, running and
// dropping them uses no C stack per node.
TEST(TreeValues, AHundredThousandNodeChain) {
  constexpr int kDepth = 100'000;
  {
    Tree comb;
    comb.child_begin.push_back(0);
    comb.token.push_back(1);
    comb.child_begin.push_back(0);
    for (int32_t i = 0; i < kDepth; ++i) {
      int32_t previous = comb.size() - 1;
      comb.token.push_back(2);  // a leaf
      comb.child_begin.push_back(static_cast<int32_t>(comb.children.size()));
      comb.token.push_back(-1);  // Node(previous, leaf)
      comb.children.insert(comb.children.end(), {previous, comb.size() - 2});
      comb.child_begin.push_back(static_cast<int32_t>(comb.children.size()));
    }
    comb.root = comb.size() - 1;
    ASSERT_EQ(comb.size(), 2 * kDepth + 1);
    Module m = typed_module(std::string(kList) + kTree + kBinaryProgram);
    Value v = trees_to_value(m, main_param_type(m), {comb});
    EXPECT_EQ(value_to_string(run_main(m, {v})), "Cons(200001, Nil)");
  }
  {
    std::string line;
    for (int i = 0; i < kDepth - 1; ++i) line += "(0 ";
    line += "(0 9)" + std::string(kDepth - 1, ')');
    Module m = typed_module(std::string(kList) + kRose + kRoseProgram);
    Value v = trees_to_value(m, main_param_type(m), ptb(line));
    EXPECT_EQ(value_to_string(run_main(m, {v})), "Cons(100000, Nil)");
  }
}

TEST(TreeValues, PicksListsOfTreesOrRosesOfInt32) {
  Module m = typed_module(std::string(kList) + kTree + kRose + R"(
def @main(%a: List[Tree[int32]], %b: List[Rose[int32]], %c: List[Tree[int64]], %d: Tree[int32],
          %e: List[int32], %f: Tensor[(2), int32]) { %a })");
  std::vector<bool> picked;
  for (const Expr &p : m.find_function("main")->as<Function>()->params)
    picked.push_back(is_tree_list_type(p.type()));
  EXPECT_EQ(picked, (std::vector<bool>{true, true, false, false, false, false}));
}

TEST(TreeValues, ABinaryTreeWithOneOrThreeChildrenIsAnError) {
  Module m = typed_module(std::string(kList) + kTree + kBinaryProgram);
  std::string e = user_error_of(
      [&] { trees_to_value(m, main_param_type(m), ptb("(0 1)\n(0 (0 (0 1)) (0 2))\n"), "trees.txt"); });
  EXPECT_THAT(e, HasSubstr("trees.txt:2: node 1 of this tree (numbered in post-order) has 1 children"));
  EXPECT_THAT(e, HasSubstr("a Tree[int32] value is binary"));
  e = user_error_of(
      [&] { trees_to_value(m, main_param_type(m), ptb("(0 (0 1) (0 2) (0 3))\n"), "trees.txt"); });
  EXPECT_THAT(e, HasSubstr("trees.txt:1: node 3 of this tree (numbered in post-order) has 3 children"));
}

TEST(TreeValues, AParameterOfAnotherTypeIsAnError) {
  Module m = typed_module(std::string(kList) + kTree + "def @main(%x: List[Tree[int64]]) { %x }");
  std::string e = user_error_of([&] { trees_to_value(m, main_param_type(m), ptb("(0 1)")); });
  EXPECT_THAT(e, HasSubstr("List[Tree[int32]] or List[Rose[int32]]"));
  EXPECT_THAT(e, HasSubstr("this one has type List[Tree[int64]]"));
}

TEST(TreeValues, AnAdtWithOtherConstructorsIsAnError) {
  Module m = typed_module(std::string(kList) + "type Tree[A] { Leaf(A), Node(Tree[A]), }\n" +
                          "def @main(%x: List[Tree[int32]]) { %x }");
  std::string e = user_error_of([&] { trees_to_value(m, main_param_type(m), ptb("(0 1)")); });
  EXPECT_THAT(e, HasSubstr("the module's type Tree is `type Tree[A] { Leaf(A), Node(Tree[A]) }`"));
  EXPECT_THAT(e, HasSubstr("trees need `type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]) }`"));

  m = typed_module(std::string(kList) + "type Rose[A] { Branch(A, List[Rose[A]]), }\n" +
                   "def @main(%x: List[Rose[int32]]) { %x }");
  e = user_error_of([&] { trees_to_value(m, main_param_type(m), ptb("(0 1)")); });
  EXPECT_THAT(e, HasSubstr("trees need `type Rose[A] { Rose(A, List[Rose[A]]) }`"));

  m = typed_module("type List[A] { Cons(A, List[A]), Empty, }\n" + std::string(kTree) +
                   "def @main(%x: List[Tree[int32]]) { %x }");
  e = user_error_of([&] { trees_to_value(m, main_param_type(m), ptb("(0 1)")); });
  EXPECT_THAT(e, HasSubstr("trees need `type List[A] { Cons(A, List[A]), Nil }`"));
}

}  // namespace
}  // namespace grove::relay
