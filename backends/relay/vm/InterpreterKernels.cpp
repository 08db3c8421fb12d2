#include "backends/relay/vm/InterpreterKernels.h"

#include <fmt/format.h>

#include <utility>

#include "backends/relay/vm/Bytecode.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Value.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// A parameter's value from the flattened inputs: a tensor, or a tuple rebuilt field by field
// (recursion over the parameter type's nesting).
Value rebuild(const Type &type, const std::vector<NDArray> &inputs, size_t *next) {
  if (const auto *tuple = type.as<TupleType>()) {
    std::vector<Value> fields;
    for (const Type &f : tuple->fields) fields.push_back(rebuild(f, inputs, next));
    return tuple_value(std::move(fields));
  }
  GROVE_CHECK(*next < inputs.size(), "a kernel was given {} inputs, too few for its parameters",
              inputs.size());
  return tensor_value(inputs[(*next)++]);
}

void flatten(const Value &v, std::vector<NDArray> &out) {
  if (const auto *t = v->as<TensorValue>()) {
    out.push_back(t->data);
    return;
  }
  const auto *tuple = v->as<TupleValue>();
  GROVE_CHECK(tuple != nullptr, "a kernel's result is {}", value_to_string(v));
  for (const Value &f : tuple->fields) flatten(f, out);
}

class InterpreterKernel : public Kernel {
 public:
  InterpreterKernel(const Module &module, Expr primitive, std::string ops)
      : module_(module), function_(closure_value(std::move(primitive))), ops_(std::move(ops)) {}

  std::vector<NDArray> run(const std::vector<NDArray> &inputs) override {
    const auto *fn = function_->as<ClosureValue>()->function.as<Function>();
    std::vector<Value> args;
    size_t next = 0;
    for (const Expr &p : fn->params) args.push_back(rebuild(p->checked_type, inputs, &next));
    GROVE_CHECK(next == inputs.size(), "a kernel was given {} inputs for {} tensors", inputs.size(), next);
    std::vector<NDArray> outputs;
    flatten(apply(module_, function_, args), outputs);
    return outputs;
  }

  std::string describe() const override { return "interpreter: " + ops_; }

 private:
  Module module_;
  Value function_;
  std::string ops_;
};

class InterpreterKernelCompiler : public KernelCompiler {
 public:
  explicit InterpreterKernelCompiler(const Module &module) : module_(module) {}

  KernelResult compile(const Expr &primitive, const std::vector<DType> &,
                       const std::vector<Shape> &) override {
    GROVE_CHECK(primitive.as<Function>() != nullptr, "compiling a kernel of a non-function");
    return KernelResult::compiled(
        std::make_shared<InterpreterKernel>(module_, primitive, vm::kernel_op_names(primitive)));
  }

  std::string name() const override { return "interpreter"; }

 private:
  Module module_;
};

class FallbackKernelCompiler : public KernelCompiler {
 public:
  FallbackKernelCompiler(std::unique_ptr<KernelCompiler> primary, std::unique_ptr<KernelCompiler> fallback)
      : primary_(std::move(primary)), fallback_(std::move(fallback)) {}

  // The primary's kernel, else (only on an unsupported result) the fallback's; whatever either
  // throws (a UserError: the caller's mistake) passes through.
  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    KernelResult primary = primary_->compile(primitive, dtypes, shapes);
    if (primary.ok()) return primary;
    return fallback_->compile(primitive, dtypes, shapes);
  }

  std::string name() const override { return primary_->name() + ", else " + fallback_->name(); }

 private:
  std::unique_ptr<KernelCompiler> primary_, fallback_;
};

}  // namespace

std::unique_ptr<KernelCompiler> make_fallback_kernel_compiler(std::unique_ptr<KernelCompiler> primary,
                                                              std::unique_ptr<KernelCompiler> fallback) {
  return std::make_unique<FallbackKernelCompiler>(std::move(primary), std::move(fallback));
}

std::unique_ptr<KernelCompiler> make_interpreter_kernel_compiler(const Module &module) {
  return std::make_unique<InterpreterKernelCompiler>(module);
}

}  // namespace grove::relay
