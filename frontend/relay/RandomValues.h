#pragma once
// Random values of Relay types from a seeded generator, reproducible for a seed: `grove relay bench
// --random-args` fills weights with them; the VM-against-interpreter tests and fuzzer build @main's
// arguments with them (tests/backends/relay/test_vm_differential.cpp).
//
// Tensors: floats uniform in ±1/sqrt(fan-in), fan-in the product of every dimension but the first (a
// dense weight [out, in]: in; a conv weight [O, I, kh, kw]: I·kh·kw), ±0.1 for vectors and scalars
// (as `grove init-weights` fills biases); integers uniform in [0, int_max] (small and non-negative:
// loop counts, indices); bools 0 or 1. Tuples field by field; references to a value of their type;
// ADTs a constructor chosen at random, fields by the constructor's types with the ADT's type
// arguments substituted, the choice preferring constructors with fewer ADT fields (Nil, Leaf) once
// `adt_depth` levels are built, so values stay small and finite.

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

struct RandomValueOptions {
  int64_t unknown_dim = 2;  // the size a `?` dimension gets; 0: each its own, drawn from [1, 3]
  int64_t int_max = 4;      // integers lie in [0, int_max]
  int adt_depth = 3;        // ADT levels built before preferring the constructors with fewest ADT fields
};

// A random tensor of `type`'s dtype and shape (`?` dimensions as options.unknown_dim says).
NDArray random_tensor(const TensorType &type, std::mt19937_64 &rng, const RandomValueOptions &options = {});

// A random value of `type` (its ADTs `module`'s); nullopt, with `why` set, when the type says not how:
// a function, a type variable, an ADT the module does not define or with no finite value.
std::optional<Value> random_value(const Module &module, const Type &type, std::mt19937_64 &rng,
                                  std::string *why, const RandomValueOptions &options = {});

}  // namespace grove::relay
