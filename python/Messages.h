#pragma once
// Every user-facing message of the Python module, in one place. A Python type error (a float where a
// token id belongs) raises TypeError; a wrong value (a bad tree, a weight of the wrong shape) raises
// grove.GroveError. Messages name the argument and, for one input of a list, its number from 1 as grove
// numbers trees in files and batches (`tree 3`); PTB strings read like the lines of a file (`trees:3:7`).

namespace grove::python_messages {

// compile(): weights, sizes and options.
inline constexpr char kNeedWeightsOrSizes[] =
    "compile({}): give weights (a safetensors path or a dict of arrays) or sizes (e.g. 'H=256,D=256,V=100' "
    "for seeded random weights)";
inline constexpr char kWeightsType[] =
    "weights: expected a safetensors path (str or os.PathLike) or a dict of name -> array, got {}";
inline constexpr char kWeightNameType[] = "weights: every key must be a str (a parameter name), got {}";
inline constexpr char kWeightValueType[] =
    "weights['{}']: expected a numeric array (NumPy array, torch tensor or nested list of numbers), got {}";
inline constexpr char kWeightDtype[] =
    "weights['{}']: expected a real numeric array to convert to float32, got dtype {}";
inline constexpr char kSizesType[] =
    "sizes: expected a str such as 'H=256,D=256' or a dict of name -> int, got {}";
inline constexpr char kSizesEntryType[] = "sizes: expected str keys and int values, got {}: {}";
inline constexpr char kSizeDisagrees[] =
    "sizes: {} = {} but the weights give {} = {}; leave sizes out or make it agree with the weights";
inline constexpr char kThreads[] = "threads must be at least 1, got {}";
inline constexpr char kCudaThreads[] =
    "threads={} does not apply to target='cuda': the grid is set by cuda='blocks=N,threads=N'";
inline constexpr char kCudaWithoutTarget[] =
    "cuda= (the CUDA kernels' options) applies only with target='cuda'";
inline constexpr char kOptionType[] = "{}: expected {}, got {}";

// grove.relay: programs and their arguments.
inline constexpr char kRelayExecutor[] =
    "executor='{}': grove.relay knows executor='vm' (the compiled virtual machine) and executor='interp' "
    "(the "
    "reference interpreter)";
inline constexpr char kRelayDtype[] =
    "{}: dtype {} is not one grove's Relay programs take (bool, int8 to int64, uint8 to uint64, float16, "
    "float32, float64)";
inline constexpr char kRelayArgType[] = "{}: expected a NumPy array, got {}";
inline constexpr char kRelayTreesType[] =
    "trees: expected a str (one PTB tree per line) or a list of str, got {}";
inline constexpr char kRelayTreeType[] =
    "trees: tree {} is a {}, not a PTB string such as '(3 (2 It) (4 good))'";

// Vocabularies given as a dict.
inline constexpr char kVocabType[] =
    "vocab: expected a vocabulary file path or a dict of token -> id, got {}";
inline constexpr char kVocabEntryType[] = "vocab: expected str tokens and int ids, got {}: {}";
inline constexpr char kVocabId[] = "vocab: token '{}' has id {}; ids must be in [0, 2^31)";
inline constexpr char kVocabDictName[] = "the vocab dict";

// Inputs.
inline constexpr char kTreesType[] = "trees: expected a list of trees, got {}";
inline constexpr char kTreeType[] =
    "tree {}: expected a PTB string '(3 (2 It) (4 good))', a nested tuple of token ids ((1, 2), 3) or a "
    "(parent, tokens) pair of integer arrays, got {}";
inline constexpr char kTupleNodeType[] =
    "tree {}: a nested tuple holds token ids (int) at its leaves and tuples of children inside, found {}";
inline constexpr char kTupleEmpty[] = "tree {}: an empty tuple is not a node; an internal node has children";
inline constexpr char kTupleToken[] = "tree {}: token id {} is out of range; token ids are in [0, 2^31)";
inline constexpr char kTooLarge[] = "{}: the input has more than 2^31 - 1 nodes or predecessor slots";
inline constexpr char kArrayType[] = "{}: expected an integer array (NumPy, torch or a list of int), got {}";
inline constexpr char kArrayDtype[] = "{}: expected an integer array, got dtype {}";
inline constexpr char kArrayRank[] = "{}: expected a {}-D array, got shape {}";
inline constexpr char kArrayLengths[] =
    "{}: parent has {} entries but tokens has {}; give one of each per node";
inline constexpr char kParentRange[] =
    "{}: parent[{}] = {} is not a node of the tree (nodes {}..{}) nor -1 (the root)";
inline constexpr char kNoRoot[] = "{}: no node has parent -1, so the tree has no root";
inline constexpr char kTwoRoots[] = "{}: nodes {} and {} both have parent -1; a tree has one root";
inline constexpr char kNodeBegin[] =
    "node_begin: expected non-decreasing offsets from 0 to {} (the number of nodes), got node_begin[{}] = {}";
inline constexpr char kEmptyArrayTree[] = "{}: the tree has no nodes";
inline constexpr char kSequenceToken[] = "sequence {}: token {} at position {} is out of range [0, 2^31)";
inline constexpr char kDagType[] =
    "DAG {}: expected a (preds, tokens) pair: preds an integer array [nodes, slots] (-1 for an empty "
    "slot), "
    "tokens an integer array [nodes], got {}";
inline constexpr char kDagLengths[] = "DAG {}: preds has {} rows but tokens has {} entries";
inline constexpr char kOutputs[] = "outputs: expected 'sinks' or 'all_nodes', got '{}'";
inline constexpr char kNegativeBatch[] = "batch must be at least 0 (0 = all inputs in one call), got {}";

// DLPack export (python/DLPack.h).
inline constexpr char kDLPackStream[] = "__dlpack__: a CPU tensor takes stream=None, got {}";
inline constexpr char kDLPackExported[] = "this grove result was already exported through DLPack";

}  // namespace grove::python_messages
