#pragma once
// The model language front end: source text → checked ILIR Program.
// Errors are UserErrors that read `file:line:col: error: ...`, show the line with a caret under
// the column, and say what was expected.

#include <string>

#include "frontend/dsl/AST.h"
#include "ilir/IR.h"

namespace grove::dsl {

// Parses, checks shapes and lowers one model file's text to ILIR. `filename` is used in messages.
ilir::Program parse_model(const std::string &source, const std::string &filename);

// Checks shapes and lowers a syntax tree built by a program rather than parsed (the Relay back end's
// translation of recursive functions); its Locs are places in `source`, which messages quote.
ilir::Program lower_model(ModelAst model, const SourceFile &source);

// Reads `path` (a UserError if it cannot be read) and parses it.
ilir::Program parse_model_file(const std::string &path);

}  // namespace grove::dsl
