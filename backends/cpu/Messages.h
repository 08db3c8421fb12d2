#pragma once
// Every user-facing message of the CPU back end, in one place.

namespace grove::cpu_messages {

inline constexpr char kBadTarget[] =
    "unknown target '{}': use 'host' or a Halide target string such as x86-64-linux-avx2";
inline constexpr char kBatchTooLarge[] =
    "a batch of {} trees has {} nodes: state '{}' would need {} floats, more than one buffer holds (2^31 - "
    "1); "
    "use --batch to run fewer trees per call";
inline constexpr char kNegativeBatch[] = "--batch must be at least 0 (0 = all trees in one call), got {}";
inline constexpr char kTreesForDagModel[] =
    "model {} has 'structure {}': it runs over DAGs, grids or sequences (--dags, --grids, --sequences), not "
    "trees";
inline constexpr char kDagsForTreeModel[] =
    "model {} has 'structure {}': it runs over trees (--trees), not {}s; DAGs, grids and sequences need a "
    "'structure dag' or 'structure sequence' model";
inline constexpr char kRunFailed[] = "the compiled model failed with Halide error code {}";

}  // namespace grove::cpu_messages
