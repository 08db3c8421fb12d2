#include "tools/CompileCommand.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "backends/cpu/Aot.h"
#include "backends/cuda/Aot.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/CompiledLibrary.h"
#include "backends/runtime/RandomWeights.h"
#include "frontend/dsl/Frontend.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tools/CudaCommands.h"
#include "tools/Inputs.h"
#include "tools/Messages.h"
#include "tools/Report.h"

namespace grove::tool {

namespace msg = tool_messages;

namespace {

// The command line's checks that both targets make, before the model is read.
void check_compile_command(const CompileCommand &c) {
  if (c.weights.empty() == c.sizes.empty()) user_error(msg::kCompileWeightsOrSizes);
  if (c.embed_weights && c.weights.empty()) user_error(msg::kCompileEmbedWithoutWeights);
  if (c.threads < 0) user_error(msg::kCompileThreads, c.threads);
}

// The sizes the library is compiled at: the weights' (checked against the model) or --sizes.
std::map<std::string, int64_t> compile_sizes(const CompileCommand &c, const ilir::Program &program) {
  if (!c.weights.empty()) return bind_weights(program, read_safetensors(c.weights), c.weights);
  std::map<std::string, int64_t> sizes = parse_sizes(c.sizes);
  check_sizes(program, sizes, true);
  return sizes;
}

}  // namespace

int compile(const CompileCommand &c) {
  if (is_cuda_target(c.target)) return compile_cuda(c);
  note_unused_cuda_options(c.cuda);
  if (!c.arch.empty() || c.no_ptx) user_error(msg::kCompileArchWithoutCuda);
  check_compile_command(c);
  ilir::Program program = dsl::parse_model_file(c.model);
  const std::map<std::string, int64_t> sizes = compile_sizes(c, program);
  cpu::CompileOptions options;
  options.target = c.target;
  options.weights_file = c.weights.empty() ? options.weights_file : c.weights;
  options.schedule = c.schedule;
  // --threads after --schedule: the later setting of a key wins.
  if (c.threads > 0)
    options.schedule += fmt::format("{}threads={}", c.schedule.empty() ? "" : ",", c.threads);
  cpu::AotOptions aot;
  aot.out_dir = c.out;
  aot.name = c.name;
  if (c.embed_weights) aot.embed_weights_file = c.weights;
  cpu::AotResult result = cpu::compile_library(program, sizes, options, aot);
  print_notes(result.notes);
  std::cout << fmt::format("wrote {}\nwrote {}\nwrote {}\n", result.shared_library, result.static_library,
                           result.header);
  return 0;
}

// `grove compile --target cuda`: the same checks of the options, then the kernels compiled by NVRTC
// into the library (backends/cuda/Aot.h).
int compile_cuda(const CompileCommand &c) {
  check_compile_command(c);
  cuda::CudaAotOptions aot;
  if (!c.arch.empty()) aot.arches = cuda::parse_arch_list(c.arch, "--arch");
  aot.ptx = !c.no_ptx;
  aot.cuda_options = c.cuda;
  cuda::parse_cuda_options(c.cuda, "--cuda");  // a bad option before the model is read
  note_cpu_only_options(c.threads, false, "");
  ilir::Program program = dsl::parse_model_file(c.model);
  const std::map<std::string, int64_t> sizes = compile_sizes(c, program);
  aot.out_dir = c.out;
  aot.name = c.name;
  aot.schedule = c.schedule;
  if (c.embed_weights) aot.embed_weights_file = c.weights;
  cuda::CudaAotResult result = cuda::compile_cuda_library(program, sizes, aot);
  print_notes(result.notes);
  std::cout << fmt::format("wrote {} ({})\nwrote {}\nwrote {}\n", result.shared_library,
                           fmt::join(result.images, ", "), result.static_library, result.header);
  return 0;
}

bool is_compiled_library(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) ==
                                  "\x7f"
                                  "ELF";
}

}  // namespace grove::tool
