// Fuzzes the .npy reader. read_npy reads a path, so each input goes through a file of this process.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "fuzz/FuzzCommon.h"
#include "support/Npy.h"

namespace {

// A file in memory-backed /dev/shm where there is one, named after this process.
const std::string &input_path() {
  static const std::string path = [] {
    std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                    : std::filesystem::temp_directory_path();
    return (dir / ("grove-fuzz-npy-" + std::to_string(::getpid()) + ".npy")).string();
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = input_path();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) grove::fuzz::finding("cannot write " + path);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) grove::fuzz::finding("cannot write " + path);
  std::fclose(f);
  int result = grove::fuzz::run_reader([&] {
    grove::Tensor t = grove::read_npy(path);
    for (int64_t d : t.shape) grove::fuzz::require(d >= 0, "dimensions are non-negative");
    grove::fuzz::require(t.size() == grove::Tensor::num_elements(t.shape),
                         "a tensor holds product(shape) floats");
    grove::fuzz::require(static_cast<uint64_t>(t.size()) * sizeof(float) <= size,
                         "a tensor holds no more bytes than the file");
  });
  std::remove(path.c_str());
  return result;
}
