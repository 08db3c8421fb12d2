#pragma once
// The subcommands of the `grove` program. Each takes its parsed options and returns the exit status.

#include <cstdint>
#include <map>
#include <string>

#include "backends/runtime/RandomWeights.h"  // parse_sizes
#include "tools/Inputs.h"

namespace grove::tool {

struct RunCommand {
  std::string model, weights, out, target = "host", schedule;
  InputFiles inputs;       // exactly one of trees, DAGs (JSON), grids or sequences
  bool all_nodes = false;  // DAGs and grids: every node's output, not only the sinks'
  int64_t batch = 0;
  int64_t chunk = 16384;  // inputs read and run at a time (StreamRun.h)
  int threads = 0;        // > 0: the schedule's threads=N
  bool stats = false;
  bool quiet = false;  // no progress line
  bool tuned = false;  // start from the schedule `grove tune` cached for this model and batch
  std::string cache;   // the tuning cache (default: tools/Tune.h)
  std::string cuda;    // --target cuda: the kernels' form (CudaEmitter.h's parse_cuda_options)
};

struct DumpCommand {
  std::string model, stage = "ilir", sizes, target = "host", schedule;
  std::string cuda, arch = "sm_90";  // --stage cuda|ptx: the kernels' form (CudaEmitter.h), PTX's GPU
  // Training's programs instead of the model (plan/Differentiate.h): "backward", or "forward" (the
  // forward that keeps what the backward reads); empty for the model itself.
  std::string training;
};

struct InitWeightsCommand {
  std::string model, sizes, out;
  uint64_t seed = 1;
};

int run(const RunCommand &c);
int dump(const DumpCommand &c);
int init_weights(const InitWeightsCommand &c);

}  // namespace grove::tool
