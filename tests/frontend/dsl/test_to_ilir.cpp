// Lowering to ILIR: each model file of models/ becomes the Program docs/MODELS.md describes, and the
// lowering's conventions (loads, child access, compiler temps, temp sharing and renaming) hold.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"

namespace grove::dsl {
namespace {

using ::testing::HasSubstr;

ilir::Program model_file(const std::string &name) {
  return parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/" + name + ".grove");
}

// "kind name[shape]" per tensor, as the printer writes them.
std::vector<std::string> tensors(const ilir::Program &program) {
  std::vector<std::string> result;
  for (const ilir::TensorDecl &t : program.tensors) {
    std::string shape;
    for (const ilir::Expr &dim : t.shape) shape += (shape.empty() ? "" : ", ") + ilir::to_string(dim);
    result.push_back(fmt::format("{} {}[{}]", ilir::to_string(t.kind), t.name, shape));
  }
  return result;
}

// "tensor[n, i0] = value" per compute of a case.
std::vector<std::string> computes(const ilir::Case &kase) {
  std::vector<std::string> result;
  for (const ilir::Compute &c : kase.body) {
    std::string lhs = c.tensor + "[n";
    for (const std::string &i : c.indices) lhs += ", " + i;
    result.push_back(lhs + "] = " + ilir::to_string(c.value));
  }
  return result;
}

using Lines = std::vector<std::string>;

TEST(ToILIR, TreeLSTM) {
  ilir::Program p = model_file("treelstm");
  EXPECT_EQ(p.name, "TreeLSTM");
  EXPECT_EQ(p.structure, ilir::StructureKind::BinaryTree);
  EXPECT_EQ(p.size_vars, (Lines{"V", "D", "H"}));
  EXPECT_EQ(p.output, "h");
  EXPECT_EQ(tensors(p),
            (Lines{"param emb[V, D]", "param W_iou[3H, D]", "param U_iou[3H, 2H]", "param b_iou[3H]",
                   "param U_f[2H, 2H]", "param b_f[H]", "state h[H]", "state c[H]", "temp iou[3H]",
                   "temp i[H]", "temp o[H]", "temp u[H]", "temp s[2H]", "temp f[2H]"}));
  EXPECT_EQ(computes(p.leaf), (Lines{
                                  "iou[n, i0] = sum(k0 < D, W_iou[i0, k0] * emb[token(n), k0]) + b_iou[i0]",
                                  "i[n, i0] = sigmoid(iou[n, i0])",
                                  "o[n, i0] = sigmoid(iou[n, i0 + H])",
                                  "u[n, i0] = tanh(iou[n, i0 + 2H])",
                                  "c[n, i0] = i[n, i0] * u[n, i0]",
                                  "h[n, i0] = o[n, i0] * tanh(c[n, i0])",
                              }));
  EXPECT_EQ(
      computes(p.internal),
      (Lines{
          "s[n, i0] = select(i0 < H, h[child(n, 0), i0], h[child(n, 1), i0 - H])",
          "iou[n, i0] = sum(k0 < 2H, U_iou[i0, k0] * s[n, k0]) + b_iou[i0]",
          "i[n, i0] = sigmoid(iou[n, i0])",
          "o[n, i0] = sigmoid(iou[n, i0 + H])",
          "u[n, i0] = tanh(iou[n, i0 + 2H])",
          "f[n, i0] = sigmoid(sum(k0 < 2H, U_f[i0, k0] * s[n, k0]) + select(i0 < H, b_f[i0], b_f[i0 - H]))",
          "c[n, i0] = i[n, i0] * u[n, i0] + f[n, i0] * c[child(n, 0), i0] + f[n, i0 + H] * c[child(n, 1), "
          "i0]",
          "h[n, i0] = o[n, i0] * tanh(c[n, i0])",
      }));
}

TEST(ToILIR, TreeFC) {
  ilir::Program p = model_file("treefc");
  EXPECT_EQ(p.size_vars, (Lines{"V", "H"}));
  EXPECT_EQ(tensors(p), (Lines{"param emb[V, H]", "param W[H, 2H]", "param b[H]", "state h[H]"}));
  EXPECT_EQ(computes(p.leaf), (Lines{"h[n, i0] = emb[token(n), i0]"}));
  EXPECT_EQ(computes(p.internal), (Lines{"h[n, i0] = tanh(sum(k0 < 2H, W[i0, k0] * select(k0 < H, h[child(n, "
                                         "0), k0], h[child(n, 1), k0 - H])) "
                                         "+ b[i0])"}));
}

TEST(ToILIR, TreeGRUComputesTheResetProductOnceIntoATemp) {
  ilir::Program p = model_file("treegru");
  EXPECT_EQ(tensors(p),
            (Lines{"param emb[V, D]", "param W_x[H, D]", "param b_x[H]", "param U_z[H, 2H]", "param b_z[H]",
                   "param U_r[2H, 2H]", "param b_r[2H]", "param U_h[H, 2H]", "param b_h[H]", "state h[H]",
                   "temp s[2H]", "temp z[H]", "temp r[2H]", "temp _t0[2H]", "temp g[H]"}));
  EXPECT_EQ(computes(p.leaf),
            (Lines{"h[n, i0] = tanh(sum(k0 < D, W_x[i0, k0] * emb[token(n), k0]) + b_x[i0])"}));
  EXPECT_EQ(computes(p.internal), (Lines{
                                      "s[n, i0] = select(i0 < H, h[child(n, 0), i0], h[child(n, 1), i0 - H])",
                                      "z[n, i0] = sigmoid(sum(k0 < 2H, U_z[i0, k0] * s[n, k0]) + b_z[i0])",
                                      "r[n, i0] = sigmoid(sum(k0 < 2H, U_r[i0, k0] * s[n, k0]) + b_r[i0])",
                                      "_t0[n, i0] = r[n, i0] * s[n, i0]",
                                      "g[n, i0] = tanh(sum(k0 < 2H, U_h[i0, k0] * _t0[n, k0]) + b_h[i0])",
                                      "h[n, i0] = z[n, i0] * (h[child(n, 0), i0] + h[child(n, 1), i0]) / 2.0 "
                                      "+ (1.0 - z[n, i0]) * g[n, i0]",
                                  }));
}

TEST(ToILIR, ChildSumTreeLSTMSumsOverTheChildren) {
  ilir::Program p = model_file("childsum_treelstm");
  EXPECT_EQ(p.structure, ilir::StructureKind::Tree);
  // W_f is declared, so the weight file must hold it, but x = 0 at internal nodes leaves it unread.
  EXPECT_EQ(tensors(p),
            (Lines{"param emb[V, D]", "param W_iou[3H, D]", "param U_iou[3H, H]", "param b_iou[3H]",
                   "param W_f[H, D]", "param U_f[H, H]", "param b_f[H]", "state h[H]", "state c[H]",
                   "temp iou[3H]", "temp i[H]", "temp o[H]", "temp u[H]", "temp t[H]"}));
  Lines internal = computes(p.internal);
  ASSERT_EQ(internal.size(), 7u);
  EXPECT_EQ(internal[0], "t[n, i0] = sum(k0 < num_children(n), h[child(n, k0), i0])");
  EXPECT_EQ(internal[1], "iou[n, i0] = sum(k0 < H, U_iou[i0, k0] * t[n, k0]) + b_iou[i0]");
  EXPECT_EQ(internal[5],
            "c[n, i0] = i[n, i0] * u[n, i0] + sum(k0 < num_children(n), sigmoid(sum(k1 < H, U_f[i0, k1] * "
            "h[child(n, k0), k1]) + b_f[i0]) * c[child(n, k0), i0])");
  // The child index is an index variable bound by the ragged Sum.
  const auto *sum = p.internal.body[0].value.as<ilir::Sum>();
  ASSERT_NE(sum, nullptr);
  const auto *extent = sum->extent.as<ilir::StructCall>();
  ASSERT_NE(extent, nullptr);
  EXPECT_EQ(extent->fn, ilir::StructFn::NumChildren);
  const auto *load = sum->body.as<ilir::Load>();
  ASSERT_NE(load, nullptr);
  const auto *child = load->node.as<ilir::StructCall>();
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->fn, ilir::StructFn::Child);
  ASSERT_NE(child->arg.as<ilir::Var>(), nullptr);
  EXPECT_EQ(child->arg.as<ilir::Var>()->var_kind, ilir::VarKind::Index);
  EXPECT_EQ(child->arg.as<ilir::Var>()->name, sum->var);
}

TEST(ToILIR, MVRNNMaterializesTheInnerProducts) {
  ilir::Program p = model_file("mvrnn");
  EXPECT_EQ(p.size_vars, (Lines{"V", "H"}));
  EXPECT_EQ(p.output, "p");
  EXPECT_EQ(tensors(p),
            (Lines{"param emb[V, H]", "param emb_mat[V, H, H]", "param W[H, 2H]", "param bias[H]",
                   "param W_M[H, 2H]", "state p[H]", "state P[H, H]", "temp _t0[H]", "temp _t1[H]"}));
  EXPECT_EQ(computes(p.leaf),
            (Lines{"p[n, i0] = emb[token(n), i0]", "P[n, i0, i1] = emb_mat[token(n), i0, i1]"}));
  EXPECT_EQ(
      computes(p.internal),
      (Lines{
          "_t0[n, i0] = sum(k0 < H, P[child(n, 1), i0, k0] * p[child(n, 0), k0])",
          "_t1[n, i0] = sum(k0 < H, P[child(n, 0), i0, k0] * p[child(n, 1), k0])",
          "p[n, i0] = tanh(sum(k0 < 2H, W[i0, k0] * select(k0 < H, _t0[n, k0], _t1[n, k0 - H])) + bias[i0])",
          "P[n, i0, i1] = sum(k0 < 2H, W_M[i0, k0] * select(k0 < H, P[child(n, 0), k0, i1], P[child(n, 1), "
          "k0 - H, "
          "i1]))",
      }));
}

TEST(ToILIR, LoadsFollowTheConventions) {
  ilir::Program p = model_file("treelstm");
  // iou = W_iou @ emb[token] + b_iou: params have no node; the token row is the first index.
  const auto *add = p.leaf.body[0].value.as<ilir::Binary>();
  ASSERT_NE(add, nullptr);
  const auto *bias = add->b.as<ilir::Load>();
  ASSERT_NE(bias, nullptr);
  EXPECT_FALSE(bias->node.defined());
  const auto *sum = add->a.as<ilir::Sum>();
  ASSERT_NE(sum, nullptr);
  const auto *product = sum->body.as<ilir::Binary>();
  ASSERT_NE(product, nullptr);
  const auto *emb = product->b.as<ilir::Load>();
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->tensor, "emb");
  EXPECT_FALSE(emb->node.defined());
  ASSERT_EQ(emb->indices.size(), 2u);
  ASSERT_NE(emb->indices[0].as<ilir::StructCall>(), nullptr);
  EXPECT_EQ(emb->indices[0].as<ilir::StructCall>()->fn, ilir::StructFn::Token);
  // Sizes in index arithmetic stay symbolic.
  const auto *o = p.leaf.body[2].value.as<ilir::Unary>();
  ASSERT_NE(o, nullptr);
  const auto *iou = o->a.as<ilir::Load>();
  ASSERT_NE(iou, nullptr);
  const auto *shifted = iou->indices[0].as<ilir::Binary>();
  ASSERT_NE(shifted, nullptr);
  ASSERT_NE(shifted->b.as<ilir::Var>(), nullptr);
  EXPECT_EQ(shifted->b.as<ilir::Var>()->var_kind, ilir::VarKind::Size);
  // A temp of the current node is read at n.
  ASSERT_NE(iou->node.as<ilir::Var>(), nullptr);
  EXPECT_EQ(iou->node.as<ilir::Var>()->var_kind, ilir::VarKind::Node);
}

// A small model to exercise one lowering rule: `internal` is the internal case's body.
ilir::Program lower_internal(const std::string &internal,
                             const std::string &leaf = "  t = emb[token]  h = t") {
  return parse_model(
      "model M\nstructure binary_tree\nparam emb [V, H]\nparam A [H, H]\nparam B [H, 2H]\nstate h [H]\n"
      "leaf {\n" +
          leaf + "\n}\ninternal {\n" + internal + "\n}\noutput h\n",
      "m.grove");
}

TEST(ToILIR, TempsSharedWhenShapesAgreeRenamedWhenNot) {
  ilir::Program same = lower_internal("  t = h[left]  h = t");
  EXPECT_EQ(tensors(same),
            (Lines{"param emb[V, H]", "param A[H, H]", "param B[H, 2H]", "state h[H]", "temp t[H]"}));
  ilir::Program differs = lower_internal("  t = [h[left]; h[right]]  h = B @ t");
  EXPECT_EQ(tensors(differs), (Lines{"param emb[V, H]", "param A[H, H]", "param B[H, 2H]", "state h[H]",
                                     "temp t[H]", "temp t_internal[2H]"}));
  EXPECT_EQ(computes(differs.internal)[1], "h[n, i0] = sum(k0 < 2H, B[i0, k0] * t_internal[n, k0])");
}

TEST(ToILIR, CompilerTempsAvoidUserNames) {
  ilir::Program p = lower_internal("  _t0 = h[left]  h = A @ (_t0 * h[right])");
  EXPECT_EQ(computes(p.internal),
            (Lines{"_t0[n, i0] = h[child(n, 0), i0]", "_t1[n, i0] = _t0[n, i0] * h[child(n, 1), i0]",
                   "h[n, i0] = sum(k0 < H, A[i0, k0] * _t1[n, k0])"}));
}

TEST(ToILIR, NestedProductsMaterializeInnermostFirst) {
  ilir::Program p = lower_internal("  h = A @ (A @ (A @ h[left] + h[right]))");
  EXPECT_EQ(computes(p.internal),
            (Lines{
                "_t0[n, i0] = sum(k0 < H, A[i0, k0] * h[child(n, 0), k0]) + h[child(n, 1), i0]",
                "_t1[n, i0] = sum(k0 < H, A[i0, k0] * _t0[n, k0])",
                "h[n, i0] = sum(k0 < H, A[i0, k0] * _t1[n, k0])",
            }));
}

TEST(ToILIR, ConcatenationOfThreeAndSlicesOfIt) {
  ilir::Program p = lower_internal("  x = [h[left]; h[right]; h[left]]  h = x[H:2H] + [h[left]; x][2H:3H]");
  Lines internal = computes(p.internal);
  EXPECT_EQ(internal[0],
            "x[n, i0] = select(i0 < H, h[child(n, 0), i0], select(i0 < 2H, h[child(n, 1), i0 - H], "
            "h[child(n, 0), i0 - "
            "2H]))");
  EXPECT_EQ(internal[1],
            "h[n, i0] = x[n, i0 + H] + select(i0 + 2H < H, h[child(n, 0), i0 + 2H], x[n, i0 + 2H - H])");
}

TEST(ToILIR, ScalarsBroadcastAndMatrixProductsHaveTwoFreeIndices) {
  ilir::Program p = lower_internal("  M = A @ A  h = -(M @ h[left]) * 0.5 + exp(relu(h[right]))");
  EXPECT_EQ(computes(p.internal), (Lines{"M[n, i0, i1] = sum(k0 < H, A[i0, k0] * A[k0, i1])",
                                         "h[n, i0] = -sum(k0 < H, M[n, i0, k0] * h[child(n, 0), k0]) * 0.5 + "
                                         "exp(relu(h[child(n, 1), i0]))"}));
}

TEST(ToILIR, ReductionVariablesAreUniqueWithinACompute) {
  ilir::Program p = lower_internal("  h = A @ h[left] + A @ h[right]");
  EXPECT_EQ(
      computes(p.internal)[0],
      "h[n, i0] = sum(k0 < H, A[i0, k0] * h[child(n, 0), k0]) + sum(k1 < H, A[i0, k1] * h[child(n, 1), k1])");
}

}  // namespace
}  // namespace grove::dsl
