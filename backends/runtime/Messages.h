#pragma once
// Every user-facing message of the runtime layer (sizes, binding weights, compiled models, the C API),
// in one place. The tensor files' messages (safetensors, .npy) are support's (support/Messages.h).
// Weight messages name the file first, then the tensor, then what was expected.

namespace grove::runtime_messages {

// Size variables given as text (`--sizes`, the C API, the Python module).
inline constexpr char kBadSizes[] =
    "--sizes: expected NAME=VALUE pairs separated by commas (H=256,D=256), got '{}'";
inline constexpr char kBadSizeValue[] = "--sizes: {} must be a positive integer, got '{}'";
inline constexpr char kUnknownSize[] =
    "--sizes: model {} has no size variable '{}' (its size variables are: {})";
inline constexpr char kMissingSize[] = "--sizes: model {} needs a value for size variable '{}'";

// Binding weights to a model's parameters.
inline constexpr char kWeightsMissing[] = "{}: missing tensor '{}' (the model expects shape {})";
inline constexpr char kWeightsMissingMore[] =
    "{}: missing tensor '{}' (the model expects shape {}); also missing: {}";
inline constexpr char kWeightsExtra[] =
    "{}: tensor '{}' is not a parameter of model '{}' (its parameters are: {})";
inline constexpr char kWeightsRank[] =
    "{}: tensor '{}' has shape {} (rank {}) but the model expects shape {} (rank {})";
inline constexpr char kWeightsShape[] = "{}: tensor '{}' has shape {} but the model expects shape {}";
inline constexpr char kWeightsNotMultiple[] =
    "{}: tensor '{}' has shape {} but the model expects shape {}: dimension {} is {}, which is not {} for "
    "any {} >= 1";
inline constexpr char kWeightsInconsistent[] =
    "{}: size {} = {} from tensor '{}' but {} from tensor '{}' (shape {}, the model expects shape {})";
inline constexpr char kWeightsUnsolvable[] = "{}: cannot determine size {} from the weights: {}";
inline constexpr char kWeightsUnsolvableNonlinear[] =
    "no parameter dimension is a multiple of {} alone plus a constant (it appears in {})";
inline constexpr char kWeightsUnsolvableUnused[] = "no parameter's shape uses it";

// Running a compiled model (Executor.h); its ABI's messages are abi/Messages.h.
inline constexpr char kNeedsAvx512Bf16[] =
    "model {} was compiled with precision=bf16, whose kernels use AVX512-BF16 (target {}); this CPU lacks "
    "AVX512-BF16: compile it with precision=fp32 to run here";
inline constexpr char kNeedsAmx[] =
    "model {} was compiled with precision=bf16 for AMX tiles (target {}), which cannot run here: {}; compile "
    "it with precision=fp32 to run here";
inline constexpr char kNoWeights[] =
    "model '{}' has no weights bound: bind a safetensors file or the model's tensors before running it";
inline constexpr char kWeightViewNull[] = "{}: tensor '{}' has no data (a null pointer)";
inline constexpr char kNegativeBatch[] = "--batch must be at least 0 (0 = all trees in one call), got {}";
inline constexpr char kBatchTooLarge[] =
    "a batch of {} trees has {} nodes: state '{}' would need {} floats, more than one buffer holds (2^31 - "
    "1); "
    "use --batch to run fewer trees per call";
inline constexpr char kTreesForDagModel[] =
    "model {} has 'structure {}': it runs over DAGs, grids or sequences (--dags, --grids, --sequences), not "
    "trees";
inline constexpr char kDagsForTreeModel[] =
    "model {} has 'structure {}': it runs over trees (--trees), not {}s; DAGs, grids and sequences need a "
    "'structure dag' or 'structure sequence' model";
inline constexpr char kRunFailed[] = "the compiled model failed with Halide error code {}";

// The C API (include/grove/grove.h, CApi.cpp). The first {} names the function. API misuse
// (GROVE_ERROR_INVALID_ARGUMENT) names the argument and the index; inputs are numbered as the
// caller's arrays are: trees, DAGs and nodes from 0, global node ids.
inline constexpr char kCApiNull[] = "{}: {} is a null pointer";
inline constexpr char kCApiNegative[] = "{}: {} is {}; it must be at least 0";
inline constexpr char kCApiFirstOffset[] = "{}: {}[0] is {}; it must be 0";
inline constexpr char kCApiDecreasing[] =
    "{}: {}[{}] = {} is less than {}[{}] = {}; the offsets must not decrease";
inline constexpr char kCApiTooManyEntries[] =
    "{}: {} is {}; a batch holds at most 2^31 - 1 (2147483647) of them";
inline constexpr char kCApiNodeOutOfRange[] =
    "{}: {}[{}] = {}: node {} belongs to {} {}, whose nodes are {} to {}; an index must name a node of "
    "the same {}{}";
inline constexpr char kCApiTreeForm[] =
    "grove_model_run_trees: give trees->parent, or trees->child_begin and trees->children, not {}";
inline constexpr char kCApiCapacity[] = "{}: out needs {} floats ({} rows of {}), got capacity {}";
inline constexpr char kCApiNothingToDo[] = "{}: out and rows are both null pointers: nothing to return";
inline constexpr char kCApiEnum[] = "{}: {} is {}, not one of {}";
inline constexpr char kCApiWrongInputs[] = "{}: model '{}' has structure {}: call {} instead";
inline constexpr char kCApiGridSize[] =
    "grove_model_run_grids: grids->{}[{}] is {}; a grid has at least one {}";
inline constexpr char kCApiGridTooLarge[] =
    "grove_model_run_grids: grid {} is {} x {} cells; a grid holds at most 2^30 - 1 cells";
inline constexpr char kCApiGridTokens[] =
    "grove_model_run_grids: grid {} is {} x {} = {} cells but grids->token_begin gives it {} tokens";
inline constexpr char kCApiParamIndex[] =
    "grove_model_param: index {} is out of range: model '{}' has {} parameters (0 to {})";
inline constexpr char kCApiTensorNull[] = "grove_model_bind_weights: tensors[{}].{} is a null pointer";
inline constexpr char kCApiTensorRank[] = "grove_model_bind_weights: tensors[{}] ('{}'): rank {} is negative";
inline constexpr char kCApiTensorDim[] =
    "grove_model_bind_weights: tensors[{}] ('{}'): shape[{}] = {} is negative";
inline constexpr char kCApiTensorDuplicate[] =
    "grove_model_bind_weights: tensors[{}] and tensors[{}] are both named '{}'";
inline constexpr char kCApiWeightsOrSizes[] =
    "grove_model_compile: give weights_file or options->sizes (exactly one of them), not {}";
inline constexpr char kCApiNoCompiler[] =
    "grove_model_compile: this program does not contain grove's compiler: link grove::compiler (and export "
    "grove_compiler_compile_v1) to compile model files at run time, or open a library written by `grove "
    "compile` with grove_model_open";
inline constexpr char kCApiNoRelay[] =
    "{}: this program does not contain grove's Relay back end: link grove::compiler (in grove's build tree: "
    "grove_relay_backend, and export grove_compiler_relay_open_v1) to open Relay programs";
inline constexpr char kCApiRelayTensorNull[] = "grove_relay_run: inputs[{}].{} is a null pointer";
inline constexpr char kCApiRelayTensorRank[] = "grove_relay_run: inputs[{}]: rank {} is negative";
inline constexpr char kCApiRelayTensorDim[] = "grove_relay_run: inputs[{}]: shape[{}] = {} is negative";
inline constexpr char kCApiRelayTensorSize[] =
    "grove_relay_run: inputs[{}]: shape {} has more elements than memory can hold";
inline constexpr char kCApiRelayTarget[] = "{}: options->targets[{}] is a null pointer";
inline constexpr char kCApiRelayParamIndex[] =
    "grove_relay_param_info: index {} is out of range: @main has {} parameters{}";
inline constexpr char kCApiRelayResultIndex[] =
    "grove_relay_result_tensor: index {} is out of range: the result has {} tensors{}";
inline constexpr char kCApiTreeNoRootParent[] =
    "tree {}: no node has parent -1, so the tree has no root (its parent links form a cycle)";
inline constexpr char kCApiTreeNoRootChildren[] =
    "tree {}: every node is some node's child, so the tree has no root (its child links form a cycle)";
// Appended to the inspector's messages about one input ("tree 3: node 2 ..."), which number inputs
// from 1 and nodes within the input, to place it in the caller's arrays.
inline constexpr char kCApiInputNumbering[] =
    "{} [input {} of the C API batch, counting from 0; its node j is element {} + j of the batch's {}]";
inline constexpr char kCApiOutOfMemory[] = "out of memory";
inline constexpr char kCApiUnknownError[] = "an unexpected error: {}";

// Libraries written by `grove compile` (CompiledLibrary.h).
inline constexpr char kLibraryMissing[] = "cannot open compiled model {}: no such file";
inline constexpr char kLibraryLoad[] = "cannot load compiled model {}: {}";
inline constexpr char kLibraryNotGrove[] =
    "{} is not a model compiled by `grove compile`: it defines no grove_compiled_model_entry";
inline constexpr char kLibraryIncomplete[] = "{}: the compiled model's descriptor has no {}";

}  // namespace grove::runtime_messages
