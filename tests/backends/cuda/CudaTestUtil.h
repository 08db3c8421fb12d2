#pragma once
// What the CUDA back end's tests share: a model's plan for the GPU and its kernels built for the
// CPU emulation (cached per process: each distinct kernel source costs one host compiler run), the
// small inputs every structure runs on, and the independent references' outputs for them
// (tests/reference). Outputs are compared with tests/scheduling's expect_matches_reference:
// |grove - reference| <= 1e-4 * |reference| + 1e-5 per element (float32 against double).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/HostEmulation.h"
#include "datasets/DagReader.h"
#include "datasets/Generators.h"
#include "frontend/dsl/Frontend.h"
#include "tests/dag/DagTestInputs.h"
#include "tests/reference/Reference.h"
#include "tests/scheduling/ScheduleSweep.h"

namespace grove::testing {

using reference::ModelKind;

inline constexpr int32_t kCudaVocab = 30;

inline ilir::Program cuda_test_program(ModelKind model) {
  return dsl::parse_model_file(
      fmt::format("{}/models/{}.grove", GROVE_SOURCE_DIR, reference::model_file_stem(model)));
}

inline bool is_sequence(ModelKind m) { return m == ModelKind::LSTM || m == ModelKind::GRU; }
inline bool is_dag(ModelKind m) { return m == ModelKind::DAGRNN; }
// TreeFC and MV-RNN have no input size D (the embedding is H wide).
inline std::map<std::string, int64_t> cuda_test_sizes(ModelKind m, int64_t H, int64_t D) {
  if (m == ModelKind::TreeFC || m == ModelKind::MVRNN) return {{"H", H}, {"V", kCudaVocab}};
  return {{"H", H}, {"D", D}, {"V", kCudaVocab}};
}
inline int64_t cuda_test_D(ModelKind m, int64_t H, int64_t D) {
  return m == ModelKind::TreeFC || m == ModelKind::MVRNN ? H : D;
}

// Small inputs of every shape: random binary trees (a single leaf included), perfect trees, a
// caterpillar; any-arity trees and a one-child chain for the child-sum model.
inline std::vector<Tree> cuda_test_trees(ModelKind m) {
  std::vector<Tree> trees;
  if (m == ModelKind::ChildSumTreeLSTM) {
    for (int32_t i = 0; i < 6; ++i) trees.push_back(random_tree(300 + i, 1 + (i * 5) % 14, 4, kCudaVocab));
    trees.push_back(unary_chain(5, kCudaVocab, 3));
    return trees;
  }
  for (int32_t i = 0; i < 5; ++i) trees.push_back(random_binary_tree(100 + i, 1 + (i * 3) % 11, kCudaVocab));
  for (int32_t h = 0; h <= 3; ++h) trees.push_back(perfect_binary_tree(h, kCudaVocab, h));
  trees.push_back(binary_chain(7, kCudaVocab, 7));
  return trees;
}

// Random DAGs (sources, sinks, an empty slot 0 before a filled one, both slots one node) and a grid.
inline std::vector<Dag> cuda_test_dags() {
  std::vector<Dag> dags;
  for (int32_t n : {1, 4, 13, 25}) dags.push_back(random_dag(2000 + n, n, kCudaVocab));
  std::vector<int32_t> tokens(12);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7) % kCudaVocab);
  dags.push_back(grid_dag(3, 4, tokens, Sweep::NorthWest));
  return dags;
}

inline std::vector<std::vector<int32_t>> cuda_test_sequences() {
  std::vector<std::vector<int32_t>> out;
  int seed = 40;
  for (int32_t length : {1, 6, 2, 11}) out.push_back(random_sequence(++seed, length, kCudaVocab));
  return out;
}

inline Weights cuda_test_weights(ModelKind m, int64_t H, int64_t D) {
  return reference::random_model_weights(m, H, cuda_test_D(m, H, D), kCudaVocab, 17 + uint64_t(H));
}

// The reference's outputs for the model's inputs above.
inline Tensor cuda_reference_outputs(ModelKind m, int64_t H, int64_t D) {
  const Weights w = cuda_test_weights(m, H, D);
  if (!is_sequence(m) && !is_dag(m)) {
    std::vector<Tree> trees = cuda_test_trees(m);
    return reference::reference_roots(m, w, trees);
  }
  Tensor out({0, H});
  auto append = [&](const Tensor &rows) {
    out.data.insert(out.data.end(), rows.data.begin(), rows.data.end());
    out.shape[0] += rows.size() / H;
  };
  if (is_dag(m))
    for (const Dag &dag : cuda_test_dags()) append(reference::reference_dagrnn(w, to_reference(dag)));
  else
    for (const std::vector<int32_t> &s : cuda_test_sequences())
      append(m == ModelKind::LSTM ? reference::reference_lstm(w, s) : reference::reference_gru(w, s));
  return out;
}

// The emulated kernels' outputs for the same inputs.
inline Tensor cuda_emulated_outputs(ModelKind m, int64_t H, int64_t D, const std::string &schedule,
                                    const cuda::CudaOptions &options) {
  plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(m), cuda_test_sizes(m, H, D), schedule);
  cuda::EmulatedModel model(plan, options);
  model.bind(cuda_test_weights(m, H, D));
  if (is_dag(m)) return model.run_dags(cuda_test_dags());
  if (is_sequence(m)) return model.run_sequences(cuda_test_sequences());
  return model.run(cuda_test_trees(m));
}

inline std::string cuda_options_name(const cuda::CudaOptions &o) {
  return fmt::format("{}_{}_{}x{}", o.form == cuda::Form::Persistent ? "Persistent" : "PerLevel",
                     o.barrier == cuda::GridBarrier::Counter ? "Counter" : "GridSync", o.blocks, o.threads);
}

}  // namespace grove::testing
