#pragma once
// What every fuzz target shares: a hostile input must end in a result or in a grove::UserError.
// Anything else — an InternalError, another exception, a crash, a sanitizer report, a result that
// breaks the reader's documented guarantees — is a finding, reported by aborting.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "support/Error.h"

namespace grove::fuzz {

// Aborts with `what`, so that libFuzzer saves the input as a crash.
[[noreturn]] inline void finding(const std::string &what) {
  std::fprintf(stderr, "grove fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Checks a reader's guarantee about its result.
inline void require(bool ok, const char *what) {
  if (!ok) finding(std::string("broken guarantee: ") + what);
}

// Runs `read` on one input: a UserError is an expected outcome; any other exception is a finding.
template <typename Read>
int run_reader(Read &&read) {
  try {
    read();
  } catch (const grove::UserError &) {
    return 0;
  } catch (const grove::InternalError &e) {
    finding(std::string("InternalError: ") + e.what());
  } catch (const std::exception &e) {
    finding(std::string("unexpected exception: ") + e.what());
  } catch (...) {
    finding("an exception that is not a std::exception");
  }
  return 0;
}

}  // namespace grove::fuzz
