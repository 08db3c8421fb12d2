#pragma once
// Every user-facing message about input structures, in one place: vocabulary files, PTB tree files,
// DAG, grid and sequence files, the tree generators' arguments, and the inspectors' checks of a batch
// of trees or DAGs (the inspectors live in backends/runtime, but what they report is always a fault of
// the inputs).
//
// File messages start with `file:line:col` (columns count characters, from 1); inspector messages
// start with the tree number (`first_tree_number` + index in the batch) and the node id.

namespace grove::dataset_messages {

// Files in general.
inline constexpr char kCannotRead[] = "cannot read {} '{}': {}";
inline constexpr char kCannotSeek[] =
    "cannot seek in {} '{}': it is not a regular file; give a file to read it from a position";

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
inline constexpr char kPtbBadLabel[] =
    "{}:{}:{}: label '{}' is not a class; labels of labelled trees must be integers in [0, {}]";
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

// DAG files (JSON): `{"nodes": [{"token": 3, "preds": [0, 1]}, ...]}` per DAG, or a list of such
// objects. DAGs and nodes are numbered as the inspector numbers them: DAGs from 1, nodes from 0.
// JSON syntax errors carry `file:line:col` (columns count characters) and, inside a DAG, its number.
inline constexpr char kDagBadJson[] = "{}:{}:{}: not valid JSON: {}";
inline constexpr char kDagBadJsonIn[] = "{}:{}:{}: DAG {}: not valid JSON: {}";
inline constexpr char kDagListSeparator[] =
    "{}:{}:{}: not valid JSON: expected ',' or ']' after DAG {} in the list, found {}";
inline constexpr char kDagTrailing[] =
    "{}:{}:{}: not valid JSON: unexpected {} after the end of the {}; a DAG file holds one DAG object or one "
    "list of them";
inline constexpr char kDagTopLevel[] =
    "{}: expected a DAG object {{\"nodes\": [...]}} or a JSON list of them, found {}";
inline constexpr char kDagNoDags[] = "{}: the list holds no DAGs; expected at least one {{\"nodes\": [...]}}";
inline constexpr char kDagNotObject[] = "{}: DAG {}: expected an object {{\"nodes\": [...]}}, found {}";
inline constexpr char kDagUnknownKey[] = "{}: DAG {}: unexpected key '{}'; a DAG object has only 'nodes'";
inline constexpr char kDagNoNodes[] =
    "{}: DAG {}: missing 'nodes'; expected {{\"nodes\": [{{\"token\": 3, \"preds\": [0, 1]}}, ...]}}";
inline constexpr char kDagNodesNotList[] = "{}: DAG {}: 'nodes' must be a list of node objects, found {}";
inline constexpr char kDagNodeNotObject[] =
    "{}: DAG {}, node {}: expected an object {{\"token\": 3, \"preds\": [0, 1]}}, found {}";
inline constexpr char kDagNodeUnknownKey[] =
    "{}: DAG {}, node {}: unexpected key '{}'; a node has 'token' and 'preds'";
inline constexpr char kDagNoToken[] = "{}: DAG {}, node {}: missing 'token'; expected an integer id";
inline constexpr char kDagBadToken[] = "{}: DAG {}, node {}: 'token' must be an integer in [0, {}], found {}";
inline constexpr char kDagPredsNotList[] =
    "{}: DAG {}, node {}: 'preds' must be a list of node indices (null for an empty slot), found {}";
inline constexpr char kDagBadPred[] =
    "{}: DAG {}, node {}: predecessor slot {} must be a node index in [0, {}] or null for an empty slot, "
    "found {}";
inline constexpr char kDagTooManyNodes[] = "{}: DAG {} has more than {} nodes or predecessor slots";

// Line files shared by grids and sequences. The second {} is the kind of file ("grid", "sequence").
inline constexpr char kLineFileEmpty[] = "{}: the file is empty; expected one {} per line such as '{}'";
inline constexpr char kLineEmpty[] = "{}:{}: empty line; expected one {} per line such as '{}'";
inline constexpr char kLineCarriageReturn[] =
    "{}:{}:{}: carriage return (CR) in the line; {} files must use LF line endings";
inline constexpr char kLineControl[] =
    "{}:{}:{}: unexpected control character 0x{:02X}; expected tokens separated by ASCII spaces";

// Grids: `R C` and then R*C integer tokens in row-major order, one grid per line.
inline constexpr char kGridBadSize[] =
    "{}:{}:{}: the grid's {} count '{}' must be an integer in [1, {}]; a line is 'R C' then R*C tokens";
inline constexpr char kGridTooLarge[] = "{}:{}: a {}x{} grid has more than {} cells";
inline constexpr char kGridTokenCount[] = "{}:{}: a {}x{} grid needs {} tokens after 'R C', found {}";
inline constexpr char kGridBadToken[] =
    "{}:{}:{}: grid token '{}' is not an integer id; tokens must be integers in [0, {}]";

// Sequences: tokens separated by ASCII spaces, looked up like tree tokens.
inline constexpr char kSequenceUnknownToken[] =
    "{}:{}:{}: token '{}' is not in the vocabulary '{}', which has no '<unk>' line";
inline constexpr char kSequenceNotInteger[] =
    "{}:{}:{}: token '{}' is not an integer id; without a vocabulary, tokens must be integers in [0, {}]";
inline constexpr char kSequenceTooLong[] = "{}:{}: the sequence has more than {} tokens";

// The DAG inspector (backends/runtime/DagInspector.cpp). The first two {} name the input: "DAG 3",
// "grid 2", "sequence 7" (its number in the file, from 1); nodes are numbered from 0 as in the file.
inline constexpr char kDagEmpty[] = "{} {}: it is empty (0 nodes); expected at least one node";
inline constexpr char kDagMalformed[] = "{} {}: malformed DAG: {}";
inline constexpr char kDagPredOutOfRange[] =
    "{} {}, node {}: predecessor slot {} holds {}, which is out of range: there are {} nodes (0 to {})";
inline constexpr char kDagSelfLoop[] =
    "{} {}, node {}: predecessor slot {} names the node itself, a cycle; a DAG has no cycles";
inline constexpr char kDagCycle[] =
    "{} {}: cycle: node {} is a predecessor of node {}, which is itself an ancestor of node {}; a DAG has no "
    "cycles";
inline constexpr char kDagTooManyPreds[] =
    "{} {}, node {}: {} predecessor slots, but this model reads at most {} ({})";
inline constexpr char kDagNegativeToken[] = "{} {}, node {}: token {} is negative; a token must be >= 0";
inline constexpr char kDagTokenRange[] =
    "{} {}, node {}: token {} is out of range: the vocabulary has {} entries";

}  // namespace grove::dataset_messages
