#pragma once
// How grove_model_compile (CApi.cpp, in libgrove_runtime) reaches the compiler (backends/cpu/
// CApiCompile.cpp, in grove_cpu) without linking it: the runtime looks the entry below up with
// dlsym(RTLD_DEFAULT, kCompilerHookName) and returns GROVE_ERROR_UNSUPPORTED when no loaded module
// defines it. A program that links the compiler must export the symbol (link with -rdynamic, CMake's
// ENABLE_EXPORTS, and keep the object: -Wl,--undefined=grove_compiler_compile_v1).
//
// Both sides are C++ in one process: the entry reports errors by throwing grove's exceptions
// (UserError, InternalError, std::bad_alloc), which the C API turns into a status and a message.

#include <memory>

#include "backends/runtime/Executor.h"
#include "include/grove/grove.h"

namespace grove {

// A model compiled at run time, as the C API keeps it.
struct CompiledForCApi {
  std::shared_ptr<void> owner;   // keeps the compiled code and `executor` alive
  Executor *executor = nullptr;  // runs it; valid while `owner` lives
  // False when compiled from sizes alone: the executor holds placeholder weights, and the model must
  // not run before the caller binds its own.
  bool weights_bound = false;
};

inline constexpr char kCompilerHookName[] = "grove_compiler_compile_v1";

}  // namespace grove

// Parses `model_file`, reads `weights_file` (or, when it is null, takes the sizes of
// options->sizes), and JIT-compiles the model with options' schedule, target and threads. `options`
// may be null. Fills `*out`; throws on any error.
extern "C" void grove_compiler_compile_v1(const char *model_file, const char *weights_file,
                                          const grove_compile_options *options, grove::CompiledForCApi *out);

using GroveCompilerCompileFn = void (*)(const char *, const char *, const grove_compile_options *,
                                        grove::CompiledForCApi *);
