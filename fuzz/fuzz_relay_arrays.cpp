// Fuzzes the Relay layer's tensor readers of every dtype (frontend/relay/NDArrayIO.h): each input is
// read as a .npy array and as a safetensors file (which is also the constants sidecar's format).
// The readers take paths, so each input goes through a file of this process.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "frontend/relay/NDArrayIO.h"
#include "fuzz/FuzzCommon.h"

namespace {

// A file in memory-backed /dev/shm where there is one, named after this process.
const std::string &input_path() {
  static const std::string path = [] {
    std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                    : std::filesystem::temp_directory_path();
    return (dir / ("grove-fuzz-relay-arrays-" + std::to_string(::getpid()))).string();
  }();
  return path;
}

// What every array read must satisfy: known dimensions, and no more bytes than the file holds.
void check(const grove::relay::NDArray &a, size_t file_size) {
  for (int64_t d : a.shape()) grove::fuzz::require(d >= 0, "dimensions are non-negative");
  grove::fuzz::require(a.nbytes() == static_cast<size_t>(a.size()) * grove::relay::dtype_bytes(a.dtype()),
                       "an array holds product(shape) elements");
  grove::fuzz::require(a.nbytes() <= file_size, "an array holds no more bytes than the file");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = input_path();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) grove::fuzz::finding("cannot write " + path);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) grove::fuzz::finding("cannot write " + path);
  std::fclose(f);
  grove::fuzz::run_reader([&] { check(grove::relay::read_npy_array(path), size); });
  int result = grove::fuzz::run_reader([&] {
    size_t total = 0;
    for (const auto &[name, array] : grove::relay::read_safetensors_arrays(path)) {
      check(array, size);
      total += array.nbytes();
    }
    grove::fuzz::require(total <= size, "the arrays hold no more bytes than the file");
  });
  std::remove(path.c_str());
  return result;
}
