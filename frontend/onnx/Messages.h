#pragma once
// Every user-facing message of the ONNX importer, in one place. Each is a fmt format string. Messages
// about one node start with where(): "FILE: node #I 'NAME' (OP)".

namespace grove::onnx_frontend::msg {

// The file and the model
inline constexpr char kCannotRead[] = "cannot read ONNX file '{}': {}";
inline constexpr char kTooLarge[] = "ONNX file '{}' is {} bytes: grove reads models of at most 2 GiB";
inline constexpr char kNotAModel[] =
    "'{}' is not an ONNX model: its bytes do not parse as an ONNX ModelProto (a truncated or corrupt file?)";
inline constexpr char kNoGraph[] =
    "'{}' is an ONNX ModelProto without a graph: expected a model with a graph";
inline constexpr char kNoOpset[] =
    "'{}' imports no opset of the default ONNX domain: expected opset 11 to 17";
inline constexpr char kOpset[] =
    "'{}' imports opset {} of the default ONNX domain: grove reads opsets 11 to 17";
inline constexpr char kNoOutputs[] = "'{}': the graph has no outputs";
inline constexpr char kBadName[] = "'{}': the graph {} is unnamed: every graph input and output needs a name";
inline constexpr char kDuplicateName[] = "'{}': the value '{}' is defined twice (as {} and as {})";

// Graph inputs and tensors
inline constexpr char kInputNotTensor[] =
    "'{}': graph input '{}' is not a tensor: grove imports tensor inputs with a known rank";
inline constexpr char kInputNoShape[] =
    "'{}': graph input '{}' has no shape: grove needs every input's rank (dimensions may be symbolic)";
inline constexpr char kBadDim[] = "'{}': dimension {} of '{}' is {}: expected a non-negative size or a name";
inline constexpr char kUnsupportedDType[] =
    "{}: grove does not support the ONNX data type {} ({}) of '{}': expected float, float16, double, bool, "
    "int8/16/32/64 or uint8/16/32/64";
inline constexpr char kExternalData[] =
    "{}: tensor '{}' keeps its data outside the model file: grove reads models with the weights inside";
inline constexpr char kTensorSize[] =
    "{}: tensor '{}' of shape {} and type {} holds {} value(s) ({} bytes of raw data): expected {}";
inline constexpr char kTensorDims[] = "{}: tensor '{}' has dimension {}: expected non-negative sizes";
inline constexpr char kTensorTooBig[] =
    "{}: tensor '{}' would hold {} elements: grove imports tensors of at most {} elements";
inline constexpr char kSparse[] = "{}: sparse tensors (initializer or attribute '{}') are not supported";

// Nodes
inline constexpr char kNodeWhere[] = "{}: node #{} '{}' ({})";
inline constexpr char kUnsupportedOp[] =
    "{}: grove does not support the ONNX operator {}{}; supported operators: {}";
inline constexpr char kUnsupportedOpInOpset[] =
    "{}: grove does not support the ONNX operator {} in opset {} (it reads {} from opset {})";
inline constexpr char kUndefinedInput[] =
    "{}: input {} '{}' is not defined by a graph input, an initializer or an earlier node";
inline constexpr char kMissingInput[] = "{}: the required input {} ({}) is missing";
inline constexpr char kTooManyInputs[] = "{}: {} inputs given, the operator takes at most {}";
inline constexpr char kUnsupportedAttr[] = "{}: grove does not support the attribute {}{}";
inline constexpr char kAttrValue[] = "{}: grove does not support {}={}: {}";
inline constexpr char kAttrKind[] = "{}: attribute {} has the wrong kind: expected {}";
inline constexpr char kMissingAttr[] = "{}: the required attribute {} is missing";
inline constexpr char kNotKnown[] =
    "{}: input {} ('{}') must be known when the model is imported (a constant, an initializer or a "
    "computed shape){}";
inline constexpr char kUnknownShapeValue[] =
    "{}: input {} ('{}') is a shape with dimensions known only at run time ({}): {}";
inline constexpr char kRank[] = "{}: input {} has rank {}: {}";
inline constexpr char kUnusedOutputOnly[] =
    "{}: grove does not support the output {} ('{}') of this operator: only {} can be used";
inline constexpr char kOpError[] = "{}: {}";
inline constexpr char kOutputUndefined[] = "'{}': graph output '{}' is not computed by the graph";
inline constexpr char kOutputNotTensor[] =
    "'{}': graph output '{}' is a shape with dimensions known only at run time ({}): grove returns tensors "
    "only";
inline constexpr char kDynamicSequence[] =
    "{}: the sequence length (dimension 0 of '{}') is not known: grove unrolls the sequence into a List when "
    "the model is imported, so it needs a fixed length (export with a static sequence axis)";
inline constexpr char kDynamicZeroState[] =
    "{}: the initial state is absent and the batch dimension of '{}' is not known: give the initial state "
    "or a fixed batch size";

}  // namespace grove::onnx_frontend::msg
