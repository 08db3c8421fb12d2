// Fuzzes the reader of TVM's #[metadata] section (frontend/relay/Metadata.h): JSON object graphs and
// base64 NDArrays must end in constants or a UserError, never a crash; what it reads must survive
// a write and a read unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/relay/Metadata.h"
#include "fuzz/FuzzCommon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    const std::vector<grove::relay::NDArray> constants =
        grove::relay::read_tvm_metadata(text, "fuzz.relay:1");
    const std::vector<grove::relay::NDArray> again =
        grove::relay::read_tvm_metadata(grove::relay::write_tvm_metadata(constants), "fuzz.relay:1");
    grove::fuzz::require(again.size() == constants.size(), "a written section reads back as many constants");
    for (size_t i = 0; i < again.size(); ++i)
      grove::fuzz::require(again[i].bitwise_equal(constants[i]), "a written constant reads back unchanged");
  });
}
