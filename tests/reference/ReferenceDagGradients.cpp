#include "tests/reference/ReferenceDagGradients.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <string>
#include <utility>

#include "support/Error.h"
#include "tests/reference/GradientMath.h"

namespace grove::reference {
namespace {

using math::add_acc;
using math::cols_of;
using math::matvec_t_acc;
using math::outer_acc;
using math::rows_of;
using math::sigmoid;
using math::to_float;

using Vec = std::vector<double>;

// --- Weights ------------------------------------------------------------------------------------

struct Sizes {
  int64_t H = 0, D = 0, V = 0;
};

int64_t axis(const Weights64 &weights, const std::string &name, size_t k) {
  auto it = weights.find(name);
  GROVE_CHECK(it != weights.end(), "the weights have no tensor '{}'", name);
  GROVE_CHECK(k < it->second.shape.size(), "tensor '{}' has shape [{}], expected at least {} dimensions",
              name, fmt::join(it->second.shape, ", "), k + 1);
  return it->second.shape[k];
}

// H, D and V read off the weights (emb [V, D]; H from a bias), then checks that the weights are
// exactly model_params(H, D, V): every tensor present with its shape, and no other tensor.
Sizes checked_sizes(ModelKind model, const Weights64 &weights) {
  GROVE_CHECK(is_dag_model(model),
              "{} is not a DAG or sequence model; these references take DAGRNN, LSTM "
              "and GRU",
              model_name(model));
  Sizes s;
  s.V = axis(weights, "emb", 0);
  s.D = axis(weights, "emb", 1);
  switch (model) {
    case ModelKind::DAGRNN:
      s.H = axis(weights, "b", 0);
      break;
    case ModelKind::LSTM:
      s.H = axis(weights, "b_ih", 0) / 4;
      break;
    default:  // GRU
      s.H = axis(weights, "b_ih", 0) / 3;
      break;
  }
  const std::vector<ParamSpec> specs = model_params(model, s.H, s.D, s.V);
  for (const ParamSpec &spec : specs) {
    auto it = weights.find(spec.name);
    GROVE_CHECK(it != weights.end(), "the weights have no tensor '{}'", spec.name);
    const Tensor64 &t = it->second;
    GROVE_CHECK(t.size() == Tensor::num_elements(t.shape), "tensor '{}' has shape [{}] but {} elements",
                spec.name, fmt::join(t.shape, ", "), t.size());
    GROVE_CHECK(t.shape == spec.shape, "{} tensor '{}' has shape [{}], expected [{}]", model_name(model),
                spec.name, fmt::join(t.shape, ", "), fmt::join(spec.shape, ", "));
  }
  GROVE_CHECK(weights.size() == specs.size(), "{} takes {} tensors, the weights have {}", model_name(model),
              specs.size(), weights.size());
  return s;
}

// --- DAGs ---------------------------------------------------------------------------------------

// How many predecessor slots the model's nodes read: DAGRNN h_p0 and h_p1, LSTM and GRU h[prev].
int32_t model_slots(ModelKind model) { return model == ModelKind::DAGRNN ? 2 : 1; }

// Checks `dag` as the model takes it and returns its nodes in a topological order (Kahn's algorithm
// with a FIFO work list: predecessors before successors).
std::vector<int32_t> checked_order(ModelKind model, const grove::Dag &dag, int64_t V, size_t number) {
  const int32_t n = dag.size();
  std::vector<int32_t> order;
  if (n == 0) return order;
  GROVE_CHECK(static_cast<int32_t>(dag.pred_begin.size()) == n + 1,
              "DAG {}: {} nodes but {} pred_begin entries, expected {}", number, n, dag.pred_begin.size(),
              n + 1);
  GROVE_CHECK(dag.pred_begin[0] == 0 && dag.pred_begin[n] == static_cast<int32_t>(dag.preds.size()),
              "DAG {}: pred_begin runs from {} to {}, expected 0 to {}", number, dag.pred_begin[0],
              dag.pred_begin[n], dag.preds.size());
  const int32_t slots = model_slots(model);
  std::vector<std::vector<int32_t>> successors(n);
  std::vector<int32_t> waiting_for(n, 0);
  for (int32_t v = 0; v < n; ++v) {
    GROVE_CHECK(dag.pred_begin[v + 1] >= dag.pred_begin[v], "DAG {}: node {} has a negative slot count",
                number, v);
  }
  for (int32_t v = 0; v < n; ++v) {
    GROVE_CHECK(dag.num_preds(v) <= slots, "DAG {}: node {} has {} predecessor slots; {} reads at most {}",
                number, v, dag.num_preds(v), model_name(model), slots);
    GROVE_CHECK(dag.token[v] >= 0 && dag.token[v] < V,
                "DAG {}: node {} has token {}, expected one in [0, {})", number, v, dag.token[v], V);
    for (int32_t k = 0; k < dag.num_preds(v); ++k) {
      const int32_t p = dag.pred(v, k);
      if (p == grove::Dag::kEmptySlot) continue;
      GROVE_CHECK(p >= 0 && p < n && p != v, "DAG {}: node {} slot {} names {}, not another node of {}",
                  number, v, k, p, n);
      successors[p].push_back(v);
      ++waiting_for[v];
    }
  }
  std::deque<int32_t> ready;
  for (int32_t v = 0; v < n; ++v) {
    if (waiting_for[v] == 0) ready.push_back(v);
  }
  order.reserve(n);
  while (!ready.empty()) {
    const int32_t v = ready.front();
    ready.pop_front();
    order.push_back(v);
    for (int32_t next : successors[v]) {
      if (--waiting_for[next] == 0) ready.push_back(next);
    }
  }
  GROVE_CHECK(static_cast<int32_t>(order.size()) == n,
              "DAG {} has a cycle: only {} of its {} nodes can be ordered", number, order.size(), n);
  return order;
}

// Slot k of node v, or kEmptySlot where the node has fewer slots.
int32_t slot(const grove::Dag &dag, int32_t v, int32_t k) {
  return k < dag.num_preds(v) ? dag.pred(v, k) : grove::Dag::kEmptySlot;
}

// --- Linear algebra on raw rows -----------------------------------------------------------------

// y += W x, W [rows, cols].
void matvec_acc(const Tensor64 &W, const double *x, double *y) {
  const int64_t rows = rows_of(W), cols = cols_of(W);
  for (int64_t i = 0; i < rows; ++i) {
    double acc = 0.0;
    const double *w = &W.data[i * cols];
    for (int64_t k = 0; k < cols; ++k) acc += w[k] * x[k];
    y[i] += acc;
  }
}

const double *row(const Tensor64 &t, int64_t r) { return &t.data[r * (t.size() / t.shape[0])]; }
double *row(Tensor64 &t, int64_t r) { return &t.data[r * (t.size() / t.shape[0])]; }

// --- One DAG, forward and (if g) backward ---------------------------------------------------------
//
// h: the DAG's rows [n, H] out (node numbering). d: the DAG's d_rows [n, H] in, or null with g null.
// g: the gradients, every parameter shaped, accumulated into (null: forward only).

struct DagPass {
  const Weights64 &w;
  Sizes s;
  const grove::Dag &dag;
  std::vector<int32_t> order;
  double *h;
  const double *d;
  Weights64 *g;

  const Tensor64 &W(const char *name) const { return w.at(name); }
  Tensor64 &G(const char *name) const { return g->at(name); }
  int64_t token(int32_t node) const { return dag.token[node]; }
  // dh starts as the DAG's d_rows; each successor adds its share into its predecessors' rows.
  Vec initial_dh() const { return Vec(d, d + static_cast<int64_t>(dag.size()) * s.H); }
};

// h = tanh(U x + W_0 h_p0 + W_1 h_p1 + b), x = E[w]; an empty slot reads zeros.
void dagrnn(const DagPass &p) {
  const int64_t H = p.s.H, D = p.s.D;
  const Tensor64 &emb = p.W("emb"), &U = p.W("U"), &W_0 = p.W("W_0"), &W_1 = p.W("W_1");
  const double *b = p.W("b").data.data();
  const Tensor64 *Ws[2] = {&W_0, &W_1};
  for (int32_t n : p.order) {
    double *hn = p.h + n * H;
    std::copy(b, b + H, hn);
    matvec_acc(U, row(emb, p.token(n)), hn);
    for (int32_t k = 0; k < 2; ++k) {
      const int32_t q = slot(p.dag, n, k);
      if (q != grove::Dag::kEmptySlot) matvec_acc(*Ws[k], p.h + q * H, hn);
    }
    for (int64_t j = 0; j < H; ++j) hn[j] = std::tanh(hn[j]);
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_U = p.G("U"), &d_W_0 = p.G("W_0"), &d_W_1 = p.G("W_1");
  double *d_b = p.G("b").data.data();
  Tensor64 *dWs[2] = {&d_W_0, &d_W_1};
  Vec dh = p.initial_dh(), da(H), dx(D);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *dhn = &dh[n * H], *hn = p.h + n * H;
    for (int64_t j = 0; j < H; ++j) da[j] = dhn[j] * (1.0 - hn[j] * hn[j]);
    add_acc(d_b, da.data(), H);
    outer_acc(d_U, da.data(), row(emb, p.token(n)));
    std::fill(dx.begin(), dx.end(), 0.0);
    matvec_t_acc(U, da.data(), dx.data());
    add_acc(row(d_emb, p.token(n)), dx.data(), D);
    for (int32_t k = 0; k < 2; ++k) {
      const int32_t q = slot(p.dag, n, k);
      if (q == grove::Dag::kEmptySlot) continue;
      outer_acc(*dWs[k], da.data(), p.h + q * H);
      matvec_t_acc(*Ws[k], da.data(), &dh[q * H]);  // q is later in the reverse order: gathered first
    }
  }
}

// PyTorch's nn.LSTM cell: gates = W_ih x + b_ih + W_hh h_prev + b_hh (rows i, f, g, o);
// c = f ⊙ c_prev + i ⊙ g; h = o ⊙ tanh(c). An empty prev reads h_prev = c_prev = 0.
void lstm(const DagPass &p) {
  const int64_t H = p.s.H, D = p.s.D, N = p.dag.size();
  const Tensor64 &emb = p.W("emb"), &W_ih = p.W("W_ih"), &W_hh = p.W("W_hh");
  const double *b_ih = p.W("b_ih").data.data(), *b_hh = p.W("b_hh").data.data();
  // Per node: the gates' activations [i; f; g; o] (4H) and the cell c (H).
  Vec act(N * 4 * H), c(N * H);
  for (int32_t n : p.order) {
    double *a = &act[n * 4 * H], *cn = &c[n * H], *hn = p.h + n * H;
    for (int64_t j = 0; j < 4 * H; ++j) a[j] = b_ih[j] + b_hh[j];
    matvec_acc(W_ih, row(emb, p.token(n)), a);
    const int32_t q = slot(p.dag, n, 0);
    if (q != grove::Dag::kEmptySlot) matvec_acc(W_hh, p.h + q * H, a);
    for (int64_t j = 0; j < 2 * H; ++j) a[j] = sigmoid(a[j]);
    for (int64_t j = 2 * H; j < 3 * H; ++j) a[j] = std::tanh(a[j]);
    for (int64_t j = 3 * H; j < 4 * H; ++j) a[j] = sigmoid(a[j]);
    const double *i = a, *f = a + H, *gg = a + 2 * H, *o = a + 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double c_prev = q == grove::Dag::kEmptySlot ? 0.0 : c[q * H + j];
      cn[j] = f[j] * c_prev + i[j] * gg[j];
      hn[j] = o[j] * std::tanh(cn[j]);
    }
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W_ih = p.G("W_ih"), &d_W_hh = p.G("W_hh");
  double *d_b_ih = p.G("b_ih").data.data(), *d_b_hh = p.G("b_hh").data.data();
  // dh and dc: each node's own d_rows (dc: none) plus every successor's share.
  Vec dh = p.initial_dh(), dc(N * H, 0.0), dpre(4 * H), dx(D);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *a = &act[n * 4 * H], *cn = &c[n * H], *dhn = &dh[n * H];
    double *dcn = &dc[n * H];
    const double *i = a, *f = a + H, *gg = a + 2 * H, *o = a + 3 * H;
    const int32_t q = slot(p.dag, n, 0);
    for (int64_t j = 0; j < H; ++j) {
      const double tc = std::tanh(cn[j]);
      const double d_o = dhn[j] * tc;
      dcn[j] += dhn[j] * o[j] * (1.0 - tc * tc);
      const double c_prev = q == grove::Dag::kEmptySlot ? 0.0 : c[q * H + j];
      const double d_i = dcn[j] * gg[j], d_f = dcn[j] * c_prev, d_g = dcn[j] * i[j];
      dpre[j] = d_i * i[j] * (1.0 - i[j]);
      dpre[H + j] = d_f * f[j] * (1.0 - f[j]);
      dpre[2 * H + j] = d_g * (1.0 - gg[j] * gg[j]);
      dpre[3 * H + j] = d_o * o[j] * (1.0 - o[j]);
      if (q != grove::Dag::kEmptySlot) dc[q * H + j] += dcn[j] * f[j];
    }
    add_acc(d_b_ih, dpre.data(), 4 * H);
    add_acc(d_b_hh, dpre.data(), 4 * H);
    outer_acc(d_W_ih, dpre.data(), row(emb, p.token(n)));
    std::fill(dx.begin(), dx.end(), 0.0);
    matvec_t_acc(W_ih, dpre.data(), dx.data());
    add_acc(row(d_emb, p.token(n)), dx.data(), D);
    if (q != grove::Dag::kEmptySlot) {
      outer_acc(d_W_hh, dpre.data(), p.h + q * H);
      matvec_t_acc(W_hh, dpre.data(), &dh[q * H]);
    }
  }
}

// PyTorch's nn.GRU cell: gi = W_ih x + b_ih, gh = W_hh h_prev + b_hh (rows r, z, n);
// r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), cand = tanh(gi_n + r ⊙ gh_n), h = (1 - z) ⊙ cand + z ⊙ h_prev.
// An empty prev reads h_prev = 0 (gh = b_hh still).
void gru(const DagPass &p) {
  const int64_t H = p.s.H, D = p.s.D, N = p.dag.size();
  const Tensor64 &emb = p.W("emb"), &W_ih = p.W("W_ih"), &W_hh = p.W("W_hh");
  const double *b_ih = p.W("b_ih").data.data(), *b_hh = p.W("b_hh").data.data();
  // Per node: r, z, cand (3H) and gh_n (H).
  Vec act(N * 4 * H), gi(3 * H), gh(3 * H);
  const Vec zeros(H, 0.0);
  for (int32_t n : p.order) {
    double *a = &act[n * 4 * H], *hn = p.h + n * H;
    std::copy(b_ih, b_ih + 3 * H, gi.begin());
    matvec_acc(W_ih, row(emb, p.token(n)), gi.data());
    std::copy(b_hh, b_hh + 3 * H, gh.begin());
    const int32_t q = slot(p.dag, n, 0);
    const double *hp = q == grove::Dag::kEmptySlot ? zeros.data() : p.h + q * H;
    matvec_acc(W_hh, hp, gh.data());
    for (int64_t j = 0; j < H; ++j) {
      const double r = sigmoid(gi[j] + gh[j]);
      const double z = sigmoid(gi[H + j] + gh[H + j]);
      const double cand = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
      a[j] = r;
      a[H + j] = z;
      a[2 * H + j] = cand;
      a[3 * H + j] = gh[2 * H + j];
      hn[j] = (1.0 - z) * cand + z * hp[j];
    }
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W_ih = p.G("W_ih"), &d_W_hh = p.G("W_hh");
  double *d_b_ih = p.G("b_ih").data.data(), *d_b_hh = p.G("b_hh").data.data();
  Vec dh = p.initial_dh(), dgi(3 * H), dgh(3 * H), dx(D);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *a = &act[n * 4 * H], *dhn = &dh[n * H];
    const int32_t q = slot(p.dag, n, 0);
    const double *hp = q == grove::Dag::kEmptySlot ? zeros.data() : p.h + q * H;
    for (int64_t j = 0; j < H; ++j) {
      const double r = a[j], z = a[H + j], cand = a[2 * H + j], gh_n = a[3 * H + j];
      const double d_cand = dhn[j] * (1.0 - z), d_z = dhn[j] * (hp[j] - cand);
      const double d_an = d_cand * (1.0 - cand * cand);  // cand's pre-activation
      const double d_r = d_an * gh_n;
      const double d_ar = d_r * r * (1.0 - r), d_az = d_z * z * (1.0 - z);
      dgi[j] = d_ar;
      dgh[j] = d_ar;
      dgi[H + j] = d_az;
      dgh[H + j] = d_az;
      dgi[2 * H + j] = d_an;
      dgh[2 * H + j] = d_an * r;
    }
    add_acc(d_b_ih, dgi.data(), 3 * H);
    add_acc(d_b_hh, dgh.data(), 3 * H);
    outer_acc(d_W_ih, dgi.data(), row(emb, p.token(n)));
    std::fill(dx.begin(), dx.end(), 0.0);
    matvec_t_acc(W_ih, dgi.data(), dx.data());
    add_acc(row(d_emb, p.token(n)), dx.data(), D);
    if (q != grove::Dag::kEmptySlot) {
      double *dhp = &dh[q * H];
      for (int64_t j = 0; j < H; ++j) dhp[j] += dhn[j] * a[H + j];  // h = ... + z ⊙ h_prev
      outer_acc(d_W_hh, dgh.data(), hp);
      matvec_t_acc(W_hh, dgh.data(), dhp);
    }
  }
}

// Forward (and, with g, backward) of every DAG; states out.
void run_batch(ModelKind model, const Weights64 &weights, std::span<const grove::Dag> dags,
               const double *d_rows, Weights64 *g, DagStates64 &states) {
  const Sizes s = checked_sizes(model, weights);
  states.width = s.H;
  states.dag_offset.assign(1, 0);
  for (const grove::Dag &dag : dags) states.dag_offset.push_back(states.dag_offset.back() + dag.size());
  states.rows.assign(states.nodes() * s.H, 0.0);
  if (g) {
    g->clear();
    for (const ParamSpec &spec : model_params(model, s.H, s.D, s.V))
      g->emplace(spec.name, Tensor64(spec.shape));
  }
  for (size_t k = 0; k < dags.size(); ++k) {
    const int64_t offset = states.dag_offset[k] * s.H;
    const DagPass pass{weights,
                       s,
                       dags[k],
                       checked_order(model, dags[k], s.V, k),
                       states.rows.data() + offset,
                       d_rows ? d_rows + offset : nullptr,
                       g};
    switch (model) {
      case ModelKind::DAGRNN:
        dagrnn(pass);
        break;
      case ModelKind::LSTM:
        lstm(pass);
        break;
      default:  // GRU (checked_sizes took only the three)
        gru(pass);
        break;
    }
  }
}

std::vector<float> to_float(const Vec &v) {
  std::vector<float> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = static_cast<float>(v[k]);
  return out;
}

}  // namespace

// --- Public API ---------------------------------------------------------------------------------

bool is_dag_model(ModelKind model) {
  return model == ModelKind::DAGRNN || model == ModelKind::LSTM || model == ModelKind::GRU;
}

int64_t total_dag_nodes(std::span<const grove::Dag> dags) {
  int64_t n = 0;
  for (const grove::Dag &dag : dags) n += dag.size();
  return n;
}

DagStates64 reference_dag_states64(ModelKind model, const Weights64 &weights,
                                   std::span<const grove::Dag> dags) {
  DagStates64 states;
  run_batch(model, weights, dags, nullptr, nullptr, states);
  return states;
}

double reference_dag_loss64(ModelKind model, const Weights64 &weights, std::span<const grove::Dag> dags,
                            std::span<const double> d_rows) {
  const DagStates64 states = reference_dag_states64(model, weights, dags);
  GROVE_CHECK(d_rows.size() == states.rows.size(), "d_rows has {} entries, expected {} nodes × {} = {}",
              d_rows.size(), states.nodes(), states.width, states.rows.size());
  double loss = 0.0;
  for (size_t k = 0; k < d_rows.size(); ++k) loss += d_rows[k] * states.rows[k];
  return loss;
}

Weights64 reference_dag_gradients64(ModelKind model, const Weights64 &weights,
                                    std::span<const grove::Dag> dags, std::span<const double> d_rows,
                                    DagStates64 *states) {
  const Sizes s = checked_sizes(model, weights);
  const int64_t expected = total_dag_nodes(dags) * s.H;
  GROVE_CHECK(static_cast<int64_t>(d_rows.size()) == expected,
              "d_rows has {} entries, expected {} nodes × {} = {}", d_rows.size(), total_dag_nodes(dags), s.H,
              expected);
  Weights64 grads;
  DagStates64 local;
  run_batch(model, weights, dags, d_rows.data(), &grads, states ? *states : local);
  return grads;
}

DagStates reference_dag_states(ModelKind model, const Weights &weights, std::span<const grove::Dag> dags) {
  const DagStates64 states = reference_dag_states64(model, to_weights64(weights), dags);
  DagStates out;
  out.width = states.width;
  out.dag_offset = states.dag_offset;
  out.rows = to_float(states.rows);
  return out;
}

ReferenceDagBackward reference_dag_backward(ModelKind model, const Weights &weights,
                                            std::span<const grove::Dag> dags, std::span<const float> d_rows) {
  const Vec d(d_rows.begin(), d_rows.end());
  DagStates64 states;
  const Weights64 grads = reference_dag_gradients64(model, to_weights64(weights), dags, d, &states);
  ReferenceDagBackward out;
  out.dag_offset = states.dag_offset;
  out.rows = to_float(states.rows);
  out.width = states.width;
  for (const auto &[name, g] : grads) {
    if (name != "emb") out.gradients.dense.emplace(name, to_float(g));
  }
  std::set<int32_t> rows;
  for (const grove::Dag &dag : dags) rows.insert(dag.token.begin(), dag.token.end());
  const Tensor64 &d_emb = grads.at("emb");
  const int64_t D = d_emb.shape[1];
  out.gradients.embedding_rows.assign(rows.begin(), rows.end());
  out.gradients.embedding_grad = Tensor({static_cast<int64_t>(rows.size()), D});
  for (size_t r = 0; r < out.gradients.embedding_rows.size(); ++r) {
    const int64_t w = out.gradients.embedding_rows[r];
    for (int64_t j = 0; j < D; ++j)
      out.gradients.embedding_grad.data[r * D + j] = static_cast<float>(d_emb.data[w * D + j]);
  }
  return out;
}

}  // namespace grove::reference
