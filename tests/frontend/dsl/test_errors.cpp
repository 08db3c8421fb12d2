// Every user error of the checker (frontend/dsl/Messages.h): the message text and its
// file:line:col. Lexer and parser errors are in test_lexer.cpp and test_parser.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "frontend/dsl/Frontend.h"
#include "tests/UserError.h"

namespace grove::dsl {
namespace {

using grove::testing::user_error_of;
using grove::testing::user_error_or_empty;
using ::testing::HasSubstr;

// The message of the UserError parsing `text` as e.grove throws, or "" when it parses.
std::string error_of(const std::string &text) {
  return user_error_or_empty([&] { parse_model(text, "e.grove"); });
}

// A TreeFC-like binary model. Layout: lines 1-6 the header, line 7 `extra`, line 8 "leaf {",
// line 9 `leaf`, line 11 "internal {", line 12 `internal`, line 14 "output h".
std::string binary_model(const std::string &leaf = "  h = emb[token]",
                         const std::string &internal = "  h = tanh(W @ [h[left]; h[right]] + b)",
                         const std::string &extra = "") {
  return "model M\nstructure binary_tree\nparam emb [V, H]\nparam W [H, 2H]\nparam b [H]\nstate h [H]\n" +
         extra + "\nleaf {\n" + leaf + "\n}\ninternal {\n" + internal + "\n}\noutput h\n";
}

// A child-sum model with the same layout as binary_model.
std::string tree_model(const std::string &leaf = "  h = emb[token]",
                       const std::string &internal = "  h = tanh(U @ sum(k in children) h[k])",
                       const std::string &extra = "") {
  return "model M\nstructure tree\nparam emb [V, H]\nparam U [H, H]\nparam b [H]\nstate h [H]\n" + extra +
         "\nleaf {\n" + leaf + "\n}\ninternal {\n" + internal + "\n}\noutput h\n";
}

TEST(Errors, TheTemplatesAreValid) {
  EXPECT_EQ(error_of(binary_model()), "");
  EXPECT_EQ(error_of(tree_model()), "");
}

TEST(Errors, MessageShowsTheLineAndACaret) {
  std::string message = error_of(binary_model("  h = emb[token] + c"));
  EXPECT_THAT(message, HasSubstr("e.grove:9:20: error: unknown name 'c'"));
  EXPECT_THAT(message, HasSubstr("\n  h = emb[token] + c\n                   ^"));
}

// The example of docs/DSL.md: TreeLSTM's internal case multiplying by one child instead of both.
TEST(Errors, TheDocumentedExample) {
  std::ifstream file(std::string(GROVE_SOURCE_DIR) + "/models/treelstm.grove");
  std::stringstream text;
  text << file.rdbuf();
  std::string model = text.str();
  std::string statement = "  iou = U_iou @ s + b_iou";
  ASSERT_NE(model.find(statement), std::string::npos);
  model.replace(model.find(statement), statement.size(), "  iou = U_iou @ h[left] + b_iou");
  EXPECT_EQ(
      user_error_of([&] { parse_model(model, "models/bad.grove"); }),
      "models/bad.grove:27:15: error: shape mismatch in '@': [3H, 2H] @ [H] needs the vector to have 2H "
      "elements\n  iou = U_iou @ h[left] + b_iou\n              ^");
}

TEST(Errors, UnreadableFile) {
  EXPECT_THAT(user_error_of([] { parse_model_file("/nonexistent/m.grove"); }),
              HasSubstr("cannot read model file '/nonexistent/m.grove': expected a readable .grove file"));
}

// ---- declarations

TEST(Errors, MissingSections) {
  EXPECT_THAT(
      error_of("model M\nleaf { }\ninternal { }\noutput h\n"),
      HasSubstr(
          "e.grove:5:1: error: the model has no 'structure' declaration; expected 'structure binary_tree', "
          "'structure tree', 'structure dag' or 'structure sequence'"));
  EXPECT_THAT(error_of("model M\nstructure tree\ninternal { }\noutput h\n"),
              HasSubstr("e.grove:5:1: error: the model has no 'leaf' declaration; expected 'leaf { ... }'"));
  EXPECT_THAT(error_of("model M\nstructure tree\nleaf { }\noutput h\n"),
              HasSubstr("error: the model has no 'internal' declaration; expected 'internal { ... }'"));
  EXPECT_THAT(
      error_of("model M\nstructure tree\nleaf { }\ninternal { }\n"),
      HasSubstr("error: the model has no 'output' declaration; expected 'output NAME' naming a state"));
}

TEST(Errors, DuplicateDeclaration) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = h[left]", "state W [H]")),
              HasSubstr("e.grove:7:7: error: 'W' is declared twice (first at line 4)"));
}

TEST(Errors, OutputMustBeAState) {
  std::string text = binary_model();
  EXPECT_THAT(error_of(text.replace(text.find("output h"), 8, "output b")),
              HasSubstr("e.grove:14:8: error: output 'b' is not a state; expected one of the states: h"));
  text = binary_model();
  EXPECT_THAT(error_of(text.replace(text.find("output h"), 8, "output q")),
              HasSubstr("e.grove:14:8: error: output 'q' is not declared; expected one of the states: h"));
}

TEST(Errors, ReservedSizeName) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = h[left]", "param X [k0]")),
      HasSubstr("e.grove:7:10: error: size variable name 'k0' is reserved for the IR's index variables"));
}

TEST(Errors, TensorNamedLikeASize) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = h[left]", "param H [V]")),
              HasSubstr("e.grove:7:7: error: 'H' is a size variable and cannot also name a tensor"));
}

TEST(Errors, SizeBoundByNoParam) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]  g = h", "  h = h[left]  g = h", "state g [K]")),
      HasSubstr(
          "e.grove:7:10: error: size variable 'K' appears in no param, so the weight file cannot bind it"));
}

TEST(Errors, DimensionMustBePositive) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = h[left]", "param X [H-1]")),
              HasSubstr("e.grove:7:10: error: dimension 1 of 'X' is H-1, which can be below 1"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = h[left]", "param X [H, 0]")),
              HasSubstr("e.grove:7:13: error: dimension 2 of 'X' is 0"));
}

TEST(Errors, StateRank) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = h[left]", "state T [H, H, H]")),
      HasSubstr("e.grove:7:7: error: state 'T' has 3 dimensions; expected a vector [H] or a matrix [H, H]"));
}

// ---- names and statements

TEST(Errors, UnknownName) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = h[left] + q")),
      HasSubstr(
          "e.grove:12:17: error: unknown name 'q': expected a param, a state or a name assigned earlier in "
          "this case"));
  EXPECT_THAT(error_of(binary_model("  h = embedding[token]")),
              HasSubstr("e.grove:9:7: error: unknown name 'embedding'"));
}

TEST(Errors, UnknownSizeInASlice) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = h[left][0:D]")),
              HasSubstr("e.grove:12:17: error: unknown size variable 'D': expected one of V, H"));
}

TEST(Errors, SizeUsedAsAValue) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token] / H")),
              HasSubstr("e.grove:9:20: error: size variable 'H' cannot be used as a value"));
}

TEST(Errors, AssignedTwice) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = h[left]  h = h[right]")),
      HasSubstr("e.grove:12:16: error: 'h' is assigned twice in the internal case (first at line 12)"));
}

TEST(Errors, StateNotAssigned) {
  EXPECT_THAT(
      error_of(binary_model("  x = emb[token]")),
      HasSubstr(
          "e.grove:8:1: error: the leaf case does not assign state 'h'; every case must assign every state"));
}

TEST(Errors, TempUsedBeforeDefinition) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token] + t  t = b")),
              HasSubstr("e.grove:9:20: error: 't' is used before it is assigned in the leaf case"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token] + h")),
              HasSubstr("e.grove:9:20: error: 'h' is used before it is assigned in the leaf case"));
}

TEST(Errors, StateOfThisNodeUsedBeforeDefinition) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = tanh(h)")),
      HasSubstr(
          "e.grove:12:12: error: state 'h' of this node is used before it is assigned in the internal case; "
          "a child's state is h[left] or h[right]"));
  EXPECT_THAT(
      error_of(tree_model("  h = emb[token]", "  h = tanh(h)")),
      HasSubstr(
          "e.grove:12:12: error: state 'h' of this node is used before it is assigned in the internal case; "
          "a child's state is h[k] inside sum(k in children)"));
}

TEST(Errors, AssignToParam) {
  EXPECT_THAT(
      error_of(binary_model("  b = emb[token]  h = b")),
      HasSubstr("e.grove:9:3: error: cannot assign to param 'b'; expected a state or a new temporary name"));
}

TEST(Errors, AssignToSize) {
  EXPECT_THAT(error_of(binary_model("  H = emb[token]  h = b")),
              HasSubstr("e.grove:9:3: error: cannot assign to size variable 'H'"));
}

TEST(Errors, AssignScalar) {
  EXPECT_THAT(error_of(binary_model("  x = 1 + 2  h = b")),
              HasSubstr("e.grove:9:3: error: 'x' is assigned a scalar; expected a vector or matrix value"));
}

TEST(Errors, StateAssignedTheWrongShape) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = [h[left]; h[right]]")),
              HasSubstr("e.grove:12:3: error: state 'h' is declared [H] but assigned a value of shape [2H]"));
}

// ---- structure access

TEST(Errors, TokenInInternalCase) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = emb[token]")),
      HasSubstr(
          "e.grove:12:7: error: 'token' is only available in the leaf case; internal nodes have no token"));
}

TEST(Errors, TokenOfANonParam) {
  EXPECT_THAT(
      error_of(binary_model("  x = emb[token]  h = x[token]")),
      HasSubstr("e.grove:9:23: error: 'x[token]' needs a param (an embedding table); 'x' is a temporary"));
}

TEST(Errors, TokenOfAVector) {
  EXPECT_THAT(
      error_of(binary_model("  h = b[token]")),
      HasSubstr(
          "e.grove:9:7: error: 'b[token]' needs a param with at least 2 dimensions; 'b' has shape [H]"));
}

TEST(Errors, ChildOfANonState) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = b[left]")),
      HasSubstr(
          "e.grove:12:7: error: 'b[left]' reads a child's state, but 'b' is a param; expected a state"));
}

TEST(Errors, LeftRightInATreeModel) {
  EXPECT_THAT(
      error_of(tree_model("  h = emb[token]", "  h = h[left]")),
      HasSubstr(
          "e.grove:12:7: error: 'left' is not available in a 'structure tree' model; read children with "
          "sum(k in children) h[k]"));
}

TEST(Errors, LeftRightInTheLeafCase) {
  EXPECT_THAT(
      error_of(binary_model("  h = h[right]")),
      HasSubstr("e.grove:9:7: error: 'right' is not available in the leaf case; a leaf has no children"));
}

TEST(Errors, SumOverChildrenInABinaryModel) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = sum(k in children) h[k]")),
      HasSubstr("e.grove:12:7: error: sum(k in children) needs 'structure tree'; in a binary_tree model use "
                "h[left] and h[right]"));
}

TEST(Errors, SumOverChildrenInTheLeafCase) {
  EXPECT_THAT(error_of(tree_model("  h = sum(k in children) h[k]")),
              HasSubstr("e.grove:9:7: error: sum(k in children) in the leaf case: a leaf has no children"));
}

TEST(Errors, NestedSumOverChildren) {
  EXPECT_THAT(error_of(tree_model("  h = emb[token]", "  h = sum(k in children) sum(j in children) h[j]")),
              HasSubstr("e.grove:12:26: error: sum(k in children) cannot be nested; 'k' is already summing"));
}

TEST(Errors, ChildVariableOutsideItsSum) {
  EXPECT_THAT(error_of(tree_model("  h = emb[token]", "  h = (sum(k in children) h[k]) + h[k]")),
              HasSubstr("e.grove:12:35: error: 'k' is not a children variable here; expected h[k] inside "
                        "sum(k in children)"));
}

TEST(Errors, ChildVariableShadowsATensor) {
  EXPECT_THAT(error_of(tree_model("  h = emb[token]", "  h = sum(b in children) h[b]")),
              HasSubstr("e.grove:12:7: error: children variable 'b' shadows a tensor or size variable"));
}

TEST(Errors, ProductOperandDependingOnTheChildInsideTheSum) {
  EXPECT_THAT(
      error_of(tree_model("  h = emb[token]", "  h = sum(k in children) U @ (h[k] * b)")),
      HasSubstr(
          "e.grove:12:36: error: the operand of '@' inside sum(k in children) must be a tensor, slice or "
          "concatenation when it depends on 'k'"));
  // An operand that does not depend on k is computed once per node, before the sum.
  EXPECT_EQ(error_of(tree_model("  h = emb[token]", "  h = sum(k in children) (U @ (b * b)) * h[k]")), "");
}

// ---- shapes

TEST(Errors, ElementwiseShapeMismatch) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = h[left] + [h[left]; h[right]]")),
      HasSubstr(
          "e.grove:12:15: error: shape mismatch in '+': [H] + [2H]; expected equal shapes or a scalar"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = W * b")),
              HasSubstr("e.grove:12:9: error: shape mismatch in '*': [H, 2H] * [H]"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = b - W")),
              HasSubstr("shape mismatch in '-': [H] - [H, 2H]"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = b / W")),
              HasSubstr("shape mismatch in '/': [H] / [H, 2H]"));
}

TEST(Errors, MatrixVectorShapeMismatch) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  h = W @ h[left] + b")),
      HasSubstr(
          "e.grove:12:9: error: shape mismatch in '@': [H, 2H] @ [H] needs the vector to have 2H elements"));
}

TEST(Errors, MatrixMatrixShapeMismatch) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  x = W @ W  h = b")),
      HasSubstr(
          "e.grove:12:9: error: shape mismatch in '@': [H, 2H] @ [H, 2H] needs the right matrix to have 2H "
          "rows"));
}

TEST(Errors, MatmulRank) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = b @ b")),
              HasSubstr("e.grove:12:9: error: '@' needs a matrix on the left and a vector or matrix on the "
                        "right; got [H] @ "
                        "[H]"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = W @ 2")), HasSubstr("got [H, 2H] @ a scalar"));
}

TEST(Errors, ConcatenationRank) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  x = [W; b]  h = b")),
      HasSubstr("e.grove:12:11: error: cannot stack [H] onto [H, 2H] in '[ ; ]'; expected all vectors or all "
                "matrices"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  x = [b; 1]  h = b")),
              HasSubstr("e.grove:12:11: error: cannot stack a scalar onto [H]"));
}

TEST(Errors, ConcatenationColumns) {
  EXPECT_THAT(
      error_of(binary_model("  h = emb[token]", "  x = [W; emb]  h = b")),
      HasSubstr(
          "e.grove:12:11: error: shape mismatch in '[ ; ]': [H, 2H] and [V, H] have different row lengths"));
}

TEST(Errors, SliceOfAScalar) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = b + (1 + 2)[0:H]")),
              HasSubstr("e.grove:12:18: error: cannot slice a scalar; expected a vector or matrix"));
}

TEST(Errors, SliceOutOfRange) {
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = W @ [h[left]; h[right]][H:3H]")),
              HasSubstr("e.grove:12:31: error: slice [H:3H] is out of range for shape [2H]: expected 0 <= lo "
                        "< hi <= 2H for "
                        "all sizes >= 1"));
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  h = b[H:H]")),
              HasSubstr("slice [H:H] is out of range"));
  EXPECT_EQ(error_of(binary_model("  h = emb[token]", "  x = emb[0:V]  h = b")), "");
  // 1:V is empty when V = 1.
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  x = emb[1:V]  h = b")),
              HasSubstr("slice [1:V] is out of range"));
  // V and H are unrelated, so H <= V cannot be proven.
  EXPECT_THAT(error_of(binary_model("  h = emb[token]", "  x = emb[0:H]  h = b")),
              HasSubstr("slice [0:H] is out of range for shape [V, H]: expected 0 <= lo < hi <= V"));
}

}  // namespace
}  // namespace grove::dsl
