#pragma once
// `grove bench`: how fast a compiled model runs over a set of trees (or DAGs, grids, sequences),
// measured with the peers' protocol (experiments/README.md, "Protocol") so that the figures compare
// directly:
//   1. compile once (timed: compile_ms);
//   2. one pass runs all inputs in calls of `batch` (CompiledModel::run, RunOptions{.batch});
//   3. one pass warms up, then `repeat` passes are timed, each giving (pass time ÷ calls);
//   4. report the median of those, with p10/p90 (linear interpolation, as numpy's percentile),
//      trees/s and GFLOP/s (tools/Flops.h: 2·M·K per matrix–vector product per node).

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "datasets/Tree.h"
#include "ilir/IR.h"
#include "support/Tensor.h"
#include "tools/Inputs.h"

namespace grove::tool {

class Progress;

struct BenchCommand {
  std::string model, weights, sizes, schedule, target = "host";
  InputFiles inputs;            // exactly one of trees, DAGs, grids or sequences
  bool random_weights = false;  // seeded weights as `grove init-weights` writes them (needs sizes)
  uint64_t seed = 1;
  int64_t batch = 10, repeat = 5;
  int64_t threads = 0;  // > 0: the schedule's threads=K
  int64_t limit = 0;    // > 0: only the first `limit` inputs
  bool json = false;    // one JSON object instead of the text report
  bool tuned = false;   // start from the schedule `grove tune` cached for this model and batch
  std::string cache;    // the tuning cache (default: tools/Tune.h)
  bool quiet = false;   // no progress line on a terminal (tools/Progress.h)
  std::string cuda;     // --target cuda: the kernels' form (CudaEmitter.h's parse_cuda_options)
};

// Runs the benchmark and prints its report to `out`; returns the exit status.
int bench(const BenchCommand &c, std::ostream &out);

// What a benchmark (or `grove tune`) runs on: the model, its weights and sizes, the inputs.
struct BenchInputs {
  ilir::Program program;
  Weights weights;
  std::map<std::string, int64_t> sizes;
  Inputs inputs;
};
// Reads and checks what `c` names (weights or random weights, the input file, vocabulary, limit).
BenchInputs load_bench_inputs(const BenchCommand &c);
// The compile options of `c` with `schedule` as the overrides (and c.threads appended).
cpu::CompileOptions bench_compile_options(const BenchCommand &c, const std::string &schedule);

struct Timing {
  std::vector<double> ms_per_batch;   // one per timed pass: pass time ÷ calls
  int64_t calls = 0;                  // calls per pass
  cpu::RunStats pass;                 // what one pass did (nodes, levels, inspector time, ...)
  double inspector_ms_per_batch = 0;  // median over the timed passes
};

// Steps 2 and 3 of the protocol on a compiled model: one warm-up pass, then `repeat` timed ones.
// `progress`, if given, is updated with the passes done after each pass (outside the timed part).
Timing time_passes(const cpu::CompiledModel &model, const Inputs &inputs, int64_t batch, int64_t repeat,
                   Progress *progress = nullptr);
// The same over any model: `pass` runs every input once, in calls of the batch, adding to `stats`
// (the GPU's, tools/CudaCommands.h).
Timing time_passes(const std::function<void(cpu::RunStats *stats)> &pass, int64_t repeat,
                   Progress *progress = nullptr);

// Step 4's figures from the timed passes: the median, p10 and p90 (ms per batch), the FLOPs per
// batch (tools/Flops.h), GFLOP/s and trees (inputs) per second at the median.
struct BenchFigures {
  double median = 0, p10 = 0, p90 = 0, flops_per_batch = 0, gflops = 0, trees_per_s = 0;
};
BenchFigures bench_figures(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                           const Inputs &inputs, const Timing &timing);

// The report's parts every target has: the JSON object's fields (a target adds its own), the text
// report's first lines (the model, the inputs) and its last (inspector, time, rate; `time_note`
// follows p90 in the time line).
nlohmann::json bench_json(const BenchCommand &c, const ilir::Program &program,
                          const std::map<std::string, int64_t> &sizes, const Inputs &inputs,
                          const Timing &timing, const BenchFigures &figures, const std::string &schedule,
                          const std::string &precision, double compile_ms);
void print_bench_head(std::ostream &out, const BenchCommand &c, const ilir::Program &program,
                      const std::map<std::string, int64_t> &sizes, const Inputs &inputs,
                      const Timing &timing);
void print_bench_tail(std::ostream &out, const BenchCommand &c, const Inputs &inputs, const Timing &timing,
                      const BenchFigures &figures, const char *time_note);

// "D=256,H=256,V=100": the sizes in name order.
std::string sizes_string(const std::map<std::string, int64_t> &sizes);

// The p-th percentile (0..100) of `values` (non-empty), interpolating linearly between order
// statistics as numpy's default does.
double percentile(std::vector<double> values, double p);

}  // namespace grove::tool
