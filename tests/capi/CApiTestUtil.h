#pragma once
// What the C API tests share: models compiled through the C API and through the C++ JIT from the
// same weights file, and batches of trees, DAGs and sequences flattened into the C API's arrays.

#include <grove/grove.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/Dag.h"
#include "datasets/Tree.h"
#include "frontend/dsl/Frontend.h"
#include "support/Safetensors.h"
#include "tests/TestFiles.h"

namespace grove::capi_test {

struct ModelFree {
  void operator()(grove_model *model) const { grove_model_free(model); }
};
using ModelPtr = std::unique_ptr<grove_model, ModelFree>;

inline std::string model_path(const std::string &name) {
  return std::string(GROVE_SOURCE_DIR) + "/models/" + name + ".grove";
}

// A model file with seeded random weights (as `grove init-weights` writes them) in a scratch file.
struct ModelFiles {
  std::string model_file, weights_file;
  ilir::Program program;
  Weights weights;
};

inline ModelFiles model_files(const testing::TempDir &dir, const std::string &name, const std::string &sizes,
                              uint64_t seed = 1) {
  ModelFiles f;
  f.model_file = model_path(name);
  f.weights_file = dir.file(name + "-" + std::to_string(seed) + ".safetensors");
  f.program = dsl::parse_model_file(f.model_file);
  f.weights = grove::random_weights(f.program, grove::parse_sizes(sizes), seed);
  write_safetensors(f.weights_file, f.weights);
  return f;
}

// grove_model_compile, failing the test with grove's message if it fails.
inline ModelPtr compile_c(const std::string &model_file, const char *weights_file,
                          const grove_compile_options *options = nullptr) {
  grove_model *model = nullptr;
  grove_status status = grove_model_compile(model_file.c_str(), weights_file, options, &model);
  EXPECT_EQ(status, GROVE_OK) << grove_last_error();
  return ModelPtr(model);
}

// The C++ JIT on the same files: the independent side of the comparison.
inline cpu::CompiledModel compile_cpp(const ModelFiles &f) {
  cpu::CompileOptions options;
  options.weights_file = f.weights_file;
  return cpu::CompiledModel::compile(f.program, read_safetensors(f.weights_file), options);
}

// Renumbers a tree in post-order (left subtree, right subtree, node), so that a node's children
// have increasing ids, as the parent form orders them. Iterative: SST trees are deep enough.
inline Tree post_order(const Tree &tree) {
  std::vector<int32_t> order, id(tree.size());
  std::vector<std::pair<int32_t, int32_t>> stack{{tree.root, 0}};
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    if (next < tree.num_children(node)) {
      int32_t child = tree.child(node, next++);
      stack.push_back({child, 0});
    } else {
      id[node] = int32_t(order.size());
      order.push_back(node);
      stack.pop_back();
    }
  }
  Tree out;
  out.child_begin.push_back(0);
  for (int32_t node : order) {
    out.token.push_back(tree.token[node]);
    for (int32_t k = 0; k < tree.num_children(node); ++k) out.children.push_back(id[tree.child(node, k)]);
    out.child_begin.push_back(int32_t(out.children.size()));
  }
  out.root = int32_t(order.size()) - 1;
  return out;
}

// A batch of trees in both of the C API's forms, with global ids.
struct FlatTrees {
  std::vector<int64_t> node_begin{0}, child_begin{0};
  std::vector<int32_t> parent, children, token;

  grove_trees parents() const {
    return {int64_t(node_begin.size()) - 1, node_begin.data(), parent.data(), nullptr, nullptr, token.data()};
  }
  grove_trees csr() const {
    return {int64_t(node_begin.size()) - 1,
            node_begin.data(),
            nullptr,
            child_begin.data(),
            children.data(),
            token.data()};
  }
};

// `trees` must be in post-order (post_order above).
inline FlatTrees flatten(std::span<const Tree> trees) {
  FlatTrees f;
  for (const Tree &t : trees) {
    int32_t base = int32_t(f.token.size());
    f.parent.resize(base + t.size(), -1);
    for (int32_t v = 0; v < t.size(); ++v) {
      f.token.push_back(t.token[v]);
      for (int32_t k = 0; k < t.num_children(v); ++k) {
        f.children.push_back(base + t.child(v, k));
        f.parent[base + t.child(v, k)] = base + v;
      }
      f.child_begin.push_back(int64_t(f.children.size()));
    }
    f.node_begin.push_back(int64_t(f.token.size()));
  }
  return f;
}

// A batch of DAGs as the C API takes them.
struct FlatDags {
  std::vector<int64_t> node_begin{0}, pred_begin{0};
  std::vector<int32_t> preds, token;

  grove_dags dags(grove_dag_outputs outputs = GROVE_OUTPUTS_SINKS) const {
    return {int64_t(node_begin.size()) - 1,
            node_begin.data(),
            pred_begin.data(),
            preds.data(),
            token.data(),
            outputs};
  }
};

inline FlatDags flatten(std::span<const Dag> dags) {
  FlatDags f;
  for (const Dag &d : dags) {
    int32_t base = int32_t(f.token.size());
    for (int32_t v = 0; v < d.size(); ++v) {
      f.token.push_back(d.token[v]);
      for (int32_t s = 0; s < d.num_preds(v); ++s)
        f.preds.push_back(d.pred(v, s) == Dag::kEmptySlot ? Dag::kEmptySlot : base + d.pred(v, s));
      f.pred_begin.push_back(int64_t(f.preds.size()));
    }
    f.node_begin.push_back(int64_t(f.token.size()));
  }
  return f;
}

// Runs trees through the C API into a vector, failing the test on an error.
inline std::vector<float> run_c(const grove_model *model, const grove_trees &trees, int64_t batch = 0) {
  grove_model_info info;
  EXPECT_EQ(grove_model_get_info(model, &info), GROVE_OK) << grove_last_error();
  std::vector<float> out(trees.num_trees * info.output_elements);
  int64_t rows = -1;
  grove_run_options options{batch};
  EXPECT_EQ(grove_model_run_trees(model, &trees, &options, out.data(), int64_t(out.size()), &rows), GROVE_OK)
      << grove_last_error();
  EXPECT_EQ(rows, trees.num_trees);
  return out;
}

}  // namespace grove::capi_test
