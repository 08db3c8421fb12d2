#pragma once
// Structural equality and hashing of Relay modules, expressions and types, as TVM's
// tvm.ir.structural_equal / structural_hash: alpha-equivalence up to the binding of variables.
//
//   * Vars are equal when bound at corresponding binders (function parameters, let variables, pattern
//     variables); type variables likewise (Function and FuncType type parameters, ADT parameters).
//     A binder's pairing holds over its scope only, so a let or function shared in graph form equals
//     separate copies of it. Free variables: with map_free_vars they are paired one-to-one on first
//     meeting, otherwise they must be the same node. A Var's type annotation is compared (absent
//     differs from present).
//   * GlobalVar, GlobalTypeVar, Constructor and Op compare by name; Constants by dtype, shape and
//     bytes; Attrs by value in any order. Spans, name hints and checked_type are ignored, and so is
//     sharing: a DAG equals the tree it unfolds to.
// Both walks are iterative (a 100,000-let chain is fine) and memoized (heavy sharing is linear).

#include <cstddef>
#include <string>

#include "frontend/relay/IR.h"

namespace grove::relay {

// The first difference found, if any: where (`@main.body.args[1].fields[0]`, `type List.constructors[0]`)
// and both sides there, printed (clipped when long).
struct EqualResult {
  bool equal = true;
  std::string path;
  std::string lhs, rhs;
  explicit operator bool() const { return equal; }
};

// Modules: the same global function names and type definitions, compared pairwise.
EqualResult structural_equal(const Module &a, const Module &b, bool map_free_vars = true);
EqualResult structural_equal(const Expr &a, const Expr &b, bool map_free_vars = true);
// Free type variables are paired one-to-one, as map_free_vars does for expressions.
EqualResult structural_equal(const Type &a, const Type &b);

// Consistent with structural_equal: equal arguments (with the same map_free_vars) hash the same.
size_t structural_hash(const Expr &e, bool map_free_vars = true);
size_t structural_hash(const Type &t);

}  // namespace grove::relay
