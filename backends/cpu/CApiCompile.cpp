// The compiler's side of grove_model_compile (include/grove/grove.h): the C API in libgrove_runtime
// finds this entry with dlsym (backends/runtime/CompilerHook.h) when the program links grove_cpu.
//
// Steps:
//   1. Parse the model file.
//   2. Weights: read the safetensors file, which gives the sizes; or, without one, parse
//      options->sizes as `grove init-weights --sizes` does and stand zeros in for the weights, so that
//      the model compiles now and the caller binds the real ones before running.
//   3. The schedule: options->schedule, then `threads=N` for options->threads > 0.
//   4. JIT-compile a CompiledModel, as `grove run` does, and hand back its executor and an owner.

#include <string>
#include <utility>

#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/CompilerHook.h"
#include "backends/runtime/RandomWeights.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::cpu {
namespace {

// The sizes parser names the command-line flag; here the sizes come from the options struct.
std::map<std::string, int64_t> parse_option_sizes(const ilir::Program &program, const std::string &text) {
  try {
    std::map<std::string, int64_t> sizes = grove::parse_sizes(text);
    grove::check_sizes(program, sizes, true);
    return sizes;
  } catch (const UserError &e) {
    std::string message = e.what();
    const std::string flag = "--sizes";
    if (message.starts_with(flag)) message.replace(0, flag.size(), "grove_compile_options.sizes");
    throw UserError(message);
  }
}

// Zeros of every param's shape under `sizes`.
Weights placeholder_weights(const ilir::Program &program, const std::map<std::string, int64_t> &sizes) {
  Weights weights;
  for (const ilir::TensorDecl &t : program.tensors) {
    if (t.kind != ilir::TensorKind::Param) continue;
    Tensor w;
    for (const ilir::Expr &d : t.shape) w.shape.push_back(ilir::eval_size(d, sizes));
    w.data.assign(Tensor::num_elements(w.shape), 0.0f);
    weights.emplace(t.name, std::move(w));
  }
  return weights;
}

}  // namespace
}  // namespace grove::cpu

extern "C" void grove_compiler_compile_v1(const char *model_file, const char *weights_file,
                                          const grove_compile_options *options, grove::CompiledForCApi *out) {
  using namespace grove;
  GROVE_CHECK(model_file && out, "grove_compiler_compile_v1 called without a model file or result");
  ilir::Program program = dsl::parse_model_file(model_file);

  cpu::CompileOptions compile;
  if (options && options->target) compile.target = options->target;
  if (options && options->schedule) compile.schedule = options->schedule;
  if (options && options->threads > 0)
    compile.schedule += (compile.schedule.empty() ? "" : ",") + fmt::format("threads={}", options->threads);

  Weights weights;
  bool bound = weights_file != nullptr;
  if (bound) {
    compile.weights_file = weights_file;
    weights = read_safetensors(weights_file);
  } else {
    GROVE_CHECK(options && options->sizes, "grove_compiler_compile_v1 called without weights or sizes");
    weights = cpu::placeholder_weights(program, cpu::parse_option_sizes(program, options->sizes));
  }

  auto model = std::make_shared<cpu::CompiledModel>(cpu::CompiledModel::compile(program, weights, compile));
  out->executor = &model->executor();
  out->owner = std::move(model);
  out->weights_bound = bound;
}
