#pragma once
// The subcommands of the `grove` program. Each takes its parsed options and returns the exit status.

#include <cstdint>
#include <map>
#include <string>

#include "tools/RandomWeights.h"  // parse_sizes

namespace grove::tool {

struct RunCommand {
  std::string model, weights, trees, vocab, out, target = "host", schedule;
  int64_t batch = 0;
  bool stats = false;
};

struct DumpCommand {
  std::string model, stage = "ilir", sizes, target = "host", schedule;
};

struct InitWeightsCommand {
  std::string model, sizes, out;
  uint64_t seed = 1;
};

int run(const RunCommand &c);
int dump(const DumpCommand &c);
int init_weights(const InitWeightsCommand &c);

}  // namespace grove::tool
