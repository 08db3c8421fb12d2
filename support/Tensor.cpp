#include "support/Tensor.h"

#include <fmt/format.h>

namespace grove {

std::string shape_string(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace grove
