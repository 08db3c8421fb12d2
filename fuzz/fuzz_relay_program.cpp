// Fuzzes the saved-program reader (backends/relay/byoc/SavedProgram.h): `grove relay run DIR` reads
// DIR/manifest.json and checks it against DIR/module.relay. Once per process, a small module
// partitioned for dnnl is built into a directory of this process (dnnl saves no artifact, so no C
// compiler is needed); each input then replaces its manifest.json and the program is loaded. A
// UserError is the expected answer to a bad manifest; a load that succeeds must have found the
// module's one external function.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backends/relay/byoc/SavedProgram.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "fuzz/FuzzCommon.h"

namespace {

constexpr char kModule[] = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) -> Tensor[(2, 4), float32] {
  nn.relu(nn.bias_add(nn.dense(%x, %w), %b))
}
)";

// Kept for the exit handler, which runs after function-local statics are destroyed.
const std::string *removed_at_exit = nullptr;

// The program directory, built on first use in memory-backed /dev/shm where there is one.
const std::string &program_dir() {
  static const std::string dir = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                     : std::filesystem::temp_directory_path();
    std::string path = (base / ("grove-fuzz-relay-program-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(path);
    grove::relay::Module m = grove::relay::parse_module(kModule, "fuzz.relay");
    grove::relay::infer_types(m);
    grove::relay::build_program(m, {"dnnl"}, path, {});
    removed_at_exit = new std::string(path);
    std::atexit([] { std::filesystem::remove_all(*removed_at_exit); });
    return path;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string manifest = program_dir() + "/manifest.json";
  FILE *f = std::fopen(manifest.c_str(), "wb");
  if (f == nullptr) grove::fuzz::finding("cannot write " + manifest);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) grove::fuzz::finding("cannot write " + manifest);
  std::fclose(f);
  return grove::fuzz::run_reader([&] {
    grove::relay::SavedProgram p = grove::relay::load_program(program_dir());
    grove::fuzz::require(p.kernels.size() <= 1,
                         "a loaded program has at most the module's one external kernel");
  });
}
