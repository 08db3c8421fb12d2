// Fuzzes the model ABI reader (abi/ModelAbi.h): the description a library written by
// `grove compile` carries, read when the library is opened. An accepted description is then run
// by the executor over two small trees (or DAGs) with zero weights, calling a stand-in for the
// compiled code that checks every argument against the description: the extents the executor
// passes must be exactly what the description promises the code, and the stand-in writes every
// state element (AddressSanitizer sees a short buffer). Descriptions whose tensors would take more
// than a few megabytes are skipped after reading.
#include <HalideBuffer.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "abi/ModelAbi.h"
#include "backends/runtime/Executor.h"
#include "fuzz/FuzzCommon.h"

namespace {

const grove::ModelAbi *current = nullptr;

int64_t extent(void *arg) { return static_cast<halide_buffer_t *>(arg)->dim[0].extent; }

// The stand-in for the compiled entry function.
int entry(void **args) {
  using Kind = grove::ModelAbi::ArgKind;
  const grove::ModelAbi &abi = *current;
  int64_t rows = -1;
  for (size_t i = 0; i < abi.args.size(); i++) {
    const grove::ModelAbi::Arg &a = abi.args[i];
    grove::fuzz::require(args[i] != nullptr, "every argument is passed");
    if (a.kind == Kind::Param)
      grove::fuzz::require(extent(args[i]) == grove::Tensor::num_elements(abi.params[a.index].shape),
                           "a param buffer holds its shape's elements");
    if (a.kind == Kind::Packed)
      grove::fuzz::require(extent(args[i]) == abi.packed[a.index].size(), "a packed buffer holds its panels");
    if (a.kind == Kind::State) {
      auto *b = static_cast<halide_buffer_t *>(args[i]);
      int64_t n = b->dim[0].extent, row = abi.states[a.index].row_elements;
      grove::fuzz::require(n % row == 0, "a state holds whole rows");
      grove::fuzz::require(rows < 0 || rows == n / row, "every state has one row per node");
      rows = n / row;
      float *data = reinterpret_cast<float *>(b->host);
      for (int64_t k = 0; k < n; k++) data[k] = 1.0f;
    }
  }
  return 0;
}

int set_num_threads(int n) { return n; }

constexpr int64_t kMaxElements = 1 << 20;

bool small(const grove::ModelAbi &abi) {
  int64_t total = 0;
  for (const auto &p : abi.params) {
    for (int64_t d : p.shape)
      if (d > kMaxElements) return false;
    total += grove::Tensor::num_elements(p.shape);
  }
  for (const auto &w : abi.packed) {
    if (w.cols > kMaxElements || w.rows > kMaxElements || w.panel > kMaxElements) return false;
    total += w.size();
  }
  for (const auto &s : abi.states) total += s.row_elements * 16;
  return total <= kMaxElements && abi.unroll_team <= 4 && abi.threads <= 4 && abi.unroll <= 8;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    grove::ModelAbi abi = grove::model_abi_from_json(text, "fuzz.json");
    if (!small(abi)) return;
    current = &abi;
    grove::Executor executor(abi, {&entry, &set_num_threads});
    grove::Weights weights;
    for (const auto &p : abi.params) weights.emplace(p.name, grove::Tensor(p.shape));
    executor.bind(std::move(weights), "fuzz.safetensors");
    grove::Tensor out;
    if (abi.runs_dags()) {
      grove::Dag dag;
      std::vector<int32_t> slots(abi.predecessor_slots, grove::Dag::kEmptySlot);
      dag.token = {0};
      dag.pred_begin = {0, abi.predecessor_slots};
      dag.preds = slots;
      std::vector<grove::Dag> dags{dag, dag};
      out = executor.run_dags(dags, {});
    } else {
      grove::Tree leaf;  // a one-leaf tree: arity rules do not apply, the vocabulary does
      leaf.token = {0};
      leaf.child_begin = {0, 0};
      std::vector<grove::Tree> trees{leaf, leaf};
      out = executor.run(trees, {});
    }
    grove::fuzz::require(out.size() == 2 * abi.output_elements(), "one output row per input");
    for (float v : out.data) grove::fuzz::require(v == 1.0f, "the output rows are the state's rows");
  });
}
