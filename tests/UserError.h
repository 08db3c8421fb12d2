#pragma once
// The one helper every suite's error tests share: the message of the UserError a call throws.

#include <string>

#include "support/Error.h"

namespace grove::testing {

// The message of the UserError `f` throws, or "" when it throws none (an InternalError or any
// other exception propagates and fails the test).
template <typename F>
std::string user_error_of(F &&f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

}  // namespace grove::testing
