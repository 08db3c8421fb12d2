#pragma once
// What the two model runners (ModelRunner, Executor.h) share, whichever the target: the Executor
// (the CPU's compiled code) and the CUDA device runner (CudaRunner.h) check and gather the weights,
// set the inspectors from the ABI, split the inputs into calls of the batch and count what each call
// did the same way.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Executor.h"
#include "backends/runtime/Inspector.h"
#include "support/Tensor.h"

namespace grove {

// A UserError (naming `file`) unless `weights` hold every parameter of `abi` at its shape and
// nothing else but training state (is_training_state).
void check_weights(const ModelAbi &abi, const Weights &weights, const std::string &file);
void check_weights(const ModelAbi &abi, const std::map<std::string, WeightView> &weights,
                   const std::string &file);

// The parameters' data in abi.params' order (the weights checked).
std::vector<const float *> param_data(const ModelAbi &abi, const Weights &weights);
std::vector<const float *> param_data(const ModelAbi &abi, const std::map<std::string, WeightView> &weights);

// The tree inspector's options for `abi` (arity, vocabulary), numbering the trees from `first_number`.
InspectorOptions inspector_options(const ModelAbi &abi, int64_t first_number);
// The DAG inspector's for `abi` (slots, vocabulary) and a run's options (noun, outputs); each call
// sets first_dag_number.
DagInspectorOptions dag_inspector_options(const ModelAbi &abi, const RunOptions &options);

// Calls fn(begin, end) for each call of `batch` inputs (0: all in one) over `count` inputs.
void for_each_batch(int64_t count, int64_t batch, const std::function<void(int64_t begin, int64_t end)> &fn);

// Adds one call over `batch` to `stats` (if given).
void add_call(RunStats *stats, const LinearizedBatch &batch, double inspector_ms, double compute_ms);

// run_dags' result: `rows` (the output rows of every DAG's outputs, in order) as a tensor.
Tensor output_rows(const ModelAbi &abi, std::vector<float> rows);

}  // namespace grove
