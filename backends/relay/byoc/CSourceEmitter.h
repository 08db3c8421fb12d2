#pragma once
// The C source the ccompiler code generator (CCompiler.h) emits for one partitioned function: every
// op a loop nest over the concrete shapes, with the broadcast index arithmetic of each argument
// generated per op; constants of one finite element written as literals, larger ones handed over
// once through `int <symbol>_init(const float *const *constants)`; the entry point
// `int <symbol>(const float *const *inputs, float *const *outputs)` returns 0, or 1 when it could not
// allocate its workspace. Pure text: compiling and loading it is CCompiler.cpp's job.

#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

class CSourceUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CSource {
  std::string symbol;                // the entry point: the function's global_symbol
  std::string init_symbol;           // "<symbol>_init", or "" when no constant is handed over
  std::vector<NDArray> constants;    // what init_symbol receives, in order (float32)
  std::vector<Shape> output_shapes;  // the flattened result, as `outputs` holds it
  int num_ops = 0;
  std::string text;
};

// The float32 elementwise ops the emitter compiles ("add", "nn.relu", ...), sorted.
const std::vector<std::string> &c_source_ops();

// The C source of `function` (a typed Function whose parameters are float32 tensors) for inputs of
// these concrete shapes. A node the emitter cannot compile (an op outside c_source_ops(), another
// dtype, a call of a function, control flow) throws CSourceUnsupported naming it and its location,
// which the code generator returns as KernelResult::unsupported; what the caller got wrong (input
// shapes that do not fit the parameters, a global_symbol that is not a C identifier) is a UserError.
CSource emit_c_source(const Expr &function, const std::vector<Shape> &input_shapes);

}  // namespace grove::relay
