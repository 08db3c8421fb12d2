// Fuzzes the model language front end: lexer, parser, shape checker and lowering to ILIR.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/dsl/Frontend.h"
#include "fuzz/FuzzCommon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    grove::ilir::Program program = grove::dsl::parse_model(text, "fuzz.grove");
    grove::fuzz::require(!program.name.empty(), "a parsed model has a name");
  });
}
