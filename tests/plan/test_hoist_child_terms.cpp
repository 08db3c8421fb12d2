// hoist_child_terms, as before/expected pairs: the pass runs on a program written in the model
// language and its printed ILIR is compared with the expected text (the hoisted states are named
// `_child<i>`, which the language cannot write). The numbers are checked end to end by the schedule
// sweep (tests/scheduling: the child-sum TreeLSTM against its reference, hoist=on and hoist=off).
#include <gtest/gtest.h>

#include <string>

#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "ilir/Verifier.h"
#include "plan/HoistChildTerms.h"
#include "support/Error.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using testing::model;
using testing::model_file;

// The printed program after the pass, which must verify.
std::string hoisted(const ilir::Program &input) {
  ilir::Program out = hoist_child_terms(input);
  ilir::verify(out);
  return ilir::to_string(out);
}

// A child-sum model over trees of any arity: `internal` is the internal case's text.
std::string child_sum_model(const std::string &internal) {
  return R"(
model M
structure tree
param emb [V, H]
param U   [H, H]
param W   [H, H]
param b   [H]
state h [H]
state c [H]
leaf {
  h = tanh(emb[token])
  c = h
}
internal {
)" + internal +
         "\n}\noutput h\n";
}

TEST(HoistChildTerms, ChildSumForgetTermMovesToTheChild) {
  // The whole body of the second ragged sum reads only U_f, b_f and the child's states: it becomes a
  // state computed at the end of both cases (a level GEMM there) and read at child(n, k0). The first
  // sum, a bare load, stays.
  std::string got = hoisted(model_file("childsum_treelstm"));
  EXPECT_NE(got.find("  state _child0[H]\n"), std::string::npos) << got;
  EXPECT_NE(got.find("leaf:\n"
                     "  iou[n, i0] = sum(k0 < D, W_iou[i0, k0] * emb[token(n), k0]) + b_iou[i0]\n"
                     "  i[n, i0] = sigmoid(iou[n, i0])\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("  t[n, i0] = sum(k0 < num_children(n), h[child(n, k0), i0])\n"), std::string::npos)
      << got;
  EXPECT_NE(
      got.find("  c[n, i0] = i[n, i0] * u[n, i0] + sum(k0 < num_children(n), _child0[child(n, k0), i0])\n"),
      std::string::npos)
      << got;
  // Defined last in both cases, from the node's own final states.
  const std::string def =
      "  _child0[n, i0] = sigmoid(sum(k1 < H, U_f[i0, k1] * h[n, k1]) + b_f[i0]) * c[n, i0]\n";
  size_t internal = got.find("internal:\n");
  ASSERT_NE(internal, std::string::npos) << got;
  size_t first = got.find(def), second = got.find(def, first + 1);
  ASSERT_NE(first, std::string::npos) << got;
  EXPECT_LT(first, internal) << got;
  EXPECT_EQ(second + def.size(), got.size()) << got;  // the internal case's last Compute
}

TEST(HoistChildTerms, ChildSumTreeLstmBeforeAndAfter) {
  // The whole program: the forget term sigmoid(U_f h[k] + b_f) * c[k] becomes the state _child0,
  // defined last in both cases and read at child(n, k0); nothing else changes.
  testing::check_pass("hoist_child_terms", hoist_child_terms, model_file("childsum_treelstm"),
                      R"(program ChildSumTreeLSTM over tree
  sizes V, D, H
  param emb[V, D]
  param W_iou[3H, D]
  param U_iou[3H, H]
  param b_iou[3H]
  param W_f[H, D]
  param U_f[H, H]
  param b_f[H]
  state h[H]
  state c[H]
  state _child0[H]
  temp iou[3H]
  temp i[H]
  temp o[H]
  temp u[H]
  temp t[H]
  output h
leaf:
  iou[n, i0] = sum(k0 < D, W_iou[i0, k0] * emb[token(n), k0]) + b_iou[i0]
  i[n, i0] = sigmoid(iou[n, i0])
  o[n, i0] = sigmoid(iou[n, i0 + H])
  u[n, i0] = tanh(iou[n, i0 + 2H])
  c[n, i0] = i[n, i0] * u[n, i0]
  h[n, i0] = o[n, i0] * tanh(c[n, i0])
  _child0[n, i0] = sigmoid(sum(k1 < H, U_f[i0, k1] * h[n, k1]) + b_f[i0]) * c[n, i0]
internal:
  t[n, i0] = sum(k0 < num_children(n), h[child(n, k0), i0])
  iou[n, i0] = sum(k0 < H, U_iou[i0, k0] * t[n, k0]) + b_iou[i0]
  i[n, i0] = sigmoid(iou[n, i0])
  o[n, i0] = sigmoid(iou[n, i0 + H])
  u[n, i0] = tanh(iou[n, i0 + 2H])
  c[n, i0] = i[n, i0] * u[n, i0] + sum(k0 < num_children(n), _child0[child(n, k0), i0])
  h[n, i0] = o[n, i0] * tanh(c[n, i0])
  _child0[n, i0] = sigmoid(sum(k1 < H, U_f[i0, k1] * h[n, k1]) + b_f[i0]) * c[n, i0]
)");
}

TEST(HoistChildTerms, OnlyTheChildOnlyPartOfATermThatReadsTheParentMoves) {
  // sigmoid(U h[k] + W t) reads the parent's own temp t: only the product U h[k] moves.
  std::string got = hoisted(model(child_sum_model(R"(
  t = sum(k in children) h[k]
  c = sum(k in children) sigmoid(U @ h[k] + W @ t) * c[k]
  h = tanh(c))")));
  EXPECT_NE(got.find("  c[n, i0] = sum(k0 < num_children(n), sigmoid(_child0[child(n, k0), i0] + "
                     "sum(k2 < H, W[i0, k2] * t[n, k2])) * c[child(n, k0), i0])\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("  _child0[n, i0] = sum(k1 < H, U[i0, k1] * h[n, k1])\n"), std::string::npos) << got;
}

TEST(HoistChildTerms, OneStatePerDistinctTerm) {
  // The same child term in two Computes is hoisted once (the key is its printed value, in which
  // the frontend's numbering of Sum variables agrees here); a different one gets its own state.
  std::string got = hoisted(model(child_sum_model(R"(
  c = sum(k in children) tanh(U @ h[k])
  h = (sum(k in children) tanh(U @ h[k])) + (sum(k in children) tanh(W @ h[k])))")));
  EXPECT_NE(got.find("state _child0[H]"), std::string::npos) << got;
  EXPECT_NE(got.find("state _child1[H]"), std::string::npos) << got;
  EXPECT_EQ(got.find("state _child2"), std::string::npos) << got;
}

TEST(HoistChildTerms, LeavesProgramsWithoutChildProductsAlone) {
  // A ragged sum of bare child loads, and the binary and DAG models (fixed slots, no ragged sums).
  ilir::Program plain = model(child_sum_model(R"(
  c = sum(k in children) c[k]
  h = tanh(U @ sum(k in children) h[k]))"));
  EXPECT_EQ(hoisted(plain), ilir::to_string(plain));
  for (const char *name : {"treelstm", "treegru", "dagrnn", "lstm"}) {
    ilir::Program p = model_file(name);
    EXPECT_EQ(hoisted(p), ilir::to_string(p)) << name;
  }
}

}  // namespace
}  // namespace grove::plan
