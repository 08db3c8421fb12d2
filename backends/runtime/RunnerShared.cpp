#include "backends/runtime/RunnerShared.h"

#include <algorithm>
#include <utility>

#include "backends/runtime/BindWeights.h"
#include "backends/runtime/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = runtime_messages;

namespace {

std::string param_names(const ModelAbi &abi) {
  std::string s;
  for (const ModelAbi::Param &p : abi.params) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

template <typename Map>
void check_map(const ModelAbi &abi, const Map &weights, const std::string &file, auto shape_of) {
  for (const ModelAbi::Param &p : abi.params) {
    auto it = weights.find(p.name);
    if (it == weights.end()) user_error(msg::kWeightsMissing, file, p.name, shape_string(p.shape));
    if (shape_of(it->second) != p.shape)
      user_error(msg::kWeightsShape, file, p.name, shape_string(shape_of(it->second)), shape_string(p.shape));
  }
  for (const auto &[name, value] : weights) {
    if (is_training_state(name)) continue;
    bool known = false;
    for (const ModelAbi::Param &p : abi.params) known |= p.name == name;
    if (!known) user_error(msg::kWeightsExtra, file, name, abi.model, param_names(abi));
  }
}

}  // namespace

void check_weights(const ModelAbi &abi, const Weights &weights, const std::string &file) {
  check_map(abi, weights, file, [](const Tensor &t) { return t.shape; });
}

void check_weights(const ModelAbi &abi, const std::map<std::string, WeightView> &weights,
                   const std::string &file) {
  check_map(abi, weights, file, [](const WeightView &v) { return v.shape; });
}

std::vector<const float *> param_data(const ModelAbi &abi, const Weights &weights) {
  std::vector<const float *> data;
  for (const ModelAbi::Param &p : abi.params) data.push_back(weights.at(p.name).data.data());
  return data;
}

std::vector<const float *> param_data(const ModelAbi &abi, const std::map<std::string, WeightView> &weights) {
  std::vector<const float *> data;
  for (const ModelAbi::Param &p : abi.params) data.push_back(weights.at(p.name).data);
  return data;
}

InspectorOptions inspector_options(const ModelAbi &abi, int64_t first_number) {
  InspectorOptions options;
  options.arity = {abi.min_children, abi.max_children};
  options.vocab_size = abi.vocab_size;
  options.first_tree_number = first_number;
  return options;
}

DagInspectorOptions dag_inspector_options(const ModelAbi &abi, const RunOptions &options) {
  DagInspectorOptions inspector;
  inspector.slots = abi.predecessor_slots;
  inspector.vocab_size = abi.vocab_size;
  inspector.noun = options.noun;
  inspector.outputs = options.outputs;
  return inspector;
}

void for_each_batch(int64_t count, int64_t batch, const std::function<void(int64_t begin, int64_t end)> &fn) {
  if (batch == 0) batch = count;
  for (int64_t begin = 0; begin < count; begin += batch) fn(begin, std::min<int64_t>(begin + batch, count));
}

void add_call(RunStats *stats, const LinearizedBatch &batch, double inspector_ms, double compute_ms) {
  if (!stats) return;
  stats->nodes += batch.num_nodes;
  stats->levels += batch.num_levels;
  stats->calls += 1;
  stats->inspector_ms += inspector_ms;
  stats->compute_ms += compute_ms;
}

Tensor output_rows(const ModelAbi &abi, std::vector<float> rows) {
  std::vector<int64_t> shape{int64_t(rows.size()) / abi.output_elements()};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  result.data = std::move(rows);
  return result;
}

}  // namespace grove
