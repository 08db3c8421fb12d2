// fuse_elementwise, as before/expected pairs: `check(input, expected)` runs the pass on `input` and
// compares the printed ILIR with `expected`, printing all three programs on a mismatch. Most pairs
// are written in the model language, whose lowering of an inlined expression is exactly what fusion
// produces (`sigmoid(iou[H:2H])` lowers to `sigmoid(iou[n, i0 + H])`); the renaming cases need
// index patterns the language cannot write, so they are built as ILIR.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "ilir/Verifier.h"
#include "plan/FuseElementwise.h"
#include "support/Error.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using ilir::Expr;

void check(const ilir::Program &input, const ilir::Program &expected,
           const std::map<std::string, int64_t> &sizes = {}) {
  testing::check_pass(
      "fuse_elementwise", [&](const ilir::Program &p) { return fuse_elementwise(p, sizes); }, input,
      ilir::to_string(expected));
}

using testing::model;

std::string model_text(const std::string &name) {
  std::ifstream file(std::string(GROVE_SOURCE_DIR) + "/models/" + name + ".grove");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> tensor_names(const ilir::Program &p) {
  std::vector<std::string> names;
  for (const ilir::TensorDecl &t : p.tensors) names.push_back(t.name);
  return names;
}

// TreeLSTM's header: params and states.
const char kTreeLstmHeader[] = R"(
model TreeLSTM
structure binary_tree
param emb   [V, D]
param W_iou [3H, D]
param U_iou [3H, 2H]
param b_iou [3H]
param U_f   [2H, 2H]
param b_f   [H]
state h [H]
state c [H]
output h
)";

TEST(FuseElementwise, TreeLstmGatesAreFused) {
  // The gates i, o, u and the concatenation s are inlined; iou and f hold products, so they stay.
  check(model(model_text("treelstm")), model(std::string(kTreeLstmHeader) + R"(
leaf {
  iou = W_iou @ emb[token] + b_iou
  c = sigmoid(iou[0:H]) * tanh(iou[2H:3H])
  h = sigmoid(iou[H:2H]) * tanh(c)
}
internal {
  iou = U_iou @ [h[left]; h[right]] + b_iou
  f = sigmoid(U_f @ [h[left]; h[right]] + [b_f; b_f])
  c = sigmoid(iou[0:H]) * tanh(iou[2H:3H]) + f[0:H] * c[left] + f[H:2H] * c[right]
  h = sigmoid(iou[H:2H]) * tanh(c)
}
)"));
}

TEST(FuseElementwise, DeclarationsOfFullyFusedTempsAreRemoved) {
  ilir::Program fused = fuse_elementwise(model(model_text("treelstm")));
  EXPECT_EQ(tensor_names(fused),
            (std::vector<std::string>{"emb", "W_iou", "U_iou", "b_iou", "U_f", "b_f", "h", "c", "iou", "f"}));
}

TEST(FuseElementwise, ArithmeticTempReadInsideASumIsNotFused) {
  // Inlining t into W @ t would evaluate tanh H times per element of h.
  ilir::Program input = model(R"(
model M
structure binary_tree
param emb [V, H]
param W [H, H]
state h [H]
leaf {
  t = tanh(emb[token])
  h = W @ t
}
internal {
  h = h[left] + h[right]
}
output h
)");
  check(input, input);
}

TEST(FuseElementwise, IndexTempIsFusedIntoASum) {
  // A concatenation of child loads costs nothing to re-read: TreeFC with s inlined is TreeFC.
  check(model(R"(
model TreeFC
structure binary_tree
param emb [V, H]
param W   [H, 2H]
param b   [H]
state h [H]
leaf {
  h = emb[token]
}
internal {
  s = [h[left]; h[right]]
  h = tanh(W @ s + b)
}
output h
)"),
        model(model_text("treefc")));
}

TEST(FuseElementwise, SliceOfATokenRowIsAnIndexTemp) {
  check(model(R"(
model M
structure tree
param emb [V, 2H]
param U [H, H]
state h [H]
leaf {
  e = emb[token][H:2H]
  h = U @ e
}
internal {
  h = sum(k in children) h[k]
}
output h
)"),
        model(R"(
model M
structure tree
param emb [V, 2H]
param U [H, H]
state h [H]
leaf {
  h = U @ emb[token][H:2H]
}
internal {
  h = sum(k in children) h[k]
}
output h
)"));
}

TEST(FuseElementwise, TempOfTheOtherCaseIsNotAffected) {
  // t is elementwise in the leaf case (fused there) but a product in the internal case (kept there,
  // with its declaration).
  std::string header =
      "model M\nstructure binary_tree\nparam emb [V, H]\nparam W [H, 2H]\nstate h [H]\noutput h\n";
  ilir::Program input = model(header + R"(
leaf {
  t = tanh(emb[token])
  h = t * 2
}
internal {
  t = W @ [h[left]; h[right]]
  h = tanh(t) + t
}
)");
  check(input, model(header + R"(
leaf {
  h = tanh(emb[token]) * 2
}
internal {
  t = W @ [h[left]; h[right]]
  h = tanh(t) + t
}
)"));
  EXPECT_EQ(tensor_names(fuse_elementwise(input)), (std::vector<std::string>{"emb", "W", "h", "t"}));
}

// A TreeLSTM whose result is one state holding [h; c], as the Relay translation packs a function's
// tuple (h, c): the cell c is read by h (its row i0) and by the state's second half (row i0 - 4).
const char kPackedHeader[] = R"(
model M
structure binary_tree
param emb [V, 4]
param W [12, 4]
param U [12, 8]
state all [8]
output all
)";
const std::string kPackedCell = std::string(kPackedHeader) + R"(
leaf {
  g = W @ emb[token]
  c = sigmoid(g[0:4]) * tanh(g[8:12])
  h = sigmoid(g[4:8]) * tanh(c)
  all = [h; c]
}
internal {
  g = U @ [all[left][0:4]; all[right][0:4]]
  c = sigmoid(g[0:4]) * tanh(g[8:12]) + all[left][4:8] + all[right][4:8]
  h = sigmoid(g[4:8]) * tanh(c)
  all = [h; c]
}
)";

TEST(FuseElementwise, CostlyTempReadTwiceAtKnownRowsIsKept) {
  // Fused, each element of c would be computed twice (for h, and for the second half of all), in two
  // rows of all that no common-subexpression elimination shares: c stays a compute; h is read once
  // and fuses.
  check(model(kPackedCell), model(std::string(kPackedHeader) + R"(
leaf {
  g = W @ emb[token]
  c = sigmoid(g[0:4]) * tanh(g[8:12])
  all = [sigmoid(g[4:8]) * tanh(c); c]
}
internal {
  g = U @ [all[left][0:4]; all[right][0:4]]
  c = sigmoid(g[0:4]) * tanh(g[8:12]) + all[left][4:8] + all[right][4:8]
  all = [sigmoid(g[4:8]) * tanh(c); c]
}
)"),
        {{"V", 10}});
}

TEST(FuseElementwise, CostlyTempReadTwiceIsFusedWhereTheRowsAreNotKnown) {
  // The same program with a symbolic width: which rows each read covers is not known, so c fuses as
  // before (the analysis never guesses).
  std::string text = kPackedCell;  // a copy to edit
  for (auto [from, to] : {std::pair<std::string, std::string>{"[8]", "[2H]"},
                          {"[12, 8]", "[3H, 2H]"},
                          {"[12, 4]", "[3H, 4]"},
                          {"0:4]", "0:H]"},
                          {"4:8]", "H:2H]"},
                          {"8:12]", "2H:3H]"}})
    for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  ilir::Program fused = fuse_elementwise(model(text), {{"V", 10}});
  EXPECT_EQ(tensor_names(fused), (std::vector<std::string>{"emb", "W", "U", "all", "g"}));
}

TEST(FuseElementwise, CostlyTempReadOnceInDisjointRowsIsFused) {
  // f's two halves are read by two different computes, each element once: fusing adds no work.
  std::string header =
      "model M\nstructure binary_tree\nparam emb [V, 4]\nparam W [8, 4]\nstate a [4]\n"
      "state b [4]\noutput a\n";
  std::string internal = "internal {\n  a = a[left]\n  b = b[left]\n}\n";
  check(model(header +
              "leaf {\n  g = W @ emb[token]\n  f = sigmoid(g)\n  a = f[0:4] * 2\n  b = f[4:8] * 3\n}\n" +
              internal),
        model(header +
              "leaf {\n  g = W @ emb[token]\n  a = sigmoid(g[0:4]) * 2\n  b = sigmoid(g[4:8]) * 3\n}\n" +
              internal),
        {{"V", 10}});
}

TEST(FuseElementwise, CostlyTempReadTwiceAtOneIndexOfOneComputeIsFused) {
  // GRU's update gate: z[i0] twice in one value is one value for the back end's CSE.
  std::string header =
      "model M\nstructure binary_tree\nparam emb [V, 4]\nparam W [4, 4]\nstate h [4]\noutput h\n";
  std::string internal = "internal {\n  h = h[left]\n}\n";
  check(model(header + "leaf {\n  g = W @ emb[token]\n  z = sigmoid(g)\n  h = z * g + (1 - z) * 2\n}\n" +
              internal),
        model(header + "leaf {\n  g = W @ emb[token]\n  h = sigmoid(g) * g + (1 - sigmoid(g)) * 2\n}\n" +
              internal),
        {{"V", 10}});
}

TEST(FuseElementwise, ChainsOfTempsFuseTransitively) {
  std::string header = "model M\nstructure binary_tree\nparam emb [V, H]\nstate h [H]\noutput h\n";
  check(model(header + R"(
leaf {
  a = emb[token] * 2
  b = sigmoid(a) - a
  h = exp(b)
}
internal {
  h = h[left] + h[right]
}
)"),
        model(header + R"(
leaf {
  h = exp(sigmoid(emb[token] * 2) - emb[token] * 2)
}
internal {
  h = h[left] + h[right]
}
)"));
}

// ---------------------------------------------------------------------------------------------
// Renaming: the definition's indices are replaced by the use's index expressions simultaneously.

Expr index(const std::string &name) { return ilir::Var::make(name, ilir::VarKind::Index); }
Expr n() { return ilir::Var::node(); }
Expr child(int k) { return ilir::StructCall::child(n(), k); }

// sizes H; param A[H, H]; state P[H, H]; temp T[H, H] (when `with_temp`); leaf P = A.
ilir::Program matrix_program(bool with_temp) {
  Expr H = ilir::Var::make("H", ilir::VarKind::Size);
  ilir::Program p;
  p.name = "M";
  p.size_vars = {"H"};
  p.tensors = {{"A", ilir::TensorKind::Param, {H, H}}, {"P", ilir::TensorKind::State, {H, H}}};
  if (with_temp) p.tensors.push_back({"T", ilir::TensorKind::Temp, {H, H}});
  p.output = "P";
  p.leaf.body = {{"P", {"i0", "i1"}, ilir::Load::make("A", Expr(), {index("i0"), index("i1")})}};
  return p;
}

TEST(FuseElementwise, TransposedUseRenamesSimultaneously) {
  // T[n, i0, i1] = A[i0, i1] + P[child(n, 0), i0, i1], read as T[n, i1, i0]. Renaming one index at a
  // time would give A[i0, i0] (i0 -> i1, then i1 -> i0).
  Expr i0 = index("i0"), i1 = index("i1");
  ilir::Program input = matrix_program(true);
  input.internal.body = {
      {"T",
       {"i0", "i1"},
       ilir::Load::make("A", Expr(), {i0, i1}) + ilir::Load::make("P", child(0), {i0, i1})},
      {"P", {"i0", "i1"}, ilir::Load::make("T", n(), {i1, i0})},
  };
  ilir::Program expected = matrix_program(false);
  expected.internal.body = {
      {"P",
       {"i0", "i1"},
       ilir::Load::make("A", Expr(), {i1, i0}) + ilir::Load::make("P", child(0), {i1, i0})},
  };
  check(input, expected);
}

TEST(FuseElementwise, IndexTempReadInASumAtItsOwnIndexNames) {
  // T[n, i0, i1] = P[child(n, 1), i1, i0] read inside sum(k0 < H, A[i0, k0] * T[n, k0, i0]): T's i0
  // becomes k0 while its i1 becomes the use's i0.
  Expr i0 = index("i0"), i1 = index("i1"), k0 = index("k0");
  Expr H = ilir::Var::make("H", ilir::VarKind::Size);
  ilir::Program input = matrix_program(true);
  input.internal.body = {
      {"T", {"i0", "i1"}, ilir::Load::make("P", child(1), {i1, i0})},
      {"P",
       {"i0", "i1"},
       ilir::Sum::make("k0", H,
                       ilir::Load::make("A", Expr(), {i0, k0}) * ilir::Load::make("T", n(), {k0, i0}))},
  };
  ilir::Program expected = matrix_program(false);
  expected.internal.body = {
      {"P",
       {"i0", "i1"},
       ilir::Sum::make("k0", H,
                       ilir::Load::make("A", Expr(), {i0, k0}) * ilir::Load::make("P", child(1), {i0, k0}))},
  };
  check(input, expected);
}

TEST(FuseElementwise, ProgramWithoutTempsIsUnchanged) {
  ilir::Program input = model(model_text("treefc"));
  check(input, input);
}

}  // namespace
}  // namespace grove::plan
