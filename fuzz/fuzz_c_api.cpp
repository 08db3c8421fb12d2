// Fuzzes the C API's input arrays (include/grove/grove.h, backends/runtime/CApi.cpp): a caller's
// flat arrays are the API's "file format". A TreeLSTM descriptor (the ABI of a real `grove compile`
// library, embedded below) with a stand-in entry function is opened with grove_model_open_compiled;
// each input is read as a batch of trees — the first byte picks the parent or the child (CSR) form,
// then int32 words fill num_trees, node_begin, the structure arrays and the tokens, all of
// attacker-chosen values. The call must return GROVE_OK (writing rows) or a misuse/user status with
// a message; GROVE_ERROR_INTERNAL, a crash or a sanitizer report is a finding.
//
// A first byte with bit 7 set fuzzes grove_relay_run instead (relay_input below): a small Relay
// program taking a list of trees, tensors and a list of tensors gets attacker-chosen tensor descriptors
// (count, dtype, rank, dimensions, bytes) and PTB text, with the same rules, on the VM or the interpreter.
#include <grove/grove.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/FuzzCommon.h"

namespace {

constexpr char kAbi[] = R"({"grove_abi": 1, "model": "TreeLSTM", "structure": "binary tree",
 "function": "grove_model", "target": "host", "schedule": "", "sizes": {"D": 2, "H": 2, "V": 8},
 "min_children": 2, "max_children": 2, "predecessor_slots": 0, "vocab_size": 8,
 "params": [{"name": "emb", "shape": [8, 2]}],
 "packed": [], "states": [{"name": "h", "row_elements": 2}],
 "args": [{"kind": "param", "name": "p_emb", "index": 0}, {"kind": "state", "name": "s_h", "index": 0},
          {"kind": "level_begin", "name": "level_begin", "index": -1},
          {"kind": "child_begin", "name": "child_begin", "index": -1},
          {"kind": "children", "name": "children", "index": -1}, {"kind": "token", "name": "token", "index": -1},
          {"kind": "num_levels", "name": "num_levels", "index": -1}],
 "output": 0, "output_shape": [2], "hoist": true, "unroll": 1, "unroll_team": 0, "threads": 0})";

int entry(void **) { return 0; }
int set_num_threads(int n) { return n; }

grove_model *model() {
  static grove_model *m = [] {
    static const grove_compiled_model compiled{1, "TreeLSTM", kAbi, &entry, &set_num_threads, nullptr, 0};
    grove_model *opened = nullptr;
    if (grove_model_open_compiled(&compiled, &opened) != GROVE_OK)
      grove::fuzz::finding(std::string("cannot open the descriptor: ") + grove_last_error());
    static float emb[16] = {};
    static const int64_t shape[] = {8, 2};
    grove_tensor_view view{"emb", emb, shape, 2};
    if (grove_model_bind_weights(opened, &view, 1, 0) != GROVE_OK)
      grove::fuzz::finding(std::string("cannot bind: ") + grove_last_error());
    return opened;
  }();
  return m;
}

// Reads int32 words from the input, zero past its end.
struct Words {
  const uint8_t *data;
  size_t size, at = 0;
  int32_t next() {
    int32_t v = 0;
    if (at + 4 <= size) std::memcpy(&v, data + at, 4);
    at += 4;
    return v;
  }
};

// @main(%trees: List[Tree[int32]], %x: Tensor[(?, 3), float32], %i: Tensor[(2), float64],
//       %xs: List[Tensor[(2), float32]]), the list given as one stacked tensor.
constexpr char kRelayProgram[] = R"(#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]), }
def @main(%trees: List[Tree[int32]], %x: Tensor[(?, 3), float32], %i: Tensor[(2), float64],
          %xs: List[Tensor[(2), float32]]) {
  (nn.relu(%x), add(%i, %i))
}
)";

const grove_relay *relay_program(bool interpreter) {
  static const grove_relay *programs[2] = {};
  const grove_relay *&p = programs[interpreter];
  if (!p) {
    grove_relay_options options{};
    options.threads = 1;
    options.executor = interpreter ? GROVE_RELAY_INTERPRETER : GROVE_RELAY_VM;
    grove_relay *opened = nullptr;
    if (grove_relay_open_text(kRelayProgram, &options, &opened) != GROVE_OK)
      grove::fuzz::finding(std::string("cannot open the Relay program: ") + grove_last_error());
    p = opened;
  }
  return p;
}

// Byte 0: bit 0 the interpreter, bits 1-2 the input count, bit 3 whether PTB text follows. Then per
// input the words dtype (any value), rank (-6 to 4) and its dimensions (-8 to 6), then its data
// (raw bytes, zero past the end); the rest is the PTB text. The buffers always hold the
// elements their shapes say: a C caller's promise, not something the API can check.
int relay_input(const uint8_t *data, size_t size) {
  const grove_relay *program = relay_program(data[0] & 1);
  Words in{data + 1, size - 1};
  const size_t count = (data[0] >> 1) & 3;
  std::vector<grove_tensor> inputs(count);
  std::vector<std::vector<int64_t>> shapes(count);
  std::vector<std::vector<uint8_t>> buffers(count);
  for (size_t k = 0; k < count; ++k) {
    int32_t dtype = in.next();
    std::memcpy(&inputs[k].dtype, &dtype, sizeof dtype);  // any int, as a C caller may store
    inputs[k].rank = in.next() % 6 - 1;
    int64_t elements = 1;
    for (int32_t d = 0; d < std::max(inputs[k].rank, 0); ++d) {
      shapes[k].push_back(int64_t(in.next() % 8) - 1);
      elements *= std::max<int64_t>(shapes[k].back(), 0);
    }
    buffers[k].assign(size_t(elements) * 8 + 1, 0);
    const size_t bytes = std::min(in.at < in.size ? in.size - in.at : 0, buffers[k].size());
    if (bytes > 0) std::memcpy(buffers[k].data(), in.data + in.at, bytes);
    in.at += bytes;
    inputs[k].shape = shapes[k].empty() ? nullptr : shapes[k].data();
    inputs[k].data = buffers[k].data();
  }
  std::string trees;
  if (data[0] & 8)
    for (size_t at = 1 + std::min(in.at, size - 1); at < size; ++at)
      if (data[at] != 0) trees.push_back(char(data[at]));
  auto *sentinel = reinterpret_cast<grove_relay_result *>(0x1);
  grove_relay_result *result = sentinel;
  grove_status status = grove_relay_run(program, inputs.data(), inputs.size(),
                                        (data[0] & 8) ? trees.c_str() : nullptr, &result);
  if (status == GROVE_OK) {
    int32_t tensors = 0;
    grove::fuzz::require(grove_relay_result_count(result, &tensors) == GROVE_OK && tensors == 2,
                         "the tuple's two tensors");
    grove_relay_result_free(result);
  } else {
    grove::fuzz::require(status == GROVE_ERROR_INVALID_ARGUMENT || status == GROVE_ERROR_USER,
                         (std::string("a misuse or user error, not: ") + grove_last_error()).c_str());
    grove::fuzz::require(std::strlen(grove_last_error()) > 0, "a failure has a message");
    grove::fuzz::require(result == sentinel, "a failed run writes no result");
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 0x80) return relay_input(data, size);
  grove_model *m = model();
  Words in{data + 1, size - 1};
  bool csr = data[0] & 1;
  int64_t num_trees = in.next() % 64;  // may be negative: a misuse the API must name
  std::vector<int64_t> node_begin;
  for (int64_t i = 0; i <= std::max<int64_t>(num_trees, 0); i++) node_begin.push_back(in.next() % 256);
  int64_t nodes = std::max<int64_t>(node_begin.back(), 0);
  std::vector<int32_t> parent, children, token;
  std::vector<int64_t> child_begin;
  for (int64_t i = 0; i < nodes; i++) token.push_back(in.next());
  if (csr) {
    for (int64_t i = 0; i <= nodes; i++) child_begin.push_back(in.next() % 512);
    int64_t count = std::max<int64_t>(child_begin.back(), 0);
    for (int64_t i = 0; i < count; i++) children.push_back(in.next());
  } else {
    for (int64_t i = 0; i < nodes; i++) parent.push_back(in.next());
  }
  grove_trees trees{};
  trees.num_trees = num_trees;
  trees.node_begin = node_begin.data();
  trees.token = token.data();
  if (csr) {
    trees.child_begin = child_begin.data();
    trees.children = children.data();
  } else {
    trees.parent = parent.data();
  }
  int64_t capacity = std::max<int64_t>(num_trees, 0) * 2;
  std::vector<float> out(capacity, -1.0f);
  int64_t rows = -1;
  grove_status status = grove_model_run_trees(m, &trees, nullptr, out.data(), capacity, &rows);
  if (status == GROVE_OK) {
    grove::fuzz::require(rows == num_trees, "one row per tree");
  } else {
    grove::fuzz::require(status == GROVE_ERROR_INVALID_ARGUMENT || status == GROVE_ERROR_USER,
                         (std::string("a misuse or user error, not: ") + grove_last_error()).c_str());
    grove::fuzz::require(std::strlen(grove_last_error()) > 0, "a failure has a message");
    for (float v : out) grove::fuzz::require(v == -1.0f, "a failed call writes no output");
  }
  return 0;
}
