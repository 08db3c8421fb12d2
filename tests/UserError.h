#pragma once
// The one helper every suite's error tests share: the message of the UserError a call throws.

#include <gtest/gtest.h>

#include <string>

#include "support/Error.h"

namespace grove::testing {

// The message of the UserError `f` throws. When `f` throws none, the test fails here ("expected a
// UserError") and the result is ""; an InternalError or any other exception propagates and fails
// the test too. A call that must succeed is EXPECT_NO_THROW / ASSERT_NO_THROW, not this.
// (GCC's and Clang's __builtin_FILE/__builtin_LINE name the caller's line in that failure.)
template <typename F>
std::string user_error_of(F &&f, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  ADD_FAILURE_AT(file, line) << "expected a UserError, but nothing was thrown";
  return "";
}

// The message of the UserError `f` throws, or "" when it throws none: for helpers whose callers
// expect either (a success compared with a failure, as the input streams' chunked reads against the
// whole read, or the valid templates beside the broken ones).
template <typename F>
std::string user_error_or_empty(F &&f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

}  // namespace grove::testing
