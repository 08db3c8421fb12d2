#pragma once
// Every user-facing message about input structures, in one place: vocabulary files, PTB tree files,
// the tree generators' arguments, and the inspector's checks of a batch of trees (the inspector lives
// in backends/runtime, but what it reports is always a fault of the input trees).
//
// File messages start with `file:line:col` (columns count characters, from 1); inspector messages
// start with the tree number (`first_tree_number` + index in the batch) and the node id.

namespace grove::dataset_messages {

// Files in general.
inline constexpr char kCannotRead[] = "cannot read {} '{}': {}";

// UTF-8, shared by the vocabulary and tree readers. The third {} is "file" or "line".
inline constexpr char kInvalidUtf8[] =
    "{}:{}:{}: invalid UTF-8: byte 0x{:02X} at byte offset {} of the {}; the text must be UTF-8";

// Vocabulary files: one token per line, the id of a token is its line number from 0.
inline constexpr char kVocabEmpty[] = "{}: the vocabulary file is empty; expected one token per line";
inline constexpr char kVocabEmptyLine[] = "{}:{}: empty line in the vocabulary; expected one token per line";
inline constexpr char kVocabCarriageReturn[] =
    "{}:{}:{}: carriage return (CR) in the vocabulary; the file must use LF line endings";
inline constexpr char kVocabSeparator[] =
    "{}:{}:{}: token '{}' contains {}; tokens cannot contain ASCII spaces or parentheses, because the "
    "tree reader splits on them";
inline constexpr char kVocabControl[] =
    "{}:{}:{}: control character 0x{:02X} in token '{}'; expected printable text";
inline constexpr char kVocabDuplicate[] = "{}:{}: token '{}' is also on line {}; each token must appear once";
inline constexpr char kVocabTooLarge[] = "{}: the vocabulary has more than {} tokens";

// PTB bracket trees, one per line: `(label token)` or `(label child...)`.
inline constexpr char kPtbEmptyFile[] =
    "{}: the file is empty; expected one tree per line such as '(3 (2 It) (4 good))'";
inline constexpr char kPtbEmptyLine[] =
    "{}:{}: empty line; expected one tree per line such as '(3 (2 It) (4 good))'";
inline constexpr char kPtbExpectedOpen[] = "{}:{}:{}: expected '(' to start a tree, found {}";
inline constexpr char kPtbEmptyNode[] =
    "{}:{}:{}: empty node '()'; expected '(label token)' or '(label child...)'";
inline constexpr char kPtbMissingLabel[] =
    "{}:{}:{}: the node has no label: expected a label after '(', found {}";
inline constexpr char kPtbLabelOnly[] =
    "{}:{}:{}: node '({})' has a label but no token or children; expected '(label token)' or '(label "
    "child...)'";
inline constexpr char kPtbMissingClose[] =
    "{}:{}:{}: missing ')': expected ')' to close the node opened at column {}, found end of line";
inline constexpr char kPtbCloseAfterToken[] =
    "{}:{}:{}: expected ')' after the token '{}', found {}; a leaf is '(label token)'";
inline constexpr char kPtbTokenAfterChild[] =
    "{}:{}:{}: expected '(' or ')' after a child node, found the token '{}'; a node has either one token or "
    "child nodes, not both";
inline constexpr char kPtbTrailing[] =
    "{}:{}:{}: unexpected {} after the end of the tree; expected one tree per line";
inline constexpr char kPtbCarriageReturn[] =
    "{}:{}:{}: carriage return (CR) in the line; tree files must use LF line endings";
inline constexpr char kPtbControl[] =
    "{}:{}:{}: unexpected control character 0x{:02X}; expected printable text";
inline constexpr char kPtbUnknownToken[] =
    "{}:{}:{}: token '{}' is not in the vocabulary '{}', which has no '<unk>' line";
inline constexpr char kPtbNotInteger[] =
    "{}:{}:{}: token '{}' is not an integer id; without a vocabulary, tokens must be integers in [0, {}]";
inline constexpr char kPtbTooManyNodes[] = "{}:{}: the tree has more than {} nodes";

// Tree generators. The first {} names the generator.
inline constexpr char kGenTooSmall[] = "{}: {} must be at least {}, got {}";
inline constexpr char kGenTooLarge[] = "{}: {} must be at most {}, got {}";

// The inspector (backends/runtime/Inspector.cpp): a batch of trees that is not a batch of trees.
inline constexpr char kTreeEmpty[] = "tree {}: the tree is empty (0 nodes); a tree has at least one node";
inline constexpr char kTreeMalformed[] = "tree {}: malformed tree: {}";
inline constexpr char kTreeRootOutOfRange[] = "tree {}: root {} is out of range: the tree has {} nodes";
inline constexpr char kTreeChildOutOfRange[] =
    "tree {}: node {} has child {}, which is out of range: the tree has {} nodes";
inline constexpr char kTreeShared[] =
    "tree {}: node {} is reached twice: it is a child of both node {} and node {}; a node has one parent";
inline constexpr char kTreeRepeatedChild[] =
    "tree {}: node {} is reached twice: node {} lists it as a child more than once; a node has one parent";
inline constexpr char kTreeCycle[] =
    "tree {}: node {} is reached twice: node {} lists it as a child but descends from it (a cycle)";
inline constexpr char kTreeSelfLoop[] =
    "tree {}: node {} is reached twice: it lists itself as a child (a cycle)";
inline constexpr char kTreeUnreachable[] = "tree {}: node {} is not reachable from the root (node {})";
inline constexpr char kTreeArity[] = "tree {}: node {} has {} children; this model takes {}";
inline constexpr char kTreeNegativeToken[] =
    "tree {}, node {}: leaf token {} is negative; a leaf's token must be >= 0";
inline constexpr char kTreeTokenRange[] =
    "tree {}, node {}: token {} is out of range: the vocabulary has {} entries";
inline constexpr char kTreeInternalToken[] =
    "tree {}, node {}: internal node has token {}; internal nodes must have token -1";
inline constexpr char kBatchTooLarge[] = "the batch has {} nodes in all; at most {} fit in one batch";

}  // namespace grove::dataset_messages
