#pragma once
// Every user-facing message of the training driver (training/) in one place: the classifier head,
// the optimizer state and checkpoints, GloVe files, and the trainer's inputs.

namespace grove::training_messages {

// The head (head.weight [C, H], head.bias [C]) in an --init file or a checkpoint.
inline constexpr char kHeadMissing[] =
    "{}: the classifier head is incomplete: expected 'head.weight' [C, {}] and 'head.bias' [C]";
inline constexpr char kHeadShape[] =
    "{}: the classifier head has head.weight {} and head.bias {}; expected [C, {}] and [C] with C >= 2";
inline constexpr char kHeadExtra[] =
    "{}: tensor '{}' is not part of the classifier head (head.weight, head.bias)";
inline constexpr char kHeadClasses[] = "{}: the classifier head has {} classes; this training uses {}";

// Optimizer state in a checkpoint.
inline constexpr char kOptimizerNoStep[] =
    "{}: no optimizer state: tensor '{}' is missing; resume from a checkpoint grove train wrote";
inline constexpr char kOptimizerBadStep[] = "{}: tensor '{}' is not a step count [high, low]";
inline constexpr char kOptimizerExtra[] =
    "{}: tensor '{}' is not state of the {} optimizer; resume with the optimizer and options the "
    "checkpoint was trained with";
inline constexpr char kOptimizerMissing[] = "{}: the optimizer state '{}' is missing";
inline constexpr char kOptimizerShape[] = "{}: optimizer state '{}' has shape {}; its parameter has {}";

// Checkpoints.
inline constexpr char kCheckpointOverInput[] =
    "cannot write checkpoint '{}': it is the input file '{}'; choose another --out directory";
inline constexpr char kCheckpointTrainer[] = "{}: tensor '{}' is not a trainer state [{}]";
inline constexpr char kCheckpointNoTrainer[] =
    "{}: no trainer state ('{}' is missing); resume from a checkpoint grove train wrote";
inline constexpr char kCheckpointUnknown[] =
    "{}: tensor '{}' is neither a parameter of the model, the head's (head.*) nor the optimizer's "
    "(optimizer.*)";

// GloVe text files: a word, then D numbers, separated by single spaces, one word per line.
inline constexpr char kGloveEmpty[] =
    "{}: the file is empty; expected GloVe's text format, a word and then D numbers per line";
inline constexpr char kGloveEmptyLine[] = "{}:{}: empty line; expected a word and then {} numbers";
inline constexpr char kGloveNoVector[] = "{}:{}: the word '{}' has no numbers after it; expected {} numbers";
inline constexpr char kGloveBadNumber[] = "{}:{}: '{}' is not a finite number (component {} of '{}')";
inline constexpr char kGloveWidth[] =
    "{}:{}: the word '{}' has {} numbers; expected {} (the width D of the model's embedding)";
inline constexpr char kGloveCarriageReturn[] =
    "{}:{}: carriage return (CR) in the line; GloVe files must use LF line endings";

// The trainer.
inline constexpr char kNoEmbedding[] =
    "model '{}' has no embedding parameter (a param its leaves index with their token); --embeddings "
    "needs one";
inline constexpr char kEmbeddingsNeedVocab[] =
    "--embeddings needs --vocab: GloVe vectors are looked up by word, and without a vocabulary the "
    "tokens are ids";
inline constexpr char kLabelTooHigh[] = "{}: tree {}, node {}: label {} is not one of the head's {} classes";
inline constexpr char kResumeParam[] =
    "{}: the checkpoint has no parameter '{}' of shape {}; resume from a checkpoint of the same model and "
    "sizes";
inline constexpr char kNoTrees[] = "{}: no trees to train on";

}  // namespace grove::training_messages
