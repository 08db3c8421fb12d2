// Fuzzes the safetensors reader on the bytes of a whole file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/FuzzCommon.h"
#include "support/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    grove::Weights weights = grove::read_safetensors_bytes(bytes, "fuzz.safetensors");
    uint64_t total = 0;
    for (const auto &[name, tensor] : weights) {
      for (int64_t d : tensor.shape) grove::fuzz::require(d >= 0, "dimensions are non-negative");
      grove::fuzz::require(tensor.size() == grove::Tensor::num_elements(tensor.shape),
                           "a tensor holds product(shape) floats");
      total += static_cast<uint64_t>(tensor.size()) * sizeof(float);
    }
    grove::fuzz::require(total <= size, "tensors hold no more bytes than the file");
  });
}
