#pragma once
// Every user-facing message of the runtime layer (weight files, output files), in one place.
// Weight-file messages name the file first, then the tensor, then what was expected.

namespace grove::runtime_messages {

// Files in general.
inline constexpr char kCannotOpen[] = "cannot open {}: {}";
inline constexpr char kCannotRead[] = "{}: read failed: the file ended early or changed while being read";
inline constexpr char kCannotWrite[] = "cannot write {}: {}";

// Safetensors reading.
inline constexpr char kSafetensorsTooShort[] =
    "{}: not a safetensors file: it is {} bytes long, shorter than the 8-byte header length that starts one";
inline constexpr char kSafetensorsHeaderPastEnd[] =
    "{}: not a safetensors file: the header length field says {} bytes but only {} bytes follow it";
inline constexpr char kSafetensorsHeaderTooLong[] =
    "{}: the safetensors header is {} bytes long; grove accepts headers of at most {} bytes";
inline constexpr char kSafetensorsBadJson[] = "{}: the safetensors header is not valid JSON: {}";
inline constexpr char kSafetensorsHeaderNotObject[] =
    "{}: the safetensors header must be a JSON object, found {}";
inline constexpr char kSafetensorsDuplicate[] =
    "{}: tensor '{}' appears more than once in the safetensors header";
inline constexpr char kSafetensorsEntryNotObject[] =
    "{}: tensor '{}': its header entry must be an object with dtype, shape and data_offsets, found {}";
inline constexpr char kSafetensorsMissingField[] = "{}: tensor '{}': its header entry has no '{}' field";
inline constexpr char kSafetensorsFieldType[] = "{}: tensor '{}': '{}' must be {}, found {}";
inline constexpr char kSafetensorsDtype[] =
    "{}: tensor '{}' has dtype {}; grove needs F32 (float32) tensors, convert the weights before loading";
inline constexpr char kSafetensorsNegativeDim[] = "{}: tensor '{}': shape {} has a negative dimension";
inline constexpr char kSafetensorsShapeOverflow[] =
    "{}: tensor '{}': shape {} has more elements than any file can hold";
inline constexpr char kSafetensorsOffsetsOutside[] =
    "{}: tensor '{}': data_offsets [{}, {}] lie outside the data section, which is {} bytes long";
inline constexpr char kSafetensorsOffsetsSize[] =
    "{}: tensor '{}': data_offsets [{}, {}] span {} bytes but shape {} of {} needs {} bytes";

// NumPy .npy reading (grove writes outputs as .npy; it reads them back in tests and tools).
inline constexpr char kNpyNotNpy[] = "{}: not a .npy file: {}";
inline constexpr char kNpyVersion[] =
    "{}: .npy format version {}.{} is not supported (grove reads 1.0, 2.0 and 3.0)";
inline constexpr char kNpyBadHeader[] = "{}: malformed .npy header: {} (header: {})";
inline constexpr char kNpyDtype[] =
    "{}: the array has dtype '{}'; grove reads only little-endian float32 ('<f4')";
inline constexpr char kNpyFortran[] =
    "{}: the array is in Fortran (column-major) order; grove reads only C order";
inline constexpr char kNpyDataSize[] = "{}: shape {} of {} needs {} data bytes but the file has {}";

// Tensor files of any dtype (the Relay layer's NDArrays, relay/NDArrayIO.h).
inline constexpr char kSafetensorsDtypeUnknown[] =
    "{}: tensor '{}' has dtype {}; grove reads BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32 and F64";
inline constexpr char kSafetensorsOverlap[] =
    "{}: tensors '{}' and '{}' overlap in the data section (data_offsets [{}, {}] and [{}, {}])";
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

}  // namespace grove::runtime_messages
