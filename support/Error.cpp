#include "support/Error.h"

namespace grove {

void internal_error(const char *file, int line, const std::string &message) {
  throw InternalError(fmt::format("internal error at {}:{}: {}", file, line, message));
}

}  // namespace grove
