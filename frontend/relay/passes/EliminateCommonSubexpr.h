#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// Merges repeated op calls (same op, same argument nodes or equal scalars, equal attrs), tuples and
// projections into the first one in an enclosing scope (in A-normal form, the later let's variable
// becomes the earlier one's). Never across if branches or match clauses, nor out of a function body.
Module eliminate_common_subexpr(const Module &module);

}  // namespace grove::relay
