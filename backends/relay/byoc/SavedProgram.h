#pragma once
// A compiled program on disk, as TVM's export_library/load_module keeps BYOC modules: `grove relay
// build` writes a directory with the partitioned module (module.relay, + module.meta.safetensors for
// large constants), one artifact per external function whose code generator can save its kernels
// (Codegen::save: the ccompiler's built .so), and manifest.json saying, per external function, its
// global symbol, code generator, the input dtypes and shapes it was compiled for, and its artifact.
// `grove relay run DIR` / `bench DIR` load it: the VM is given the loaded kernels instead of
// compiling those functions (no C compiler is needed); a function whose code generator saves
// nothing (dnnl: oneDNN primitives are rebuilt from the function and its bound constants, as TVM's
// JSON runtime does at init) is compiled at load; one with a `?` in its input types at run time.
// The VM's bytecode is compiled again from module.relay at load (it takes milliseconds).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/relay/Kernel.h"
#include "frontend/relay/IR.h"

namespace grove::relay {

// A kernel compiled before the VM runs, for the external function of that global_symbol, at these
// flattened input dtypes and shapes.
struct PreloadedKernel {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::shared_ptr<Kernel> kernel;
};
using PreloadedKernels = std::map<std::string, PreloadedKernel>;  // by global_symbol

struct SavedProgram {
  Module module;  // typed, partitioned
  std::vector<std::string> targets;
  PreloadedKernels kernels;
};

// Partitions `module` (typed) for `targets` (none: not partitioned), compiles each external function
// whose input types are fully known, and writes the program to `dir` through a temporary sibling
// directory renamed into place. `inputs` are files `dir` must neither be nor contain. An existing
// `dir` must be empty or a previous build's output (it is replaced); anything else is a UserError.
void build_program(const Module &module, const std::vector<std::string> &targets, const std::string &dir,
                   const std::vector<std::string> &inputs);

// Whether `path` names a directory (what `grove relay run`/`bench` then read with load_program).
bool is_program_directory(const std::string &path);

// Reads what build_program wrote. A manifest that does not match the module (a symbol missing, other
// shapes, an artifact missing or corrupt, an unknown code generator) is a UserError naming `dir`, the
// entry and what is wrong.
SavedProgram load_program(const std::string &dir);

// Serves `kernels` for the external functions they were compiled for (by global_symbol, dtypes and
// shapes), everything else from `fallback`.
std::unique_ptr<KernelCompiler> make_preloaded_kernel_compiler(PreloadedKernels kernels,
                                                               std::unique_ptr<KernelCompiler> fallback);

}  // namespace grove::relay
