#pragma once
// The model language's parser: tokens → ModelAst (grammar in docs/DSL.md).
// Assumes the tokens of `source` (ending in End); guarantees a syntactically valid tree in which
// single-occurrence sections (model, structure, leaf, internal, output, schedule) appear at most
// once and no schedule key is set twice, or a UserError at the first token that does not fit.

#include <vector>

#include "frontend/dsl/AST.h"
#include "frontend/dsl/Lexer.h"

namespace grove::dsl {

ModelAst parse(const SourceFile &source, const std::vector<Token> &tokens);

}  // namespace grove::dsl
