#pragma once
// Fused kernels for the compiled Relay executor: what the virtual machine calls for each
// `Primitive=1` function that operator fusion produced, and who compiles them.
//
// A KernelCompiler turns one Primitive function (typed: infer_types has run) into a Kernel for
// concrete input shapes. The VM asks once per call site and shape; compilers cache by function and
// shapes, so a shape with `?` compiles for each shape first seen. Inputs are the function's
// parameters in order, each a tensor (fusion gives Primitive functions tensor parameters; a
// tuple-typed parameter arrives flattened, field by field, left to right). Outputs: the result
// tensor, or a tuple result's fields (flattened the same way).
//
// Two compilers exist: the reference one, which runs the function body with the interpreter's
// kernels (backends/relay/vm/InterpreterKernels.h), and the Halide one
// (backends/relay/halide/HalideKernels.h), which lowers the whole group to one Halide pipeline and
// JIT-compiles it.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"
#include "support/Error.h"

namespace grove::relay {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Runs on `inputs` (shapes as compiled for) and returns the outputs. May be called from one
  // thread at a time per Kernel.
  virtual std::vector<NDArray> run(const std::vector<NDArray> &inputs) = 0;
  // A one-line description for `grove relay dump --stage vm` and debug logs (e.g. "halide: add+relu").
  virtual std::string describe() const = 0;
};

// Why a kernel compiler cannot compile a function — an operator, dtype or shape it has no kernel
// for: not the user's mistake. `reason` names the op and its location ("the Halide kernel compiler
// does not support erf (at m.relay:3:3)").
struct Unsupported {
  std::string reason;
};

// What KernelCompiler::compile returns: the kernel, or why the compiler cannot make one. An
// unsupported result is the one "cannot" signal of the back end: a caller with another compiler
// falls back to it (make_fallback_kernel_compiler); where none is left, the VM reports the reason
// as a UserError (VM::kernel_for). Mistakes in what the compiler was given are thrown as UserError,
// never returned here, and no compiler falls back on them. Reading the side a result does not hold
// is a grove bug (GROVE_CHECK).
class [[nodiscard]] KernelResult {
 public:
  // A compiled kernel (not null).
  static KernelResult compiled(std::shared_ptr<Kernel> kernel) {
    GROVE_CHECK(kernel != nullptr, "a compiled KernelResult without a kernel");
    return KernelResult(std::move(kernel));
  }
  // What the compiler cannot compile, and why (the op and its location).
  static KernelResult unsupported(std::string reason) { return KernelResult(Unsupported{std::move(reason)}); }

  bool ok() const { return std::holds_alternative<std::shared_ptr<Kernel>>(value_); }
  bool is_unsupported() const { return !ok(); }

  const std::shared_ptr<Kernel> &kernel() const {
    GROVE_CHECK(ok(), "the kernel of an unsupported result ({})", std::get<Unsupported>(value_).reason);
    return std::get<std::shared_ptr<Kernel>>(value_);
  }
  const Unsupported &unsupported() const {
    GROVE_CHECK(!ok(), "the reason of a compiled kernel ({})",
                std::get<std::shared_ptr<Kernel>>(value_)->describe());
    return std::get<Unsupported>(value_);
  }
  // The kernel, or the reason as a UserError: for a caller that has no compiler left to fall back to.
  const std::shared_ptr<Kernel> &kernel_or_user_error() const {
    if (!ok()) throw UserError(std::get<Unsupported>(value_).reason);
    return std::get<std::shared_ptr<Kernel>>(value_);
  }

 private:
  explicit KernelResult(std::variant<std::shared_ptr<Kernel>, Unsupported> value)
      : value_(std::move(value)) {}
  std::variant<std::shared_ptr<Kernel>, Unsupported> value_;
};

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // The kernel of `primitive` (a Function with Primitive=1) for inputs of these dtypes and concrete
  // shapes, or KernelResult::unsupported for what the compiler cannot handle (naming the op). Throws
  // UserError only for a mistake in what it was given; no exception means "cannot".
  virtual KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                               const std::vector<Shape> &shapes) = 0;
  virtual std::string name() const = 0;
};

// A function an external code generator runs over Relay values of any type — trees, lists of
// them — rather than over tensors: grove's recursive functions (byoc/GroveCodegen.cpp), called by
// the VM's InvokeExternal. One is made per virtual machine; it compiles what it needs on first use
// (again when the weights differ) and counts its compiles and runs for the VM's statistics.
class ExternalFunction {
 public:
  virtual ~ExternalFunction() = default;
  // The call's result for `args` (the function's parameters in order), or nullopt where the code
  // generator does not take this call (a fold whose initial state is not all zeros): the VM then
  // runs the function's own Relay body.
  virtual std::optional<Value> run(const std::vector<Value> &args) = 0;
  size_t compiles() const { return compiles_; }  // compilations so far
  size_t runs() const { return runs_; }          // batched runs so far

 protected:
  size_t compiles_ = 0, runs_ = 0;
};

struct ExternalFunctionOptions {
  int threads = 0;  // the threads its compiled code runs on; 0: all cores
};

// What a code generator prepares for one of its functions when the module is compiled for the VM
// (Codegen::prepare_function): a line for `grove relay dump --stage vm`, and how to make the
// function for one VM.
struct PreparedFunction {
  std::string description;
  std::function<std::unique_ptr<ExternalFunction>(const ExternalFunctionOptions &)> make;
};

}  // namespace grove::relay
