#pragma once
#include "frontend/relay/IR.h"

namespace grove::relay {

// TVM's InferType as its printer shows it: types the module and writes every inferred type into
// the program, so nothing is left for inference. Each variable without a type annotation
// (parameters, let variables, pattern variables) gets its inferred type as its annotation, and
// each function without a return type gets its inferred one; annotations already written are kept
// as written. `grove relay opt --passes infer --types` adds the `/* ty=... */` of every binding.
Module infer_type_annotations(const Module &module);

}  // namespace grove::relay
