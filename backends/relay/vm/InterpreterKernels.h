#pragma once
// The reference KernelCompiler: each kernel runs its Primitive function's body with the
// interpreter (relay/Interpreter.h's apply) on tensor values, so the VM computes bit for bit what
// the interpreter does. Compiling is free; one Kernel per (function, shapes) as the interface asks.

#include <memory>

#include "backends/relay/Kernel.h"

namespace grove::relay {

std::unique_ptr<KernelCompiler> make_interpreter_kernel_compiler(const Module &module);

// Compiles each kernel with `primary`, or with `fallback` when `primary`'s result is unsupported (it
// cannot handle an op or dtype of that group). A UserError either throws (a mistake in what it was
// given) propagates unchanged, never retried. name() says "primary, else fallback".
std::unique_ptr<KernelCompiler> make_fallback_kernel_compiler(std::unique_ptr<KernelCompiler> primary,
                                                              std::unique_ptr<KernelCompiler> fallback);

}  // namespace grove::relay
