#include "tests/reference/Reference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <utility>

#include "support/Error.h"

namespace grove::reference {
namespace {

// A vector or row-major matrix of the reference's own values, in double.
using Vec = std::vector<double>;

// --- Weights ------------------------------------------------------------------------------------

struct Sizes {
  int64_t H = 0, D = 0, V = 0;
};

const Tensor &find_tensor(const Weights &weights, const std::string &name) {
  auto it = weights.find(name);
  GROVE_CHECK(it != weights.end(), "the weights have no tensor '{}'", name);
  GROVE_CHECK(it->second.size() == Tensor::num_elements(it->second.shape),
              "tensor '{}' has shape [{}] but {} elements", name, fmt::join(it->second.shape, ", "),
              it->second.size());
  return it->second;
}

int64_t dim(const Weights &weights, const std::string &name, size_t axis) {
  const Tensor &t = find_tensor(weights, name);
  GROVE_CHECK(axis < t.shape.size(), "tensor '{}' has shape [{}], expected at least {} dimensions", name,
              fmt::join(t.shape, ", "), axis + 1);
  return t.shape[axis];
}

// Reads H, D and V off the weights, then checks that the weights are exactly model_params(H, D, V):
// every tensor present with its shape, and no other tensor.
Sizes checked_sizes(ModelKind model, const Weights &weights) {
  Sizes s;
  s.V = dim(weights, "emb", 0);
  s.D = dim(weights, "emb", 1);
  switch (model) {
    case ModelKind::TreeFC:
    case ModelKind::MVRNN:
      s.H = s.D;
      break;
    case ModelKind::TreeGRU:
      s.H = dim(weights, "b_x", 0);
      break;
    case ModelKind::TreeLSTM:
    case ModelKind::ChildSumTreeLSTM:
      s.H = dim(weights, "b_f", 0);
      break;
    case ModelKind::DAGRNN:
      s.H = dim(weights, "b", 0);
      break;
    case ModelKind::LSTM:
      s.H = dim(weights, "b_ih", 0) / 4;
      break;
    case ModelKind::GRU:
      s.H = dim(weights, "b_ih", 0) / 3;
      break;
  }
  const std::vector<ParamSpec> specs = model_params(model, s.H, s.D, s.V);
  for (const ParamSpec &spec : specs) {
    const Tensor &t = find_tensor(weights, spec.name);
    GROVE_CHECK(t.shape == spec.shape, "{} tensor '{}' has shape [{}], expected [{}]", model_name(model),
                spec.name, fmt::join(t.shape, ", "), fmt::join(spec.shape, ", "));
  }
  GROVE_CHECK(weights.size() == specs.size(), "{} takes {} tensors, the weights have {}", model_name(model),
              specs.size(), weights.size());
  return s;
}

// --- Linear algebra on Vec ----------------------------------------------------------------------

thread_local Products g_products = Products::Exact;

// W x for a weight W of shape [rows, cols] (cols = x.size()), as g_products says.
Vec matvec(const Tensor &W, const Vec &x) {
  const int64_t rows = W.shape[0], cols = W.shape[1];
  GROVE_CHECK(cols == static_cast<int64_t>(x.size()), "matvec of [{}, {}] with a vector of {}", rows, cols,
              x.size());
  const bool bf16 = g_products == Products::Bf16;
  Vec xr = x;
  if (bf16)
    for (double &v : xr) v = round_bf16(v);
  Vec y(rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    double acc = 0.0;
    for (int64_t k = 0; k < cols; ++k) {
      const double w = static_cast<double>(W.data[i * cols + k]);
      acc += (bf16 ? round_bf16(w) : w) * xr[k];
    }
    y[i] = acc;
  }
  return y;
}

// M x for a reference matrix M of shape [rows, x.size()].
Vec matvec(const Vec &M, int64_t rows, const Vec &x) {
  const int64_t cols = static_cast<int64_t>(x.size());
  Vec y(rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    double acc = 0.0;
    for (int64_t k = 0; k < cols; ++k) acc += M[i * cols + k] * x[k];
    y[i] = acc;
  }
  return y;
}

// W M for a weight W of shape [rows, inner] and a reference matrix M of shape [inner, cols].
Vec matmul(const Tensor &W, const Vec &M, int64_t cols) {
  const int64_t rows = W.shape[0], inner = W.shape[1];
  GROVE_CHECK(inner * cols == static_cast<int64_t>(M.size()), "matmul of [{}, {}] with {} elements", rows,
              inner, M.size());
  Vec P(rows * cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < inner; ++k) acc += static_cast<double>(W.data[i * inner + k]) * M[k * cols + j];
      P[i * cols + j] = acc;
    }
  }
  return P;
}

Vec values(const Tensor &t) { return Vec(t.data.begin(), t.data.end()); }

// Elements [begin, begin + count) of row `row` of a tensor's leading dimension: E[w] is
// row_of(emb, w), and emb_mat[w] (an H×H matrix) is row_of(emb_mat, w) too.
Vec row_of(const Tensor &t, int64_t row) {
  const int64_t width = t.size() / t.shape[0];
  return Vec(t.data.begin() + row * width, t.data.begin() + (row + 1) * width);
}

Vec slice(const Vec &v, int64_t begin, int64_t count) {
  return Vec(v.begin() + begin, v.begin() + begin + count);
}

// [a; b]
Vec concat(const Vec &a, const Vec &b) {
  Vec out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Vec add(Vec a, const Vec &b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

Vec mul(Vec a, const Vec &b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] *= b[i];
  return a;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Vec sigmoid(Vec v) {
  for (double &x : v) x = sigmoid(x);
  return v;
}

Vec tanh(Vec v) {
  for (double &x : v) x = std::tanh(x);
  return v;
}

Tensor to_tensor(const Vec &v) {
  Tensor t({static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data[i] = static_cast<float>(v[i]);
  return t;
}

// --- Trees --------------------------------------------------------------------------------------

// Every node of `tree` once, children before parents, root last. An explicit stack of (node, next
// child to visit) replaces recursion. Checks that the tree is one: every node is reached from the
// root exactly once.
std::vector<int32_t> post_order(const Tree &tree) {
  const int32_t n = tree.size();
  GROVE_CHECK(n > 0, "the tree is empty");
  GROVE_CHECK(static_cast<int32_t>(tree.child_begin.size()) == n + 1, "a tree of {} nodes has {} child_begin",
              n, tree.child_begin.size());
  GROVE_CHECK(tree.root >= 0 && tree.root < n, "root {} is not a node of a {}-node tree", tree.root, n);
  std::vector<int32_t> order;
  order.reserve(n);
  std::vector<bool> reached(n, false);
  std::vector<std::pair<int32_t, int32_t>> stack = {{tree.root, 0}};
  reached[tree.root] = true;
  while (!stack.empty()) {
    const int32_t node = stack.back().first;
    const int32_t next = stack.back().second;
    if (next == tree.num_children(node)) {
      order.push_back(node);
      stack.pop_back();
      continue;
    }
    ++stack.back().second;
    const int32_t child = tree.child(node, next);
    GROVE_CHECK(child >= 0 && child < n, "node {} has child {}, not a node of a {}-node tree", node, child,
                n);
    GROVE_CHECK(!reached[child], "node {} is reached twice from the root", child);
    reached[child] = true;
    stack.emplace_back(child, 0);
  }
  GROVE_CHECK(static_cast<int32_t>(order.size()) == n, "only {} of the tree's {} nodes hang from root {}",
              order.size(), n, tree.root);
  return order;
}

int64_t leaf_token(const Tree &tree, int32_t node, int64_t V) {
  const int64_t w = tree.token[node];
  GROVE_CHECK(w >= 0 && w < V, "leaf {} has token {}, expected one in [0, {})", node, w, V);
  return w;
}

// The (left, right) children of an internal node of a binary tree.
std::pair<int32_t, int32_t> left_right(const Tree &tree, int32_t node) {
  GROVE_CHECK(tree.num_children(node) == 2, "node {} has {} children; a binary-tree model needs 0 or 2", node,
              tree.num_children(node));
  return {tree.child(node, 0), tree.child(node, 1)};
}

// The i, o, u gates of a TreeLSTM node from their pre-activations [i; o; u] (3H).
struct IouGates {
  Vec i, o, u;
};

IouGates iou_gates(const Vec &iou, int64_t H) {
  return {sigmoid(slice(iou, 0, H)), sigmoid(slice(iou, H, H)), tanh(slice(iou, 2 * H, H))};
}

double uniform(std::mt19937_64 &engine, double a) {
  // 53 random bits → [0, 1) exactly, the same on every platform.
  const double unit = static_cast<double>(engine() >> 11) * 0x1.0p-53;
  return a * (2.0 * unit - 1.0);
}

}  // namespace

// --- Models -------------------------------------------------------------------------------------

ScopedProducts::ScopedProducts(Products products) : previous_(g_products) { g_products = products; }
ScopedProducts::~ScopedProducts() { g_products = previous_; }

// To float32 (the value grove rounds), then to the nearest multiple of bfloat16's spacing at its
// exponent, ties to even, by the arithmetic on the value (not its bits): 8 significant bits.
double round_bf16(double x) {
  const float f = static_cast<float>(x);
  if (!std::isfinite(f) || f == 0.0f) return f;
  int exponent = 0;
  std::frexp(f, &exponent);             // f = m · 2^exponent, 0.5 <= |m| < 1
  exponent = std::max(exponent, -125);  // subnormals: the spacing of the smallest normal
  const double spacing = std::ldexp(1.0, exponent - 8);
  const double rounded = std::nearbyint(static_cast<double>(f) / spacing) * spacing;  // ties to even
  return static_cast<double>(static_cast<float>(rounded));
}

std::string model_name(ModelKind model) {
  switch (model) {
    case ModelKind::TreeFC:
      return "TreeFC";
    case ModelKind::TreeGRU:
      return "TreeGRU";
    case ModelKind::TreeLSTM:
      return "TreeLSTM";
    case ModelKind::ChildSumTreeLSTM:
      return "ChildSumTreeLSTM";
    case ModelKind::MVRNN:
      return "MVRNN";
    case ModelKind::DAGRNN:
      return "DAGRNN";
    case ModelKind::LSTM:
      return "LSTM";
    case ModelKind::GRU:
      return "GRU";
  }
  GROVE_CHECK(false, "unknown model kind {}", static_cast<int>(model));
}

std::string model_file_stem(ModelKind model) {
  switch (model) {
    case ModelKind::TreeFC:
      return "treefc";
    case ModelKind::TreeGRU:
      return "treegru";
    case ModelKind::TreeLSTM:
      return "treelstm";
    case ModelKind::ChildSumTreeLSTM:
      return "childsum_treelstm";
    case ModelKind::MVRNN:
      return "mvrnn";
    case ModelKind::DAGRNN:
      return "dagrnn";
    case ModelKind::LSTM:
      return "lstm";
    case ModelKind::GRU:
      return "gru";
  }
  GROVE_CHECK(false, "unknown model kind {}", static_cast<int>(model));
}

std::vector<ParamSpec> model_params(ModelKind model, int64_t H, int64_t D, int64_t V) {
  GROVE_CHECK(H > 0 && D > 0 && V > 0, "sizes H={} D={} V={} must be positive", H, D, V);
  switch (model) {
    case ModelKind::TreeFC:
      GROVE_CHECK(D == H, "TreeFC needs D = H, got D={} H={}", D, H);
      return {{"emb", {V, H}}, {"W", {H, 2 * H}}, {"b", {H}}};
    case ModelKind::TreeGRU:
      return {{"emb", {V, D}},     {"W_x", {H, D}},     {"b_x", {H}},
              {"U_z", {H, 2 * H}}, {"b_z", {H}},        {"U_r", {2 * H, 2 * H}},
              {"b_r", {2 * H}},    {"U_h", {H, 2 * H}}, {"b_h", {H}}};
    case ModelKind::TreeLSTM:
      return {{"emb", {V, D}},    {"W_iou", {3 * H, D}},   {"U_iou", {3 * H, 2 * H}},
              {"b_iou", {3 * H}}, {"U_f", {2 * H, 2 * H}}, {"b_f", {H}}};
    case ModelKind::ChildSumTreeLSTM:
      return {{"emb", {V, D}}, {"W_iou", {3 * H, D}}, {"U_iou", {3 * H, H}}, {"b_iou", {3 * H}},
              {"W_f", {H, D}}, {"U_f", {H, H}},       {"b_f", {H}}};
    case ModelKind::MVRNN:
      GROVE_CHECK(D == H, "MVRNN needs D = H, got D={} H={}", D, H);
      return {{"emb", {V, H}}, {"emb_mat", {V, H, H}}, {"W", {H, 2 * H}}, {"bias", {H}}, {"W_M", {H, 2 * H}}};
    case ModelKind::DAGRNN:
      return {{"emb", {V, D}}, {"U", {H, D}}, {"W_0", {H, H}}, {"W_1", {H, H}}, {"b", {H}}};
    case ModelKind::LSTM:
      return {
          {"emb", {V, D}}, {"W_ih", {4 * H, D}}, {"W_hh", {4 * H, H}}, {"b_ih", {4 * H}}, {"b_hh", {4 * H}}};
    case ModelKind::GRU:
      return {
          {"emb", {V, D}}, {"W_ih", {3 * H, D}}, {"W_hh", {3 * H, H}}, {"b_ih", {3 * H}}, {"b_hh", {3 * H}}};
  }
  GROVE_CHECK(false, "unknown model kind {}", static_cast<int>(model));
}

Weights random_model_weights(ModelKind model, int64_t H, int64_t D, int64_t V, uint64_t seed) {
  std::mt19937_64 engine(seed);
  Weights weights;
  for (const ParamSpec &spec : model_params(model, H, D, V)) {
    Tensor t(spec.shape);
    if (spec.name == "emb") {
      for (float &x : t.data) x = static_cast<float>(uniform(engine, 1.0));
    } else if (spec.name == "emb_mat") {
      // Near-identity word matrices, as Socher et al. initialize them: a product of many stays tame.
      const double a = 1.0 / std::sqrt(static_cast<double>(H));
      for (int64_t k = 0; k < t.size(); ++k) {
        const int64_t i = (k / H) % H, j = k % H;
        t.data[k] = static_cast<float>((i == j ? 1.0 : 0.0) + uniform(engine, a));
      }
    } else if (spec.shape.size() == 1) {
      for (float &x : t.data) x = static_cast<float>(uniform(engine, 0.1));
    } else {
      const double a = 1.0 / std::sqrt(static_cast<double>(spec.shape.back()));
      for (float &x : t.data) x = static_cast<float>(uniform(engine, a));
    }
    weights.emplace(spec.name, std::move(t));
  }
  return weights;
}

Tensor reference_treefc(const Weights &weights, const Tree &tree) {
  const Sizes s = checked_sizes(ModelKind::TreeFC, weights);
  const Tensor &emb = weights.at("emb"), &W = weights.at("W");
  const Vec b = values(weights.at("b"));
  std::vector<Vec> h(tree.size());
  for (int32_t n : post_order(tree)) {
    if (tree.num_children(n) == 0) {
      h[n] = row_of(emb, leaf_token(tree, n, s.V));
    } else {
      const auto [l, r] = left_right(tree, n);
      h[n] = tanh(add(matvec(W, concat(h[l], h[r])), b));
    }
  }
  return to_tensor(h[tree.root]);
}

Tensor reference_treegru(const Weights &weights, const Tree &tree) {
  const Sizes s = checked_sizes(ModelKind::TreeGRU, weights);
  const Tensor &emb = weights.at("emb"), &W_x = weights.at("W_x"), &U_z = weights.at("U_z"),
               &U_r = weights.at("U_r"), &U_h = weights.at("U_h");
  const Vec b_x = values(weights.at("b_x")), b_z = values(weights.at("b_z")), b_r = values(weights.at("b_r")),
            b_h = values(weights.at("b_h"));
  std::vector<Vec> h(tree.size());
  for (int32_t n : post_order(tree)) {
    if (tree.num_children(n) == 0) {
      h[n] = tanh(add(matvec(W_x, row_of(emb, leaf_token(tree, n, s.V))), b_x));
      continue;
    }
    const auto [l, r] = left_right(tree, n);
    const Vec state = concat(h[l], h[r]);
    const Vec z = sigmoid(add(matvec(U_z, state), b_z));
    const Vec reset = sigmoid(add(matvec(U_r, state), b_r));
    const Vec g = tanh(add(matvec(U_h, mul(reset, state)), b_h));
    h[n].resize(s.H);
    for (int64_t j = 0; j < s.H; ++j) h[n][j] = z[j] * (h[l][j] + h[r][j]) / 2.0 + (1.0 - z[j]) * g[j];
  }
  return to_tensor(h[tree.root]);
}

Tensor reference_treelstm(const Weights &weights, const Tree &tree) {
  const Sizes s = checked_sizes(ModelKind::TreeLSTM, weights);
  const int64_t H = s.H;
  const Tensor &emb = weights.at("emb"), &W_iou = weights.at("W_iou"), &U_iou = weights.at("U_iou"),
               &U_f = weights.at("U_f");
  const Vec b_iou = values(weights.at("b_iou")), b_f = values(weights.at("b_f"));
  std::vector<Vec> h(tree.size()), c(tree.size());
  for (int32_t n : post_order(tree)) {
    if (tree.num_children(n) == 0) {
      const Vec x = row_of(emb, leaf_token(tree, n, s.V));
      const IouGates g = iou_gates(add(matvec(W_iou, x), b_iou), H);
      c[n] = mul(g.i, g.u);
      h[n] = mul(g.o, tanh(c[n]));
      continue;
    }
    const auto [l, r] = left_right(tree, n);
    const Vec state = concat(h[l], h[r]);
    const IouGates g = iou_gates(add(matvec(U_iou, state), b_iou), H);
    const Vec f = sigmoid(add(matvec(U_f, state), concat(b_f, b_f)));
    c[n] = add(add(mul(g.i, g.u), mul(slice(f, 0, H), c[l])), mul(slice(f, H, H), c[r]));
    h[n] = mul(g.o, tanh(c[n]));
  }
  return to_tensor(h[tree.root]);
}

Tensor reference_childsum_treelstm(const Weights &weights, const Tree &tree) {
  const Sizes s = checked_sizes(ModelKind::ChildSumTreeLSTM, weights);
  const int64_t H = s.H;
  const Tensor &emb = weights.at("emb"), &W_iou = weights.at("W_iou"), &U_iou = weights.at("U_iou"),
               &W_f = weights.at("W_f"), &U_f = weights.at("U_f");
  const Vec b_iou = values(weights.at("b_iou")), b_f = values(weights.at("b_f"));
  std::vector<Vec> h(tree.size()), c(tree.size());
  for (int32_t n : post_order(tree)) {
    const int32_t K = tree.num_children(n);
    const Vec x = K == 0 ? row_of(emb, leaf_token(tree, n, s.V)) : Vec(s.D, 0.0);
    Vec t(H, 0.0);
    for (int32_t k = 0; k < K; ++k) t = add(std::move(t), h[tree.child(n, k)]);
    const IouGates g = iou_gates(add(add(matvec(W_iou, x), matvec(U_iou, t)), b_iou), H);
    const Vec wf_x = add(matvec(W_f, x), b_f);  // the same for every child
    c[n] = mul(g.i, g.u);
    for (int32_t k = 0; k < K; ++k) {
      const int32_t child = tree.child(n, k);
      const Vec f = sigmoid(add(matvec(U_f, h[child]), wf_x));
      c[n] = add(std::move(c[n]), mul(f, c[child]));
    }
    h[n] = mul(g.o, tanh(c[n]));
  }
  return to_tensor(h[tree.root]);
}

Tensor reference_mvrnn(const Weights &weights, const Tree &tree) {
  const Sizes s = checked_sizes(ModelKind::MVRNN, weights);
  const int64_t H = s.H;
  const Tensor &emb = weights.at("emb"), &emb_mat = weights.at("emb_mat"), &W = weights.at("W"),
               &W_M = weights.at("W_M");
  const Vec bias = values(weights.at("bias"));
  std::vector<Vec> vec(tree.size()), mat(tree.size());  // a node's vector [H] and matrix [H, H]
  for (int32_t n : post_order(tree)) {
    if (tree.num_children(n) == 0) {
      const int64_t w = leaf_token(tree, n, s.V);
      vec[n] = row_of(emb, w);
      mat[n] = row_of(emb_mat, w);
      continue;
    }
    const auto [l, r] = left_right(tree, n);
    const Vec &a = vec[l], &A = mat[l], &b = vec[r], &B = mat[r];
    vec[n] = tanh(add(matvec(W, concat(matvec(B, H, a), matvec(A, H, b))), bias));
    mat[n] = matmul(W_M, concat(A, B), H);  // concat of two row-major [H, H] is [A; B], [2H, H]
  }
  return to_tensor(vec[tree.root]);
}

Tensor reference_tree(ModelKind model, const Weights &weights, const Tree &tree) {
  switch (model) {
    case ModelKind::TreeFC:
      return reference_treefc(weights, tree);
    case ModelKind::TreeGRU:
      return reference_treegru(weights, tree);
    case ModelKind::TreeLSTM:
      return reference_treelstm(weights, tree);
    case ModelKind::ChildSumTreeLSTM:
      return reference_childsum_treelstm(weights, tree);
    case ModelKind::MVRNN:
      return reference_mvrnn(weights, tree);
    case ModelKind::DAGRNN:
    case ModelKind::LSTM:
    case ModelKind::GRU:
      break;
  }
  GROVE_CHECK(false, "{} is not a tree model", model_name(model));
}

Tensor reference_roots(ModelKind model, const Weights &weights, std::span<const Tree> trees) {
  const int64_t H = checked_sizes(model, weights).H;
  Tensor roots({static_cast<int64_t>(trees.size()), H});
  for (size_t t = 0; t < trees.size(); ++t) {
    const Tensor root = reference_tree(model, weights, trees[t]);
    std::copy(root.data.begin(), root.data.end(), roots.data.begin() + static_cast<int64_t>(t) * H);
  }
  return roots;
}

Tensor reference_dagrnn(const Weights &weights, const Dag &dag) {
  const Sizes s = checked_sizes(ModelKind::DAGRNN, weights);
  const int32_t n = dag.size();
  GROVE_CHECK(static_cast<int32_t>(dag.preds.size()) == n, "a DAG of {} tokens has {} pred entries", n,
              dag.preds.size());
  const Tensor &emb = weights.at("emb"), &U = weights.at("U"), &W_0 = weights.at("W_0"),
               &W_1 = weights.at("W_1");
  const Vec b = values(weights.at("b"));

  // Kahn's algorithm: a node is ready once all its predecessors are computed.
  std::vector<std::vector<int32_t>> successors(n);
  std::vector<int32_t> waiting_for(n, 0);
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t p : dag.preds[v]) {
      if (p == -1) continue;
      GROVE_CHECK(p >= 0 && p < n, "node {} has predecessor {}, not a node of a {}-node DAG", v, p, n);
      successors[p].push_back(v);
      ++waiting_for[v];
    }
  }
  std::deque<int32_t> ready;
  for (int32_t v = 0; v < n; ++v) {
    if (waiting_for[v] == 0) ready.push_back(v);
  }
  std::vector<Vec> h(n);
  int32_t computed = 0;
  while (!ready.empty()) {
    const int32_t v = ready.front();
    ready.pop_front();
    GROVE_CHECK(dag.token[v] >= 0 && dag.token[v] < s.V, "node {} has token {}, expected one in [0, {})", v,
                dag.token[v], s.V);
    Vec pre = add(matvec(U, row_of(emb, dag.token[v])), b);
    if (dag.preds[v][0] != -1) pre = add(std::move(pre), matvec(W_0, h[dag.preds[v][0]]));
    if (dag.preds[v][1] != -1) pre = add(std::move(pre), matvec(W_1, h[dag.preds[v][1]]));
    h[v] = tanh(std::move(pre));
    ++computed;
    for (int32_t next : successors[v]) {
      if (--waiting_for[next] == 0) ready.push_back(next);
    }
  }
  GROVE_CHECK(computed == n, "the DAG has a cycle: only {} of its {} nodes can be ordered", computed, n);

  std::vector<int32_t> sinks;
  for (int32_t v = 0; v < n; ++v) {
    if (successors[v].empty()) sinks.push_back(v);
  }
  Tensor out({static_cast<int64_t>(sinks.size()), s.H});
  for (size_t k = 0; k < sinks.size(); ++k) {
    for (int64_t j = 0; j < s.H; ++j) out.data[k * s.H + j] = static_cast<float>(h[sinks[k]][j]);
  }
  return out;
}

Tensor reference_lstm(const Weights &weights, std::span<const int32_t> tokens) {
  const Sizes s = checked_sizes(ModelKind::LSTM, weights);
  const int64_t H = s.H;
  const Tensor &emb = weights.at("emb"), &W_ih = weights.at("W_ih"), &W_hh = weights.at("W_hh");
  const Vec b_ih = values(weights.at("b_ih")), b_hh = values(weights.at("b_hh"));
  Vec h(H, 0.0), c(H, 0.0);
  for (size_t t = 0; t < tokens.size(); ++t) {
    GROVE_CHECK(tokens[t] >= 0 && tokens[t] < s.V, "token {} is {}, expected one in [0, {})", t, tokens[t],
                s.V);
    // PyTorch's row order: input, forget, cell (g), output.
    const Vec gates = add(add(matvec(W_ih, row_of(emb, tokens[t])), b_ih), add(matvec(W_hh, h), b_hh));
    const Vec i = sigmoid(slice(gates, 0, H)), f = sigmoid(slice(gates, H, H)),
              g = tanh(slice(gates, 2 * H, H)), o = sigmoid(slice(gates, 3 * H, H));
    c = add(mul(f, c), mul(i, g));
    h = mul(o, tanh(c));
  }
  return to_tensor(h);
}

Tensor reference_gru(const Weights &weights, std::span<const int32_t> tokens) {
  const Sizes s = checked_sizes(ModelKind::GRU, weights);
  const int64_t H = s.H;
  const Tensor &emb = weights.at("emb"), &W_ih = weights.at("W_ih"), &W_hh = weights.at("W_hh");
  const Vec b_ih = values(weights.at("b_ih")), b_hh = values(weights.at("b_hh"));
  Vec h(H, 0.0);
  for (size_t t = 0; t < tokens.size(); ++t) {
    GROVE_CHECK(tokens[t] >= 0 && tokens[t] < s.V, "token {} is {}, expected one in [0, {})", t, tokens[t],
                s.V);
    // PyTorch's row order: reset, update (z), new (n).
    const Vec gi = add(matvec(W_ih, row_of(emb, tokens[t])), b_ih);
    const Vec gh = add(matvec(W_hh, h), b_hh);
    const Vec r = sigmoid(add(slice(gi, 0, H), slice(gh, 0, H)));
    const Vec z = sigmoid(add(slice(gi, H, H), slice(gh, H, H)));
    const Vec cand = tanh(add(slice(gi, 2 * H, H), mul(r, slice(gh, 2 * H, H))));
    for (int64_t j = 0; j < H; ++j) h[j] = (1.0 - z[j]) * cand[j] + z[j] * h[j];
  }
  return to_tensor(h);
}

}  // namespace grove::reference
