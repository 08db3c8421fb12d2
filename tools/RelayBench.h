#pragma once
// `grove relay bench`: how fast a Relay program's @main runs on the interpreter or the VM, with
// `grove bench`'s protocol (tools/Bench.h; experiments/README.md, "Protocol") so the figures compare:
//   1. compile once (timed: parse, type inference and, for the VM, the bytecode; the VM compiles its
//      kernels on first use, so their compilation falls in the warm-up pass, reported apart);
//   2. one pass calls @main once, or with --trees once per --batch trees (the tree-list parameter
//      bound per call; the List values are built before timing);
//   3. one pass warms up, then `repeat` passes are timed, each giving (pass time ÷ calls);
//   4. report the median, min and max of those.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace grove::tool {

struct RelayBenchCommand {
  std::string file, executor = "vm";
  std::vector<std::string> args;  // NAME=FILE.npy or NAME=@FILE, as grove relay run takes them
  std::string trees, vocab;       // PTB trees for @main's List[Tree[int32]] / List[Rose[int32]] parameter
  int64_t batch = 0;              // with trees: trees per call (required)
  int64_t repeat = 5;
  bool random_args = false;  // fill tensor parameters no --arg gives: uniform ±1/sqrt(fan-in), seeded
  uint64_t seed = 1;
  bool json = false;   // one JSON object instead of the text report
  bool quiet = false;  // no progress line on a terminal (tools/Progress.h)
  int threads = 0;     // the VM's kernels and recursive functions; 0: all cores
  std::vector<std::string>
      targets;  // external code generators to partition for first (BYOC), in priority order
};

// Runs the benchmark and prints its report to `out`; returns the exit status.
int relay_bench(const RelayBenchCommand &c, std::ostream &out);

}  // namespace grove::tool
