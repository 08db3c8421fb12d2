#pragma once
// Ahead-of-time compilation (`grove compile`): a model lowered for the CPU (Abi.h) and compiled by
// Halide's AOT back end into a shared library, a static library and a C header that declare the
// model's grove_compiled_model descriptor (include/grove/grove.h). The libraries carry their own
// Halide runtime and link only libgrove_runtime (the thread team's grove_barrier_wait and
// grove_stage_*), not Halide, LLVM or the compiler; backends/runtime/CompiledLibrary.h opens them.
//
//   cpu::AotOptions aot;
//   aot.out_dir = "out";
//   cpu::AotResult r = cpu::compile_library(program, sizes, {}, aot);  // out/libtreelstm.so, .a, .h

#include <cstdint>
#include <map>
#include <string>

#include "backends/cpu/CompiledModel.h"
#include "ilir/IR.h"
#include "support/Tensor.h"

namespace grove::cpu {

struct AotOptions {
  std::string out_dir;  // created if missing; lib<name>.so, lib<name>.a and <name>.h go there
  std::string name;     // a C identifier; empty: the model's name in lower case
  // Weights to embed in the libraries (`--embed-weights`), as a safetensors file or in memory (at
  // most one of the two). They must match the model at `sizes`.
  std::string embed_weights_file;
  const Weights *embed_weights = nullptr;
  // Where libgrove_runtime.so and grove/grove.h are; empty: next to the running program
  // (<dir>/../lib, <dir>/../include) if installed there, else grove's build and source trees.
  std::string runtime_dir, include_dir;
};

struct AotResult {
  std::string shared_library, static_library, header;  // the paths written
  std::string name;                                    // the symbol prefix: <name>_grove_model
  std::vector<std::string> notes;  // requested schedule options that could not take effect
};

// Lowers `program` with every size variable bound by `sizes` under `options` (target, schedule),
// compiles it with the system C compiler ($CC, else cc) and writes the three files through
// temporary names, so that a failure leaves any files already in out_dir untouched. Throws
// UserError naming the file or the tool: a bad out_dir or name, weights that do not fit, no C
// compiler, a failed link.
AotResult compile_library(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                          const CompileOptions &options, const AotOptions &aot);

}  // namespace grove::cpu
