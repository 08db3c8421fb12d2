// Fuzzes the vocabulary reader: every token it accepts looks itself up.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasets/Vocab.h"
#include "fuzz/FuzzCommon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    grove::Vocab vocab = grove::Vocab::parse(text, "fuzz-vocab.txt");
    for (int32_t id = 0; id < vocab.size(); ++id)
      grove::fuzz::require(vocab.lookup(vocab.token(id)) == id, "every token looks itself up");
  });
}
