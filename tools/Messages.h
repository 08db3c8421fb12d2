#pragma once
// Every user-facing message of the `grove` program, in one place.

namespace grove::tool_messages {

inline constexpr char kBadSizes[] =
    "--sizes: expected NAME=VALUE pairs separated by commas (H=256,D=256), got '{}'";
inline constexpr char kBadSizeValue[] = "--sizes: {} must be a positive integer, got '{}'";
inline constexpr char kUnknownSize[] =
    "--sizes: model {} has no size variable '{}' (its size variables are: {})";
inline constexpr char kMissingSize[] = "--sizes: model {} needs a value for size variable '{}'";
inline constexpr char kOutIsInput[] = "--out {} is also the {} file: grove never overwrites its own inputs";
inline constexpr char kNoInputs[] = "{}: no {} to run";
inline constexpr char kInputCount[] =
    "{} needs exactly one input: --trees, --dags, --grids or --sequences; {}";
inline constexpr char kBadSweep[] = "--sweep must be se, sw, ne or nw, got '{}'";
inline constexpr char kSweepWithoutGrids[] = "--sweep applies only to --grids";
inline constexpr char kAllNodesWithoutDags[] = "--all-nodes applies only to --dags and --grids";
inline constexpr char kVocabWithoutText[] =
    "--vocab applies only to --trees and --sequences; DAG and grid tokens are integer ids";
inline constexpr char kBenchWeights[] =
    "bench: give exactly one of --weights FILE and --random-weights (with --sizes H=...,V=...)";
inline constexpr char kBenchSizesWithWeights[] =
    "bench: --sizes {} applies to --random-weights only; with --weights the sizes come from {}";
inline constexpr char kBenchBadCount[] = "bench: {} must be positive, got {}";
inline constexpr char kTuneCacheMalformed[] = "tuning cache {} is malformed: {}";
inline constexpr char kTuneNoEntry[] =
    "--tuned: no tuned schedule for '{}' in {}; run `grove tune` with the same model, weights, --batch and "
    "threads first";

// grove relay
inline constexpr char kRelayNoMain[] = "{}: the module has no @main to run";
inline constexpr char kRelayBadArg[] = "--arg: expected NAME=FILE.npy (e.g. --arg x=input.npy), got '{}'";
inline constexpr char kRelayArgTwice[] = "--arg: parameter %{} is given twice";
inline constexpr char kRelayMissingArg[] =
    "--arg: @main's parameter %{} of {} has no value (its parameters: {})";
inline constexpr char kRelayUnknownArg[] = "--arg: @main of {1} has no parameter %{0} (its parameters: {2})";
inline constexpr char kRelayArgNotTensor[] =
    "--arg: parameter %{} has type {}; grove relay run binds tensor parameters from .npy files only";
inline constexpr char kRelayExecutor[] =
    "--executor {}: grove relay run knows --executor interp (the reference interpreter) and --executor vm "
    "(the compiled virtual machine)";
inline constexpr char kRelayDumpStage[] = "--stage {}: grove relay dump knows --stage vm (the VM's bytecode)";
inline constexpr char kRelayOutNotTensors[] =
    "--out: the result {} is not a tensor or a tuple of tensors; run without --out to print it";
inline constexpr char kRelayOutDirectory[] =
    "--out {}: cannot create the directory for the tuple's fields: {}";
inline constexpr char kRelayMetaNeedsOut[] =
    "the optimized module has {} large constants (meta[relay.Constant]); write it with --out FILE.relay, "
    "which "
    "puts them in FILE.meta.safetensors";
inline constexpr char kRelayFuseDepth[] = "--fuse-max-depth must be at least 1, got {}";

}  // namespace grove::tool_messages
