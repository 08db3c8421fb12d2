#pragma once
// Every user-facing message of the CPU back end, in one place (running a model: runtime's Messages.h).

namespace grove::cpu_messages {

inline constexpr char kBadTarget[] =
    "unknown target '{}': use 'host' or a Halide target string such as x86-64-linux-avx2";

// Ahead-of-time compilation (`grove compile`, Aot.h); writing the libraries (the name, the output
// directory, the toolchain, the embedded weights' sizes): backends/aot/Messages.h.
inline constexpr char kAotNoRuntime[] =
    "cannot find libgrove_runtime.so, which compiled libraries link: looked in {}; build the "
    "grove_runtime_shared target or install grove";
inline constexpr char kAotNoInclude[] =
    "cannot find grove/grove.h, which compiled libraries include: looked in {}; install grove";
inline constexpr char kAotTwoWeights[] = "embed either a weights file or weights in memory, not both";

// Training (TrainableModel.h).
inline constexpr char kTrainingUnrolled[] =
    "{}: training programs do not run with recursive unrolling (schedule unroll > 1); use unroll=1";
inline constexpr char kTrainingWeightMissing[] = "{}: no tensor {} {} to train";
inline constexpr char kTrainingNeedsDags[] =
    "model {} runs over a {}: train it on DAGs or sequences (forward_dags), not trees";
inline constexpr char kTrainingNeedsTrees[] =
    "model {} runs over a {}: train it on trees (forward), not DAGs";
inline constexpr char kTrainingWeightShape[] = "{}: {} is {}, but the model's parameter is {}";

}  // namespace grove::cpu_messages
