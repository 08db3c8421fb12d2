// Fuzzes the Relay text format reader and, on what it accepts, type inference: both must end in a
// result or a UserError (an unknown op, a type error), never a crash or an InternalError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "fuzz/FuzzCommon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    const grove::relay::Module module = grove::relay::parse_module(text, "fuzz.relay");
    for (const auto &[name, function] : module.functions())
      grove::fuzz::require(function->span.defined(), "every parsed function has a source location");
    grove::relay::infer_types(module);
  });
}
