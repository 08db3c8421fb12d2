#pragma once
// A tree model compiled for training on the CPU: the forward program that keeps what the backward
// reads, and the backward program derived from the model's ILIR (plan/Differentiate.h), both planned
// by plan_levels and emitted by the CPU emitter like any model.
//
//   ilir::Program program = dsl::parse_model_file("models/treelstm.grove");
//   auto model = cpu::TrainableModel::compile(program, weights, {});
//   const training::NodeStates &states = model->forward(trees);
//   training::Gradients grads = model->backward(d_rows);   // d(loss)/d(every node's h)

#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/Dag.h"
#include "ilir/IR.h"
#include "training/GradientModel.h"

namespace grove::cpu {

class TrainableModel : public training::GradientModel {
 public:
  // Checks `weights` against the program's params (binding the size variables), derives the
  // backward and JIT-compiles both. UserError for weights that do not fit, or for a model whose
  // backward grove cannot derive yet (naming the Compute).
  static std::unique_ptr<TrainableModel> compile(const ilir::Program &program, const Weights &weights,
                                                 const CompileOptions &options);

  const std::vector<training::ParamInfo> &params() const override;
  const std::string &embedding() const override;
  void set_weights(const Weights &weights) override;
  const training::NodeStates &forward(std::span<const Tree> trees) override;
  training::Gradients backward(std::span<const float> d_rows) override;
  // The next backward writes its weight gradients into these tensors' buffers.
  void recycle(training::Gradients &&spent) override;
  int threads() const override;

  // A dag or sequence model over DAGs (sequences as chains, chain_dag): every node's output
  // state, DAG by DAG in each DAG's own numbering (NodeStates::tree_offset holds the DAGs'
  // offsets); backward() then takes d(loss)/d(h) for those rows. The embedding's gradient covers
  // every node's token.
  const training::NodeStates &forward_dags(std::span<const Dag> dags);

  // The backward's ILIR and its level plan (`grove dump --training backward` prints the same).
  std::string backward_ilir() const;
  std::string backward_plan() const;

  // Where the time went, summed over every call since compile(): the inspector (linearizing and
  // the parent arrays), the forward's and the backward's compiled code, the rest of the runtime's
  // work around them (gathering rows, the embedding's row sums), and set_weights (transposing and
  // packing).
  struct Stats {
    int64_t forwards = 0, backwards = 0;
    double inspector_ms = 0, forward_ms = 0, backward_ms = 0, runtime_ms = 0, set_weights_ms = 0;
  };
  const Stats &stats() const;

  ~TrainableModel() override;

 private:
  struct Impl;
  explicit TrainableModel(std::unique_ptr<Impl> impl);
  const training::NodeStates &run_forward(std::vector<int64_t> offsets);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cpu
