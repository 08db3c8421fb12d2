// plan::differentiate, as before/expected pairs (PassTest.h): the training forward (products under a
// nonlinearity split, every value kept per node) and the top-down backward of models/treefc.grove,
// what it records for the runtime on models/treelstm.grove, and every model it does not take yet as
// a UserError naming the Compute. The numbers the backward computes are checked end to end against
// the independent reference gradients in tests/models/test_gradients.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ilir/IRPrinter.h"
#include "plan/Differentiate.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using testing::check_pass;
using ::testing::HasSubstr;
using testing::model;
using testing::model_file;

TEST(Differentiate, TreeFcTrainingForward) {
  // tanh(W [h_l; h_r] + b) becomes h_pre and h = tanh(h_pre). The backward reads tanh' from h, not
  // h_pre, so h_pre stays a temporary (not kept per node, no zero fill at the leaves).
  check_pass(
      "differentiate (forward)", [](const ilir::Program &p) { return differentiate(p).forward; },
      model_file("treefc"), R"(program TreeFC over binary_tree
  sizes V, H
  param emb[V, H]
  param W[H, 2H]
  param b[H]
  state h[H]
  temp h_pre[H]
  output h
leaf:
  h[n, i0] = emb[token(n), i0]
internal:
  h_pre[n, i0] = sum(k0 < 2H, W[i0, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + b[i0]
  h[n, i0] = tanh(h_pre[n, i0])
)");
}

TEST(Differentiate, TreeFcBackward) {
  // Top down: d_h from the seed and the parent's share at the child's slot — the slot's half of the
  // parent's operand adjoint, read at parent(n); d_h_pre through tanh' = 1 - h²; the operand's adjoint as a
  // GEMM with W's transpose, kept per node for the children; leaves pass d_h to the embedding row;
  // grad_W and grad_b summed over the internal nodes.
  check_pass(
      "differentiate (backward)", [](const ilir::Program &p) { return differentiate(p).backward; },
      model_file("treefc"), R"(program TreeFC_backward over binary_tree, top down
  sizes V, H
  param emb[V, H]
  param W[H, 2H]
  param b[H]
  saved seed[H]
  temp d_h[H]
  state d_h_pre[H]
  param W_T[2H, H]
  state d_h_pre_x0[2H]
  state d_emb_row[H]
  gradient grad_W[H, 2H]
  gradient grad_b[H]
  saved h[H]
  output d_h_pre
leaf:
  d_h[n, i0] = seed[n, i0] + select(child_slot(n) == 1, select(i0 + H < H, 0.0, d_h_pre_x0[parent(n), i0 + H]), select(child_slot(n) == 0, select(i0 < H, d_h_pre_x0[parent(n), i0], 0.0), 0.0))
  d_emb_row[n, i0] = d_h[n, i0]
internal:
  d_h[n, i0] = seed[n, i0] + select(child_slot(n) == 1, select(i0 + H < H, 0.0, d_h_pre_x0[parent(n), i0 + H]), select(child_slot(n) == 0, select(i0 < H, d_h_pre_x0[parent(n), i0], 0.0), 0.0))
  d_h_pre[n, i0] = d_h[n, i0] * (1.0 - h[n, i0] * h[n, i0])
  d_h_pre_x0[n, i0] = sum(k0 < H, W_T[i0, k0] * d_h_pre[n, k0])
reductions:
  grad_W[i0, i1] += sum(n in internal, d_h_pre[n, i0] * select(i1 < H, h[child(n, 0), i1], h[child(n, 1), i1 - H]))
  grad_b[i0] += sum(n in internal, d_h_pre[n, i0])
)");
}

TEST(Differentiate, TreeLstmRecords) {
  Derivative d = differentiate(model_file("treelstm"));
  EXPECT_EQ(d.seed, "seed");
  ASSERT_EQ(d.transposed.size(), 3u);
  EXPECT_EQ(d.transposed[0].name, "U_f_T");
  EXPECT_EQ(d.transposed[0].param, "U_f");
  EXPECT_EQ(ilir::to_string(d.transposed[0].rows), "2H");
  EXPECT_EQ(d.transposed[1].name, "U_iou_T");
  EXPECT_EQ(d.transposed[2].name, "W_iou_T");
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].param, "emb");
  EXPECT_EQ(d.rows[0].state, "d_emb_row");
  // Every parameter but the embedding has a dense gradient tensor.
  std::vector<std::pair<std::string, std::string>> want = {{"W_iou", "grad_W_iou"},
                                                           {"U_iou", "grad_U_iou"},
                                                           {"b_iou", "grad_b_iou"},
                                                           {"U_f", "grad_U_f"},
                                                           {"b_f", "grad_b_f"}};
  EXPECT_EQ(d.gradients, want);
  // The gates' derivatives read the gates (σ' = f (1 - f), tanh' = 1 - u²), not iou and f_pre.
  EXPECT_EQ(d.saved, (std::vector<std::string>{"c", "i", "o", "u", "s", "f"}));
}

TEST(Differentiate, TrainingForwardArrangedForThePlanner) {
  // TreeLSTM's s = [h[left]; h[right]] is read through its definition by the GEMMs and computed last;
  // f_pre's GEMM moves up beside iou's: one GEMM group and one node loop per internal level.
  Derivative d = differentiate(model_file("treelstm"));
  std::vector<std::string> order;
  for (const ilir::Compute &op : d.forward.internal.body) order.push_back(op.tensor);
  EXPECT_EQ(order, (std::vector<std::string>{"iou", "f_pre", "i", "o", "u", "f", "c", "h", "s"}));
  const std::string iou = ilir::to_string(d.forward.internal.body[0].value);
  EXPECT_THAT(iou, ::testing::HasSubstr("h[child(n, 0), k0]"));
  EXPECT_THAT(iou, ::testing::Not(::testing::HasSubstr("s[n")));
  // The backward still reads s, which the forward keeps.
  EXPECT_NE(std::find(d.saved.begin(), d.saved.end(), "s"), d.saved.end());
}

std::string error_of(const ilir::Program &p) {
  try {
    differentiate(p);
  } catch (const UserError &e) {
    return e.what();
  }
  return "no error";
}

TEST(Differentiate, EveryModelDifferentiates) {
  // Every model of models/ has a backward; what is refused is in ComputesItCannotDifferentiate.
  for (const char *stem :
       {"treefc", "treegru", "treelstm", "childsum_treelstm", "mvrnn", "dagrnn", "lstm", "gru"})
    EXPECT_EQ(error_of(model_file(stem)), "no error") << stem;
}

TEST(Differentiate, ComputesItCannotDifferentiate) {
  const char *header = R"(model M
structure binary_tree
param emb [V, H]
param W [H, 2H]
state h [H]
leaf {
  h = emb[token]
}
)";
  // A product under a product: no split makes it a weight term.
  EXPECT_THAT(error_of(model(std::string(header) +
                             "internal {\n  h = (W @ [h[left]; h[right]]) * h[left]\n}\noutput h\n")),
              HasSubstr("a weight product sits inside an expression"));
  // A subtracted product.
  EXPECT_THAT(error_of(model(std::string(header) +
                             "internal {\n  h = h[left] - W @ [h[left]; h[right]]\n}\noutput h\n")),
              HasSubstr("a weight product is subtracted"));
  // A tensor named like an adjoint.
  EXPECT_THAT(error_of(model("model M\nstructure binary_tree\nparam emb [V, H]\nstate d_h [H]\nleaf {\n  d_h "
                             "= emb[token]\n}\ninternal {\n  d_h = d_h[left] + d_h[right]\n}\noutput d_h\n")),
              HasSubstr("has a name the backward's adjoints use"));
}

}  // namespace
}  // namespace grove::plan
