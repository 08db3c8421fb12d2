#pragma once
// The VM as the command line uses it: compile a module, pick the kernel compiler (Halide, falling
// back to the interpreter's kernels for each group Halide cannot lower), run @main or print the
// bytecode.

#include <memory>
#include <string>
#include <vector>

#include "backends/relay/byoc/SavedProgram.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

class VirtualMachine;

// How the command line's VM runs: `threads` for its Halide kernels and grove's recursive functions
// (`grove relay run|bench --threads`; 0: all cores).
struct VMRunOptions {
  int threads = 0;
};

// The command line's VM for `module` (typed): its bytecode, with Halide kernels that fall back to the
// interpreter's kernels for each group Halide cannot lower. `grove relay run` and `bench` use it.
std::unique_ptr<VirtualMachine> make_vm(const Module &module, const VMRunOptions &options = {});
// The same, with kernels compiled before (a saved program's, SavedProgram.h) served for the external
// functions they were compiled for.
std::unique_ptr<VirtualMachine> make_vm(const Module &module, PreloadedKernels preloaded,
                                        const VMRunOptions &options = {});

// Runs `module`'s @main on the VM (arguments checked as the interpreter's run_main checks them).
Value run_main_on_vm(const Module &module, const std::vector<Value> &args);

// The bytecode of `module` (`grove relay dump FILE --stage vm`), with each kernel's compiler named.
std::string dump_vm(const Module &module);

}  // namespace grove::relay
