// Fuzzes the GloVe vector reader (training/Glove.h): a hostile file ends in a table or a UserError,
// and every value of the table is finite — read from the file or the ±0.05 initialization.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasets/Vocab.h"
#include "fuzz/FuzzCommon.h"
#include "training/Glove.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  static const grove::Vocab vocab = grove::Vocab::parse("the\ngood\nmovie\n.\n<unk>\n", "fuzz-vocab.txt");
  return grove::fuzz::run_reader([&] {
    grove::Tensor table({vocab.size(), 3});
    grove::training::GloveStats stats = grove::training::parse_glove(text, "fuzz-glove.txt", vocab, 1, table);
    grove::fuzz::require(stats.found <= stats.lines && stats.found <= vocab.size(),
                         "found words are counted once");
    for (float v : table.data) grove::fuzz::require(std::isfinite(v), "every value is finite");
  });
}
