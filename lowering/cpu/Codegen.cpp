#include "lowering/cpu/Codegen.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <system_error>

#include "lowering/cpu/Messages.h"
#include "support/Error.h"

namespace grove::lowering {

namespace HI = Halide::Internal;

namespace {

// Halide's LLVM module for `lowered`, in `context`, compiled for the lowering's CPU model.
std::unique_ptr<llvm::Module> llvm_module(const LoweredModel &lowered, llvm::LLVMContext &context) {
  std::unique_ptr<llvm::Module> m = Halide::compile_module_to_llvm_module(lowered.module, context);
  if (!lowered.llvm_cpu.empty()) {
    GROVE_CHECK(m->getModuleFlag("halide_mcpu") && m->getModuleFlag("halide_mattrs"),
                "Halide's module has no halide_mcpu/halide_mattrs flags to replace");
    m->setModuleFlag(llvm::Module::Warning, "halide_mcpu", llvm::MDString::get(context, lowered.llvm_cpu));
    m->setModuleFlag(llvm::Module::Warning, "halide_mattrs",
                     llvm::MDString::get(context, lowered.llvm_features));
  }
  return m;
}

}  // namespace

// As Halide's JITModule(Module, LoweredFunc, dependencies): the module, then the shared runtime
// among its dependencies, then LLVM's JIT.
JitCode::JitCode(const LoweredModel &lowered, const std::vector<HI::JITModule> &dependencies)
    : context_(std::make_unique<llvm::LLVMContext>()) {
  std::unique_ptr<llvm::Module> m = llvm_module(lowered, *context_);
  std::vector<HI::JITModule> deps = dependencies;
  for (const HI::JITModule &runtime : HI::JITSharedRuntime::get(m.get(), lowered.module.target()))
    deps.push_back(runtime);
  module_.compile_module(std::move(m), lowered.module.functions().back().name, lowered.module.target(), deps);
}

JitCode::~JitCode() = default;  // module_, declared after context_, goes first

void write_code(const LoweredModel &lowered, Halide::OutputFileType type, const std::string &path) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> m = llvm_module(lowered, context);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) user_error(lowering_messages::kCannotWrite, path, ec.message());
  switch (type) {
    case Halide::OutputFileType::object:
      Halide::compile_llvm_module_to_object(*m, out);
      break;
    case Halide::OutputFileType::assembly:
      Halide::compile_llvm_module_to_assembly(*m, out);
      break;
    case Halide::OutputFileType::llvm_assembly:
      Halide::compile_llvm_module_to_llvm_assembly(*m, out);
      break;
    default:
      GROVE_CHECK(false, "write_code of an output type other than object, assembly or LLVM assembly");
  }
}

}  // namespace grove::lowering
