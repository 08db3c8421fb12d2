#include "backends/relay/VMRunner.h"

#include <memory>
#include <utility>

#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/halide/HalideKernels.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"

namespace grove::relay {

namespace {

std::unique_ptr<KernelCompiler> cli_kernel_compiler(const Module &module, int threads) {
  HalideKernelOptions halide;
  halide.threads = threads;
  return make_external_kernel_compiler(make_fallback_kernel_compiler(
      make_halide_kernel_compiler(halide), make_interpreter_kernel_compiler(module)));
}

}  // namespace

std::unique_ptr<VirtualMachine> make_vm(const Module &module, const VMRunOptions &options) {
  return make_vm(module, {}, options);
}

std::unique_ptr<VirtualMachine> make_vm(const Module &module, PreloadedKernels preloaded,
                                        const VMRunOptions &options) {
  check_external_functions(module);
  vm::Executable exe = vm::compile(module);
  std::unique_ptr<KernelCompiler> kernels = cli_kernel_compiler(exe.module, options.threads);
  if (!preloaded.empty()) kernels = make_preloaded_kernel_compiler(std::move(preloaded), std::move(kernels));
  VMOptions vm;
  vm.threads = options.threads;
  return std::make_unique<VirtualMachine>(std::move(exe), std::move(kernels), vm);
}

Value run_main_on_vm(const Module &module, const std::vector<Value> &args) {
  return make_vm(module)->run_main(args);
}

std::string dump_vm(const Module &module) { return vm::to_string(vm::compile(module)); }

}  // namespace grove::relay
