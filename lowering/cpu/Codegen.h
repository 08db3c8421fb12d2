#pragma once
// Machine code for a lowered model: the one place grove hands a Halide module to LLVM, for the
// JIT (backends/cpu/CompiledModel), libraries (backends/cpu/Aot) and `grove dump --stage asm|llvm`.
// It is Halide's own path (compile_module_to_llvm_module, then the JIT or an object file) with one
// step between: where the lowering chose an LLVM CPU model and features of its own
// (LoweredModel::llvm_cpu: bf16 kernels generated for Sapphire Rapids, compiled for a CPU without
// its AMX and AVX512-FP16), the module's `halide_mcpu` and `halide_mattrs` flags are replaced
// before LLVM reads them.

#include <memory>
#include <string>
#include <vector>

#include "Halide.h"
#include "lowering/cpu/Lower.h"

namespace llvm {
class LLVMContext;
}

namespace grove::lowering {

// A JIT-compiled model. The LLVM context holds what the compiled module refers to, so it is
// destroyed last.
class JitCode {
 public:
  JitCode(const LoweredModel &lowered, const std::vector<Halide::Internal::JITModule> &dependencies);
  ~JitCode();
  JitCode(const JitCode &) = delete;
  JitCode &operator=(const JitCode &) = delete;

  const Halide::Internal::JITModule &module() const { return module_; }

 private:
  std::unique_ptr<llvm::LLVMContext> context_;
  Halide::Internal::JITModule module_;
};

// Writes `lowered` as an object file, assembly or LLVM assembly (Halide's output types of those
// names) to `path`.
void write_code(const LoweredModel &lowered, Halide::OutputFileType type, const std::string &path);

}  // namespace grove::lowering
