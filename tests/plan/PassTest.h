#pragma once
// Before/expected checks of single ILIR passes: a pass runs on an input program and its printed
// output is compared with the expected text; on a mismatch all three are printed. The output must
// also verify.

#include <gtest/gtest.h>

#include <string>

#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "ilir/Verifier.h"
#include "support/Error.h"

namespace grove::plan::testing {

inline ilir::Program model(const std::string &text) { return dsl::parse_model(text, "test.grove"); }

inline ilir::Program model_file(const std::string &stem) {
  return dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/" + stem + ".grove");
}

// `pass(input)` printed must be `expected`; returns the pass's output.
template <typename Pass>
ilir::Program check_pass(const char *name, Pass &&pass, const ilir::Program &input,
                         const std::string &expected) {
  ilir::Program actual = pass(input);
  std::string got = ilir::to_string(actual);
  if (got != expected)
    ADD_FAILURE() << name << "\n--- input:\n"
                  << ilir::to_string(input) << "--- expected:\n"
                  << expected << "--- actual:\n"
                  << got;
  try {
    ilir::verify(actual);
  } catch (const InternalError &e) {
    ADD_FAILURE() << name << "'s output does not verify: " << e.what() << "\n" << got;
  }
  return actual;
}

// `pass(input)` must print exactly as `input` does.
template <typename Pass>
void check_unchanged(const char *name, Pass &&pass, const ilir::Program &input) {
  check_pass(name, pass, input, ilir::to_string(input));
}

}  // namespace grove::plan::testing
