#pragma once
// The model language's printer: a syntax tree (AST.h) as model text (docs/DSL.md).
// Assumes names the lexer reads as identifiers (Lexer.h: is_identifier). Guarantees text that
// parse() reads back as the same tree, locations aside: parentheses where precedence needs them,
// numbers in the shortest form that reads back as the same double.

#include <string>

#include "frontend/dsl/AST.h"

namespace grove::dsl {

std::string print_model(const ModelAst &model);

// One expression, as it would appear on the right of a statement.
std::string print_expr(const ExprAst &e);

}  // namespace grove::dsl
