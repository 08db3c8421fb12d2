// libtorch peer of grove: the tree models of docs/MODELS.md (TreeFC, TreeGRU, TreeLSTM,
// ChildSumTreeLSTM, MVRNN), fp32 inference, level-batched by hand with libtorch 1.13.
// `--precision bf16` multiplies in bf16 instead (see `affine` below): weights converted to bf16 once,
// each product's input rounded to bf16 per call, biases, gates and states in fp32.
//
// Level batching, per call of N trees:
//   1. number the nodes of the N trees globally (tree after tree) and group them by height;
//   2. height 0 (the leaves): gather the embeddings with index_select, run the leaf matmul, scatter
//      the states into the [nodes, H] state tensors with index_copy_;
//   3. each higher level: gather the children's h (and c) with index_select, run one matmul for the
//      level (two where the model needs them: TreeGRU's reset gate, child-sum's per-edge forget
//      gates), apply the gates, scatter with index_copy_;
//   4. return the roots' h (in input order).
// Step 1 is inside the timing (it depends on the batch); parsing and per-tree heights are not.
//
// Protocol: one pass runs all trees in calls of --batch trees; after one warm-up pass, --repeat
// passes are timed; prints one JSON line with the median over passes of (pass time / calls) in ms
// per batch, and its p10/p90.
//
// Inputs, vocabulary compaction and weight files follow experiments/peers/peer_common.py exactly, so
// that both peers can be run on the same safetensors file and compared (see crosscheck.sh).

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using torch::Tensor;

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A tree in post-order (children before parents; the root is the last node), children in CSR form.
struct Tree {
  std::vector<std::string> word;     // the leaf's word before vocabulary lookup ("" for internal)
  std::vector<int64_t> token;        // vocabulary id of a leaf, -1 for an internal node
  std::vector<int32_t> child_begin;  // children of n: child[child_begin[n] .. child_begin[n + 1])
  std::vector<int32_t> child;
  std::vector<int32_t> height;  // leaf = 0

  int32_t size() const { return static_cast<int32_t>(token.size()); }
  int32_t num_children(int32_t n) const { return child_begin[n + 1] - child_begin[n]; }
  int32_t kid(int32_t n, int32_t k) const { return child[child_begin[n] + k]; }
};

// Splits on ASCII space and parentheses only: SST has words with a no-break space inside.
std::vector<std::string> tokenize(const std::string &line) {
  std::vector<std::string> tokens;
  std::string word;
  for (char ch : line) {
    if (ch == ' ' || ch == '(' || ch == ')' || ch == '\n' || ch == '\r') {
      if (!word.empty()) tokens.push_back(std::move(word)), word.clear();
      if (ch == '(' || ch == ')') tokens.emplace_back(1, ch);
    } else {
      word.push_back(ch);
    }
  }
  if (!word.empty()) tokens.push_back(word);
  return tokens;
}

// Parses `(label child...)` / `(label word)` with an explicit stack of open nodes; a node is
// emitted at its ')' after all its children, which gives post-order.
Tree parse_tree(const std::string &line, const std::string &where) {
  struct Open {
    std::vector<int32_t> kids;
    std::string word;
    bool has_word = false;
  };
  std::vector<std::string> tokens = tokenize(line);
  Tree tree;
  std::vector<std::vector<int32_t>> kids_of;
  std::vector<Open> stack;
  bool root_done = false;
  for (size_t i = 0; i < tokens.size();) {
    const std::string &tok = tokens[i];
    if (root_done) throw InputError(where + ": text after the root's closing ')': '" + tok + "'");
    if (tok == "(") {
      if (i + 1 >= tokens.size() || tokens[i + 1] == "(" || tokens[i + 1] == ")")
        throw InputError(where + ": expected a label after '('");
      stack.emplace_back();
      i += 2;
    } else if (tok == ")") {
      if (stack.empty()) throw InputError(where + ": unbalanced ')'");
      Open node = std::move(stack.back());
      stack.pop_back();
      if (!node.has_word && node.kids.empty())
        throw InputError(where + ": node '()' without a word or children");
      int32_t n = tree.size();
      tree.word.push_back(node.word);
      tree.token.push_back(-1);
      kids_of.push_back(std::move(node.kids));
      if (stack.empty())
        root_done = true;
      else
        stack.back().kids.push_back(n);
      ++i;
    } else {
      if (stack.empty()) throw InputError(where + ": word '" + tok + "' outside any '(...)'");
      Open &top = stack.back();
      if (!top.kids.empty() || top.has_word)
        throw InputError(where + ": word '" + tok + "' next to other children; a leaf is (label word)");
      top.word = tok;
      top.has_word = true;
      ++i;
    }
  }
  if (!stack.empty() || !root_done) throw InputError(where + ": unbalanced '(': the tree is not closed");
  tree.child_begin.push_back(0);
  for (const auto &kids : kids_of) {
    tree.child.insert(tree.child.end(), kids.begin(), kids.end());
    tree.child_begin.push_back(static_cast<int32_t>(tree.child.size()));
  }
  return tree;
}

void compute_heights(Tree &tree) {
  tree.height.assign(tree.size(), 0);
  for (int32_t n = 0; n < tree.size(); ++n)
    for (int32_t k = 0; k < tree.num_children(n); ++k)
      tree.height[n] = std::max(tree.height[n], tree.height[tree.kid(n, k)] + 1);
}

std::vector<Tree> read_trees(const std::string &path, int64_t limit) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the tree file");
  std::vector<Tree> trees;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \r") == std::string::npos) continue;
    trees.push_back(parse_tree(line, path + ":" + std::to_string(lineno)));
    if (limit > 0 && static_cast<int64_t>(trees.size()) >= limit) break;
  }
  if (trees.empty()) throw InputError(path + ": no trees");
  return trees;
}

std::unordered_map<std::string, int64_t> read_vocab(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the vocabulary file");
  std::unordered_map<std::string, int64_t> vocab;
  std::string line;
  for (int64_t id = 0; std::getline(in, line); ++id) vocab.emplace(line, id);
  return vocab;
}

// The trees' own vocabulary, in order of first appearance.
std::unordered_map<std::string, int64_t> vocab_from_trees(const std::vector<Tree> &trees) {
  std::unordered_map<std::string, int64_t> vocab;
  for (const Tree &tree : trees)
    for (int32_t n = 0; n < tree.size(); ++n)
      if (tree.num_children(n) == 0) vocab.emplace(tree.word[n], static_cast<int64_t>(vocab.size()));
  return vocab;
}

void resolve_tokens(std::vector<Tree> &trees, const std::unordered_map<std::string, int64_t> &vocab,
                    const std::string &where) {
  auto unk = vocab.find("<unk>");
  for (size_t t = 0; t < trees.size(); ++t) {
    Tree &tree = trees[t];
    for (int32_t n = 0; n < tree.size(); ++n) {
      if (tree.num_children(n) != 0) continue;
      auto it = vocab.find(tree.word[n]);
      if (it == vocab.end()) it = unk;
      if (it == vocab.end())
        throw InputError(where + ": tree " + std::to_string(t) + ", node " + std::to_string(n) + ": token '" +
                         tree.word[n] + "' is not in the vocabulary and it has no <unk>");
      tree.token[n] = it->second;
    }
  }
}

// `count` perfect binary trees of the given height; leaf tokens cycle through 0..vocab_size-1.
std::vector<Tree> perfect_trees(int height, int64_t count, int64_t vocab_size = 1000) {
  std::vector<Tree> trees;
  int64_t leaf = 0;
  for (int64_t t = 0; t < count; ++t) {
    Tree tree;
    tree.child_begin.push_back(0);
    std::vector<int32_t> level;
    for (int64_t i = 0; i < (int64_t{1} << height); ++i) {
      tree.token.push_back(leaf++ % vocab_size);
      tree.child_begin.push_back(0);
      level.push_back(tree.size() - 1);
    }
    while (level.size() > 1) {
      std::vector<int32_t> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) {
        tree.token.push_back(-1);
        tree.child.push_back(level[i]);
        tree.child.push_back(level[i + 1]);
        tree.child_begin.push_back(static_cast<int32_t>(tree.child.size()));
        next.push_back(tree.size() - 1);
      }
      level = std::move(next);
    }
    tree.word.assign(tree.token.size(), "");
    trees.push_back(std::move(tree));
  }
  return trees;
}

// Renumbers token ids to 0..V'-1 over the ids the trees use (in id order); returns V'.
int64_t compact_tokens(std::vector<Tree> &trees) {
  std::set<int64_t> used;
  for (const Tree &tree : trees)
    for (int64_t w : tree.token)
      if (w >= 0) used.insert(w);
  std::unordered_map<int64_t, int64_t> remap;
  for (int64_t w : used) remap.emplace(w, static_cast<int64_t>(remap.size()));
  for (Tree &tree : trees)
    for (int64_t &w : tree.token)
      if (w >= 0) w = remap.at(w);
  return static_cast<int64_t>(used.size());
}

// ---------------------------------------------------------------------------------------------------
// Weights: docs/MODELS.md names and shapes, from safetensors or seeded random.

using Weights = std::map<std::string, Tensor>;
using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

Shapes parameter_shapes(const std::string &model, int64_t H, int64_t V) {
  const int64_t D = H;
  if (model == "treefc") return {{"emb", {V, H}}, {"W", {H, 2 * H}}, {"b", {H}}};
  if (model == "treegru")
    return {{"emb", {V, D}},         {"W_x", {H, D}},  {"b_x", {H}},        {"U_z", {H, 2 * H}}, {"b_z", {H}},
            {"U_r", {2 * H, 2 * H}}, {"b_r", {2 * H}}, {"U_h", {H, 2 * H}}, {"b_h", {H}}};
  if (model == "treelstm")
    return {{"emb", {V, D}},    {"W_iou", {3 * H, D}},   {"U_iou", {3 * H, 2 * H}},
            {"b_iou", {3 * H}}, {"U_f", {2 * H, 2 * H}}, {"b_f", {H}}};
  if (model == "childsumtreelstm")
    return {{"emb", {V, D}}, {"W_iou", {3 * H, D}}, {"U_iou", {3 * H, H}}, {"b_iou", {3 * H}},
            {"W_f", {H, D}}, {"U_f", {H, H}},       {"b_f", {H}}};
  if (model == "mvrnn")
    return {{"emb", {V, H}}, {"emb_mat", {V, H, H}}, {"W", {H, 2 * H}}, {"bias", {H}}, {"W_M", {H, 2 * H}}};
  throw InputError("unknown model '" + model +
                   "'; expected treefc, treegru, treelstm, childsumtreelstm or mvrnn");
}

std::string shape_string(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Weights read_safetensors(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the weights file");
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (raw.size() < 8) throw InputError(path + ": too short for a safetensors file");
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  if (8 + n > raw.size()) throw InputError(path + ": header length runs past the end of the file");
  nlohmann::json header = nlohmann::json::parse(raw.substr(8, n));
  const size_t base = 8 + n;
  Weights weights;
  for (auto &[name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (info.at("dtype") != "F32")
      throw InputError(path + ": tensor '" + name + "' has dtype " + info.at("dtype").get<std::string>() +
                       ", expected F32");
    std::vector<int64_t> shape = info.at("shape").get<std::vector<int64_t>>();
    auto offsets = info.at("data_offsets").get<std::vector<size_t>>();
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    if (offsets.size() != 2 || offsets[1] - offsets[0] != count * sizeof(float) ||
        base + offsets[1] > raw.size())
      throw InputError(path + ": tensor '" + name + "' has data_offsets that do not match its shape");
    Tensor t = torch::empty(shape, torch::kFloat32);
    std::memcpy(t.data_ptr<float>(), raw.data() + base + offsets[0], count * sizeof(float));
    weights.emplace(name, t);
  }
  return weights;
}

void check_weights(const Weights &weights, const Shapes &expected, const std::string &model,
                   const std::string &where) {
  for (const auto &[name, shape] : expected) {
    auto it = weights.find(name);
    if (it == weights.end())
      throw InputError(where + ": missing tensor '" + name + "', expected shape " + shape_string(shape));
    if (it->second.sizes() != c10::IntArrayRef(shape))
      throw InputError(where + ": tensor '" + name + "' has shape " + shape_string(it->second.sizes()) +
                       ", expected " + shape_string(shape));
  }
  for (const auto &[name, tensor] : weights) {
    bool known =
        std::any_of(expected.begin(), expected.end(), [&](const auto &e) { return e.first == name; });
    if (!known) throw InputError(where + ": unexpected tensor '" + name + "' for model " + model);
  }
}

// Same distributions as peer_common.random_weights (not the same values: cross-checks share a file).
Weights random_weights(const std::string &model, int64_t H, int64_t V, uint64_t seed) {
  torch::manual_seed(seed);
  Weights weights;
  for (const auto &[name, shape] : parameter_shapes(model, H, V)) {
    Tensor w;
    if (name == "emb") {
      w = torch::rand(shape) * 2 - 1;
    } else if (name == "emb_mat") {
      w = torch::eye(H).unsqueeze(0) + (torch::rand(shape) - 0.5) / std::sqrt(static_cast<double>(H));
    } else {
      double bound = 1.0 / std::sqrt(static_cast<double>(shape.size() == 2 ? shape[1] : H));
      w = (torch::rand(shape) * 2 - 1) * bound;
    }
    weights.emplace(name, w.contiguous());
  }
  return weights;
}

// ---------------------------------------------------------------------------------------------------
// One call's schedule and the level-batched models.

Tensor index_tensor(const std::vector<int64_t> &v) {
  return torch::from_blob(const_cast<int64_t *>(v.data()), {static_cast<int64_t>(v.size())}, torch::kInt64)
      .clone();
}

// The nodes of N trees, numbered globally, grouped by height. A level's `left`/`right` are the binary
// children; `edges`/`parent` list every child and its parent's position within the level (child-sum).
struct Level {
  int64_t size;
  Tensor nodes, left, right, edges, parent;
};

struct Schedule {
  int64_t total = 0;
  Tensor leaves, leaf_tokens, roots;
  std::vector<Level> levels;
};

Schedule make_schedule(const std::vector<Tree> &trees, size_t first, size_t count, bool binary) {
  Schedule s;
  std::vector<int64_t> leaves, leaf_tokens, roots;
  struct LevelLists {
    std::vector<int64_t> nodes, left, right, edges, parent;
  };
  std::vector<LevelLists> by_height;
  int64_t offset = 0;
  for (size_t t = first; t < first + count; ++t) {
    const Tree &tree = trees[t];
    for (int32_t n = 0; n < tree.size(); ++n) {
      int32_t k = tree.num_children(n);
      if (k == 0) {
        leaves.push_back(offset + n);
        leaf_tokens.push_back(tree.token[n]);
        continue;
      }
      size_t h = static_cast<size_t>(tree.height[n]);
      if (by_height.size() < h) by_height.resize(h);
      LevelLists &level = by_height[h - 1];
      if (binary) {
        level.left.push_back(offset + tree.kid(n, 0));
        level.right.push_back(offset + tree.kid(n, 1));
      } else {
        for (int32_t j = 0; j < k; ++j) {
          level.edges.push_back(offset + tree.kid(n, j));
          level.parent.push_back(static_cast<int64_t>(level.nodes.size()));
        }
      }
      level.nodes.push_back(offset + n);
    }
    offset += tree.size();
    roots.push_back(offset - 1);
  }
  s.total = offset;
  s.leaves = index_tensor(leaves);
  s.leaf_tokens = index_tensor(leaf_tokens);
  s.roots = index_tensor(roots);
  for (const LevelLists &l : by_height) {
    if (l.nodes.empty()) continue;
    Level level{static_cast<int64_t>(l.nodes.size()), index_tensor(l.nodes)};
    if (binary) {
      level.left = index_tensor(l.left);
      level.right = index_tensor(l.right);
    } else {
      level.edges = index_tensor(l.edges);
      level.parent = index_tensor(l.parent);
    }
    s.levels.push_back(std::move(level));
  }
  return s;
}

// x · Wt + bias. Weights converted to bf16 (--precision bf16) multiply the way torch multiplies
// bf16 on a CPU: x rounded to bf16, torch::mm of two bf16 tensors (oneDNN's bf16 matmul: vdpbf16ps
// on AVX512-BF16, AMX where the CPU has it; fp32 accumulation, the result rounded to bf16, the
// weights reordered by oneDNN on every call), then back to fp32 for the fp32 bias.
Tensor affine(const Tensor &bias, const Tensor &x, const Tensor &wt) {
  if (wt.scalar_type() != torch::kBFloat16) return torch::addmm(bias, x, wt);
  return torch::mm(x.to(torch::kBFloat16), wt).to(torch::kFloat32) + bias;
}

Tensor product(const Tensor &x, const Tensor &wt) {
  if (wt.scalar_type() != torch::kBFloat16) return torch::mm(x, wt);
  return torch::mm(x.to(torch::kBFloat16), wt).to(torch::kFloat32);
}

// c = σ(i) ⊙ tanh(u) (+ c_extra), h = σ(o) ⊙ tanh(c), with iou = [i; o; u] along dim 1.
std::pair<Tensor, Tensor> lstm_gates(const Tensor &iou, const Tensor &c_extra) {
  auto parts = iou.chunk(3, 1);
  Tensor c = torch::sigmoid(parts[0]) * torch::tanh(parts[2]);
  if (c_extra.defined()) c = c + c_extra;
  return {torch::sigmoid(parts[1]) * torch::tanh(c), c};
}

Tensor run_treefc(Weights &w, const Schedule &s) {
  Tensor h = torch::empty({s.total, w["W"].size(0)});
  h.index_copy_(0, s.leaves, w["emb"].index_select(0, s.leaf_tokens));
  Tensor Wt = w["W"].t();
  for (const Level &l : s.levels) {
    Tensor x = torch::cat({h.index_select(0, l.left), h.index_select(0, l.right)}, 1);
    h.index_copy_(0, l.nodes, torch::tanh(affine(w["b"], x, Wt)));
  }
  return h.index_select(0, s.roots);
}

Tensor run_treegru(Weights &w, const Schedule &s) {
  const int64_t H = w["W_x"].size(0);
  Tensor h = torch::empty({s.total, H});
  Tensor x = w["emb"].index_select(0, s.leaf_tokens);
  h.index_copy_(0, s.leaves, torch::tanh(affine(w["b_x"], x, w["W_x"].t())));
  Tensor Uzr = w["U_zr"].t(), Uh = w["U_h"].t();
  for (const Level &l : s.levels) {
    Tensor hl = h.index_select(0, l.left), hr = h.index_select(0, l.right);
    Tensor sx = torch::cat({hl, hr}, 1);
    Tensor zr = torch::sigmoid(affine(w["b_zr"], sx, Uzr));
    Tensor z = zr.narrow(1, 0, H), r = zr.narrow(1, H, 2 * H);
    Tensor g = torch::tanh(affine(w["b_h"], r * sx, Uh));
    h.index_copy_(0, l.nodes, z * (hl + hr) * 0.5 + (1 - z) * g);
  }
  return h.index_select(0, s.roots);
}

Tensor run_treelstm(Weights &w, const Schedule &s) {
  const int64_t H = w["b_f"].size(0);
  Tensor h = torch::empty({s.total, H}), c = torch::empty({s.total, H});
  Tensor x = w["emb"].index_select(0, s.leaf_tokens);
  auto [h0, c0] = lstm_gates(affine(w["b_iou"], x, w["W_iou"].t()), Tensor());
  h.index_copy_(0, s.leaves, h0);
  c.index_copy_(0, s.leaves, c0);
  Tensor Uall = w["U_all"].t();
  for (const Level &l : s.levels) {
    Tensor sx = torch::cat({h.index_select(0, l.left), h.index_select(0, l.right)}, 1);
    Tensor g = affine(w["b_all"], sx, Uall);  // [i o u f_l f_r]
    Tensor f = torch::sigmoid(g.narrow(1, 3 * H, 2 * H));
    Tensor fc =
        f.narrow(1, 0, H) * c.index_select(0, l.left) + f.narrow(1, H, H) * c.index_select(0, l.right);
    auto [hn, cn] = lstm_gates(g.narrow(1, 0, 3 * H), fc);
    h.index_copy_(0, l.nodes, hn);
    c.index_copy_(0, l.nodes, cn);
  }
  return h.index_select(0, s.roots);
}

Tensor run_childsumtreelstm(Weights &w, const Schedule &s) {
  const int64_t H = w["U_f"].size(0);
  Tensor h = torch::empty({s.total, H}), c = torch::empty({s.total, H});
  Tensor x = w["emb"].index_select(0, s.leaf_tokens);
  // x = 0 at internal nodes and t = 0 at leaves, so each node needs only one of W_iou x / U_iou t.
  auto [h0, c0] = lstm_gates(affine(w["b_iou"], x, w["W_iou"].t()), Tensor());
  h.index_copy_(0, s.leaves, h0);
  c.index_copy_(0, s.leaves, c0);
  Tensor Uf = w["U_f"].t(), Uiou = w["U_iou"].t();
  for (const Level &l : s.levels) {
    Tensor hk = h.index_select(0, l.edges);
    Tensor t = torch::zeros({l.size, H}).index_add_(0, l.parent, hk);
    Tensor f = torch::sigmoid(affine(w["b_f"], hk, Uf));
    Tensor fc = torch::zeros({l.size, H}).index_add_(0, l.parent, f * c.index_select(0, l.edges));
    auto [hn, cn] = lstm_gates(affine(w["b_iou"], t, Uiou), fc);
    h.index_copy_(0, l.nodes, hn);
    c.index_copy_(0, l.nodes, cn);
  }
  return h.index_select(0, s.roots);
}

// Node matrices are kept transposed (At = Aᵀ) so that a level's P = W_M [A; B] is one GEMM:
// Pᵀ = [Aᵀ Bᵀ] W_Mᵀ over all the level's rows, (n·H × 2H) · (2H × H).
Tensor run_mvrnn(Weights &w, const Schedule &s) {
  const int64_t H = w["W"].size(0);
  Tensor a = torch::empty({s.total, H}), At = torch::empty({s.total, H, H});
  a.index_copy_(0, s.leaves, w["emb"].index_select(0, s.leaf_tokens));
  At.index_copy_(0, s.leaves, w["emb_mat"].index_select(0, s.leaf_tokens).transpose(1, 2));
  Tensor Wt = w["W"].t(), WMt = w["W_M"].t();
  for (const Level &l : s.levels) {
    Tensor al = a.index_select(0, l.left), ar = a.index_select(0, l.right);
    Tensor Alt = At.index_select(0, l.left), Art = At.index_select(0, l.right);
    Tensor Ba = torch::bmm(al.unsqueeze(1), Art).squeeze(1);  // (B a)ᵀ = aᵀ Bᵀ
    Tensor Ab = torch::bmm(ar.unsqueeze(1), Alt).squeeze(1);
    a.index_copy_(0, l.nodes, torch::tanh(affine(w["bias"], torch::cat({Ba, Ab}, 1), Wt)));
    Tensor Pt = product(torch::cat({Alt, Art}, 2).view({l.size * H, 2 * H}), WMt);
    At.index_copy_(0, l.nodes, Pt.view({l.size, H, H}));
  }
  return a.index_select(0, s.roots);
}

using ModelFn = Tensor (*)(Weights &, const Schedule &);

ModelFn model_fn(const std::string &model) {
  if (model == "treefc") return run_treefc;
  if (model == "treegru") return run_treegru;
  if (model == "treelstm") return run_treelstm;
  if (model == "childsumtreelstm") return run_childsumtreelstm;
  return run_mvrnn;
}

// Stacks the weights a level multiplies by together, so a level runs one matmul.
void fuse_weights(const std::string &model, Weights &w) {
  if (model == "treelstm") {
    w["U_all"] = torch::cat({w["U_iou"], w["U_f"]}).contiguous();
    w["b_all"] = torch::cat({w["b_iou"], w["b_f"], w["b_f"]});
  } else if (model == "treegru") {
    w["U_zr"] = torch::cat({w["U_z"], w["U_r"]}).contiguous();
    w["b_zr"] = torch::cat({w["b_z"], w["b_r"]});
  }
}

// --precision bf16: every weight matrix a level or a leaf multiplies by, in bf16 (once, round to
// nearest even); the embedding tables (inputs, gathered in fp32, rounded at the product) and the
// biases stay fp32.
void to_bf16(Weights &w) {
  for (auto &[name, tensor] : w)
    if (tensor.dim() == 2 && name != "emb") tensor = tensor.to(torch::kBFloat16).contiguous();
}

// float32 .npy (format 1.0), C order.
void write_npy(const std::string &path, const Tensor &t) {
  Tensor c = t.contiguous();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(c.size(0)) +
                       ", " + std::to_string(c.size(1)) + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path + ": cannot write the output file");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char *>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char *>(c.data_ptr<float>()), c.numel() * sizeof(float));
}

double percentile(std::vector<double> v, double p) {  // linear interpolation, as numpy's default
  std::sort(v.begin(), v.end());
  double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

struct Options {
  std::string model, trees, vocab, weights, out, precision = "fp32";
  int64_t hidden = 256, batch = 10, repeat = 5, threads = 2, limit = 0, seed = 1;
  int perfect_height = -1;
};

int run(const Options &o) {
  torch::NoGradGuard no_grad;
  torch::set_num_threads(static_cast<int>(o.threads));

  std::vector<Tree> trees;
  if (o.perfect_height >= 0) {
    trees = perfect_trees(o.perfect_height, o.limit > 0 ? o.limit : 100);
  } else {
    trees = read_trees(o.trees, o.limit);
    resolve_tokens(trees, o.vocab.empty() ? vocab_from_trees(trees) : read_vocab(o.vocab), o.trees);
  }
  for (Tree &tree : trees) {
    compute_heights(tree);
    if (o.model != "childsumtreelstm")
      for (int32_t n = 0; n < tree.size(); ++n)
        if (tree.num_children(n) != 0 && tree.num_children(n) != 2)
          throw InputError("tree " + std::to_string(&tree - trees.data()) + ", node " + std::to_string(n) +
                           " has " + std::to_string(tree.num_children(n)) + " children; " + o.model +
                           " needs binary trees");
  }

  // Token ids stay vocabulary ids when --weights has one emb row per vocabulary entry; otherwise
  // (and always for random weights) they are compacted to the ids the trees use.
  Weights w;
  if (!o.weights.empty()) {
    w = read_safetensors(o.weights);
    int64_t max_id = 0;
    for (const Tree &tree : trees)
      max_id = std::max(max_id, *std::max_element(tree.token.begin(), tree.token.end()));
    int64_t rows = w.count("emb") ? w["emb"].size(0) : -1;
    int64_t vocab = rows <= max_id ? compact_tokens(trees) : rows;
    check_weights(w, parameter_shapes(o.model, o.hidden, vocab), o.model, o.weights);
  } else {
    w = random_weights(o.model, o.hidden, compact_tokens(trees), static_cast<uint64_t>(o.seed));
  }
  fuse_weights(o.model, w);
  if (o.precision == "bf16") to_bf16(w);

  const ModelFn fn = model_fn(o.model);
  const bool binary = o.model != "childsumtreelstm";
  const size_t n_trees = trees.size(), batch = static_cast<size_t>(o.batch);
  auto pass = [&](std::vector<Tensor> *outputs) {
    for (size_t first = 0; first < n_trees; first += batch) {
      Tensor roots = fn(w, make_schedule(trees, first, std::min(batch, n_trees - first), binary));
      if (outputs) outputs->push_back(roots);
    }
  };

  std::vector<Tensor> outputs;
  pass(&outputs);  // warm-up, and the outputs
  if (!o.out.empty()) write_npy(o.out, torch::cat(outputs));
  const double calls = static_cast<double>((n_trees + batch - 1) / batch);
  std::vector<double> per_batch;
  for (int64_t r = 0; r < o.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    pass(nullptr);
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    per_batch.push_back(ms.count() / calls);
  }
  auto round4 = [](double x) { return std::round(x * 1e4) / 1e4; };
  nlohmann::json result = {{"peer", "libtorch-level-batched"},
                           {"model", o.model},
                           {"precision", o.precision},
                           {"hidden", o.hidden},
                           {"batch", o.batch},
                           {"trees", n_trees},
                           {"median_ms_per_batch", round4(percentile(per_batch, 50))},
                           {"p10_ms", round4(percentile(per_batch, 10))},
                           {"p90_ms", round4(percentile(per_batch, 90))}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "libtorch level-batched peer of grove (tree models of docs/MODELS.md, fp32 or bf16 inference)"};
  Options o;
  app.add_option("--model", o.model, "treefc, treegru, treelstm, childsumtreelstm or mvrnn")
      ->required()
      ->check(CLI::IsMember({"treefc", "treegru", "treelstm", "childsumtreelstm", "mvrnn"}));
  app.add_option("--hidden", o.hidden, "hidden size H (= input size D)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "trees per call")->check(CLI::PositiveNumber);
  app.add_option("--repeat", o.repeat, "timed passes")->check(CLI::PositiveNumber);
  auto *trees = app.add_option("--trees", o.trees, "SST PTB tree file");
  app.add_option("--vocab", o.vocab, "vocabulary, one token per line (default: the trees' own words)");
  auto *perfect = app.add_option("--perfect-height", o.perfect_height, "perfect binary trees of this height");
  app.add_option("--limit", o.limit, "use only the first LIMIT trees (perfect trees: 100)");
  app.add_option("--threads", o.threads, "intra-op threads")->check(CLI::PositiveNumber);
  app.add_option("--weights", o.weights, "safetensors weights (default: seeded random weights)");
  app.add_option("--seed", o.seed, "seed of the random weights");
  app.add_option("--out", o.out, "write each tree's root h as a float32 .npy [trees, H]");
  app.add_option("--precision", o.precision,
                 "fp32, or bf16: bf16 weights and product inputs, as torch multiplies bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  trees->excludes(perfect);
  CLI11_PARSE(app, argc, argv);
  if (o.trees.empty() == (o.perfect_height < 0)) {
    std::cerr << "libtorch_tree: give exactly one of --trees FILE and --perfect-height K\n";
    return 2;
  }
  try {
    return run(o);
  } catch (const InputError &e) {
    std::cerr << "libtorch_tree: " << e.what() << "\n";
    return 1;
  }
}
