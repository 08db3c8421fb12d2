// grove's recursive compiler as an external code generator: it claims whole global functions — the
// recursive functions over trees that backends/relay/recursive/RecursiveFunctions.h accepts — rather than
// dataflow regions. annotate_target marks such a function Compiler="grove"; the VM then runs every
// call of it from outside (and every `@map` of it over a list of trees) as one batched call of the
// model grove compiles from it (InvokeRecursive), and a Compiler="grove" function that does not
// qualify is an error saying why. Its values are trees, not tensors, so it has no KernelCompiler.

#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/recursive/Recognition.h"

namespace grove::relay {

namespace {

ExternalTarget grove_target() {
  ExternalTarget t;
  t.name = "grove";
  t.claims_function = [](const Module &module, const std::string &global) {
    return recognize_recursive(module, global).qualifies();
  };
  return t;
}

}  // namespace

Codegen grove_codegen() {
  return {"grove", "grove's recursive compiler: recursive functions over trees, one batched call per list",
          grove_target, nullptr};
}

}  // namespace grove::relay
