// hoist_inputs, as before/expected pairs (PassTest.h): a product of the node's own input moves to
// the hoisted case as an `_in<i>` state and both node cases read it back at n; products that read
// the recursion stay where they are. The numbers the hoisted programs compute are checked end to end
// against the independent references in tests/dag (the DAG-RNN, LSTM and GRU under hoist=on and
// hoist=off).
#include <gtest/gtest.h>

#include <string>

#include "plan/HoistInputs.h"
#include "tests/plan/PassTest.h"

namespace grove::plan {
namespace {

using testing::check_pass;
using testing::check_unchanged;
using testing::model;
using testing::model_file;

// The ILIR header of models/dagrnn.grove with the hoisted state.
const char kDagRnnHeader[] = R"(program DAGRNN over dag
  sizes V, D, H
  param emb[V, D]
  param U[H, D]
  param W_0[H, H]
  param W_1[H, H]
  param b[H]
  state h[H]
  state _in0[H]
  output h
)";

TEST(HoistInputs, DagRnnInputProductMovesToTheHoistedCase) {
  // U x runs once over all nodes before the levels; W_0 h[pred0] and W_1 h[pred1] stay.
  check_pass("hoist_inputs", hoist_inputs, model_file("dagrnn"), std::string(kDagRnnHeader) + R"(hoisted:
  _in0[n, i0] = sum(k0 < D, U[i0, k0] * emb[token(n), k0])
leaf:
  h[n, i0] = tanh(_in0[n, i0] + sum(k1 < H, W_0[i0, k1] * h[child(n, 0), k1]) + sum(k2 < H, W_1[i0, k2] * h[child(n, 1), k2]) + b[i0])
internal:
  h[n, i0] = tanh(_in0[n, i0] + sum(k1 < H, W_0[i0, k1] * h[child(n, 0), k1]) + sum(k2 < H, W_1[i0, k2] * h[child(n, 1), k2]) + b[i0])
)");
}

TEST(HoistInputs, LstmInputProductOfAllFourGates) {
  // W_ih x_t for all 4H gate rows is hoisted; the biases and W_hh h[prev] stay in the gates.
  check_pass("hoist_inputs", hoist_inputs, model_file("lstm"), R"(program LSTM over sequence
  sizes V, D, H
  param emb[V, D]
  param W_ih[4H, D]
  param W_hh[4H, H]
  param b_ih[4H]
  param b_hh[4H]
  state h[H]
  state c[H]
  state _in0[4H]
  temp gates[4H]
  temp i[H]
  temp f[H]
  temp g[H]
  temp o[H]
  output h
hoisted:
  _in0[n, i0] = sum(k0 < D, W_ih[i0, k0] * emb[token(n), k0])
leaf:
  gates[n, i0] = _in0[n, i0] + b_ih[i0] + sum(k1 < H, W_hh[i0, k1] * h[child(n, 0), k1]) + b_hh[i0]
  i[n, i0] = sigmoid(gates[n, i0])
  f[n, i0] = sigmoid(gates[n, i0 + H])
  g[n, i0] = tanh(gates[n, i0 + 2H])
  o[n, i0] = sigmoid(gates[n, i0 + 3H])
  c[n, i0] = f[n, i0] * c[child(n, 0), i0] + i[n, i0] * g[n, i0]
  h[n, i0] = o[n, i0] * tanh(c[n, i0])
internal:
  gates[n, i0] = _in0[n, i0] + b_ih[i0] + sum(k1 < H, W_hh[i0, k1] * h[child(n, 0), k1]) + b_hh[i0]
  i[n, i0] = sigmoid(gates[n, i0])
  f[n, i0] = sigmoid(gates[n, i0 + H])
  g[n, i0] = tanh(gates[n, i0 + 2H])
  o[n, i0] = sigmoid(gates[n, i0 + 3H])
  c[n, i0] = f[n, i0] * c[child(n, 0), i0] + i[n, i0] * g[n, i0]
  h[n, i0] = o[n, i0] * tanh(c[n, i0])
)");
}

TEST(HoistInputs, ProductOfInputAndRecursionStays) {
  // W (x + h[prev]) reads the recursion through the temp: only U x moves.
  ilir::Program input = model(R"(
model M
structure sequence
param emb [V, H]
param W [H, H]
param U [H, H]
state h [H]
node {
  h = tanh(W @ (emb[token] + h[prev]) + U @ emb[token])
}
output h
)");
  check_pass("hoist_inputs", hoist_inputs, input, R"(program M over sequence
  sizes V, H
  param emb[V, H]
  param W[H, H]
  param U[H, H]
  state h[H]
  state _in0[H]
  temp _t0[H]
  output h
hoisted:
  _in0[n, i0] = sum(k1 < H, U[i0, k1] * emb[token(n), k1])
leaf:
  _t0[n, i0] = emb[token(n), i0] + h[child(n, 0), i0]
  h[n, i0] = tanh(sum(k0 < H, W[i0, k0] * _t0[n, k0]) + _in0[n, i0])
internal:
  _t0[n, i0] = emb[token(n), i0] + h[child(n, 0), i0]
  h[n, i0] = tanh(sum(k0 < H, W[i0, k0] * _t0[n, k0]) + _in0[n, i0])
)");
}

TEST(HoistInputs, OneStatePerDistinctProduct) {
  // U x in two Computes is hoisted once and read by both.
  ilir::Program input = model(R"(
model M
structure sequence
param emb [V, H]
param W [H, H]
param U [H, H]
state h [H]
node {
  a = tanh(U @ emb[token] + W @ h[prev])
  h = a * sigmoid(U @ emb[token])
}
output h
)");
  check_pass("hoist_inputs", hoist_inputs, input, R"(program M over sequence
  sizes V, H
  param emb[V, H]
  param W[H, H]
  param U[H, H]
  state h[H]
  state _in0[H]
  temp a[H]
  output h
hoisted:
  _in0[n, i0] = sum(k0 < H, U[i0, k0] * emb[token(n), k0])
leaf:
  a[n, i0] = tanh(_in0[n, i0] + sum(k1 < H, W[i0, k1] * h[child(n, 0), k1]))
  h[n, i0] = a[n, i0] * sigmoid(_in0[n, i0])
internal:
  a[n, i0] = tanh(_in0[n, i0] + sum(k1 < H, W[i0, k1] * h[child(n, 0), k1]))
  h[n, i0] = a[n, i0] * sigmoid(_in0[n, i0])
)");
}

TEST(HoistInputs, TreeModelsAreUnchanged) {
  // A tree's internal nodes have no token: nothing of theirs depends on the input alone, and the
  // leaf case already runs as one batch of all leaves.
  for (const char *stem : {"treefc", "treegru", "treelstm", "childsum_treelstm", "mvrnn"}) {
    SCOPED_TRACE(stem);
    check_unchanged("hoist_inputs", hoist_inputs, model_file(stem));
  }
}

}  // namespace
}  // namespace grove::plan
