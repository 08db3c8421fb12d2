#pragma once
// The model language's checker: names, structure rules and symbolic shapes.
// Assumes a tree from parse(). Guarantees, or throws a UserError at the offending place, that all
// sections are present, every name resolves, each case assigns every state exactly once with its
// declared shape, structure access fits the structure and case, and every operator's shapes agree.
// Fills in the tree's shapes, name resolutions and size variables for ToILIR.

#include "frontend/dsl/AST.h"

namespace grove::dsl {

void check(const SourceFile &source, ModelAst &model);

}  // namespace grove::dsl
