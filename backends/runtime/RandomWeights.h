#pragma once
// Size variables given on the command line (`--sizes H=256,D=256,V=100`) and the seeded random
// weights that `grove init-weights` writes and `grove bench --random-weights` runs with.

#include <cstdint>
#include <map>
#include <string>

#include "ilir/IR.h"
#include "support/Tensor.h"

namespace grove {

// "H=256,D=256" → {H: 256, D: 256}; a UserError on malformed text.
std::map<std::string, int64_t> parse_sizes(const std::string &text);

// Checks `sizes` names only size variables of `program`; with `complete`, that it binds all of
// them. A UserError names the model and the variable.
void check_sizes(const ilir::Program &program, const std::map<std::string, int64_t> &sizes, bool complete);

// Every param of `program` (which `sizes` must bind completely), uniform in ±1/sqrt(fan-in) (the
// last dimension) for matrices and ±0.1 for vectors, from a std::mt19937_64 seeded with `seed`.
// Its raw output is mapped by hand, so the weights are the same with every standard library.
Weights random_weights(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                       uint64_t seed);

}  // namespace grove
