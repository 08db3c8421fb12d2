// Fuzzes the ONNX importer (frontend/onnx): any bytes must end in a typed Relay module or a
// UserError (a corrupt ModelProto, an unsupported operator, a bad tensor), never a crash, an
// InternalError or another exception; what it accepts must print as Relay text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Printer.h"
#include "fuzz/FuzzCommon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    const grove::relay::Module module = grove::onnx_frontend::import_onnx(bytes, "fuzz.onnx");
    grove::fuzz::require(module.find_function("main") != nullptr, "an imported model has @main");
    grove::fuzz::require(!grove::relay::print_module(module).text.empty(), "an imported model prints");
  });
}
