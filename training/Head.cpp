#include "training/Head.h"

#include <algorithm>
#include <cmath>

#include "support/Error.h"
#include "support/Parallel.h"
#include "training/Messages.h"
#include "training/Random.h"
#include "training/TargetClones.h"

namespace grove::training {

namespace msg = training_messages;

namespace {

// The classifier's logits of one row, in double: z = W x + b. Eight partial sums per class (one
// vector of doubles), so that the reduction is not one chain of dependent additions (the compiler
// may not reassociate it) and vectorizes; the order is fixed, so is the result (also built for
// AVX-512, TargetClones.h: each partial sum is one lane, the same bits).
GROVE_ALSO_X86_64_V4 void logits(const Tensor &weight, const Tensor &bias, const float *x, int64_t width,
                                 std::vector<double> &z) {
  constexpr int kParts = 8;
  const int64_t classes = bias.size();
  z.assign(classes, 0.0);
  for (int64_t c = 0; c < classes; ++c) {
    const float *w = weight.data.data() + c * width;
    double part[kParts] = {};
    int64_t k = 0;
    for (; k + kParts <= width; k += kParts)
      for (int j = 0; j < kParts; ++j)
        part[j] += static_cast<double>(w[k + j]) * static_cast<double>(x[k + j]);
    for (; k < width; ++k) part[k % kParts] += static_cast<double>(w[k]) * x[k];
    double total = 0.0;
    for (int j = 0; j < kParts; j += 2) total += part[j] + part[j + 1];
    z[c] = bias.data[c] + total;
  }
}

// softmax(z) in place; returns log Σ exp(z) (max-shifted).
double softmax_in_place(std::vector<double> &z) {
  double top = *std::max_element(z.begin(), z.end());
  double total = 0.0;
  for (double &v : z) {
    v = std::exp(v - top);
    total += v;
  }
  for (double &v : z) v /= total;
  return top + std::log(total);
}

}  // namespace

Weights init_head(int64_t width, int64_t classes, uint64_t seed) {
  GROVE_CHECK(width >= 1 && classes >= 2, "head of width {} and {} classes", width, classes);
  Weights head;
  Tensor weight({classes, width}), bias({classes});
  const double bound = 1.0 / std::sqrt(static_cast<double>(width));
  HashStream words(hash_key({seed, 0x48454144ull /* "HEAD" */}));
  for (float &v : weight.data) v = static_cast<float>((2.0 * unit_double(words.next()) - 1.0) * bound);
  for (float &v : bias.data) v = static_cast<float>((2.0 * unit_double(words.next()) - 1.0) * bound);
  head[kHeadWeight] = std::move(weight);
  head[kHeadBias] = std::move(bias);
  return head;
}

int64_t check_head(const Weights &head, int64_t width, const std::string &file) {
  auto weight = head.find(kHeadWeight), bias = head.find(kHeadBias);
  if (weight == head.end() || bias == head.end()) user_error(msg::kHeadMissing, file, width);
  const std::vector<int64_t> &ws = weight->second.shape, &bs = bias->second.shape;
  if (ws.size() != 2 || ws[0] < 2 || ws[1] != width || bs.size() != 1 || bs[0] != ws[0]) {
    user_error(msg::kHeadShape, file, shape_string(ws), shape_string(bs), width);
  }
  for (const auto &[name, tensor] : head) {
    if (name != kHeadWeight && name != kHeadBias) user_error(msg::kHeadExtra, file, name);
  }
  return ws[0];
}

namespace {

// The mask's key of one row; an element's draw is one more mix of it (one hash per element, not five).
uint64_t dropout_row_key(uint64_t seed, uint64_t step, uint64_t row) {
  return hash_key({seed, step, row, 0x44524F50ull /* "DROP" */});
}

// Whether dropout keeps an element: unit_double(draw) >= rate, tested on the draw's top 53 bits
// against keep_threshold(rate) (the product by 2^53 is exact, and so is the comparison of an integer
// below 2^53), which is the same test and vectorizes.
uint64_t keep_threshold(double rate) { return static_cast<uint64_t>(std::ceil(rate * 0x1.0p53)); }
inline bool kept(uint64_t row_key, uint64_t element, uint64_t threshold) {
  return (mix64(row_key ^ element) >> 11) >= threshold;
}

// One row's mask and masked input: mask[k] = scale where element k is kept, else 0; x[k] = h[k] · mask[k].
// A hash per element: with AVX-512DQ's 64-bit vector multiplies (Zen 4, Intel) it vectorizes, so the
// function is also built for them (TargetClones.h; the same bits).
GROVE_ALSO_X86_64_V4 void mask_row(const float *h, uint64_t row_key, uint64_t threshold, float scale,
                                   int64_t width, float *mask, float *x) {
  for (int64_t k = 0; k < width; ++k) {
    mask[k] = kept(row_key, static_cast<uint64_t>(k), threshold) ? scale : 0.0f;
    x[k] = h[k] * mask[k];
  }
}

// One row's step 3 after dz: dw += dz xᵀ, d = (Wᵀ dz) ⊙ mask, in float: every loop is elementwise
// over k and vectorizes (also built for AVX-512: the same bits). `back` is scratch of `width`.
GROVE_ALSO_X86_64_V4 void row_gradients(const float *weight, const double *dz, int64_t classes,
                                        const float *x, const float *mask, int64_t width, float *dw,
                                        float *back, float *d) {
  std::fill(back, back + width, 0.0f);
  for (int64_t c = 0; c < classes; ++c) {
    const auto g = static_cast<float>(dz[c]);
    const float *w = weight + c * width;
    float *dwc = dw + c * width;
    for (int64_t k = 0; k < width; ++k) {
      dwc[k] += g * x[k];
      back[k] += g * w[k];
    }
  }
  for (int64_t k = 0; k < width; ++k) d[k] = back[k] * mask[k];
}

}  // namespace

bool dropout_keeps(uint64_t seed, uint64_t step, uint64_t row, uint64_t element, double rate) {
  if (rate <= 0.0) return true;
  return kept(dropout_row_key(seed, step, row), element, keep_threshold(rate));
}

// Steps, for every labelled node n (a row r of `states`):
//   1. x = drop(h[r]): the kept elements scaled by 1 / (1 − p), the others 0.
//   2. p = softmax(W x + b); loss += log Σ exp(z) − z[y].
//   3. dz = (p − onehot(y)) / N (N: the labelled nodes, or the trees); dW += dz xᵀ, db += dz, d_rows[r] = (Wᵀ
//   dz) ⊙ mask / (1 − p).
// Rows that carry no loss keep a zero gradient.
HeadResult head_loss(const NodeStates &states, std::span<const Tree> trees,
                     std::span<const std::vector<int32_t>> labels, const Weights &head,
                     const HeadOptions &options, uint64_t step) {
  const Tensor &weight = head.at(kHeadWeight), &bias = head.at(kHeadBias);
  const int64_t width = states.width, classes = bias.size();
  GROVE_CHECK(weight.shape == (std::vector<int64_t>{classes, width}), "head.weight {} for width {}",
              shape_string(weight.shape), width);
  GROVE_CHECK(trees.size() == labels.size() && states.tree_offset.size() == trees.size() + 1,
              "{} trees, {} label lists, {} offsets", trees.size(), labels.size(), states.tree_offset.size());
  GROVE_CHECK(options.dropout >= 0.0 && options.dropout < 1.0, "dropout {}", options.dropout);

  // The labelled rows and their labels.
  std::vector<std::pair<int64_t, int32_t>> rows;
  for (size_t t = 0; t < trees.size(); ++t) {
    const int64_t offset = states.tree_offset[t];
    GROVE_CHECK(static_cast<int64_t>(labels[t].size()) == trees[t].size() &&
                    states.tree_offset[t + 1] - offset == trees[t].size(),
                "tree {}: {} nodes, {} labels", t, trees[t].size(), labels[t].size());
    auto add = [&](int32_t node) {
      int32_t label = labels[t][node];
      GROVE_CHECK(label < classes, "label {} of {} classes", label, classes);
      if (label >= 0) rows.emplace_back(offset + node, label);
    };
    if (options.nodes == LossNodes::Root) {
      add(trees[t].root);
    } else {
      for (int32_t node = 0; node < trees[t].size(); ++node) add(node);
    }
  }

  HeadResult result;
  result.labelled = static_cast<int64_t>(rows.size());
  result.d_rows.assign(states.rows.size(), 0.0f);
  result.d_weight = Tensor(weight.shape);
  result.d_bias = Tensor(bias.shape);
  if (rows.empty()) return result;

  const double n = static_cast<double>(options.average == Average::Trees ? trees.size() : rows.size());
  const double scale = 1.0 / (1.0 - options.dropout);
  const auto kept_scale = static_cast<float>(scale);
  const uint64_t threshold = options.dropout <= 0.0 ? 0 : keep_threshold(options.dropout);
  // The rows in chunks of kChunkRows, each chunk's sums its own (the loss, dW, db), added up in chunk
  // order below: the same bits on any number of threads.
  constexpr int64_t kChunkRows = 64;
  const auto chunks = (static_cast<int64_t>(rows.size()) + kChunkRows - 1) / kChunkRows;
  struct Partial {
    double loss = 0.0;
    std::vector<double> db;
    std::vector<float> dw;
  };
  std::vector<Partial> partials(static_cast<size_t>(chunks));
  parallel_tasks(chunks, options.threads, [&](int64_t chunk) {
    Partial &part = partials[static_cast<size_t>(chunk)];
    part.db.assign(classes, 0.0);
    part.dw.assign(classes * width, 0.0f);
    std::vector<double> z;
    // x: the row after dropout; mask: 1 / (1 − p) where kept, else 0; back: Wᵀ dz.
    std::vector<float> x(width), mask(width), back(width);
    std::vector<double> dz(classes);
    const auto end = std::min(rows.size(), static_cast<size_t>((chunk + 1) * kChunkRows));
    for (auto i = static_cast<size_t>(chunk * kChunkRows); i < end; ++i) {
      const auto [row, label] = rows[i];
      const float *h = states.rows.data() + row * width;
      const uint64_t row_key = dropout_row_key(options.seed, step, static_cast<uint64_t>(row));
      mask_row(h, row_key, threshold, kept_scale, width, mask.data(), x.data());
      logits(weight, bias, x.data(), width, z);
      const double z_label = z[label];
      const double log_total = softmax_in_place(z);
      part.loss += log_total - z_label;
      for (int64_t c = 0; c < classes; ++c) {
        dz[c] = (z[c] - (c == label ? 1.0 : 0.0)) / n;
        part.db[c] += dz[c];
      }
      row_gradients(weight.data.data(), dz.data(), classes, x.data(), mask.data(), width, part.dw.data(),
                    back.data(), result.d_rows.data() + row * width);
    }
  });
  double loss = 0.0;
  std::vector<double> db(classes, 0.0);
  for (const Partial &part : partials) {
    loss += part.loss;
    for (int64_t c = 0; c < classes; ++c) db[c] += part.db[c];
    for (size_t i = 0; i < part.dw.size(); ++i) result.d_weight.data[i] += part.dw[i];
  }
  result.sum = loss;
  result.loss = loss / n;
  for (int64_t c = 0; c < classes; ++c) result.d_bias.data[c] = static_cast<float>(db[c]);
  return result;
}

std::vector<int32_t> head_predict(const NodeStates &states, const Weights &head,
                                  std::vector<float> *probabilities) {
  const Tensor &weight = head.at(kHeadWeight), &bias = head.at(kHeadBias);
  const int64_t width = states.width, classes = bias.size(), nodes = states.nodes();
  std::vector<int32_t> predicted(nodes);
  if (probabilities) probabilities->assign(nodes * classes, 0.0f);
  std::vector<double> z;
  for (int64_t r = 0; r < nodes; ++r) {
    logits(weight, bias, states.rows.data() + r * width, width, z);
    predicted[r] = static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin());
    if (probabilities) {
      softmax_in_place(z);
      for (int64_t c = 0; c < classes; ++c) (*probabilities)[r * classes + c] = static_cast<float>(z[c]);
    }
  }
  return predicted;
}

}  // namespace grove::training
