// fuse_products (schedule `epilogue`), as before/expected pairs (PassTest.h): a level GEMM's output
// read elementwise, each element once, is substituted into its readers, which become GEMMs with the
// activations as their epilogue; anything else is left alone. The input is what the pipeline gives
// the pass: the model after fuse_elementwise. The fused programs' numbers are checked against the
// independent references by the schedule sweep (tests/scheduling, tests/dag: epilogue=on).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "plan/FuseElementwise.h"
#include "plan/FuseProducts.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using testing::check_pass;
using testing::check_unchanged;
using testing::model;
using testing::model_file;

const std::map<std::string, int64_t> kSizes = {{"H", 64}, {"D", 64}, {"V", 100}};

// fuse_products under `schedule` (the default: gemm on, panel 32) and kSizes.
auto epilogue(const scheduling::Schedule &schedule = {},
              const std::map<std::string, int64_t> &sizes = kSizes) {
  return [=](const ilir::Program &p) { return fuse_products(p, sizes, schedule); };
}

TEST(FuseProducts, TreeLstmGateGemmsMoveIntoTheirReaders) {
  // iou's rows 0:H (i) and 2H:3H (u) go into c's GEMM, H:2H (o) into h's; f's two halves into c's.
  // iou and f are no longer declared: no gate tensor is written.
  check_pass("fuse_products", epilogue(), fuse_elementwise(model_file("treelstm")),
             R"(program TreeLSTM over binary_tree
  sizes V, D, H
  param emb[V, D]
  param W_iou[3H, D]
  param U_iou[3H, 2H]
  param b_iou[3H]
  param U_f[2H, 2H]
  param b_f[H]
  state h[H]
  state c[H]
  output h
leaf:
  c[n, i0] = sigmoid(sum(k0 < D, W_iou[i0, k0] * emb[token(n), k0]) + b_iou[i0]) * tanh(sum(k0 < D, W_iou[i0 + 2H, k0] * emb[token(n), k0]) + b_iou[i0 + 2H])
  h[n, i0] = sigmoid(sum(k0 < D, W_iou[i0 + H, k0] * emb[token(n), k0]) + b_iou[i0 + H]) * tanh(c[n, i0])
internal:
  c[n, i0] = sigmoid(sum(k0 < 2H, U_iou[i0, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + b_iou[i0]) * tanh(sum(k0 < 2H, U_iou[i0 + 2H, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + b_iou[i0 + 2H]) + sigmoid(sum(k0 < 2H, U_f[i0, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + select(i0 < H, b_f[i0], b_f[i0 - H])) * c[child(n, 0), i0] + sigmoid(sum(k0 < 2H, U_f[i0 + H, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + select(i0 + H < H, b_f[i0 + H], b_f[i0 + H - H])) * c[child(n, 1), i0]
  h[n, i0] = sigmoid(sum(k0 < 2H, U_iou[i0 + H, k0] * select(k0 < H, h[child(n, 0), k0], h[child(n, 1), k0 - H])) + b_iou[i0 + H]) * tanh(c[n, i0])
)");
}

TEST(FuseProducts, NothingWithoutGemmKernelsOrConstantSizes) {
  // The readers must run as micro-kernel GEMMs, which need gemm=on and every size known.
  const ilir::Program treelstm = fuse_elementwise(model_file("treelstm"));
  scheduling::Schedule no_gemm;
  no_gemm.gemm = false;
  check_unchanged("fuse_products gemm=off", epilogue(no_gemm), treelstm);
  check_unchanged("fuse_products without H", epilogue({}, {{"D", 64}, {"V", 100}}), treelstm);
}

TEST(FuseProducts, ElementReadTwiceStays) {
  // GRU's z = sigmoid(gi[H:2H] + gh[H:2H]) is inlined twice into h, so those rows of gi and gh are
  // read twice: fusing would compute them twice.
  check_unchanged("fuse_products", epilogue(), fuse_elementwise(model_file("gru")));
}

// A binary-tree model whose internal case is `body`, with a GEMM output t = W [h_l; h_r] + b.
ilir::Program tree_model(const std::string &body) {
  return fuse_elementwise(model(R"(
model M
structure binary_tree
param emb [V, H]
param W [2H, 2H]
param U [H, 2H]
param b [2H]
state h [H]
leaf {
  h = emb[token]
}
internal {
  t = W @ [h[left]; h[right]] + b
)" + body + "\n}\noutput h\n"));
}

TEST(FuseProducts, GemmOutputReadInsideAProductStays) {
  check_unchanged("fuse_products", epilogue(), tree_model("  h = tanh(U @ t)"));
}

TEST(FuseProducts, OverlappingReadsStay) {
  // Rows 0:H read by two terms of one reader.
  check_unchanged("fuse_products", epilogue(), tree_model("  h = sigmoid(t[0:H]) * tanh(t[0:H])"));
}

TEST(FuseProducts, DisjointSlicesOfOneReaderFuse) {
  // The same GEMM output read once per element (rows 0:H and H:2H) is fused.
  ilir::Program fused = epilogue()(tree_model("  h = sigmoid(t[0:H]) * tanh(t[H:2H])"));
  const std::string got = ilir::to_string(fused);
  EXPECT_EQ(got.find("temp t["), std::string::npos) << got;
  EXPECT_EQ(got.find("t[n, "), std::string::npos) << got;
}

}  // namespace
}  // namespace grove::plan
