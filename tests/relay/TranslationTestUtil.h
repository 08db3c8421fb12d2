#pragma once
// The translation of recursive Relay functions (backends/relay/recursive/RecursiveFunctions.h) to a grove
// model is a syntax tree, printed only for people (`grove relay dump --stage model`, whose goldens are in
// tests/golden): the printed text must read back as the same model.

#include <string>
#include <utility>

#include "backends/relay/recursive/RecursiveFunctions.h"
#include "frontend/dsl/AST.h"
#include "frontend/dsl/Frontend.h"
#include "frontend/dsl/Printer.h"
#include "ilir/IRPrinter.h"

namespace grove::relay::testing {

// A translated model's ILIR lowered from its tree and from its printed text parsed back.
struct LoweredTwice {
  std::string text, from_tree, from_text;
};

inline LoweredTwice lower_twice(const Module &m, const std::string &name, dsl::ModelAst model) {
  LoweredTwice out;
  out.text = dsl::print_model(model);
  out.from_text = ilir::to_string(dsl::parse_model(out.text, "@" + name));
  out.from_tree = ilir::to_string(lower_translated_model(m, name, std::move(model)));
  return out;
}

}  // namespace grove::relay::testing
