// Recognition of recursive Relay functions (backends/relay/recursive/Recognition.h), before/expected: for
// each reason a function is not a recursive form, a small program and the exact reason and Relay location
// recognition gives; and the forms (roles, clauses) of the programs that qualify.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/relay/recursive/Recognition.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "tests/relay/RecursiveTypes.h"

namespace grove::relay {
namespace {

// The definitions under test follow the types: on line 10 after kTreeTypes, 21 after kRoseTypes.
using testing::kRoseTypes;
using testing::kTreeTypes;

struct Rejected {
  const char *types;   // kTreeTypes or kRoseTypes
  std::string defs;    // defining @f
  std::string reason;  // exactly
  std::string where;   // "t.relay:line:col"
};

Recognition recognize(const char *types, const std::string &defs) {
  Module m = parse_module(std::string(types) + defs, "t.relay");
  infer_types(m);
  return recognize_recursive(m, "f");
}

// The program's line `line` (1-based), to show where a location points.
std::string line_of(const std::string &text, int line) {
  size_t begin = 0;
  for (int i = 1; i < line && begin != std::string::npos; ++i) {
    begin = text.find('\n', begin);
    if (begin != std::string::npos) ++begin;
  }
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find('\n', begin) - begin);
}

void expect_rejected(const Rejected &c) {
  Recognition r = recognize(c.types, c.defs);
  ASSERT_FALSE(r.qualifies()) << c.defs;
  EXPECT_EQ(r.rejection.reason, c.reason) << c.defs;
  EXPECT_EQ(to_string(r.rejection.span), c.where)
      << c.reason << "\nat: " << line_of(std::string(c.types) + c.defs, r.rejection.span.line) << "\n    "
      << std::string(std::max(0, r.rejection.span.col - 1), ' ') << "^";
}

const std::string kSig = "def @f(%t: Tree[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {\n";
// A binary tree function whose leaf clause is `leaf` and node clause `node` (lines 12 and 13).
std::string binary(const std::string &leaf, const std::string &node) {
  return kSig + "  match (%t) {\n    Leaf(%x) => " + leaf + ",\n    Node(%l, %r) => " + node + ",\n  }\n}\n";
}
const std::string kBoth = "add(@f(%l, %w), @f(%r, %w))";

TEST(RelayRecognition, BinaryTreeParametersAndMatch) {
  const std::vector<Rejected> cases = {
      {kTreeTypes, "def @f[A](%t: Tree[A]) -> Tree[A] {\n  %t\n}\n", "it is polymorphic", "t.relay:10:1"},
      {kTreeTypes, "def @f(%n: int32, %w: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  %w\n}\n",
       "it has no parameter of a tree type: a binary tree T[A] (an ADT with constructors of fields (A) and "
       "(T[A], T[A])) or a rose tree T[A] (one constructor of fields (A, L[T[A]]) for a list ADT L)",
       "t.relay:10:1"},
      {kTreeTypes,
       "def @f(%t: Tree[int32], %u: Tree[int32]) -> Tensor[(4), float32] {\n  zeros(shape=[4], "
       "dtype=\"float32\")\n}\n",
       "it has two tree parameters", "t.relay:10:25"},
      {kTreeTypes, "def @f(%t: Tree[float32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  %w\n}\n",
       "its tree holds float32, not int32 token ids", "t.relay:10:8"},
      {kTreeTypes, "def @f(%t: Tree[int32], %w: Tensor[(4), int32]) -> Tensor[(4), int32] {\n  %w\n}\n",
       "its parameter %w has type Tensor[(4), int32]; besides the tree, only float32 weights of rank 1 or 2 "
       "are taken",
       "t.relay:10:25"},
      {kTreeTypes, kSig + "  %w\n}\n", "its body is not a match on its tree parameter %t", "t.relay:10:1"},
      {kTreeTypes,
       kSig + "  match (%t) {\n    Leaf(%x) => %w,\n    Leaf(%y) => %w,\n    Node(%l, %r) => %w,\n  }\n}\n",
       "its match has two clauses for Leaf", "t.relay:13:5"},
      {kTreeTypes, kSig + "  match (%t) {\n    Leaf(%x) => %w,\n    _ => %w,\n  }\n}\n",
       "a clause of its match is not a constructor pattern", "t.relay:13:5"},
      {kTreeTypes, kSig + "  match? (%t) {\n    Leaf(%x) => %w,\n  }\n}\n",
       "its match lacks a leaf clause or a node clause", "t.relay:11:3"},
  };
  for (const Rejected &c : cases) expect_rejected(c);
}

TEST(RelayRecognition, BinaryTreeClauses) {
  const std::vector<Rejected> cases = {
      {kTreeTypes, binary("%w", "add(@f(%l, %w), %w)"),
       "the node clause does not call the function on both children", "t.relay:13:21"},
      {kTreeTypes, binary("%w", "add(@f(%l, multiply(%w, 2f)), @f(%r, %w))"),
       "the recursive call passes a changed argument for %w (the weights must be passed through unchanged)",
       "t.relay:13:25"},
      {kTreeTypes, binary("nn.softmax(%w)", kBoth),
       "a clause uses the operator nn.softmax, which the translation to grove does not support",
       "t.relay:12:17"},
      {kTreeTypes, binary("{ let %c = ref(%w); ref_read(%c) }", kBoth), "a clause has an effect (ref)",
       "t.relay:12:28"},
      {kTreeTypes, binary("if (equal(%x, 0)) { %w } else { %w }", kBoth), "a clause branches (if)",
       "t.relay:12:17"},
      {kTreeTypes, binary("@f(%t, %w)", kBoth), "the leaf clause calls the function itself", "t.relay:12:17"},
      {kTreeTypes, binary("%w", "add(@f(%l, %w), @f(%l, %w))"),
       "the node clause calls the function itself twice on %l", "t.relay:13:37"},
      {kTreeTypes, binary("%w", "add(@f(%t, %w), @f(%r, %w))"),
       "the node clause calls the function itself on something other than a child tree", "t.relay:13:25"},
      {kTreeTypes, binary("squeeze(expand_dims(%w, axis=1), axis=[1])", kBoth),
       "expand_dims is translated only from [N] to [1, N] (axis=0)", "t.relay:12:25"},
      {kTreeTypes, binary("squeeze(reshape(%w, newshape=[4, 1]), axis=[1])", kBoth),
       "reshape is translated only between [N] and [1, N]", "t.relay:12:25"},
      {kTreeTypes, binary("fn (%a: Tensor[(4), float32]) { %a }(%w)", kBoth), "a clause defines a closure",
       "t.relay:12:17"},
      {kTreeTypes, binary("{ let %y = Leaf(%x); %w }", kBoth), "a clause builds an ADT value (Leaf)",
       "t.relay:12:28"},
  };
  for (const Rejected &c : cases) expect_rejected(c);
}

const std::string kRoseSig =
    "def @f(%t: Rose[int32], %e: Tensor[(3, 2), float32]) -> Tensor[(2), float32] {\n";
const std::string kLeaf = "    Rose(%w, Nil) => take(%e, %w, axis=0),\n";
const std::string kMap = "let %cs = @map(fn (%k: Rose[int32]) { @f(%k, %e) }, %kids);\n";
std::string fold(const std::string &step) {
  return "@foldl(fn (%acc: Tensor[(2), float32], %c: Tensor[(2), float32]) { " + step +
         " }, zeros(shape=[2], dtype=\"float32\"), %cs)";
}
// A rose tree function: its leaf clause (line 23), then the node clause `body` (line 24 on).
std::string rose(const std::string &body) {
  return kRoseSig + "  match (%t) {\n" + kLeaf + "    Rose(_, %kids) => {\n" + body + "\n    },\n  }\n}\n";
}

TEST(RelayRecognition, RoseTrees) {
  const std::vector<Rejected> cases = {
      {kRoseTypes,
       kRoseSig + "  match (%t) {\n    Rose(_, %kids) => zeros(shape=[2], dtype=\"float32\"),\n" + kLeaf +
           "  }\n}\n",
       "its first clause, Rose(_, %kids), matches every tree, leaves too; the leaf clause Rose(%w, Nil) must "
       "come first",
       "t.relay:23:5"},
      {kRoseTypes, kRoseSig + "  match (%t) {\n" + kLeaf + "  }\n}\n",
       "its match on a rose tree does not have exactly two clauses: Rose(%w, Nil) for a leaf, then "
       "Rose(_, %kids) for a node",
       "t.relay:22:3"},
      {kRoseTypes, rose("zeros(shape=[2], dtype=\"float32\")"),
       "the node clause does not map the function over its children (@map(fn (%k) { @f(%k, weights...) }, "
       "%kids))",
       "t.relay:25:1"},
      {kRoseTypes, rose(kMap + fold("add(multiply(%acc, 0.5f), %c)")),
       "a fold's function uses its accumulator other than as add(%acc, E)", "t.relay:26:72"},
      {kRoseTypes,
       rose(kMap + "let %ds = @map(fn (%k: Rose[int32]) { @f(%k, %e) }, %kids);\n" + fold("add(%acc, %c)")),
       "the node clause maps the function over its children twice", "t.relay:26:11"},
      {kRoseTypes,
       rose("let %cs = @map(fn (%k: Rose[int32]) { zeros(shape=[2], dtype=\"float32\") }, %kids);\n" +
            fold("add(%acc, %c)")),
       "a closure in the node clause is neither `fn (%k) { @f(%k, weights...) }` (the function itself on one "
       "child, mapped over the children) nor `fn (%acc, %c) { add(%acc, E) }` (folded over their results)",
       "t.relay:25:16"},
  };
  for (const Rejected &c : cases) expect_rejected(c);
}

const std::string kFoldSig =
    "def @f(%xs: List[Tensor[(1, 4), float32]], %s: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) -> "
    "Tensor[(1, 4), float32] {\n";
// A fold over a list with the Cons clause `cons` (line 12) and the Nil clause `nil` (line 13).
std::string folding(const std::string &cons, const std::string &nil = "%s") {
  return kFoldSig + "  match (%xs) {\n    Cons(%x, %r) => " + cons + ",\n    Nil => " + nil + ",\n  }\n}\n";
}

TEST(RelayRecognition, FoldsOverLists) {
  const std::vector<Rejected> cases = {
      {kTreeTypes,
       "def @f(%xs: List[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  match (%xs) {\n    "
       "Cons(_, %r) => @f(%r, %w),\n    Nil => %w,\n  }\n}\n",
       "its list holds int32, not float32 tensors [D] or [R, D] (one step each)", "t.relay:10:8"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(4), float32]], %ys: List[Tensor[(4), float32]]) -> Tensor[(4), float32] {\n"
       "  zeros(shape=[4], dtype=\"float32\")\n}\n",
       "it has two list parameters", "t.relay:10:41"},
      {kTreeTypes, folding("@f(%r, %x, %w)", "tanh(%s)"),
       "its Nil clause does not return one of its parameters (the state) as it is", "t.relay:13:12"},
      {kTreeTypes, folding("add(@f(%r, %s, %w), %x)"),
       "add takes the recursive call's result; the step must end with the call itself (a tail call)",
       "t.relay:12:21"},
      {kTreeTypes, folding("@f(%xs, %x, %w)"),
       "the Cons clause uses the whole list %xs; only its rest %r may go to the recursive call",
       "t.relay:12:21"},
      {kTreeTypes, folding("tanh(%x)"),
       "its Cons clause does not end with the recursive call @f(%r, new state, weights...)", "t.relay:12:21"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(1, 4), float32]], %s: Tensor[(4), float32]) -> Tensor[(4), float32] {\n"
       "  match (%xs) {\n    Cons(%x, %r) => @f(%r, %s),\n    Nil => %s,\n  }\n}\n",
       "its state %s has type Tensor[(4), float32]; a state is a float32 tensor of the steps' rank (2), or a "
       "tuple of such",
       "t.relay:10:44"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(2, 4), float32]], %s: Tensor[(2, 4), float32]) -> Tensor[(2, 4), float32] "
       "{\n"
       "  match (%xs) {\n    Cons(%x, %r) => @f(%r, reshape(reshape(%x, newshape=[-1]), newshape=[2, 4])),\n"
       "    Nil => %s,\n  }\n}\n",
       "a step of several rows (sequences) uses reshape, which would mix its rows; only row-wise operators "
       "are translated",
       "t.relay:12:36"},
  };
  for (const Rejected &c : cases) expect_rejected(c);
}

// More reasons, each in a program of its own shape.
TEST(RelayRecognition, MoreReasons) {
  const std::string g = "def @g(%a: Tensor[(4), float32]) -> Tensor[(4), float32] {\n  %a\n}\n";
  const std::string fold_head =
      "def @f(%xs: List[Tensor[(1, 4), float32]], %s: Tensor[(1, 4), float32]) -> Tensor[(1, 4), float32] "
      "{\n";
  const std::vector<Rejected> cases = {
      {kTreeTypes, binary("match (%t) { _ => %w }", kBoth), "a clause has a nested match", "t.relay:12:17"},
      {kTreeTypes, binary("@g(%w)", kBoth) + g,
       "a clause calls @g; only the function itself and operators may be called", "t.relay:12:17"},
      {kTreeTypes, binary("(@g, %w).1", kBoth) + g, "a clause uses @g as a value", "t.relay:12:17"},
      {kTreeTypes,
       "def @f(%t: Tree[int32], %w: Tensor[(4), float32], %v: Tensor[(1), float32]) -> Tensor[(4), float32] "
       "{\n  match (%t) {\n    Leaf(%x) => add(%w, %v),\n    Node(%l, %r) => add(@f(%l, %w, %v), @f(%r, %w, "
       "%v)),\n  }\n}\n",
       "add broadcasts a vector of 4 elements against one of 1", "t.relay:12:17"},
      {kTreeTypes,
       kSig +
           "  match (%t) {\n    Leaf(%x) => %w,\n    Node(Leaf(%a), %r) => %w,\n    Node(%l, %r) => %w,\n  "
           "}\n}\n",
       "its match has two clauses for Node", "t.relay:14:5"},
      {kTreeTypes, kSig + "  match (%t) {\n    Leaf(%x) => %w,\n    Node(Leaf(%a), %r) => %w,\n  }\n}\n",
       "a clause's pattern is nested; only variables and _ are taken as the constructor's fields",
       "t.relay:13:10"},
      {kRoseTypes, rose(kMap + "add(zeros(shape=[2], dtype=\"float32\"), " + fold("add(%acc, %c)") + ")"),
       "add takes zeros(...), which is translated only as a fold's initial value", "t.relay:26:1"},
      {kRoseTypes,
       kRoseSig + "  match (%t) {\n" + kLeaf + "    Rose(%v, %kids) => {\n" + kMap +
           "add(take(%e, %v, axis=0), " + fold("add(%acc, %c)") + ")\n    },\n  }\n}\n",
       "the node clause uses %v, an internal node's token (grove's internal nodes have none)",
       "t.relay:26:5"},
      {kRoseTypes,
       rose("let %cs = @map(fn (%k: Rose[int32]) { @f(%t, %e) }, %kids);\n" + fold("add(%acc, %c)")),
       "the node clause calls the function itself on something other than one child of %kids, inside the "
       "function @map applies to %kids",
       "t.relay:25:39"},
      {kTreeTypes, folding("@f(%r, %x, %w),\n    Cons(%y, %q) => @f(%q, %y, %w)"),
       "its match has two clauses for one constructor", "t.relay:13:5"},
      {kTreeTypes, fold_head + "  match? (%xs) {\n    Cons(%x, %r) => @f(%r, %x),\n  }\n}\n",
       "its match lacks a Cons clause or a Nil clause", "t.relay:11:3"},
      {kTreeTypes, fold_head + "  match (%xs) {\n    Cons(%x, _) => %x,\n    Nil => %s,\n  }\n}\n",
       "its Cons clause does not bind the rest of the list to a variable", "t.relay:12:5"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(1, 4), float32]], %s: Tensor[(2, 4), float32]) -> Tensor[(2, 4), float32] "
       "{\n"
       "  match (%xs) {\n    Cons(%x, %r) => @f(%r, %s),\n    Nil => %s,\n  }\n}\n",
       "its state has 2 rows but each step 1", "t.relay:10:44"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(4), float32]], %s: ()) -> () {\n  match (%xs) {\n    Cons(%x, %r) => @f(%r, "
       "%s),\n    Nil => %s,\n  }\n}\n",
       "its state is an empty tuple", "t.relay:10:41"},
      {kTreeTypes, folding("@f(%r, @f(%r, %s, %w), %w)"), "the Cons clause calls the function itself twice",
       "t.relay:12:21"},
      {kTreeTypes,
       "def @f(%xs: List[Tensor[(4), float32]], %s: Tensor[(4), float32], %n: int32) -> Tensor[(4), float32] "
       "{\n"
       "  match (%xs) {\n    Cons(%x, %r) => @f(%r, %x, %n),\n    Nil => %s,\n  }\n}\n",
       "its parameter %n has type int32; besides the list and the state, only float32 weights of rank 1 or 2 "
       "are "
       "taken",
       "t.relay:10:67"},
  };
  for (const Rejected &c : cases) expect_rejected(c);
}

TEST(RelayRecognition, FormsOfQualifyingFunctions) {
  Recognition tree =
      recognize(kTreeTypes,
                "def @f(%w: Tensor[(4), float32], %t: Tree[int32], %e: Tensor[(10, 4), float32]) -> "
                "Tensor[(4), float32] "
                "{\n  match (%t) {\n    Leaf(%x) => add(take(%e, %x, axis=0), %w),\n"
                "    Node(%l, %r) => multiply(add(@f(%w, %l, %e), @f(%w, %r, %e)), 0.5f),\n  }\n}\n");
  ASSERT_TRUE(tree.qualifies()) << tree.rejection.reason;
  EXPECT_EQ(tree.form->kind, RecursionKind::BinaryTree);
  EXPECT_EQ(tree.form->tree_param, 1);
  EXPECT_EQ(tree.form->state_param, -1);
  EXPECT_EQ(tree.form->weight_params, (std::vector<int>{0, 2}));
  EXPECT_EQ(tree.form->leaf_clause, 0);
  EXPECT_EQ(tree.form->node_clause, 1);

  Recognition fold = recognize(kTreeTypes, folding("@f(%r, tanh(add(nn.dense(%x, %w), %s)), %w)"));
  ASSERT_TRUE(fold.qualifies()) << fold.rejection.reason;
  EXPECT_EQ(fold.form->kind, RecursionKind::SequenceFold);
  EXPECT_EQ(fold.form->tree_param, 0);
  EXPECT_EQ(fold.form->state_param, 1);
  EXPECT_EQ(fold.form->weight_params, (std::vector<int>{2}));
  EXPECT_EQ(fold.form->node_clause, 0);  // Cons
  EXPECT_EQ(fold.form->leaf_clause, 1);  // Nil
}

}  // namespace
}  // namespace grove::relay
