#pragma once
// The user-facing messages of the Python module's training classes (python/TrainingBindings.cpp):
// grove.TrainableModel and grove.Trainer. Wrong values raise grove.GroveError, arguments of the wrong
// Python type TypeError, as in python/Messages.h.

namespace grove::python_messages {

inline constexpr char kTrainNeedWeightsOrSizes[] =
    "TrainableModel({}): give weights (a safetensors path or a dict of arrays) or sizes (e.g. "
    "'H=4,V=10' for seeded random weights)";
inline constexpr char kBackwardFirst[] =
    "backward(): no forward() to differentiate; call forward(trees) first (a forward that failed "
    "leaves none)";
inline constexpr char kDRowsType[] = "d_rows: expected a float array [nodes, {}], got {}";
inline constexpr char kDRowsDtype[] = "d_rows: expected a floating-point array, got dtype {}";
inline constexpr char kDRowsShape[] =
    "d_rows: expected shape [{}, {}] (the last forward's nodes x the output state's size), got {}";
inline constexpr char kLabelledType[] =
    "{}: expected a labelled PTB file path (str or os.PathLike), a list of labelled PTB strings such "
    "as '(3 (2 It) (4 good))', or grove.LabelledTrees, got {}";
inline constexpr char kLabelledLineType[] = "{}: tree {} is a {}, not a labelled PTB string";
inline constexpr char kLabelledClasses[] =
    "{}: read for {} classes, but the trainer has {}; read them with classes={}";
inline constexpr char kTrainChoice[] = "{} must be {}, got '{}'";
inline constexpr char kTrainPositive[] = "{} must be at least 1, got {}";
inline constexpr char kTrainNonNegative[] = "{} must be at least 0, got {}";
inline constexpr char kTrainRate[] = "{} must be a finite number >= 0, got {}";
inline constexpr char kTrainDropout[] = "dropout must be in [0, 1), got {}";
inline constexpr char kTrainClasses[] = "classes must be at least 2, got {}";
inline constexpr char kTrainSizeV[] =
    "Trainer({}): the size V (the embedding's rows) is not known: give vocab=, sizes='V=...', or "
    "trees= (V is then their largest token id + 1)";
inline constexpr char kTrainVocabSize[] = "sizes: V = {} but {} is {}";
inline constexpr char kTrainHeadClasses[] = "{}: its head has {} classes, not classes={}";
inline constexpr char kTrainSizesWithInit[] =
    "sizes apply to random initial weights only; the sizes come from init ({})";
inline constexpr char kTrainNoLabelledTrees[] = "{}: no trees";
inline constexpr char kTrainLabel[] =
    "{}: tree {} node {} has label {}, but the trainer has {} classes (0 to {})";

}  // namespace grove::python_messages
