#pragma once
// The loss on top of a tree model: a linear + softmax classifier over node states.
//
//   z[n] = W · drop(h[n]) + b          W = head.weight [C, H], b = head.bias [C]
//   loss = (1 / N) Σ_n −log softmax(z[n])[label[n]]
//
// over the labelled nodes of the batch: every node with a label >= 0 (`LossNodes::All`, SST labels
// every node) or only the roots (`LossNodes::Root`). N is the number of those nodes by default — the
// mean, as PyTorch's CrossEntropyLoss with reduction 'mean' — or the number of trees in the batch
// (`Average::Trees`: Tai et al.'s recipe, the nodes' sum divided by the batch size, whose gradients are
// larger by the nodes per tree). A batch without labelled nodes has loss 0 and zero gradients.
//
// Dropout (rate p > 0, training only) is inverted dropout before the classifier: element k of row r
// is kept with probability 1 − p and then scaled by 1 / (1 − p). Whether it is kept is a pure
// function of (seed, step, r, k) — a counter-based hash (training/Random.h) — so a mask is
// reproduced exactly from the seed and the step count, whatever was drawn before it.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/Tensor.h"
#include "training/GradientModel.h"

namespace grove::training {

enum class LossNodes { All, Root };
enum class Average { Nodes, Trees };

inline constexpr char kHeadWeight[] = "head.weight";
inline constexpr char kHeadBias[] = "head.bias";

struct HeadOptions {
  LossNodes nodes = LossNodes::All;
  double dropout = 0.0;  // in [0, 1)
  uint64_t seed = 1;
  Average average = Average::Nodes;
  int threads = 1;  // the rows' work split among this many (the result does not depend on it)
};

// What one batch's loss gives the optimizer.
struct HeadResult {
  double loss = 0.0;          // the loss above
  double sum = 0.0;           // Σ_n of the nodes' cross-entropies
  int64_t labelled = 0;       // the labelled nodes
  std::vector<float> d_rows;  // d(loss)/d(h), [nodes, H]: what GradientModel::backward takes
  Tensor d_weight;            // [C, H]
  Tensor d_bias;              // [C]
};

// The head's parameters: head.weight uniform in ±1/sqrt(H) (PyTorch's nn.Linear), head.bias the
// same, from a hash of `seed`.
Weights init_head(int64_t width, int64_t classes, uint64_t seed);

// Checks that `head` holds head.weight [C, width] and head.bias [C] for some C >= 2 and returns C;
// a UserError naming `file` otherwise.
int64_t check_head(const Weights &head, int64_t width, const std::string &file);

// Whether dropout keeps element `element` of row `row` at `step` (probability 1 − rate).
bool dropout_keeps(uint64_t seed, uint64_t step, uint64_t row, uint64_t element, double rate);

// The loss and its gradients for the last forward's `states` of `trees`, whose node labels are
// `labels[t][i]` (a negative label: unlabelled); `step` keys the dropout mask.
HeadResult head_loss(const NodeStates &states, std::span<const Tree> trees,
                     std::span<const std::vector<int32_t>> labels, const Weights &head,
                     const HeadOptions &options, uint64_t step);

// The most probable class of every row (no dropout; ties go to the lower class), and the
// probabilities [nodes, C] when `probabilities` is not null.
std::vector<int32_t> head_predict(const NodeStates &states, const Weights &head,
                                  std::vector<float> *probabilities = nullptr);

}  // namespace grove::training
