#pragma once
// Reading and writing weights in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// with offsets relative to the data section, then the data section. grove reads and writes F32 only.

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/runtime/Tensor.h"

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

}  // namespace grove
