#pragma once
// The ILIR printer: the text `grove dump --stage ilir` shows and golden tests check.

#include <string>

#include "ilir/IR.h"

namespace grove::ilir {

std::string to_string(const Expr &e);
std::string to_string(const Program &p);

}  // namespace grove::ilir
