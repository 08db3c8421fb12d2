#include "tools/Commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "backends/cpu/CompiledModel.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/RandomWeights.h"
#include "datasets/DagReader.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "frontend/dsl/Frontend.h"
#include "ilir/IRPrinter.h"
#include "lowering/cpu/Codegen.h"
#include "lowering/cpu/Lower.h"
#include "plan/Differentiate.h"
#include "plan/LevelPlan.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "support/Safetensors.h"
#include "tools/CudaCommands.h"
#include "tools/Messages.h"
#include "tools/Report.h"
#include "tools/Tune.h"

namespace grove::tool {

namespace msg = tool_messages;

int dump(const DumpCommand &c) {
  ilir::Program program = dsl::parse_model_file(c.model);
  if (!c.training.empty()) {
    plan::Derivative d = plan::differentiate(program);
    program = c.training == "backward" ? d.backward : d.forward;
    if (c.stage == "cuda" || c.stage == "ptx") user_error(msg::kTrainingCuda, c.stage);
  }
  if (c.stage == "ilir") {
    std::cout << ilir::to_string(program);
    return 0;
  }
  if (c.stage == "cuda" || c.stage == "ptx") return dump_cuda(c);
  lowering::LowerOptions options;
  options.sizes = c.sizes.empty() ? std::map<std::string, int64_t>{} : parse_sizes(c.sizes);
  check_sizes(program, options.sizes, false);
  if (c.target != "host") options.target = Halide::Target(c.target);
  options.target = options.target.with_feature(Halide::Target::NoRuntime);
  options.schedule = scheduling::default_schedule(program, lowering::vector_bytes(options.target));
  options.schedule.apply(c.schedule, "--schedule");
  std::vector<std::string> notes = options.schedule.notes(program.structure);
  lowering::LoweredModel lowered = lowering::lower(program, options);
  notes.insert(notes.end(), lowered.notes.begin(), lowered.notes.end());
  print_notes(notes);
  if (c.stage == "plan") {
    std::cout << plan::to_string(lowered.plan);
    return 0;
  }
  if (c.stage == "loops") {
    std::cout << lowered.loops;
    return 0;
  }
  // LLVM IR or assembly: let Halide's back end write it (without its runtime), then show it.
  std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / fmt::format("grove-dump-{}.s", ::getpid());
  Halide::OutputFileType type =
      c.stage == "llvm" ? Halide::OutputFileType::llvm_assembly : Halide::OutputFileType::assembly;
  lowering::write_code(lowered, type, tmp.string());
  std::ifstream in(tmp);
  std::cout << in.rdbuf();
  std::filesystem::remove(tmp);
  return 0;
}

int init_weights(const InitWeightsCommand &c) {
  ilir::Program program = dsl::parse_model_file(c.model);
  std::map<std::string, int64_t> sizes = parse_sizes(c.sizes);
  Weights weights = random_weights(program, sizes, c.seed);
  write_safetensors(c.out, weights);
  return 0;
}

}  // namespace grove::tool
