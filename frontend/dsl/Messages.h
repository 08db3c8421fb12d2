#pragma once
// Every user-facing message of the model language front end, in one place. Each is a fmt format
// string; Diagnostics prefixes `file:line:col: error: ` and appends the source line with a caret.

namespace grove::dsl::msg {

// Files
inline constexpr char kCannotRead[] = "cannot read model file '{}': expected a readable .grove file";

// Lexer
inline constexpr char kBadCharacter[] =
    "unexpected character '{}': expected a name, a number or one of [ ] ( ) {{ }} ; : , = + - * / @";
inline constexpr char kBadNumber[] = "malformed number '{}': expected digits such as 12, 0.5 or 1e-3";
inline constexpr char kNumberTooLarge[] = "number '{}' is too large";

// Parser: syntax
inline constexpr char kExpected[] = "expected {} {}, found {}";
inline constexpr char kExpectedDeclaration[] =
    "expected a declaration (structure, param, state, leaf, internal, node, output or schedule), found {}";
inline constexpr char kModelFirst[] = "expected 'model NAME' at the start of the file, found {}";
inline constexpr char kExpectedExpression[] = "expected an expression {}, found {}";
inline constexpr char kExpectedSize[] = "expected a size such as H, 3H, 2 or H+1 {}, found {}";
inline constexpr char kSizeNotInteger[] = "size coefficient '{}' must be a whole number";
inline constexpr char kSizeNotLinear[] =
    "size expression is not linear: '{}' times '{}'; expected sums of terms like 3H";
inline constexpr char kNestedTooDeep[] = "expression nested too deeply (more than {} levels)";
inline constexpr char kBadIndex[] =
    "expected 'lo:hi', 'token', 'left', 'right', 'pred0', 'pred1', 'prev' or a children variable "
    "inside '[ ]', found {}";
inline constexpr char kScheduleValue[] =
    "schedule key '{}' needs a value such as on, off or a whole number, found {}";
inline constexpr char kScheduleKeyTwice[] = "schedule key '{}' is set twice (first at line {})";
inline constexpr char kIndexNeedsName[] = "'[{}]' must follow a tensor name, as in h[{}]";
inline constexpr char kUnknownFunction[] = "unknown function '{}': expected sigmoid, tanh, exp or relu";
inline constexpr char kUnknownStructure[] =
    "unknown structure '{}': expected binary_tree, tree, dag or sequence";

// Declarations
inline constexpr char kDuplicate[] = "'{}' is declared twice (first at line {})";
inline constexpr char kDuplicateSection[] =
    "second '{}' section (the first is at line {}); expected exactly one";
inline constexpr char kMissing[] = "the model has no '{}' declaration; expected {}";
inline constexpr char kOutputNotState[] = "output '{}' is not a state; expected one of the states: {}";
inline constexpr char kOutputUnknown[] = "output '{}' is not declared; expected one of the states: {}";
inline constexpr char kReservedSize[] =
    "size variable name '{}' is reserved for the IR's index variables; rename it";
inline constexpr char kNameIsSize[] = "'{}' is a size variable and cannot also name a tensor";
inline constexpr char kSizeUnbound[] =
    "size variable '{}' appears in no param, so the weight file cannot bind it";
inline constexpr char kDimNotPositive[] =
    "dimension {} of '{}' is {}, which can be below 1; expected a size that is at least 1 for all sizes >= "
    "1, such as H, 2H or H+1";
inline constexpr char kStateRank[] = "state '{}' has {} dimensions; expected a vector [H] or a matrix [H, H]";

inline constexpr char kNodeCaseInTree[] =
    "a 'structure {}' model has 'leaf' and 'internal' cases, not 'node'; 'node {{ ... }}' is the single case "
    "of a dag or sequence model";
inline constexpr char kTreeCaseInDag[] =
    "a 'structure {}' model has a single 'node {{ ... }}' case, not '{}'; every node of a {} has a token and "
    "reads {}";

// Statements and names
inline constexpr char kUnknownName[] =
    "unknown name '{}': expected a param, a state or a name assigned earlier in this case";
inline constexpr char kUnknownSize[] = "unknown size variable '{}': expected one of {}";
inline constexpr char kAssignedTwice[] = "'{}' is assigned twice in the {} case (first at line {})";
inline constexpr char kStateNotAssigned[] =
    "the {} case does not assign state '{}'; every case must assign every state";
inline constexpr char kUseBeforeDef[] = "'{}' is used before it is assigned in the {} case";
inline constexpr char kStateBeforeDef[] =
    "state '{}' of this node is used before it is assigned in the {} case; a child's state is {}[left] or "
    "{}[right]";
inline constexpr char kStateBeforeDefTree[] =
    "state '{}' of this node is used before it is assigned in the {} case; a child's state is {}[k] inside "
    "sum(k in children)";
inline constexpr char kStateBeforeDefSlots[] =
    "state '{}' of this node is used before it is assigned in the node case; read {}";
inline constexpr char kSizeAsValue[] =
    "size variable '{}' cannot be used as a value; expected a tensor or a number";
inline constexpr char kAssignParam[] =
    "cannot assign to param '{}'; expected a state or a new temporary name";
inline constexpr char kAssignSize[] =
    "cannot assign to size variable '{}'; expected a state or a new temporary name";
inline constexpr char kAssignScalar[] = "'{}' is assigned a scalar; expected a vector or matrix value";
inline constexpr char kStateShape[] = "state '{}' is declared {} but assigned a value of shape {}";

// Structure access
inline constexpr char kTokenInInternal[] =
    "'token' is only available in the leaf case; internal nodes have no token";
inline constexpr char kTokenNotParam[] = "'{}[token]' needs a param (an embedding table); '{}' is a {}";
inline constexpr char kTokenRank[] =
    "'{}[token]' needs a param with at least 2 dimensions; '{}' has shape {}";
inline constexpr char kChildNotState[] = "'{}[{}]' reads a child's state, but '{}' is a {}; expected a state";
inline constexpr char kChildInTree[] =
    "'{}' is not available in a 'structure tree' model; read children with sum(k in children) {}[k]";
inline constexpr char kSlotWrongStructure[] = "'{}[{}]' is not available in a 'structure {}' model; read {}";
inline constexpr char kSumInSlots[] = "sum(k in children) needs 'structure tree'; in a '{}' model read {}";
inline constexpr char kChildInLeaf[] = "'{}' is not available in the leaf case; a leaf has no children";
inline constexpr char kSumInBinary[] =
    "sum(k in children) needs 'structure tree'; in a binary_tree model use h[left] and h[right]";
inline constexpr char kSumInLeaf[] = "sum(k in children) in the leaf case: a leaf has no children";
inline constexpr char kSumNested[] =
    "sum(k in children) cannot be nested; '{}' is already summing over the children";
inline constexpr char kChildVarOutsideSum[] =
    "'{}' is not a children variable here; expected {}[k] inside sum(k in children)";
inline constexpr char kChildVarShadows[] =
    "children variable '{}' shadows a tensor or size variable of the same name";
inline constexpr char kSumOperandDependsOnChild[] =
    "the operand of '@' inside sum({} in children) must be a tensor, slice or concatenation when it depends "
    "on '{}'; assign the product's parts to names outside the sum";

// Shapes
inline constexpr char kShapeElementwise[] =
    "shape mismatch in '{}': {} {} {}; expected equal shapes or a scalar";
inline constexpr char kShapeMatVec[] = "shape mismatch in '@': {} @ {} needs the vector to have {} elements";
inline constexpr char kShapeMatMat[] =
    "shape mismatch in '@': {} @ {} needs the right matrix to have {} rows";
inline constexpr char kShapeMatmulRank[] =
    "'@' needs a matrix on the left and a vector or matrix on the right; got {} @ {}";
inline constexpr char kShapeConcatRank[] =
    "cannot stack {} onto {} in '[ ; ]'; expected all vectors or all matrices";
inline constexpr char kShapeConcatCols[] =
    "shape mismatch in '[ ; ]': {} and {} have different row lengths; expected [m, k] and [n, k]";
inline constexpr char kShapeSliceScalar[] = "cannot slice a scalar; expected a vector or matrix";
inline constexpr char kSliceRange[] =
    "slice [{}:{}] is out of range for shape {}: expected 0 <= lo < hi <= {} for all sizes >= 1";

}  // namespace grove::dsl::msg
