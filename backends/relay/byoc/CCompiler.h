#pragma once
// The ccompiler code generator (TVM's reference BYOC example, codegen_c): it claims float32
// elementwise and broadcasting ops of fully known shapes, and compiles a partitioned function
// (Compiler="ccompiler") to C source (CSourceEmitter.h), built with the system C compiler ($CC,
// else cc) as `-O2 -shared -fPIC` in a private temporary directory, loaded with dlopen and called
// through `int <global_symbol>(const float *const *inputs, float *const *outputs)`. Constants bound
// into the function are handed over once, when the kernel is loaded (`<global_symbol>_init`).
// `grove relay build` keeps a built kernel's .so (Codegen::save) and loads it back without a C
// compiler (Codegen::load; SavedProgram.h).

#include <memory>
#include <string>

#include "backends/relay/Kernel.h"
#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

// What the kernels of make_ccompiler_kernel_compiler() are; tests and `grove relay dump` read the
// C source they were built from.
class CCompilerKernel : public Kernel {
 public:
  virtual const std::string &source() const = 0;
};

// The ops of c_source_ops(), each claimed when its arguments and result are float32 tensors with
// every dimension known.
ExternalTarget ccompiler_target();

// Kernels are cached by (function, shapes). A missing C compiler or a failed compile is a UserError
// with the compiler's message; so is a function the emitter cannot compile.
std::unique_ptr<KernelCompiler> make_ccompiler_kernel_compiler();

}  // namespace grove::relay
