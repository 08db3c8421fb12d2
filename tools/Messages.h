#pragma once
// Every user-facing message of the `grove` program, in one place.

namespace grove::tool_messages {

inline constexpr char kOutIsInput[] = "--out {} is also the {} file: grove never overwrites its own inputs";
inline constexpr char kNoInputs[] = "{}: no {} to run";
inline constexpr char kInputCount[] =
    "{} needs exactly one input: --trees, --dags, --grids or --sequences; {}";
inline constexpr char kTrainingCuda[] =
    "dump --training: the CUDA back end does not run training programs yet (--stage {}); use ilir, plan, "
    "loops, llvm or asm";
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

// grove train
inline constexpr char kTrainPositive[] = "train: {} must be at least 1, got {}";
inline constexpr char kTrainNonNegative[] = "train: {} must be at least 0, got {}";
inline constexpr char kTrainRate[] = "train: {} must be a finite number >= 0, got {}";
inline constexpr char kTrainDropout[] = "train: --dropout must be in [0, 1), got {}";
inline constexpr char kTrainOptimizer[] = "train: --optimizer must be adagrad, adam or sgd, got '{}'";
inline constexpr char kTrainEmbOptimizer[] =
    "train: --emb-optimizer must be sgd (plain SGD at --emb-lr, the recipe) or same (the --optimizer at "
    "--emb-lr), got '{}'";
inline constexpr char kTrainLoss[] = "train: --loss must be all (every labelled node) or root, got '{}'";
inline constexpr char kTrainAverage[] =
    "train: --average must be nodes (the mean over a batch's labelled nodes, as PyTorch) or trees (their sum "
    "over the batch's trees, Tai et al.'s), got '{}'";
inline constexpr char kTrainInitAndResume[] =
    "train: give --init (initial weights) or --resume (a checkpoint to continue), not both";
inline constexpr char kTrainSizesWithWeights[] =
    "train: --sizes {} applies to random initial weights only; the sizes come from {}";
inline constexpr char kTrainEmbeddingsNeedVocab[] =
    "train: --embeddings needs --vocab: GloVe vectors are looked up by word, and without a vocabulary the "
    "tokens are ids";
inline constexpr char kTrainEmbeddingsAndResume[] =
    "train: --embeddings initializes the embedding; a --resume checkpoint already holds it";
inline constexpr char kTrainOutNotDir[] = "train: --out {} is not a directory grove can create or use: {}";
inline constexpr char kTrainOutIsInput[] =
    "train: the checkpoint {} would replace the input {}: grove never overwrites its own inputs; choose "
    "another --out";
inline constexpr char kTrainStepLog[] = "train: --step-log {}: cannot write it: {}";
inline constexpr char kTrainStepLogIsInput[] =
    "train: --step-log {} would replace the input {}: grove never overwrites its own inputs";
inline constexpr char kTrainVocabSize[] = "train: --sizes V={} disagrees with {}, {}";
inline constexpr char kTrainNoEmbedding[] =
    "train: --embeddings: model '{}' has no embedding (a parameter its leaves index with their token)";
inline constexpr char kTrainHeadClasses[] = "train: {}: the classifier head has {} classes; SST has {}";
inline constexpr char kTrainNothingLeft[] =
    "nothing to train: the checkpoint has {} epochs done, which --epochs does not exceed (or early stopping "
    "ended it)";

// grove relay
inline constexpr char kRelayNoMain[] = "{}: the module has no @main to run";
inline constexpr char kRelayBadArg[] =
    "--arg: expected NAME=FILE.npy or NAME=@VALUE_FILE (e.g. --arg x=input.npy), got '{}'";
inline constexpr char kRelayArgTwice[] = "--arg: parameter %{} is given twice";
inline constexpr char kRelayMissingArg[] =
    "--arg: @main's parameter %{} of {} has no value (its parameters: {})";
inline constexpr char kRelayUnknownArg[] = "--arg: @main of {1} has no parameter %{0} (its parameters: {2})";
inline constexpr char kRelayArgNotTensor[] =
    "--arg: parameter %{} has type {}; a .npy file binds tensor parameters only: write the value in Relay's "
    "syntax in a file and pass NAME=@FILE (or --trees for a list of trees)";
inline constexpr char kRelayValueType[] =
    "--arg {}=@{}: parameter %{} has type {}, but the value has type {}";
inline constexpr char kRelayValueIllTyped[] =
    "--arg {}=@{}: parameter %{} has type {}, but the value does not type-check: {}";
inline constexpr char kRelayValueTooDeep[] =
    "--arg {}=@FILE: a value file nests at most 500 levels, so a list written as Cons(x, Cons(...)) has at "
    "most about 500 elements; pass trees with --trees, or a long sequence as a tensor (.npy)";
inline constexpr char kRelayValueFreeVar[] =
    "--arg {}=@{}: the value has a free variable %{}; a value file holds a closed expression such as "
    "Cons(Leaf(3), Nil), (1f, 2i64) or True";
inline constexpr char kRelayNoTreeParam[] =
    "--trees: @main of {} has no parameter of type List[Tree[int32]] or List[Rose[int32]] that --arg does "
    "not give (its parameters: {})";
inline constexpr char kRelayManyTreeParams[] =
    "--trees: @main of {} has several parameters that take trees ({}); grove binds --trees to exactly one: "
    "give the others with --arg NAME=@FILE";
inline constexpr char kRelayVocabWithoutTrees[] = "--vocab {}: a vocabulary is only read with --trees";
inline constexpr char kRelayExecutor[] =
    "--executor {}: grove relay run knows --executor interp (the reference interpreter) and --executor vm "
    "(the compiled virtual machine)";
inline constexpr char kRelayMetaMode[] =
    "--meta {}: grove relay opt writes constants to the sidecar (--meta sidecar) or to a #[metadata] "
    "section in the text (--meta inline)";
inline constexpr char kRelayInterpThreads[] =
    "--threads applies to the VM; the interpreter (--executor interp) runs on the calling thread";
inline constexpr char kRelayDumpStage[] =
    "--stage {}: grove relay dump knows --stage vm (the VM's bytecode), --stage claimed (the module after "
    "grove's recursive compiler claimed its functions, before fusion), --stage ilir (the ILIR of each "
    "global grove's recursive compiler compiles) and --stage model (the model each one is translated to)";
inline constexpr char kRelayDumpArgStage[] =
    "--arg {}: grove relay dump takes --arg only with --stage ilir or model (the weights' shapes), not with "
    "--stage {}";
inline constexpr char kRelayIlirNone[] =
    "{}: no global is compiled by grove's recursive compiler, so there is no ILIR to print:\n{}";
inline constexpr char kRelayIlirShape[] =
    "{}: @{}'s parameter %{} has type {}, whose shape is not fully known; --stage ilir needs every weight's "
    "shape: give it with --arg {}=FILE.npy";
inline constexpr char kRelayIlirStep[] =
    "{}: @{}'s list parameter %{} has type {}, whose steps' length is not known; --stage ilir needs it: give "
    "one step with --arg {}=FILE.npy";
inline constexpr char kRelayIlirArgValue[] =
    "--arg {}=@{}: --stage ilir reads only tensors (NAME=FILE.npy) for the weights' shapes";
inline constexpr char kRelayIlirUnknownArg[] =
    "--arg {}: no global that grove's recursive compiler compiles has a weight parameter %{} ({})";
inline constexpr char kRelayOutNotTensors[] =
    "--out: the result {} is not a tensor or a tuple or list of tensors; run without --out to print it";
inline constexpr char kRelayOutDirectory[] =
    "--out {}: cannot create the directory for the tuple's fields: {}";
inline constexpr char kRelayMetaNeedsOut[] =
    "the optimized module has {} large constants (meta[relay.Constant]); write it with --out FILE.relay, "
    "which "
    "puts them in FILE.meta.safetensors";
inline constexpr char kRelayFuseDepth[] = "--fuse-max-depth must be at least 1, got {}";
inline constexpr char kRelayTargetOnSaved[] =
    "--target: {} is a program grove relay build already partitioned; --target applies to a .relay file";

inline constexpr char kCompileWeightsOrSizes[] =
    "compile: give exactly one of --weights FILE (the sizes come from it) and --sizes H=...,V=...";
inline constexpr char kCompileEmbedWithoutWeights[] = "compile: --embed-weights needs --weights FILE";
inline constexpr char kCompileArchWithoutCuda[] =
    "compile: --arch and --no-ptx choose GPU architectures and apply only with --target cuda";
inline constexpr char kRunLibraryOptions[] =
    "run: {} is a compiled library: its target and schedule were fixed by `grove compile`, so --target, "
    "--schedule and --tuned do not apply";
inline constexpr char kRunChunk[] = "run: --chunk must be at least 1, got {}";
inline constexpr char kRunThreads[] = "run: --threads must be at least 1 (or 0 for the default), got {}";
inline constexpr char kMpiNotBuilt[] =
    "run: started by an MPI launcher ({} is set), but this grove was built without MPI, so every process "
    "would run the whole input; rebuild grove with Debian's libopenmpi-dev installed, or run it without "
    "mpirun";
inline constexpr char kMpiFailed[] = "run: MPI: {} failed: {}";
// The error of the first rank that failed, as one process would report it, and which rank it was.
inline constexpr char kMpiRankFailed[] = "{} (rank {} of {}; the other ranks stopped, no output written)";
inline constexpr char kRunNeedsWeights[] =
    "run: --weights is required with a model file (only a library written by `grove compile "
    "--embed-weights` carries its own)";
inline constexpr char kCompileThreads[] = "compile: --threads must be at least 1, got {}";

}  // namespace grove::tool_messages
