#pragma once
// Internal to the Halide kernel compiler (HalideKernels.cpp): lowering one Primitive function, for
// concrete input dtypes and shapes, to a scheduled Halide pipeline (HalideOps.cpp). Kept apart from
// Kernel.h because ops/Op.h, which the lowering reads, names its kernel function type `Kernel` too.

#include <Halide.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay::halide_internal {

struct LoweredPipeline {
  std::vector<Halide::ImageParam> inputs;  // one per flattened parameter, in order
  std::vector<Halide::Func> outputs;       // one per flattened result field, scheduled
  std::vector<DType> out_dtypes;
  std::vector<Shape> out_shapes;
  std::string ops;  // the op names in evaluation order, joined by '+': "nn.dense+nn.bias_add+nn.relu"
};

// What the lowering cannot lower, thrown from deep in its recursive walk: private to the Halide
// kernel compiler, whose compile() turns it into KernelResult::unsupported (no exception for
// "cannot" crosses the KernelCompiler interface). The message names the op and its location.
class NotLowerable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The pipeline computing `function` (a typed Function whose body is op calls, tuples, projections,
// its parameters and constants) on inputs of these dtypes and shapes (every dimension known).
// Throws NotLowerable naming the op and its location for anything it cannot lower; `vector_bytes`
// is the target's natural vector width in bytes (16, 32 or 64) for the schedules.
LoweredPipeline lower_primitive(const Function &function, const std::vector<DType> &dtypes,
                                const std::vector<Shape> &shapes, int vector_bytes);

}  // namespace grove::relay::halide_internal
