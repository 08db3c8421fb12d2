#pragma once
// External code generators (bring-your-own-codegen): the table of the code generators grove has,
// each with what it claims (its ExternalTarget: supported ops and patterns) and a KernelCompiler
// for the functions partition_graph gives it (Compiler="<name>").
//
// The VM runs a partitioned module as any other: a call of an external function is a kernel call.
// The command line's VM (VMRunner.h) compiles a function with Compiler="<name>" with that code
// generator's KernelCompiler, once per function and shape — constants bound into the function are
// handed to the code generator then, once — and every other Primitive function with Halide. A name
// no code generator has is a UserError naming it and listing the known ones.
//
// The table is plain data, built from one function per code generator; nothing registers itself.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/relay/Kernel.h"
#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

struct Codegen {
  std::string name;            // "dnnl", "ccompiler", "grove": the Compiler attribute's value
  std::string description;     // one line for `grove relay targets`
  ExternalTarget (*target)();  // what it claims
  std::unique_ptr<KernelCompiler> (*make_compiler)();  // compiles its partitioned functions
  // Optional, for `grove relay build` (SavedProgram.h): `save` writes a kernel of make_compiler()'s
  // to `path` (the file name ends in `artifact_extension`); `load` reads it back for `function` at
  // input `shapes` without compiling, a UserError naming `path` when the file is not what save wrote.
  // Null: the function is compiled again when the saved program is loaded.
  void (*save)(const Kernel &kernel, const std::string &path) = nullptr;
  std::shared_ptr<Kernel> (*load)(const Expr &function, const std::vector<Shape> &shapes,
                                  const std::string &path) = nullptr;
  std::string artifact_extension = "";
  // Optional, for a code generator whose functions take and give values other than tensors (grove's
  // recursive functions: trees, lists): prepares the external function `global` of the module
  // `typed` (typed, before fusion: its callees as written) for the VM, which calls it with
  // InvokeExternal rather than as a kernel. A UserError saying why when it cannot compile it.
  PreparedFunction (*prepare_function)(const Module &typed, const std::string &global) = nullptr;
};

// Every code generator, sorted by name.
const std::vector<Codegen> &all_codegens();
// The code generator named `name`; a UserError naming it and the known ones when there is none.
const Codegen &find_codegen(std::string_view name);
// The same, or null when there is none.
const Codegen *codegen_named(std::string_view name);
// The code generator of an external function (Compiler="<name>") that the VM calls with
// InvokeExternal (Codegen::prepare_function), or null: no Compiler attribute, or a code generator of
// kernels, or a name no code generator has.
const Codegen *function_codegen(const Function &fn);

// The targets' partition of `module` (typed or not): merge-composite, annotate, merge-regions and
// partition (frontend/relay/passes/) with the targets of the code generators `names`, in that order
// of priority. `grove relay partition`, and `run`/`bench --target`, use it. Unknown names are a
// UserError listing the known ones.
Module partition_for_targets(const Module &module, const std::vector<std::string> &names);

// A KernelCompiler for a partitioned module: a function with Compiler="<name>" goes to that code
// generator's compiler (made once, on first use; its errors are not caught: what a code generator
// claimed it must compile), every other Primitive function to `fallback`.
std::unique_ptr<KernelCompiler> make_external_kernel_compiler(std::unique_ptr<KernelCompiler> fallback);

// Checks that every external function of `module` (Compiler="<name>", other than those of a code
// generator the VM calls with InvokeExternal: function_codegen) names a code generator that compiles
// partitions; a UserError naming the function and the missing code generator otherwise.
void check_external_functions(const Module &module);

// One function per code generator (one file each under byoc/).
Codegen dnnl_codegen();       // byoc/Dnnl.cpp: oneDNN primitives for dense, conv2d, batch_matmul
Codegen ccompiler_codegen();  // byoc/CCompiler.cpp: C source for elementwise regions, built by cc
Codegen grove_codegen();      // byoc/GroveCodegen.cpp: recursive functions, grove's compiler

}  // namespace grove::relay
