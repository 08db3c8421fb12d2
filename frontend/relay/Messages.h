#pragma once
// Every user-facing message of the Relay text format reader (lexer and parser) and its tensor files, in
// one place. Each is a fmt format string; SourceFile prefixes `file:line:col: error: ` and appends
// the source line with a caret under the column.

namespace grove::relay::msg {

// Files
inline constexpr char kCannotRead[] = "cannot read Relay file '{}': expected a readable text file";

// Tensor files of any dtype (NDArrayIO.h)
inline constexpr char kSafetensorsDtypeUnknown[] =
    "{}: tensor '{}' has dtype {}; grove reads BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32 and F64";
inline constexpr char kNpyDtypeUnknown[] =
    "{}: the array has dtype '{}'; grove reads little-endian '|b1', '|i1', '<i2', '<i4', '<i8', '|u1', "
    "'<u2', "
    "'<u4', '<u8', '<f2', '<f4' and '<f8'";
inline constexpr char kBoolNotZeroOrOne[] = "{}: {}: bool element {} is the byte {}, not 0 or 1";
inline constexpr char kMetaConstantName[] =
    "{}: tensor '{}' is not a Relay constant: a constants file holds relay.Constant.0, relay.Constant.1, ... "
    "only";
inline constexpr char kMetaConstantMissing[] =
    "{}: relay.Constant.{} is missing: the file holds {} constants, so they must be relay.Constant.0 to "
    "relay.Constant.{}";

// Lexer
inline constexpr char kBadCharacter[] =
    "unexpected character '{}': expected a token of the Relay text format";
inline constexpr char kUnterminatedComment[] = "unterminated comment: this '/*' is never closed by '*/'";
inline constexpr char kUnterminatedString[] =
    "unterminated string: expected a closing '\"' before the end of the line";
inline constexpr char kBadEscape[] = "unknown escape '\\{}' in a string: expected \\\", \\\\, \\n or \\t";
inline constexpr char kBadNumber[] =
    "malformed number '{}': expected digits with an optional fraction, exponent and suffix, such as 1, "
    "-2i64, "
    "1.5f, 1e-05f or 3u8";
inline constexpr char kBadSuffix[] =
    "unknown suffix '{}' on the number '{}': expected f, f16, f32, f64, i, i8, i16, i32, i64, u8, u16, u32 "
    "or u64";
inline constexpr char kIntSuffixOnFloat[] =
    "number '{}' has a fraction or an exponent, so it cannot take the integer suffix '{}'";
inline constexpr char kIntOutOfRange[] = "integer literal '{}' is out of range for {}";
inline constexpr char kFloatOutOfRange[] = "float literal '{}' is out of range for {}";
inline constexpr char kLoneSigil[] = "expected a name or a number right after '{}'";
inline constexpr char kHashWithoutBracket[] = "expected '[' after '#', as in #[version = \"0.0.5\"]";
inline constexpr char kUnterminatedAttribute[] = "unterminated '#[': expected ']' before the end of the line";
inline constexpr char kUnknownAttribute[] = "unknown header '#[{}]': expected #[version = \"0.0.5\"]";
inline constexpr char kMetadata[] =
    "#[metadata] must be a line of its own after the module (as TVM prints it), or the constants kept in "
    "the sidecar {}";
inline constexpr char kBadVersion[] = "unsupported text format version {}: grove reads version \"0.0.5\"";
inline constexpr char kVersionNotFirst[] = "the #[version = ...] header must come before everything else";
inline constexpr char kTVMScript[] =
    "grove does not support TVMScript or Relax programs; expected the Relay text format "
    "(#[version = \"0.0.5\"])";

// Parser: syntax
inline constexpr char kExpected[] = "expected {}, found {}";
inline constexpr char kExpectedExpression[] = "expected an expression, found {}";
inline constexpr char kExpectedType[] = "expected a type, found {}";
inline constexpr char kExpectedPattern[] =
    "expected a pattern (_, %var, a constructor or a tuple of patterns), found {}";
inline constexpr char kExpectedAttrValue[] =
    "expected an attribute value (an integer, float, bool, string, None or a [list]), found {}";
inline constexpr char kExpectedDefinition[] =
    "expected a definition ('def @name(...) {{ ... }}' or 'type Name {{ ... }}'), found {}";
inline constexpr char kNestedTooDeep[] = "expression nested too deeply (more than {} levels)";
inline constexpr char kTupleIndex[] =
    "expected a tuple index (a non-negative integer without suffix), found {}";
inline constexpr char kPositionalAfterAttrs[] =
    "positional argument after keyword attributes: expected 'name=value' or ')', found {}";

// Parser: names
inline constexpr char kUndefinedVar[] = "undefined variable %{}";
inline constexpr char kUndefinedGraphVar[] =
    "undefined variable %{0}: a graph binding '%{0} = ...;' must come before its uses";
inline constexpr char kUndefinedGlobal[] = "undefined global function @{}: no 'def @{}' in this program";
inline constexpr char kUndefinedType[] =
    "undefined type '{}': expected Tensor[...], a dtype, a type parameter in scope or an ADT defined with "
    "'type'";
inline constexpr char kUndefinedPatternCtor[] =
    "undefined constructor '{0}' in a pattern; to bind a variable, write '%{0}'";
inline constexpr char kUnknownDType[] =
    "unknown dtype '{}': expected bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, "
    "float32 or "
    "float64";
inline constexpr char kUnsupportedDType[] =
    "grove does not support the dtype '{}': expected bool, int8, int16, int32, int64, uint8, uint16, uint32, "
    "uint64, "
    "float16, float32 or float64";
inline constexpr char kTypeVarArgs[] = "type parameter {} takes no type arguments";

// Parser: duplicates and arity
inline constexpr char kDuplicateDef[] = "@{} is defined twice (first at line {})";
inline constexpr char kDuplicateType[] = "type {} is defined twice (first at line {})";
inline constexpr char kDuplicateConstructor[] = "constructor {} is defined twice (first at line {})";
inline constexpr char kDuplicateParam[] = "parameter %{} is declared twice in the same function";
inline constexpr char kDuplicateTypeParam[] = "type parameter {} is declared twice";
inline constexpr char kDuplicateFreeVar[] = "free variable %{} is declared twice";
inline constexpr char kDuplicatePatternVar[] = "this pattern binds %{} twice";
inline constexpr char kDuplicateAttr[] = "attribute '{}' is given twice";
inline constexpr char kPatternArity[] = "constructor {} has {} field(s), but this pattern gives {}";
inline constexpr char kConstructorArity[] = "constructor {} takes {} argument(s), found {}";
inline constexpr char kTypeArity[] = "type {} takes {} type argument(s), found {}";
inline constexpr char kNegativeDim[] =
    "tensor dimension {} is negative: expected a non-negative integer or ?";

// Parser: what grove does not support
inline constexpr char kSymbolicDim[] =
    "grove does not support symbolic shape variables such as '{}': expected integer dimensions or ?";
inline constexpr char kUnsupportedMeta[] =
    "grove does not support meta[{}] references: only meta[relay.Constant][i], the constants of the sidecar "
    "file";
inline constexpr char kUnsupportedExtern[] = "grove does not support extern type or function definitions";
inline constexpr char kUnsupportedExternAttr[] =
    "grove does not support external functions (the attribute Extern)";
inline constexpr char kUnsupportedVirtualDevice[] =
    "grove does not support virtual device annotations on parameters ('%{} {{...}}')";
inline constexpr char kUnsupportedGlobalMeta[] =
    "grove does not support 'def @{} = meta[...]' (external functions); expected 'def @{}(...) {{ ... }}'";

// Meta constants
inline constexpr char kMetaOutOfRange[] =
    "meta[relay.Constant][{}] is out of range: the program was given {} constant(s)";
inline constexpr char kMetaSidecarMissing[] =
    "meta[relay.Constant][{}] needs the constants sidecar '{}', which does not exist";
inline constexpr char kMetaSidecarShort[] =
    "meta[relay.Constant][{}] is out of range: the sidecar '{}' holds {} constant(s)";

// TVM's #[metadata] section (Metadata.h); the first argument says where: "m.relay:12" or
// "m.relay:12: meta[relay.Constant][3]".
inline constexpr char kMetaJson[] =
    "{}: the #[metadata] section is not TVM's JSON object graph (an object with root, nodes and b64ndarrays)";
inline constexpr char kMetaRoot[] =
    "{}: the #[metadata] section's root is not a Map whose \"relay.Constant\" entry is an Array of nodes";
inline constexpr char kMetaNodeIndex[] = "{}: the #[metadata] section's {} is node {}, but it has {} node(s)";
inline constexpr char kMetaNotConstant[] = "{} is {} in the #[metadata] section, not a relay.Constant node";
inline constexpr char kMetaNodeField[] = "{}: its node has no index attribute '{}' (a decimal string)";
inline constexpr char kMetaArrayIndex[] = "{}: its data is b64ndarrays[{}], but the section has {} array(s)";
inline constexpr char kMetaBase64[] = "{}: its tensor is not valid base64";
inline constexpr char kMetaNDArrayShort[] = "{}: its tensor ends before its {} (a truncated NDArray)";
inline constexpr char kMetaNDArrayMagic[] =
    "{}: its tensor does not start with TVM's NDArray magic number 0xDD5E40F096B4A13F";
inline constexpr char kMetaNDArrayDevice[] =
    "{}: its tensor is on device type {}; grove reads CPU tensors (1) only";
inline constexpr char kMetaNDArrayLanes[] =
    "{}: its tensor has a vector dtype of {} lanes; grove reads scalars only";
inline constexpr char kMetaNDArrayDType[] =
    "{}: its tensor's DLPack dtype (code {}, {} bits) has no grove name";
inline constexpr char kMetaNDArrayRank[] =
    "{}: its tensor's rank {} is negative or larger than its bytes hold";
inline constexpr char kMetaNDArrayShape[] = "{}: its tensor has a dimension of {}";
inline constexpr char kMetaNDArrayBytes[] =
    "{}: its tensor holds {} bytes, but a {} tensor of shape {} needs another count ({} bytes follow)";

}  // namespace grove::relay::msg
