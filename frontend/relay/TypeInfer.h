#pragma once
// Relay type inference: Hindley–Milner-style unification with explicit polymorphism, op type
// relations and unknown dimensions `?` (after TVM's type_infer.cc; the solver is TypeSolver.h).

#include "frontend/relay/IR.h"

namespace grove::relay {

// Infers the type of every expression reachable from the module's functions and writes it to the
// node's checked_type, checking annotations; no hole is left. Throws a UserError at the first type
// error: "file:line:col: type error: <what>: expected <T>, found <U>".
void infer_types(const Module &module);

// The same for one expression in the context of a module (whose globals it may call; its free
// variables need type annotations or uses that determine them). Returns the expression's type.
Type infer_type(const Expr &e, const Module &module);

}  // namespace grove::relay
