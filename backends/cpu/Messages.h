#pragma once
// Every user-facing message of the CPU back end, in one place (running a model: runtime's Messages.h).

namespace grove::cpu_messages {

inline constexpr char kBadTarget[] =
    "unknown target '{}': use 'host' or a Halide target string such as x86-64-linux-avx2";

// Ahead-of-time compilation (`grove compile`, Aot.h).
inline constexpr char kAotBadName[] =
    "--name '{}' is not a C identifier: the library's symbols are named after it (letters, digits and _, "
    "not starting with a digit)";
inline constexpr char kAotOutDirNotDir[] = "-o {}: exists and is not a directory";
inline constexpr char kAotOutDir[] = "-o {}: cannot create the output directory: {}";
inline constexpr char kAotTempDir[] = "-o {}: cannot create a temporary directory in it: {}";
inline constexpr char kAotWrite[] = "cannot write {}: {}";
inline constexpr char kAotRead[] = "cannot read {}: {}";
inline constexpr char kAotRename[] = "cannot move {} into place as {}: {}";
inline constexpr char kAotNoRuntime[] =
    "cannot find libgrove_runtime.so, which compiled libraries link: looked in {}; build the "
    "grove_runtime_shared target or install grove";
inline constexpr char kAotNoInclude[] =
    "cannot find grove/grove.h, which compiled libraries include: looked in {}; install grove";
inline constexpr char kAotTool[] = "`grove compile` could not build {}: `{}` failed ({}):\n{}";
inline constexpr char kAotNoTool[] = "no such program: install a C toolchain, or name it in ${}";
inline constexpr char kAotTwoWeights[] = "embed either a weights file or weights in memory, not both";
inline constexpr char kAotWeightsSizes[] =
    "{}: the weights give {} = {}, but the library is compiled with {} = {}";

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
