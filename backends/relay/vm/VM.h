#pragma once
// The Relay virtual machine: runs an Executable (VMCompiler.h) with the kernels of a KernelCompiler
// (Kernel.h), and the external functions over values — grove's recursive functions — with the
// ExternalFunction their code generator prepared (InvokeExternal: made on first use for this VM,
// each compiling on first use and again whenever the weights differ). Values are the interpreter's
// (relay/Value.h), so results compare directly with relay/Interpreter.h's. Frames live on a heap stack: deep
// recursion (a 100,000-element list) needs no C stack. Each kernel is compiled once per input shapes and
// cached; its outputs are checked against the call's static type (every known dimension).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "backends/relay/Kernel.h"
#include "backends/relay/vm/Bytecode.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

struct VMStats {
  size_t kernel_compiles = 0;      // KernelCompiler::compile calls (cache misses)
  size_t kernel_calls = 0;         // InvokeKernel executions
  size_t storage_allocations = 0;  // AllocTensor that allocated a new buffer
  size_t storage_reuses = 0;       // AllocTensor that reused its slot's buffer
  size_t recursive_compiles = 0;   // external functions' compiles (grove's: new weights)
  size_t reshapes = 0;             // ReshapeTensor executions (views, no kernel)
  size_t recursive_calls = 0;      // external functions' batched runs (one per encoder of an InvokeExternal)
  size_t recursive_fallbacks = 0;  // InvokeExternal calls declined (a fold's nonzero initial state...):
                                   // the function's own bytecode ran
};

struct VMOptions {
  // The threads the external functions over values (grove's recursive functions and folds) run on
  // (their schedule's threads=N); 0: all cores. The kernels' threads are their compiler's
  // (HalideKernelOptions::threads).
  int threads = 0;
};

class VirtualMachine {
 public:
  VirtualMachine(vm::Executable exe, std::unique_ptr<KernelCompiler> kernels, VMOptions options = {});

  // Calls @main with `args`, checked against @main's parameter types as the interpreter's run_main
  // checks them (same messages).
  Value run_main(const std::vector<Value> &args);

  const vm::Executable &executable() const { return exe_; }
  const VMStats &stats() const { return stats_; }

 private:
  struct Frame;
  Value invoke(int function, std::vector<Value> args, const Value &closure);
  void enter(std::vector<Frame> &stack, int function, std::vector<Value> args, const Value &closure,
             int return_register);
  void run_kernel(Frame &frame, const vm::Instruction &in);
  std::shared_ptr<Kernel> kernel_for(int kernel, const std::vector<NDArray> &inputs);
  // InvokeExternal's entry `index`, made for this VM on first use.
  ExternalFunction &external_function(int index);

  std::vector<std::unique_ptr<ExternalFunction>> external_functions_;
  vm::Executable exe_;
  std::unique_ptr<KernelCompiler> compiler_;
  VMOptions options_;
  std::map<std::pair<int, std::vector<std::pair<DType, Shape>>>, std::shared_ptr<Kernel>> cache_;
  VMStats stats_;
};

}  // namespace grove::relay
