#pragma once
// The Relay virtual machine: runs an Executable (VMCompiler.h) with the kernels of a KernelCompiler
// (Kernel.h), and the recursive functions over trees with grove's recursive compiler
// (InvokeRecursive: compiled on first use, again whenever the weights differ). Values are the interpreter's
// (relay/Value.h), so results compare directly with relay/Interpreter.h's. Frames live on a heap stack: deep
// recursion (a 100,000-element list) needs no C stack. Each kernel is compiled once per input shapes and
// cached; its outputs are checked against the call's static type (every known dimension).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/relay/Kernel.h"
#include "backends/relay/vm/Bytecode.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

struct VMStats {
  size_t kernel_compiles = 0;      // KernelCompiler::compile calls (cache misses)
  size_t kernel_calls = 0;         // InvokeKernel executions
  size_t storage_allocations = 0;  // AllocTensor that allocated a new buffer
  size_t storage_reuses = 0;       // AllocTensor that reused its slot's buffer
  size_t recursive_compiles = 0;   // CompiledRecursiveFunction::compile calls (new weights)
  size_t reshapes = 0;             // ReshapeTensor executions (views, no kernel)
  size_t recursive_calls = 0;      // InvokeRecursive executions (one batched run each)
  size_t recursive_fallbacks = 0;  // folds grove did not take (a nonzero initial state...): run in the VM
};

class CompiledRecursiveFunction;
class CompiledSequenceFunction;
struct SequenceCall;

struct VMOptions {
  // The threads grove's recursive functions and folds run on (their schedule's threads=N); 0: all
  // cores. The kernels' threads are their compiler's (HalideKernelOptions::threads).
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
  // How grove's recursive functions and folds are compiled (the VM's threads).
  cpu::CompileOptions recursive_options() const;
  Value invoke(int function, std::vector<Value> args, const Value &closure);
  void enter(std::vector<Frame> &stack, int function, std::vector<Value> args, const Value &closure,
             int return_register);
  void run_kernel(Frame &frame, const vm::Instruction &in);
  std::shared_ptr<Kernel> kernel_for(int kernel, const std::vector<NDArray> &inputs);
  Value run_recursive(const std::vector<Value> &regs, const vm::Instruction &in);
  // A fold over a sequence in grove, or nullopt when grove does not take this call.
  std::optional<Value> run_sequence(const std::vector<Value> &regs, const vm::Instruction &in);
  // @map of the fold over a List of sequences, as one batched run; nullopt where any sequence does not
  // fit (SequenceFunctions.h): the caller then runs @map itself.
  std::optional<Value> run_sequence_list(const std::vector<Value> &regs, const vm::Instruction &in);
  // The compiled fold of entry `index` for these weights and calls, compiled again when they differ
  // or the calls do not fit.
  const CompiledSequenceFunction &sequence_function(int index, std::vector<Value> weights,
                                                    const std::vector<SequenceCall> &calls);

  // InvokeRecursive's compiled functions, one per table entry, with the weights they were compiled
  // with (held, so their storage cannot be reused by other tensors while cached).
  struct CompiledRecursive {
    std::vector<Value> weights;
    std::shared_ptr<CompiledRecursiveFunction> function;
    std::shared_ptr<CompiledSequenceFunction> sequence;  // a fold over a sequence
  };
  std::vector<CompiledRecursive> recursive_;

  vm::Executable exe_;
  std::unique_ptr<KernelCompiler> compiler_;
  VMOptions options_;
  std::map<std::pair<int, std::vector<std::pair<DType, Shape>>>, std::shared_ptr<Kernel>> cache_;
  VMStats stats_;
};

}  // namespace grove::relay
