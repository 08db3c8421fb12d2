#include "tests/reference/ReferenceGradients.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "support/Error.h"
#include "tests/reference/GradientMath.h"

namespace grove::reference {

Tensor64::Tensor64(std::vector<int64_t> s) : shape(std::move(s)), data(Tensor::num_elements(shape), 0.0) {}

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

bool is_tree_model(ModelKind model) {
  switch (model) {
    case ModelKind::TreeFC:
    case ModelKind::TreeGRU:
    case ModelKind::TreeLSTM:
    case ModelKind::ChildSumTreeLSTM:
    case ModelKind::MVRNN:
      return true;
    case ModelKind::DAGRNN:
    case ModelKind::LSTM:
    case ModelKind::GRU:
      break;
  }
  return false;
}

bool is_binary_model(ModelKind model) { return model != ModelKind::ChildSumTreeLSTM; }

// "" if `shape` and `count` (the element count) describe a tensor of `spec`'s shape, else why not.
std::string shape_problem(ModelKind model, const std::string &name, const std::vector<int64_t> &shape,
                          int64_t count, const std::vector<int64_t> &expected) {
  if (count != Tensor::num_elements(shape))
    return fmt::format("tensor '{}' has shape [{}] but {} elements", name, fmt::join(shape, ", "), count);
  if (shape != expected)
    return fmt::format("{} tensor '{}' has shape [{}], expected [{}]", model_name(model), name,
                       fmt::join(shape, ", "), fmt::join(expected, ", "));
  return "";
}

// H, D and V read off the weights' shapes (emb [V, D]; H from a bias), for any map of tensors with a
// `shape` member; an axis that is missing reads as 0 (model_params then reports the sizes).
template <typename Map>
Sizes sizes_of(ModelKind model, const Map &weights) {
  auto axis = [&](const std::string &name, size_t k) -> int64_t {
    auto it = weights.find(name);
    GROVE_CHECK(it != weights.end(), "the weights have no tensor '{}'", name);
    GROVE_CHECK(k < it->second.shape.size(), "tensor '{}' has shape [{}], expected at least {} dimensions",
                name, fmt::join(it->second.shape, ", "), k + 1);
    return it->second.shape[k];
  };
  GROVE_CHECK(is_tree_model(model), "{} is not a tree model", model_name(model));
  Sizes s;
  s.V = axis("emb", 0);
  s.D = axis("emb", 1);
  switch (model) {
    case ModelKind::TreeFC:
    case ModelKind::MVRNN:
      s.H = s.D;
      break;
    case ModelKind::TreeGRU:
      s.H = axis("b_x", 0);
      break;
    default:
      s.H = axis("b_f", 0);
      break;
  }
  return s;
}

// Checks that the weights are exactly model_params(H, D, V): every tensor present with its shape,
// and no other tensor.
Sizes checked_sizes(ModelKind model, const Weights64 &weights) {
  const Sizes s = sizes_of(model, weights);
  const std::vector<ParamSpec> specs = model_params(model, s.H, s.D, s.V);
  for (const ParamSpec &spec : specs) {
    auto it = weights.find(spec.name);
    GROVE_CHECK(it != weights.end(), "the weights have no tensor '{}'", spec.name);
    const std::string problem =
        shape_problem(model, spec.name, it->second.shape, it->second.size(), spec.shape);
    GROVE_CHECK(problem.empty(), "{}", problem);
  }
  GROVE_CHECK(weights.size() == specs.size(), "{} takes {} tensors, the weights have {}", model_name(model),
              specs.size(), weights.size());
  return s;
}

// --- Trees --------------------------------------------------------------------------------------

// Every node of `tree` once, children before parents, root last, into `order` (an explicit stack of
// (node, next child) instead of recursion). Returns "" if `tree` is a tree that `model` can take with
// vocabulary V, else what is wrong with it.
std::string tree_order(ModelKind model, const Tree &tree, int64_t V, std::vector<int32_t> &order) {
  order.clear();
  const int32_t n = tree.size();
  if (n == 0) return "the tree is empty";
  if (static_cast<int32_t>(tree.child_begin.size()) != n + 1)
    return fmt::format("a tree of {} nodes has {} child_begin entries, expected {}", n,
                       tree.child_begin.size(), n + 1);
  if (tree.child_begin[0] != 0 || tree.child_begin[n] != static_cast<int32_t>(tree.children.size()))
    return fmt::format("child_begin runs from {} to {}, expected 0 to {}", tree.child_begin[0],
                       tree.child_begin[n], tree.children.size());
  for (int32_t i = 0; i < n; ++i) {
    if (tree.child_begin[i + 1] < tree.child_begin[i])
      return fmt::format("node {} has a negative number of children", i);
  }
  if (tree.root < 0 || tree.root >= n)
    return fmt::format("root {} is not a node of a {}-node tree", tree.root, n);
  order.reserve(n);
  std::vector<bool> reached(n, false);
  std::vector<std::pair<int32_t, int32_t>> stack = {{tree.root, 0}};
  reached[tree.root] = true;
  while (!stack.empty()) {
    const int32_t node = stack.back().first;
    const int32_t next = stack.back().second;
    const int32_t K = tree.num_children(node);
    if (next == 0) {
      if (K == 0) {
        const int64_t w = tree.token[node];
        if (w < 0 || w >= V) return fmt::format("leaf {} has token {}, expected one in [0, {})", node, w, V);
      } else if (is_binary_model(model) && K != 2) {
        return fmt::format("node {} has {} children; {} needs 0 or 2", node, K, model_name(model));
      }
    }
    if (next == K) {
      order.push_back(node);
      stack.pop_back();
      continue;
    }
    ++stack.back().second;
    const int32_t child = tree.child(node, next);
    if (child < 0 || child >= n)
      return fmt::format("node {} has child {}, not a node of a {}-node tree", node, child, n);
    if (reached[child]) return fmt::format("node {} is reached twice from the root", child);
    reached[child] = true;
    stack.emplace_back(child, 0);
  }
  if (static_cast<int32_t>(order.size()) != n)
    return fmt::format("only {} of the tree's {} nodes hang from root {}", order.size(), n, tree.root);
  return "";
}

std::vector<int32_t> checked_order(ModelKind model, const Tree &tree, int64_t V) {
  std::vector<int32_t> order;
  const std::string problem = tree_order(model, tree, V, order);
  GROVE_CHECK(problem.empty(), "{}", problem);
  return order;
}

// --- Linear algebra on raw rows -----------------------------------------------------------------

// y = W x + bias (bias may be null), W [rows, cols].
void matvec(const Tensor64 &W, const double *x, const double *bias, double *y) {
  const int64_t rows = rows_of(W), cols = cols_of(W);
  for (int64_t i = 0; i < rows; ++i) {
    double acc = bias ? bias[i] : 0.0;
    const double *w = &W.data[i * cols];
    for (int64_t k = 0; k < cols; ++k) acc += w[k] * x[k];
    y[i] = acc;
  }
}

// out = [a; b], each of H.
void concat(const double *a, const double *b, int64_t H, double *out) {
  std::copy(a, a + H, out);
  std::copy(b, b + H, out + H);
}

const double *row(const Tensor64 &t, int64_t r) { return &t.data[r * (t.size() / t.shape[0])]; }
double *row(Tensor64 &t, int64_t r) { return &t.data[r * (t.size() / t.shape[0])]; }

// --- One tree, forward and (if g) backward --------------------------------------------------------
//
// h: the tree's rows [n, H] out (node numbering). d: the tree's d_rows [n, H] in, or null with g
// null. g: the gradients, every parameter shaped, accumulated into (null: forward only).

struct TreePass {
  const Weights64 &w;
  Sizes s;
  const Tree &tree;
  std::vector<int32_t> order;
  double *h;
  const double *d;
  Weights64 *g;

  const Tensor64 &W(const char *name) const { return w.at(name); }
  Tensor64 &G(const char *name) const { return g->at(name); }
  int64_t token(int32_t node) const { return tree.token[node]; }
  bool leaf(int32_t node) const { return tree.num_children(node) == 0; }
  // dh starts as the tree's d_rows; each parent adds into its children's rows.
  Vec initial_dh() const { return Vec(d, d + static_cast<int64_t>(tree.size()) * s.H); }
};

void treefc(const TreePass &p) {
  const int64_t H = p.s.H;
  const Tensor64 &emb = p.W("emb"), &W = p.W("W");
  const double *b = p.W("b").data.data();
  Vec st(2 * H);
  for (int32_t n : p.order) {
    double *hn = p.h + n * H;
    if (p.leaf(n)) {
      std::copy(row(emb, p.token(n)), row(emb, p.token(n)) + H, hn);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    concat(p.h + l * H, p.h + r * H, H, st.data());
    matvec(W, st.data(), b, hn);
    for (int64_t j = 0; j < H; ++j) hn[j] = std::tanh(hn[j]);
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W = p.G("W");
  double *d_b = p.G("b").data.data();
  Vec dh = p.initial_dh(), da(H), ds(2 * H);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *dhn = &dh[n * H], *hn = p.h + n * H;
    if (p.leaf(n)) {
      add_acc(row(d_emb, p.token(n)), dhn, H);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    concat(p.h + l * H, p.h + r * H, H, st.data());
    for (int64_t j = 0; j < H; ++j) da[j] = dhn[j] * (1.0 - hn[j] * hn[j]);
    outer_acc(d_W, da.data(), st.data());
    add_acc(d_b, da.data(), H);
    std::fill(ds.begin(), ds.end(), 0.0);
    matvec_t_acc(W, da.data(), ds.data());
    add_acc(&dh[l * H], ds.data(), H);
    add_acc(&dh[r * H], ds.data() + H, H);
  }
}

void treegru(const TreePass &p) {
  const int64_t H = p.s.H, D = p.s.D, N = p.tree.size();
  const Tensor64 &emb = p.W("emb"), &W_x = p.W("W_x"), &U_z = p.W("U_z"), &U_r = p.W("U_r"),
                 &U_h = p.W("U_h");
  const double *b_x = p.W("b_x").data.data(), *b_z = p.W("b_z").data.data(), *b_r = p.W("b_r").data.data(),
               *b_h = p.W("b_h").data.data();
  // Per internal node: z [H], r [2H], g [H].
  Vec z(N * H), r(N * 2 * H), g(N * H), st(2 * H), rs(2 * H);
  for (int32_t n : p.order) {
    double *hn = p.h + n * H;
    if (p.leaf(n)) {
      matvec(W_x, row(emb, p.token(n)), b_x, hn);
      for (int64_t j = 0; j < H; ++j) hn[j] = std::tanh(hn[j]);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), rc = p.tree.child(n, 1);
    const double *hl = p.h + l * H, *hr = p.h + rc * H;
    concat(hl, hr, H, st.data());
    double *zn = &z[n * H], *rn = &r[n * 2 * H], *gn = &g[n * H];
    matvec(U_z, st.data(), b_z, zn);
    for (int64_t j = 0; j < H; ++j) zn[j] = sigmoid(zn[j]);
    matvec(U_r, st.data(), b_r, rn);
    for (int64_t j = 0; j < 2 * H; ++j) rn[j] = sigmoid(rn[j]);
    for (int64_t j = 0; j < 2 * H; ++j) rs[j] = rn[j] * st[j];
    matvec(U_h, rs.data(), b_h, gn);
    for (int64_t j = 0; j < H; ++j) gn[j] = std::tanh(gn[j]);
    for (int64_t j = 0; j < H; ++j) hn[j] = zn[j] * (hl[j] + hr[j]) / 2.0 + (1.0 - zn[j]) * gn[j];
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W_x = p.G("W_x"), &d_U_z = p.G("U_z"), &d_U_r = p.G("U_r"),
           &d_U_h = p.G("U_h");
  double *d_b_x = p.G("b_x").data.data(), *d_b_z = p.G("b_z").data.data(), *d_b_r = p.G("b_r").data.data(),
         *d_b_h = p.G("b_h").data.data();
  Vec dh = p.initial_dh(), dpre(H), dx(D), ds(2 * H), drs(2 * H), dr(2 * H), dz(H), dg(H);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *dhn = &dh[n * H], *hn = p.h + n * H;
    if (p.leaf(n)) {
      // h = tanh(W_x x + b_x)
      for (int64_t j = 0; j < H; ++j) dpre[j] = dhn[j] * (1.0 - hn[j] * hn[j]);
      const double *x = row(emb, p.token(n));
      outer_acc(d_W_x, dpre.data(), x);
      add_acc(d_b_x, dpre.data(), H);
      std::fill(dx.begin(), dx.end(), 0.0);
      matvec_t_acc(W_x, dpre.data(), dx.data());
      add_acc(row(d_emb, p.token(n)), dx.data(), D);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), rc = p.tree.child(n, 1);
    const double *hl = p.h + l * H, *hr = p.h + rc * H;
    concat(hl, hr, H, st.data());
    const double *zn = &z[n * H], *rn = &r[n * 2 * H], *gn = &g[n * H];
    for (int64_t j = 0; j < 2 * H; ++j) rs[j] = rn[j] * st[j];
    std::fill(ds.begin(), ds.end(), 0.0);
    // h = z ⊙ (h_l + h_r) / 2 + (1 - z) ⊙ g
    for (int64_t j = 0; j < H; ++j) {
      dz[j] = dhn[j] * ((hl[j] + hr[j]) / 2.0 - gn[j]);
      dg[j] = dhn[j] * (1.0 - zn[j]);
      ds[j] += dhn[j] * zn[j] / 2.0;
      ds[H + j] += dhn[j] * zn[j] / 2.0;
    }
    // g = tanh(U_h (r ⊙ s) + b_h)
    for (int64_t j = 0; j < H; ++j) dg[j] *= 1.0 - gn[j] * gn[j];
    outer_acc(d_U_h, dg.data(), rs.data());
    add_acc(d_b_h, dg.data(), H);
    std::fill(drs.begin(), drs.end(), 0.0);
    matvec_t_acc(U_h, dg.data(), drs.data());
    for (int64_t j = 0; j < 2 * H; ++j) {
      ds[j] += drs[j] * rn[j];
      dr[j] = drs[j] * st[j] * rn[j] * (1.0 - rn[j]);  // through r = σ(U_r s + b_r)
    }
    outer_acc(d_U_r, dr.data(), st.data());
    add_acc(d_b_r, dr.data(), 2 * H);
    matvec_t_acc(U_r, dr.data(), ds.data());
    // z = σ(U_z s + b_z)
    for (int64_t j = 0; j < H; ++j) dz[j] *= zn[j] * (1.0 - zn[j]);
    outer_acc(d_U_z, dz.data(), st.data());
    add_acc(d_b_z, dz.data(), H);
    matvec_t_acc(U_z, dz.data(), ds.data());
    add_acc(&dh[l * H], ds.data(), H);
    add_acc(&dh[rc * H], ds.data() + H, H);
  }
}

// The i, o, u gates' pre-activations → activations, in place ([i; o; u], 3H).
void iou_activate(double *iou, int64_t H) {
  for (int64_t j = 0; j < 2 * H; ++j) iou[j] = sigmoid(iou[j]);
  for (int64_t j = 2 * H; j < 3 * H; ++j) iou[j] = std::tanh(iou[j]);
}

// Given dh and (accumulated) dc of a node with gates [i; o; u] and cell c, adds h = o ⊙ tanh(c)'s share
// into dc, and writes the gates' pre-activation gradient dpre [3H].
void iou_backward(const double *dh, double *dc, const double *iou, const double *c, int64_t H, double *dpre) {
  const double *i = iou, *o = iou + H, *u = iou + 2 * H;
  for (int64_t j = 0; j < H; ++j) {
    const double tc = std::tanh(c[j]);
    const double d_o = dh[j] * tc;
    dc[j] += dh[j] * o[j] * (1.0 - tc * tc);
    const double d_i = dc[j] * u[j], d_u = dc[j] * i[j];
    dpre[j] = d_i * i[j] * (1.0 - i[j]);
    dpre[H + j] = d_o * o[j] * (1.0 - o[j]);
    dpre[2 * H + j] = d_u * (1.0 - u[j] * u[j]);
  }
}

void treelstm(const TreePass &p) {
  const int64_t H = p.s.H, D = p.s.D, N = p.tree.size();
  const Tensor64 &emb = p.W("emb"), &W_iou = p.W("W_iou"), &U_iou = p.W("U_iou"), &U_f = p.W("U_f");
  const double *b_iou = p.W("b_iou").data.data(), *b_f = p.W("b_f").data.data();
  Vec bff(2 * H);  // [b_f; b_f]
  concat(b_f, b_f, H, bff.data());
  // Per node: gates [i; o; u] (3H), c [H]; per internal node f [f_l; f_r] (2H).
  Vec iou(N * 3 * H), c(N * H), f(N * 2 * H), st(2 * H);
  for (int32_t n : p.order) {
    double *hn = p.h + n * H, *gn = &iou[n * 3 * H], *cn = &c[n * H];
    if (p.leaf(n)) {
      matvec(W_iou, row(emb, p.token(n)), b_iou, gn);
      iou_activate(gn, H);
      for (int64_t j = 0; j < H; ++j) cn[j] = gn[j] * gn[2 * H + j];
    } else {
      const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
      concat(p.h + l * H, p.h + r * H, H, st.data());
      matvec(U_iou, st.data(), b_iou, gn);
      iou_activate(gn, H);
      double *fn = &f[n * 2 * H];
      matvec(U_f, st.data(), bff.data(), fn);
      for (int64_t j = 0; j < 2 * H; ++j) fn[j] = sigmoid(fn[j]);
      for (int64_t j = 0; j < H; ++j)
        cn[j] = gn[j] * gn[2 * H + j] + fn[j] * c[l * H + j] + fn[H + j] * c[r * H + j];
    }
    for (int64_t j = 0; j < H; ++j) hn[j] = gn[H + j] * std::tanh(cn[j]);
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W_iou = p.G("W_iou"), &d_U_iou = p.G("U_iou"), &d_U_f = p.G("U_f");
  double *d_b_iou = p.G("b_iou").data.data(), *d_b_f = p.G("b_f").data.data();
  Vec dh = p.initial_dh(), dc(N * H, 0.0), dpre(3 * H), dx(D), ds(2 * H), dfp(2 * H);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    double *dcn = &dc[n * H];
    const double *gn = &iou[n * 3 * H];
    iou_backward(&dh[n * H], dcn, gn, &c[n * H], H, dpre.data());
    add_acc(d_b_iou, dpre.data(), 3 * H);
    if (p.leaf(n)) {
      const double *x = row(emb, p.token(n));
      outer_acc(d_W_iou, dpre.data(), x);
      std::fill(dx.begin(), dx.end(), 0.0);
      matvec_t_acc(W_iou, dpre.data(), dx.data());
      add_acc(row(d_emb, p.token(n)), dx.data(), D);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    concat(p.h + l * H, p.h + r * H, H, st.data());
    outer_acc(d_U_iou, dpre.data(), st.data());
    std::fill(ds.begin(), ds.end(), 0.0);
    matvec_t_acc(U_iou, dpre.data(), ds.data());
    // c = i ⊙ u + f_l ⊙ c_l + f_r ⊙ c_r;  [f_l; f_r] = σ(U_f s + [b_f; b_f])
    const double *fn = &f[n * 2 * H];
    for (int64_t j = 0; j < H; ++j) {
      const double df_l = dcn[j] * c[l * H + j], df_r = dcn[j] * c[r * H + j];
      dc[l * H + j] += dcn[j] * fn[j];
      dc[r * H + j] += dcn[j] * fn[H + j];
      dfp[j] = df_l * fn[j] * (1.0 - fn[j]);
      dfp[H + j] = df_r * fn[H + j] * (1.0 - fn[H + j]);
      d_b_f[j] += dfp[j] + dfp[H + j];
    }
    outer_acc(d_U_f, dfp.data(), st.data());
    matvec_t_acc(U_f, dfp.data(), ds.data());
    add_acc(&dh[l * H], ds.data(), H);
    add_acc(&dh[r * H], ds.data() + H, H);
  }
}

void childsum_treelstm(const TreePass &p) {
  const int64_t H = p.s.H, D = p.s.D, N = p.tree.size();
  const Tensor64 &emb = p.W("emb"), &W_iou = p.W("W_iou"), &U_iou = p.W("U_iou"), &W_f = p.W("W_f"),
                 &U_f = p.W("U_f");
  const double *b_iou = p.W("b_iou").data.data(), *b_f = p.W("b_f").data.data();
  const Vec zero_x(D, 0.0);
  auto input = [&](int32_t n) { return p.leaf(n) ? row(emb, p.token(n)) : zero_x.data(); };
  // Per node: gates (3H), c, t = Σ_k h_k (H); f [H] of a node is its own forget gate in its parent's
  // cell (a node is the child of one parent at most).
  Vec iou(N * 3 * H), c(N * H), t(N * H, 0.0), f(N * H), tmp(3 * H), wfx(H);
  for (int32_t n : p.order) {
    const int32_t K = p.tree.num_children(n);
    const double *x = input(n);
    double *hn = p.h + n * H, *gn = &iou[n * 3 * H], *cn = &c[n * H], *tn = &t[n * H];
    for (int32_t k = 0; k < K; ++k) add_acc(tn, p.h + p.tree.child(n, k) * H, H);
    matvec(W_iou, x, b_iou, gn);
    matvec(U_iou, tn, nullptr, tmp.data());
    add_acc(gn, tmp.data(), 3 * H);
    iou_activate(gn, H);
    matvec(W_f, x, b_f, wfx.data());
    for (int64_t j = 0; j < H; ++j) cn[j] = gn[j] * gn[2 * H + j];
    for (int32_t k = 0; k < K; ++k) {
      const int32_t ch = p.tree.child(n, k);
      double *fk = &f[ch * H];
      matvec(U_f, p.h + ch * H, nullptr, fk);
      for (int64_t j = 0; j < H; ++j) {
        fk[j] = sigmoid(fk[j] + wfx[j]);
        cn[j] += fk[j] * c[ch * H + j];
      }
    }
    for (int64_t j = 0; j < H; ++j) hn[j] = gn[H + j] * std::tanh(cn[j]);
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_W_iou = p.G("W_iou"), &d_U_iou = p.G("U_iou"), &d_W_f = p.G("W_f"),
           &d_U_f = p.G("U_f");
  double *d_b_iou = p.G("b_iou").data.data(), *d_b_f = p.G("b_f").data.data();
  Vec dh = p.initial_dh(), dc(N * H, 0.0), dpre(3 * H), dx(D), dt(H), dfp(H);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const int32_t K = p.tree.num_children(n);
    const double *x = input(n), *tn = &t[n * H];
    double *dcn = &dc[n * H];
    iou_backward(&dh[n * H], dcn, &iou[n * 3 * H], &c[n * H], H, dpre.data());
    // [i; o; u] = W_iou x + U_iou t + b_iou
    outer_acc(d_W_iou, dpre.data(), x);
    outer_acc(d_U_iou, dpre.data(), tn);
    add_acc(d_b_iou, dpre.data(), 3 * H);
    std::fill(dx.begin(), dx.end(), 0.0);
    matvec_t_acc(W_iou, dpre.data(), dx.data());
    std::fill(dt.begin(), dt.end(), 0.0);
    matvec_t_acc(U_iou, dpre.data(), dt.data());
    for (int32_t k = 0; k < K; ++k) {
      const int32_t ch = p.tree.child(n, k);
      const double *fk = &f[ch * H];
      double *dhk = &dh[ch * H], *dck = &dc[ch * H];
      add_acc(dhk, dt.data(), H);  // t = Σ_k h_k
      // c += f_k ⊙ c_k;  f_k = σ(W_f x + U_f h_k + b_f)
      for (int64_t j = 0; j < H; ++j) {
        dfp[j] = dcn[j] * c[ch * H + j] * fk[j] * (1.0 - fk[j]);
        dck[j] += dcn[j] * fk[j];
      }
      outer_acc(d_W_f, dfp.data(), x);
      outer_acc(d_U_f, dfp.data(), p.h + ch * H);
      add_acc(d_b_f, dfp.data(), H);
      matvec_t_acc(W_f, dfp.data(), dx.data());
      matvec_t_acc(U_f, dfp.data(), dhk);
    }
    if (p.leaf(n)) add_acc(row(d_emb, p.token(n)), dx.data(), D);  // x = 0 on internal nodes
  }
}

void mvrnn(const TreePass &p) {
  const int64_t H = p.s.H, N = p.tree.size(), HH = H * H;
  const Tensor64 &emb = p.W("emb"), &emb_mat = p.W("emb_mat"), &W = p.W("W"), &W_M = p.W("W_M");
  const double *bias = p.W("bias").data.data();
  // A node's vector is its row of h; its matrix [H, H] row-major.
  Vec mat(N * HH), q(2 * H);
  // q = [B a; A b] for the internal node n.
  auto products = [&](int32_t n, double *out) {
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    const double *a = p.h + l * H, *A = &mat[l * HH], *b = p.h + r * H, *B = &mat[r * HH];
    for (int64_t i = 0; i < H; ++i) {
      double ba = 0.0, ab = 0.0;
      for (int64_t k = 0; k < H; ++k) {
        ba += B[i * H + k] * a[k];
        ab += A[i * H + k] * b[k];
      }
      out[i] = ba;
      out[H + i] = ab;
    }
  };
  for (int32_t n : p.order) {
    double *vn = p.h + n * H, *Mn = &mat[n * HH];
    if (p.leaf(n)) {
      std::copy(row(emb, p.token(n)), row(emb, p.token(n)) + H, vn);
      std::copy(row(emb_mat, p.token(n)), row(emb_mat, p.token(n)) + HH, Mn);
      continue;
    }
    products(n, q.data());
    matvec(W, q.data(), bias, vn);
    for (int64_t j = 0; j < H; ++j) vn[j] = std::tanh(vn[j]);
    // P = W_M [A; B]: P[i, j] = Σ_k W_M[i, k] S[k, j], S rows 0..H-1 of A, H..2H-1 of B.
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    const double *A = &mat[l * HH], *B = &mat[r * HH];
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t j = 0; j < H; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < 2 * H; ++k)
          acc += W_M.data[i * 2 * H + k] * (k < H ? A[k * H + j] : B[(k - H) * H + j]);
        Mn[i * H + j] = acc;
      }
    }
  }
  if (!p.g) return;
  Tensor64 &d_emb = p.G("emb"), &d_emb_mat = p.G("emb_mat"), &d_W = p.G("W"), &d_W_M = p.G("W_M");
  double *d_bias = p.G("bias").data.data();
  Vec dv = p.initial_dh(), dmat(N * HH, 0.0), dpp(H), dq(2 * H);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const int32_t n = *it;
    const double *dvn = &dv[n * H], *dMn = &dmat[n * HH], *vn = p.h + n * H;
    if (p.leaf(n)) {
      add_acc(row(d_emb, p.token(n)), dvn, H);
      add_acc(row(d_emb_mat, p.token(n)), dMn, HH);
      continue;
    }
    const int32_t l = p.tree.child(n, 0), r = p.tree.child(n, 1);
    const double *a = p.h + l * H, *A = &mat[l * HH], *b = p.h + r * H, *B = &mat[r * HH];
    double *da = &dv[l * H], *dA = &dmat[l * HH], *db = &dv[r * H], *dB = &dmat[r * HH];
    // p = tanh(W q + bias)
    products(n, q.data());
    for (int64_t j = 0; j < H; ++j) dpp[j] = dvn[j] * (1.0 - vn[j] * vn[j]);
    outer_acc(d_W, dpp.data(), q.data());
    add_acc(d_bias, dpp.data(), H);
    std::fill(dq.begin(), dq.end(), 0.0);
    matvec_t_acc(W, dpp.data(), dq.data());
    // q[0:H] = B a, q[H:2H] = A b
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t k = 0; k < H; ++k) {
        dB[i * H + k] += dq[i] * a[k];
        da[k] += B[i * H + k] * dq[i];
        dA[i * H + k] += dq[H + i] * b[k];
        db[k] += A[i * H + k] * dq[H + i];
      }
    }
    // P = W_M S: dW_M[i, k] += Σ_j dP[i, j] S[k, j]; dS[k, j] += Σ_i W_M[i, k] dP[i, j]
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t k = 0; k < 2 * H; ++k) {
        const double *S = k < H ? &A[k * H] : &B[(k - H) * H];
        double *dS = k < H ? &dA[k * H] : &dB[(k - H) * H];
        const double wm = W_M.data[i * 2 * H + k];
        double acc = 0.0;
        for (int64_t j = 0; j < H; ++j) {
          acc += dMn[i * H + j] * S[j];
          dS[j] += wm * dMn[i * H + j];
        }
        d_W_M.data[i * 2 * H + k] += acc;
      }
    }
  }
}

// Forward (and, with g, backward) of every tree; states out.
void run_batch(ModelKind model, const Weights64 &weights, std::span<const Tree> trees, const double *d_rows,
               Weights64 *g, NodeStates64 &states) {
  const Sizes s = checked_sizes(model, weights);
  states.width = s.H;
  states.tree_offset.assign(1, 0);
  for (const Tree &tree : trees) states.tree_offset.push_back(states.tree_offset.back() + tree.size());
  states.rows.assign(states.nodes() * s.H, 0.0);
  if (g) {
    g->clear();
    for (const ParamSpec &spec : model_params(model, s.H, s.D, s.V))
      g->emplace(spec.name, Tensor64(spec.shape));
  }
  for (size_t t = 0; t < trees.size(); ++t) {
    const int64_t offset = states.tree_offset[t] * s.H;
    const TreePass pass{weights,
                        s,
                        trees[t],
                        checked_order(model, trees[t], s.V),
                        states.rows.data() + offset,
                        d_rows ? d_rows + offset : nullptr,
                        g};
    switch (model) {
      case ModelKind::TreeFC:
        treefc(pass);
        break;
      case ModelKind::TreeGRU:
        treegru(pass);
        break;
      case ModelKind::TreeLSTM:
        treelstm(pass);
        break;
      case ModelKind::ChildSumTreeLSTM:
        childsum_treelstm(pass);
        break;
      case ModelKind::MVRNN:
        mvrnn(pass);
        break;
      default:
        GROVE_CHECK(false, "{} is not a tree model", model_name(model));
    }
  }
}

training::NodeStates to_float(const NodeStates64 &states) {
  training::NodeStates out;
  out.width = states.width;
  out.tree_offset = states.tree_offset;
  out.rows.resize(states.rows.size());
  for (size_t k = 0; k < states.rows.size(); ++k) out.rows[k] = static_cast<float>(states.rows[k]);
  return out;
}

}  // namespace

// --- Public API ---------------------------------------------------------------------------------

Weights64 to_weights64(const Weights &weights) {
  Weights64 out;
  for (const auto &[name, t] : weights) {
    Tensor64 d;
    d.shape = t.shape;
    d.data.assign(t.data.begin(), t.data.end());
    out.emplace(name, std::move(d));
  }
  return out;
}

int64_t total_nodes(std::span<const Tree> trees) {
  int64_t n = 0;
  for (const Tree &tree : trees) n += tree.size();
  return n;
}

NodeStates64 reference_node_states64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees) {
  NodeStates64 states;
  run_batch(model, weights, trees, nullptr, nullptr, states);
  return states;
}

double reference_loss64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees,
                        std::span<const double> d_rows) {
  const NodeStates64 states = reference_node_states64(model, weights, trees);
  GROVE_CHECK(d_rows.size() == states.rows.size(), "d_rows has {} entries, expected {} nodes × {} = {}",
              d_rows.size(), states.nodes(), states.width, states.rows.size());
  double loss = 0.0;
  for (size_t k = 0; k < d_rows.size(); ++k) loss += d_rows[k] * states.rows[k];
  return loss;
}

Weights64 reference_gradients64(ModelKind model, const Weights64 &weights, std::span<const Tree> trees,
                                std::span<const double> d_rows, NodeStates64 *states) {
  const Sizes s = checked_sizes(model, weights);
  const int64_t expected = total_nodes(trees) * s.H;
  GROVE_CHECK(static_cast<int64_t>(d_rows.size()) == expected,
              "d_rows has {} entries, expected {} nodes × {} = {}", d_rows.size(), total_nodes(trees), s.H,
              expected);
  Weights64 grads;
  NodeStates64 local;
  run_batch(model, weights, trees, d_rows.data(), &grads, states ? *states : local);
  return grads;
}

training::NodeStates reference_node_states(ModelKind model, const Weights &weights,
                                           std::span<const Tree> trees) {
  return to_float(reference_node_states64(model, to_weights64(weights), trees));
}

ReferenceBackward reference_backward(ModelKind model, const Weights &weights, std::span<const Tree> trees,
                                     std::span<const float> d_rows) {
  const Vec d(d_rows.begin(), d_rows.end());
  NodeStates64 states;
  const Weights64 grads = reference_gradients64(model, to_weights64(weights), trees, d, &states);
  ReferenceBackward out;
  out.states = to_float(states);
  for (const auto &[name, g] : grads) {
    if (name != "emb") out.gradients.dense.emplace(name, to_float(g));
  }
  std::set<int32_t> rows;
  for (const Tree &tree : trees) {
    for (int32_t n = 0; n < tree.size(); ++n) {
      if (tree.num_children(n) == 0) rows.insert(tree.token[n]);
    }
  }
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

// --- ReferenceGradientModel ---------------------------------------------------------------------

ReferenceGradientModel::ReferenceGradientModel(ModelKind model, int64_t H, int64_t D, int64_t V)
    : model_(model), H_(H), D_(D), V_(V) {
  if (!is_tree_model(model))
    user_error("{} is not a tree model; the reference gradients take TreeFC .. MVRNN", model_name(model));
  for (ParamSpec &spec : model_params(model, H, D, V)) params_.push_back({spec.name, spec.shape});
}

const std::vector<training::ParamInfo> &ReferenceGradientModel::params() const { return params_; }

const std::string &ReferenceGradientModel::embedding() const { return embedding_; }

void ReferenceGradientModel::set_weights(const Weights &weights) {
  for (const training::ParamInfo &param : params_) {
    auto it = weights.find(param.name);
    if (it == weights.end())
      user_error("{} needs a tensor '{}' of shape [{}], the weights have none", model_name(model_),
                 param.name, fmt::join(param.shape, ", "));
    const std::string problem =
        shape_problem(model_, param.name, it->second.shape, it->second.size(), param.shape);
    if (!problem.empty()) user_error("{}", problem);
  }
  for (const auto &[name, tensor] : weights) {
    const bool known = std::any_of(params_.begin(), params_.end(),
                                   [&](const training::ParamInfo &param) { return param.name == name; });
    if (!known)
      user_error("{} has no parameter '{}' (shape [{}] found)", model_name(model_), name,
                 fmt::join(tensor.shape, ", "));
  }
  weights_ = weights;
  has_weights_ = true;
}

const training::NodeStates &ReferenceGradientModel::forward(std::span<const Tree> trees) {
  GROVE_CHECK(has_weights_, "ReferenceGradientModel::forward before set_weights");
  std::vector<int32_t> order;
  for (size_t t = 0; t < trees.size(); ++t) {
    const std::string problem = tree_order(model_, trees[t], V_, order);
    if (!problem.empty()) user_error("tree {}: {}", t, problem);
  }
  trees_.assign(trees.begin(), trees.end());
  forward_weights_ = weights_;
  states_ = reference_node_states(model_, forward_weights_, trees_);
  has_forward_ = true;
  return states_;
}

training::Gradients ReferenceGradientModel::backward(std::span<const float> d_rows) {
  GROVE_CHECK(has_forward_, "ReferenceGradientModel::backward without a forward first");
  GROVE_CHECK(static_cast<int64_t>(d_rows.size()) == states_.nodes() * H_,
              "backward got {} d_rows entries, the last forward has {} nodes × {} = {}", d_rows.size(),
              states_.nodes(), H_, states_.nodes() * H_);
  return reference_backward(model_, forward_weights_, trees_, d_rows).gradients;
}

}  // namespace grove::reference
