#pragma once
// Reading and writing weights in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// with offsets relative to the data section, then the data section. The Weights functions read and
// write F32 only; the generic ones below carry any dtype as raw bytes (the Relay layer's NDArrays).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/Tensor.h"

namespace grove {

// The largest header read_safetensors accepts (bytes).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Reads every tensor of a safetensors file. Hostile files are rejected with a UserError naming the
// file and the tensor; nothing is allocated beyond what the file actually holds.
Weights read_safetensors(const std::string &path);

// The same on the bytes of a whole safetensors file; `name` names it in messages.
Weights read_safetensors_bytes(std::string_view bytes, const std::string &name);

// Writes `weights` (tensors in name order, "__metadata__" {"producer": "grove"}) to a temporary
// file that is then renamed over `path`, so a failure never leaves a truncated file.
void write_safetensors(const std::string &path, const Weights &weights);

// One tensor of any dtype as the generic reader and writer see it.
struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;  // as the file spells it: "F32", "I64", "BOOL", ...
  std::vector<int64_t> shape;
};
// What the generic reader asks of its caller: `element_size` gives a dtype's bytes per element, or
// throws a UserError naming path and tensor for a dtype the caller does not read; `allocate` returns
// where to put a validated tensor's product(shape) * element_size bytes (null only when that is 0).
struct SafetensorsSink {
  std::function<uint64_t(const SafetensorsTensorInfo &)> element_size;
  std::function<char *(const SafetensorsTensorInfo &)> allocate;
  // Reject tensors whose bytes overlap, so that all tensors together never take more memory than
  // the file (read_safetensors lets them share bytes, which the format does not forbid).
  bool disjoint = false;
};
// Reads every tensor of a safetensors file, with read_safetensors's checks, into `sink`'s buffers.
void read_safetensors_into(const std::string &path, const SafetensorsSink &sink);
// Writes tensors (each with its bytes: product(shape) * element size, row-major, little-endian), in
// the order given, atomically as write_safetensors does.
void write_safetensors_tensors(
    const std::string &path, const std::vector<std::pair<SafetensorsTensorInfo, std::string_view>> &tensors);

}  // namespace grove
