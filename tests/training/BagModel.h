#pragma once
// A test-only GradientModel with an exact gradient: every node's state is h[n] = tanh(W·x[n] + b),
// where x[n] is the sum of the embedding rows emb[token] of the leaves under n (a bag of words).
// Parameters emb [V, D], W [H, D], b [H]. Trees must be in post-order (children before parents), as
// the PTB reader gives them. Backward, per tree:
//   1. da[n] = dh[n] ⊙ (1 − h[n]²); dW += da[n] x[n]ᵀ; db += da[n]; dx[n] = Wᵀ da[n].
//   2. From the root down, g[n] = dx[n] + g[parent(n)]: the gradient reaching every x[n]'s leaves.
//   3. Each leaf adds g[leaf] to its token's embedding row.
// Accumulated in double, so the test's finite differences see the exact derivative.

#include <algorithm>
#include <cmath>
#include <map>

#include "support/Error.h"
#include "training/GradientModel.h"

namespace grove::testing {

class BagModel : public training::GradientModel {
 public:
  BagModel(int64_t vocab, int64_t dim, int64_t hidden)
      : params_{{"W", {hidden, dim}}, {"b", {hidden}}, {"emb", {vocab, dim}}},
        v_(vocab),
        d_(dim),
        h_(hidden) {}

  const std::vector<training::ParamInfo> &params() const override { return params_; }
  const std::string &embedding() const override { return embedding_; }
  void set_weights(const Weights &weights) override {
    GROVE_CHECK(weights.size() == params_.size(), "{} weights", weights.size());
    weights_ = weights;
    ++set_weights_calls;
  }

  const training::NodeStates &forward(std::span<const Tree> trees) override {
    trees_.assign(trees.begin(), trees.end());
    states_ = {};
    states_.width = h_;
    states_.tree_offset = {0};
    for (const Tree &t : trees) states_.tree_offset.push_back(states_.tree_offset.back() + t.size());
    const int64_t nodes = states_.nodes();
    x_.assign(nodes * d_, 0.0);
    states_.rows.assign(nodes * h_, 0.0f);
    const Tensor &w = weights_.at("W"), &b = weights_.at("b"), &emb = weights_.at("emb");
    for (size_t t = 0; t < trees.size(); ++t) {
      const Tree &tree = trees[t];
      const int64_t off = states_.tree_offset[t];
      for (int32_t n = 0; n < tree.size(); ++n) {
        double *x = x_.data() + (off + n) * d_;
        if (tree.num_children(n) == 0) {
          GROVE_CHECK(tree.token[n] >= 0 && tree.token[n] < v_, "token {}", tree.token[n]);
          for (int64_t k = 0; k < d_; ++k) x[k] = emb.data[tree.token[n] * d_ + k];
        }
        for (int32_t c = 0; c < tree.num_children(n); ++c) {
          const int32_t child = tree.child(n, c);
          GROVE_CHECK(child < n, "tree {} is not in post-order", t);
          for (int64_t k = 0; k < d_; ++k) x[k] += x_[(off + child) * d_ + k];
        }
        for (int64_t j = 0; j < h_; ++j) {
          double a = b.data[j];
          for (int64_t k = 0; k < d_; ++k) a += static_cast<double>(w.data[j * d_ + k]) * x[k];
          states_.rows[(off + n) * h_ + j] = static_cast<float>(std::tanh(a));
        }
      }
    }
    forwarded_ = true;
    return states_;
  }

  training::Gradients backward(std::span<const float> d_rows) override {
    GROVE_CHECK(forwarded_, "backward without a forward");
    GROVE_CHECK(static_cast<int64_t>(d_rows.size()) == states_.nodes() * h_, "{} gradient values",
                d_rows.size());
    const Tensor &w = weights_.at("W");
    std::vector<double> dw(h_ * d_, 0.0), db(h_, 0.0);
    std::map<int32_t, std::vector<double>> demb;
    for (size_t t = 0; t < trees_.size(); ++t) {
      const Tree &tree = trees_[t];
      const int64_t off = states_.tree_offset[t];
      std::vector<double> g(tree.size() * d_, 0.0);
      std::vector<int32_t> parent(tree.size(), -1);
      for (int32_t n = 0; n < tree.size(); ++n)
        for (int32_t c = 0; c < tree.num_children(n); ++c) parent[tree.child(n, c)] = n;
      for (int32_t n = tree.size() - 1; n >= 0; --n) {
        const double *x = x_.data() + (off + n) * d_;
        double *gn = g.data() + n * d_;
        for (int64_t j = 0; j < h_; ++j) {
          const double h = states_.rows[(off + n) * h_ + j];
          const double da = d_rows[(off + n) * h_ + j] * (1.0 - h * h);
          db[j] += da;
          for (int64_t k = 0; k < d_; ++k) {
            dw[j * d_ + k] += da * x[k];
            gn[k] += da * w.data[j * d_ + k];
          }
        }
        if (parent[n] >= 0)
          for (int64_t k = 0; k < d_; ++k) gn[k] += g[parent[n] * d_ + k];
        if (tree.num_children(n) == 0) {
          std::vector<double> &row = demb[tree.token[n]];
          row.resize(d_, 0.0);
          for (int64_t k = 0; k < d_; ++k) row[k] += gn[k];
        }
      }
    }
    training::Gradients grads;
    Tensor gw({h_, d_}), gb({h_});
    std::transform(dw.begin(), dw.end(), gw.data.begin(), [](double v) { return static_cast<float>(v); });
    std::transform(db.begin(), db.end(), gb.data.begin(), [](double v) { return static_cast<float>(v); });
    grads.dense["W"] = std::move(gw);
    grads.dense["b"] = std::move(gb);
    grads.embedding_grad = Tensor({static_cast<int64_t>(demb.size()), d_});
    int64_t r = 0;
    for (const auto &[token, row] : demb) {
      grads.embedding_rows.push_back(token);
      for (int64_t k = 0; k < d_; ++k) grads.embedding_grad.data[r * d_ + k] = static_cast<float>(row[k]);
      ++r;
    }
    return grads;
  }

  int64_t set_weights_calls = 0;

 private:
  std::vector<training::ParamInfo> params_;
  std::string embedding_ = "emb";
  int64_t v_, d_, h_;
  Weights weights_;
  std::vector<Tree> trees_;
  training::NodeStates states_;
  std::vector<double> x_;
  bool forwarded_ = false;
};

}  // namespace grove::testing
