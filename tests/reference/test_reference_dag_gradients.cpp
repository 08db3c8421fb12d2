// Tests of the DAG and sequence models' reference gradients (ReferenceDagGradients.h): for DAGRNN,
// LSTM and GRU, the hand-derived backward against central finite differences of the float64 loss
// L = Σ_nodes Σ_j d_rows[node, j] · h[node, j], over image grids (every cell but the last row and
// column read by two successors), random DAGs (empty slots, an empty slot 0 before a filled slot 1,
// both slots naming one node, predecessors numbered after their successors), hand-built DAGs and
// chains (sequences, a length-1 one included, one numbered last token first, and a prefix tree whose
// nodes are read by several successors); the sparse embedding gradient; every node's state against
// the forward references of Reference.h (reference_dagrnn of the sub-DAG of a node's ancestors,
// reference_lstm / reference_gru of a node's prefix); a 10,000-node chain and a 100×100 grid; a
// DAG-RNN worked out by hand; and the checks' own ability to fail.
//
// Finite differences: step 1e-6 in double, central; an analytic entry a and its difference f agree
// when |a - f| <= 1e-6 · max(|a|, |f|) + 1e-8 (the absolute part covers entries that are zero or
// nearly so, where the difference's rounding, ~1e-16 · |L| / 1e-6, dominates). States: within 1e-6
// of the float32 forward references.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/Dag.h"
#include "datasets/DagReader.h"
#include "support/Error.h"
#include "tests/dag/DagTestInputs.h"
#include "tests/reference/Reference.h"
#include "tests/reference/ReferenceDagGradients.h"
#include "tests/reference/ReferenceGradients.h"

namespace grove::reference {
namespace {

using ::testing::HasSubstr;
using GDag = grove::Dag;

constexpr double kStep = 1e-6;
constexpr double kRelTol = 1e-6;
constexpr double kAbsTol = 1e-8;
constexpr int64_t kV = 7;
constexpr int64_t kD = 4;
constexpr int32_t kEmpty = GDag::kEmptySlot;

int64_t hidden_for(ModelKind model) {
  switch (model) {
    case ModelKind::DAGRNN:
      return 5;
    case ModelKind::LSTM:
      return 3;
    default:
      return 4;  // GRU
  }
}

bool sequence_model(ModelKind model) { return model != ModelKind::DAGRNN; }

std::vector<int32_t> random_tokens(uint64_t seed, int32_t count) {
  return grove::testing::random_sequence(seed, count, static_cast<int32_t>(kV));
}

// The chain of `tokens` numbered last token first: node i is token size-1-i, its prev node i + 1.
GDag reversed_chain(const std::vector<int32_t> &tokens) {
  GDag dag;
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i < n; ++i) dag.add_node(tokens[n - 1 - i], {i + 1 < n ? i + 1 : kEmpty});
  return dag;
}

// A sequence DAG whose nodes are read by several successors (a prefix tree of sequences):
// 0 <- 1 <- 2, 1 <- 3 <- 4, 0 <- 5, 3 <- 6.
GDag prefix_tree() {
  GDag dag;
  dag.add_node(3, {kEmpty});
  dag.add_node(1, {0});
  dag.add_node(5, {1});
  dag.add_node(0, {1});
  dag.add_node(6, {3});
  dag.add_node(2, {0});
  dag.add_node(4, {3});
  return dag;
}

// Slots of every kind on five nodes: node 0 fills both slots with node 2 (numbered after it), node
// 1 has no slot at all, node 2 one slot, node 3 an empty slot 0 before slot 1 = node 0, node 4 both
// slots filled. Node 2 is read three times (twice by node 0), node 0 twice; the sinks are 3 and 4.
GDag mixed_slots() {
  GDag dag;
  dag.add_node(3, {2, 2});
  dag.add_node(1, {});
  dag.add_node(5, {1});
  dag.add_node(0, {kEmpty, 0});
  dag.add_node(6, {0, 2});
  return dag;
}

GDag grid(int32_t rows, int32_t cols, Sweep sweep, uint64_t seed) {
  return grid_dag(rows, cols, random_tokens(seed, rows * cols), sweep);
}

// The small DAGs every model is checked on.
std::vector<GDag> small_dags(ModelKind model) {
  std::vector<GDag> dags;
  if (sequence_model(model)) {
    dags.push_back(chain_dag(random_tokens(1, 1)));  // a length-1 sequence
    dags.push_back(chain_dag(random_tokens(2, 2)));
    dags.push_back(chain_dag(random_tokens(3, 7)));
    dags.push_back(reversed_chain(random_tokens(4, 6)));
    dags.push_back(prefix_tree());
    dags.push_back(chain_dag(random_tokens(5, 12)));
  } else {
    dags.push_back(grid(3, 4, Sweep::SouthEast, 1));
    dags.push_back(grid(2, 3, Sweep::NorthWest, 2));
    dags.push_back(grid(1, 1, Sweep::SouthEast, 3));
    dags.push_back(grid(4, 2, Sweep::SouthWest, 4));
    dags.push_back(grove::testing::random_dag(11, 9, static_cast<int32_t>(kV)));
    dags.push_back(grove::testing::random_dag(12, 14, static_cast<int32_t>(kV)));
    dags.push_back(mixed_slots());
    dags.push_back(chain_dag(random_tokens(6, 5)));
  }
  return dags;
}

// How many successor reads each node has (a slot naming it twice counts twice).
std::vector<int32_t> reads(const GDag &dag) {
  std::vector<int32_t> count(dag.size(), 0);
  for (int32_t p : dag.preds)
    if (p != kEmpty) ++count[p];
  return count;
}

// Whether some node of `dags` fills its slot k.
bool any_filled(std::span<const GDag> dags, int32_t k) {
  for (const GDag &dag : dags) {
    for (int32_t v = 0; v < dag.size(); ++v)
      if (dag.num_preds(v) > k && dag.pred(v, k) != kEmpty) return true;
  }
  return false;
}

std::vector<double> random_d_rows(int64_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<double> d(count);
  for (double &x : d) x = static_cast<double>(engine() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  return d;
}

std::vector<double> float_valued(std::vector<double> d) {
  for (double &x : d) x = static_cast<float>(x);
  return d;
}

struct Mismatch {
  std::string param;
  int64_t index;
  double analytic, numeric;
};

bool close(double a, double f) {
  return std::abs(a - f) <= kRelTol * std::max(std::abs(a), std::abs(f)) + kAbsTol;
}

// Central differences of the loss for the entries of every parameter that `pick(name, size)` lists
// (all of them by default), compared with `analytic`. Returns the entries that disagree.
std::vector<Mismatch> finite_difference_mismatches(
    ModelKind model, const Weights64 &weights, std::span<const GDag> dags, std::span<const double> d_rows,
    const Weights64 &analytic,
    const std::function<std::vector<int64_t>(const std::string &, int64_t)> &pick = {}) {
  std::vector<Mismatch> mismatches;
  Weights64 w = weights;
  for (auto &[name, tensor] : w) {
    std::vector<int64_t> indices;
    if (pick) {
      indices = pick(name, tensor.size());
    } else {
      for (int64_t k = 0; k < tensor.size(); ++k) indices.push_back(k);
    }
    for (int64_t k : indices) {
      const double saved = tensor.data[k];
      tensor.data[k] = saved + kStep;
      const double plus = reference_dag_loss64(model, w, dags, d_rows);
      tensor.data[k] = saved - kStep;
      const double minus = reference_dag_loss64(model, w, dags, d_rows);
      tensor.data[k] = saved;
      const double numeric = (plus - minus) / (2.0 * kStep);
      const double a = analytic.at(name).data[k];
      if (!close(a, numeric)) mismatches.push_back({name, k, a, numeric});
    }
  }
  return mismatches;
}

std::string describe(const std::vector<Mismatch> &mismatches) {
  std::string out;
  for (size_t i = 0; i < mismatches.size() && i < 10; ++i) {
    const Mismatch &m = mismatches[i];
    std::ostringstream line;
    line << std::setprecision(12) << m.param << "[" << m.index << "]: analytic " << m.analytic << ", numeric "
         << m.numeric << ", difference " << m.analytic - m.numeric << "\n";
    out += line.str();
  }
  if (mismatches.size() > 10) out += std::to_string(mismatches.size() - 10) + " more\n";
  return out;
}

double max_abs(const Tensor64 &t) {
  double m = 0.0;
  for (double x : t.data) m = std::max(m, std::abs(x));
  return m;
}

// The sub-DAG of `node` and its ancestors (found with an explicit stack), as the forward reference's
// DAG type: `node` is its only sink.
Dag ancestors(const GDag &dag, int32_t node) {
  std::vector<int32_t> new_id(dag.size(), -1), members;
  std::vector<int32_t> stack = {node};
  new_id[node] = 0;
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    members.push_back(v);
    for (int32_t k = 0; k < dag.num_preds(v); ++k) {
      const int32_t p = dag.pred(v, k);
      if (p != kEmpty && new_id[p] == -1) {
        new_id[p] = 0;
        stack.push_back(p);
      }
    }
  }
  std::sort(members.begin(), members.end());
  for (size_t i = 0; i < members.size(); ++i) new_id[members[i]] = static_cast<int32_t>(i);
  Dag sub;
  for (int32_t v : members) {
    sub.token.push_back(dag.token[v]);
    std::array<int32_t, 2> slots{-1, -1};
    for (int32_t k = 0; k < dag.num_preds(v); ++k)
      slots[k] = dag.pred(v, k) == kEmpty ? -1 : new_id[dag.pred(v, k)];
    sub.preds.push_back(slots);
  }
  return sub;
}

// The tokens of the sequence ending at `node` of a sequence DAG: its prev chain, first token first.
std::vector<int32_t> prefix(const GDag &dag, int32_t node) {
  std::vector<int32_t> tokens;
  for (int32_t v = node; v != kEmpty; v = dag.num_preds(v) ? dag.pred(v, 0) : kEmpty)
    tokens.push_back(dag.token[v]);
  std::reverse(tokens.begin(), tokens.end());
  return tokens;
}

class ReferenceDagGradientsTest : public ::testing::TestWithParam<ModelKind> {
 protected:
  ModelKind model() const { return GetParam(); }
  int64_t H() const { return hidden_for(model()); }
  Weights weights(uint64_t seed = 42) const { return random_model_weights(model(), H(), kD, kV, seed); }
};

// The inputs are what the checks claim: grids and random DAGs with shared predecessors and empty
// slots of both kinds; the sequence DAGs chains with a length-1 one and a node of several successors.
TEST_P(ReferenceDagGradientsTest, InputsHaveTheShapesTheChecksNeed) {
  bool shared = false, empty_first = false, empty_slot = false, same_twice = false, length_one = false;
  for (const GDag &dag : small_dags(model())) {
    for (int32_t r : reads(dag)) shared |= r >= 2;
    for (int32_t v = 0; v < dag.size(); ++v) {
      const int32_t n = dag.num_preds(v);
      empty_slot |= n == 0 || dag.pred(v, 0) == kEmpty || (n == 2 && dag.pred(v, 1) == kEmpty);
      empty_first |= n == 2 && dag.pred(v, 0) == kEmpty && dag.pred(v, 1) != kEmpty;
      same_twice |= n == 2 && dag.pred(v, 0) != kEmpty && dag.pred(v, 0) == dag.pred(v, 1);
    }
    length_one |= dag.size() == 1;
  }
  EXPECT_TRUE(shared);
  EXPECT_TRUE(empty_slot);
  EXPECT_TRUE(length_one);
  if (!sequence_model(model())) {
    EXPECT_TRUE(empty_first);
    EXPECT_TRUE(same_twice);
    // A 3×4 south-east grid: every cell off the last row and column is read by two successors.
    const std::vector<int32_t> r = reads(grid(3, 4, Sweep::SouthEast, 1));
    EXPECT_EQ(std::count(r.begin(), r.end(), 2), 6);
  }
}

// Every parameter's analytic gradient equals central differences, on each small DAG alone and on
// all of them as one batch.
TEST_P(ReferenceDagGradientsTest, MatchesFiniteDifferences) {
  const Weights64 w = to_weights64(weights());
  const std::vector<GDag> dags = small_dags(model());
  for (size_t t = 0; t <= dags.size(); ++t) {
    const std::span<const GDag> batch =
        t < dags.size() ? std::span<const GDag>(&dags[t], 1) : std::span<const GDag>(dags);
    SCOPED_TRACE(t < dags.size() ? "DAG " + std::to_string(t) : std::string("the whole batch"));
    const std::vector<double> d = random_d_rows(total_dag_nodes(batch) * H(), 100 + t);
    const Weights64 analytic = reference_dag_gradients64(model(), w, batch, d);
    const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, batch, d, analytic);
    EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " entries disagree:\n" << describe(mismatches);
    for (const auto &[name, g] : analytic) {
      // Every parameter takes part, but a recurrent matrix where no node fills its slot (a
      // length-1 sequence, a 1×1 grid): its gradient is exactly zero there.
      const int32_t k = name == "W_1" ? 1 : 0;
      const bool recurrent = name == "W_hh" || name == "W_0" || name == "W_1";
      if (recurrent && !any_filled(batch, k))
        EXPECT_EQ(max_abs(g), 0.0) << name;
      else
        EXPECT_GT(max_abs(g), 1e-4) << name;
    }
  }
}

// The classic loss: d_rows on the sinks alone (a sequence's last token), another weight draw.
TEST_P(ReferenceDagGradientsTest, MatchesFiniteDifferencesOfTheSinksAlone) {
  const Weights64 w = to_weights64(weights(7));
  const std::vector<GDag> dags = small_dags(model());
  std::vector<double> d(total_dag_nodes(dags) * H(), 0.0);
  int64_t base = 0;
  for (const GDag &dag : dags) {
    const std::vector<int32_t> r = reads(dag);
    for (int32_t v = 0; v < dag.size(); ++v) {
      if (r[v] == 0)
        for (int64_t j = 0; j < H(); ++j) d[(base + v) * H() + j] = 1.0 - 0.5 * static_cast<double>(j);
    }
    base += dag.size();
  }
  const Weights64 analytic = reference_dag_gradients64(model(), w, dags, d);
  const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, dags, d, analytic);
  EXPECT_TRUE(mismatches.empty()) << describe(mismatches);
}

// The forward's states: at every node, the forward reference's output of what that node depends on —
// DAG-RNN: the sub-DAG of the node and its ancestors (whose only sink it is), and the DAG's sinks are
// reference_dagrnn's of the whole DAG; LSTM and GRU: the sequence ending at the node.
TEST_P(ReferenceDagGradientsTest, NodeStatesAreTheReferenceOutputs) {
  const Weights w32 = weights();
  const std::vector<GDag> dags = small_dags(model());
  const DagStates states = reference_dag_states(model(), w32, dags);
  ASSERT_EQ(states.width, H());
  ASSERT_EQ(states.dag_offset.size(), dags.size() + 1);
  ASSERT_EQ(states.nodes(), total_dag_nodes(dags));
  ASSERT_EQ(static_cast<int64_t>(states.rows.size()), states.nodes() * H());
  for (size_t t = 0; t < dags.size(); ++t) {
    const GDag &dag = dags[t];
    const int64_t base = states.dag_offset[t];
    ASSERT_EQ(states.dag_offset[t + 1] - base, dag.size());
    for (int32_t n = 0; n < dag.size(); ++n) {
      Tensor expected;
      if (model() == ModelKind::DAGRNN) {
        expected = reference_dagrnn(w32, ancestors(dag, n));
        ASSERT_EQ(expected.shape, (std::vector<int64_t>{1, H()}));
      } else {
        const std::vector<int32_t> tokens = prefix(dag, n);
        expected = model() == ModelKind::LSTM ? reference_lstm(w32, tokens) : reference_gru(w32, tokens);
      }
      for (int64_t j = 0; j < H(); ++j)
        EXPECT_NEAR(states.rows[(base + n) * H() + j], expected.data[j], 1e-6)
            << "DAG " << t << " node " << n;
    }
    if (model() == ModelKind::DAGRNN) {
      const Tensor sinks = reference_dagrnn(w32, grove::testing::to_reference(dag));
      const std::vector<int32_t> r = reads(dag);
      int64_t k = 0;
      for (int32_t n = 0; n < dag.size(); ++n) {
        if (r[n] != 0) continue;
        for (int64_t j = 0; j < H(); ++j)
          EXPECT_NEAR(states.rows[(base + n) * H() + j], sinks.data[k * H() + j], 1e-6)
              << "DAG " << t << " sink " << n;
        ++k;
      }
      EXPECT_EQ(k, sinks.shape[0]);
    }
  }
}

// The float API: the embedding's gradient lists exactly the rows the nodes read, ascending; the rows
// no node reads have exactly zero gradient (and are absent); every gradient is the double one
// rounded; the states are DAG by DAG (an empty DAG in the middle has no row).
TEST_P(ReferenceDagGradientsTest, SparseEmbeddingGradient) {
  const Weights w32 = weights();
  std::vector<GDag> dags = small_dags(model());
  dags = {dags[2], GDag{}, dags[4], dags.back()};
  for (GDag &dag : dags) {
    for (int32_t &t : dag.token) t = 2 * (t % 3) + 1;  // rows 0, 2, 4 and 6 are never read
  }
  std::set<int32_t> read;
  for (const GDag &dag : dags) read.insert(dag.token.begin(), dag.token.end());
  ASSERT_FALSE(read.count(0) || read.count(2) || read.count(4) || read.count(6));
  ASSERT_GE(read.size(), 2u);
  const std::vector<double> d = float_valued(random_d_rows(total_dag_nodes(dags) * H(), 9));
  const std::vector<float> d32(d.begin(), d.end());
  const ReferenceDagBackward back = reference_dag_backward(model(), w32, dags, d32);
  EXPECT_EQ(back.gradients.embedding_rows, std::vector<int32_t>(read.begin(), read.end()));
  ASSERT_EQ(back.gradients.embedding_grad.shape,
            (std::vector<int64_t>{static_cast<int64_t>(read.size()), kD}));

  DagStates64 states;
  const Weights64 g64 = reference_dag_gradients64(model(), to_weights64(w32), dags, d, &states);
  const Tensor64 &d_emb = g64.at("emb");
  for (int32_t row : {0, 2, 4, 6}) {
    for (int64_t j = 0; j < kD; ++j) EXPECT_EQ(d_emb.data[row * kD + j], 0.0) << "row " << row;
  }
  for (size_t r = 0; r < back.gradients.embedding_rows.size(); ++r) {
    double m = 0.0;
    for (int64_t j = 0; j < kD; ++j) {
      const double g = d_emb.data[back.gradients.embedding_rows[r] * kD + j];
      EXPECT_EQ(back.gradients.embedding_grad.data[r * kD + j], static_cast<float>(g));
      m = std::max(m, std::abs(g));
    }
    EXPECT_GT(m, 0.0) << "row " << back.gradients.embedding_rows[r];
  }
  const std::vector<ParamSpec> specs = model_params(model(), H(), kD, kV);
  EXPECT_EQ(back.gradients.dense.size(), specs.size() - 1);
  EXPECT_FALSE(back.gradients.dense.count("emb"));
  for (const ParamSpec &spec : specs) {
    if (spec.name == "emb") continue;
    ASSERT_TRUE(back.gradients.dense.count(spec.name)) << spec.name;
    const Tensor &g = back.gradients.dense.at(spec.name);
    EXPECT_EQ(g.shape, spec.shape) << spec.name;
    for (int64_t k = 0; k < g.size(); ++k)
      EXPECT_EQ(g.data[k], static_cast<float>(g64.at(spec.name).data[k]));
  }
  const int64_t a = dags[0].size(), b = dags[2].size(), c = dags[3].size();
  EXPECT_EQ(back.dag_offset, (std::vector<int64_t>{0, a, a, a + b, a + b + c}));
  EXPECT_EQ(back.width, H());
  ASSERT_EQ(back.rows.size(), states.rows.size());
  for (size_t k = 0; k < states.rows.size(); ++k) EXPECT_EQ(back.rows[k], static_cast<float>(states.rows[k]));
  const DagStates forward = reference_dag_states(model(), w32, dags);
  EXPECT_EQ(forward.rows, back.rows);
  EXPECT_EQ(forward.dag_offset, back.dag_offset);
}

// 10,000 nodes: a chain for the sequence models, a 100×100 grid for DAG-RNN. No recursion on the C
// stack; the sink's state is the forward reference's; a few entries of every parameter match central
// differences with d_rows on the sink, the first node and one node halfway.
TEST_P(ReferenceDagGradientsTest, TenThousandNodes) {
  const Weights w32 = weights(3);
  const Weights64 w = to_weights64(w32);
  const std::vector<int32_t> tokens = random_tokens(9, 10000);
  const GDag dag = sequence_model(model()) ? chain_dag(tokens) : grid_dag(100, 100, tokens, Sweep::SouthEast);
  const std::vector<GDag> dags = {dag};
  std::vector<double> d(total_dag_nodes(dags) * H(), 0.0);
  std::mt19937_64 engine(5);
  for (int32_t n : {9999, 0, 5050}) {
    for (int64_t j = 0; j < H(); ++j) d[n * H() + j] = static_cast<double>(engine() % 1000) / 500.0 - 1.0;
  }
  DagStates64 states;
  const Weights64 analytic = reference_dag_gradients64(model(), w, dags, d, &states);
  const Tensor sink = model() == ModelKind::DAGRNN ? reference_dagrnn(w32, grove::testing::to_reference(dag))
                      : model() == ModelKind::LSTM ? reference_lstm(w32, tokens)
                                                   : reference_gru(w32, tokens);
  for (int64_t j = 0; j < H(); ++j) EXPECT_NEAR(states.rows[9999 * H() + j], sink.data[j], 1e-6);
  const std::vector<Mismatch> mismatches =
      finite_difference_mismatches(model(), w, dags, d, analytic, [](const std::string &, int64_t size) {
        return std::vector<int64_t>{0, size / 2, size - 1};
      });
  EXPECT_TRUE(mismatches.empty()) << describe(mismatches);
}

// The checker itself can fail: an analytic gradient off by 1e-4 in one entry is caught, and so is a
// backward of the wrong loss (d_rows scaled by 1.001).
TEST_P(ReferenceDagGradientsTest, TheCheckCatchesAWrongGradient) {
  const Weights64 w = to_weights64(weights());
  const std::vector<GDag> all = small_dags(model());
  const std::vector<GDag> dags = {all[sequence_model(model()) ? 4 : 0]};
  const std::vector<double> d = random_d_rows(total_dag_nodes(dags) * H(), 1);
  const Weights64 analytic = reference_dag_gradients64(model(), w, dags, d);
  for (const auto &[name, t] : analytic) {
    Weights64 planted = analytic;
    planted.at(name).data[t.size() / 2] += 1e-4;
    const std::vector<Mismatch> mismatches = finite_difference_mismatches(model(), w, dags, d, planted);
    ASSERT_EQ(mismatches.size(), 1u) << name;
    EXPECT_EQ(mismatches[0].param, name);
    EXPECT_EQ(mismatches[0].index, t.size() / 2);
  }
  std::vector<double> scaled = d;
  for (double &x : scaled) x *= 1.001;
  const Weights64 wrong = reference_dag_gradients64(model(), w, dags, scaled);
  EXPECT_FALSE(finite_difference_mismatches(model(), w, dags, d, wrong).empty());
}

INSTANTIATE_TEST_SUITE_P(DagModels, ReferenceDagGradientsTest,
                         ::testing::Values(ModelKind::DAGRNN, ModelKind::LSTM, ModelKind::GRU),
                         [](const ::testing::TestParamInfo<ModelKind> &info) {
                           return model_name(info.param);
                         });

// DAG-RNN with H = D = 1 on a diamond, worked out by hand: node 0 (token 0) is read by node 1's slot
// 0 and node 2's slot 1 (node 2's slot 0 is empty); node 3 (token 1) reads 1 and 2. Node 0's adjoint
// gathers both readers' shares.
TEST(ReferenceDagGradientsByHand, DagRnnDiamond) {
  Weights w;
  w["emb"] = Tensor({2, 1});
  w["emb"].data = {0.5f, -0.25f};
  w["U"] = Tensor({1, 1});
  w["U"].data = {0.75f};
  w["W_0"] = Tensor({1, 1});
  w["W_0"].data = {-0.5f};
  w["W_1"] = Tensor({1, 1});
  w["W_1"].data = {1.25f};
  w["b"] = Tensor({1});
  w["b"].data = {0.125f};
  GDag dag;
  dag.add_node(0, {});
  dag.add_node(1, {0});
  dag.add_node(0, {kEmpty, 0});
  dag.add_node(1, {1, 2});
  const double x0 = 0.5, x1 = -0.25, U = 0.75, W0 = -0.5, W1 = 1.25, b = 0.125;
  const double h0 = std::tanh(U * x0 + b);
  const double h1 = std::tanh(U * x1 + W0 * h0 + b);
  const double h2 = std::tanh(U * x0 + W1 * h0 + b);
  const double h3 = std::tanh(U * x1 + W0 * h1 + W1 * h2 + b);
  const double d0 = 0.25, d1 = -0.5, d2 = 1.5, d3 = 2.0;
  const double a3 = d3 * (1 - h3 * h3);
  const double a1 = (d1 + W0 * a3) * (1 - h1 * h1);
  const double a2 = (d2 + W1 * a3) * (1 - h2 * h2);
  const double a0 = (d0 + W0 * a1 + W1 * a2) * (1 - h0 * h0);
  const std::vector<float> d = {0.25f, -0.5f, 1.5f, 2.0f};
  const ReferenceDagBackward back = reference_dag_backward(ModelKind::DAGRNN, w, std::vector<GDag>{dag}, d);
  ASSERT_EQ(back.rows.size(), 4u);
  EXPECT_NEAR(back.rows[0], h0, 1e-7);
  EXPECT_NEAR(back.rows[1], h1, 1e-7);
  EXPECT_NEAR(back.rows[2], h2, 1e-7);
  EXPECT_NEAR(back.rows[3], h3, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("b").data[0], a0 + a1 + a2 + a3, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("U").data[0], (a0 + a2) * x0 + (a1 + a3) * x1, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("W_0").data[0], a1 * h0 + a3 * h1, 1e-7);
  EXPECT_NEAR(back.gradients.dense.at("W_1").data[0], a2 * h0 + a3 * h2, 1e-7);
  ASSERT_EQ(back.gradients.embedding_rows, (std::vector<int32_t>{0, 1}));
  EXPECT_NEAR(back.gradients.embedding_grad.data[0], U * (a0 + a2), 1e-7);
  EXPECT_NEAR(back.gradients.embedding_grad.data[1], U * (a1 + a3), 1e-7);
}

// Wrong inputs are InternalErrors (a bug in the caller), naming the problem.
TEST(ReferenceDagGradientsErrors, BadInputs) {
  const Weights dagrnn = random_model_weights(ModelKind::DAGRNN, 3, 4, kV, 1);
  const Weights lstm = random_model_weights(ModelKind::LSTM, 3, 4, kV, 1);
  auto message = [](const std::function<void()> &f) -> std::string {
    try {
      f();
    } catch (const InternalError &e) {
      return e.what();
    }
    return "no error";
  };
  auto states = [](ModelKind model, const Weights &w, const GDag &dag) {
    return [model, w, dag] { reference_dag_states(model, w, std::vector<GDag>{dag}); };
  };
  GDag cycle;
  cycle.add_node(0, {1});
  cycle.add_node(1, {0});
  EXPECT_THAT(message(states(ModelKind::DAGRNN, dagrnn, cycle)), HasSubstr("cycle"));
  GDag three;
  three.add_node(0, {});
  three.add_node(1, {0, 0, 0});
  EXPECT_THAT(message(states(ModelKind::DAGRNN, dagrnn, three)), HasSubstr("3 predecessor slots"));
  GDag two;
  two.add_node(0, {});
  two.add_node(1, {0, kEmpty});
  EXPECT_THAT(message(states(ModelKind::LSTM, lstm, two)), HasSubstr("2 predecessor slots"));
  GDag outside;
  outside.add_node(0, {5});
  EXPECT_THAT(message(states(ModelKind::DAGRNN, dagrnn, outside)), HasSubstr("names 5"));
  GDag self;
  self.add_node(0, {0});
  EXPECT_THAT(message(states(ModelKind::GRU, random_model_weights(ModelKind::GRU, 3, 4, kV, 1), self)),
              HasSubstr("names 0"));
  const GDag bad_token = chain_dag({1, static_cast<int32_t>(kV)});
  EXPECT_THAT(message(states(ModelKind::LSTM, lstm, bad_token)), HasSubstr("token 7"));
  EXPECT_THAT(message(states(ModelKind::GRU, lstm, chain_dag({1}))),
              HasSubstr("GRU tensor"));  // LSTM's weights
  EXPECT_THAT(message(states(ModelKind::TreeLSTM, lstm, chain_dag({1}))), HasSubstr("not a DAG"));
  const std::vector<float> short_d(5);
  EXPECT_THAT(message([&] {
                reference_dag_backward(ModelKind::LSTM, lstm, std::vector<GDag>{chain_dag({1, 2})}, short_d);
              }),
              HasSubstr("d_rows has 5 entries"));
}

}  // namespace
}  // namespace grove::reference
