#pragma once
// The messages of the support library (support/), in one place. Tensor-file messages name the file
// first, then the tensor, then what was expected.

namespace grove::support_messages {

// Files in general.
inline constexpr char kCannotWrite[] = "cannot write {}: {}";
inline constexpr char kCannotOpen[] = "cannot open {}: {}";
inline constexpr char kCannotRead[] = "{}: read failed: the file ended early or changed while being read";

// Safetensors reading (Safetensors.h).
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
inline constexpr char kSafetensorsOverlap[] =
    "{}: tensors '{}' and '{}' overlap in the data section (data_offsets [{}, {}] and [{}, {}])";

// NumPy .npy reading (Npy.h; grove writes outputs as .npy and reads them back in tests and tools).
inline constexpr char kNpyNotNpy[] = "{}: not a .npy file: {}";
inline constexpr char kNpyVersion[] =
    "{}: .npy format version {}.{} is not supported (grove reads 1.0, 2.0 and 3.0)";
inline constexpr char kNpyBadHeader[] = "{}: malformed .npy header: {} (header: {})";
inline constexpr char kNpyDtype[] =
    "{}: the array has dtype '{}'; grove reads only little-endian float32 ('<f4')";
inline constexpr char kNpyFortran[] =
    "{}: the array is in Fortran (column-major) order; grove reads only C order";
inline constexpr char kNpyDataSize[] = "{}: shape {} of {} needs {} data bytes but the file has {}";

}  // namespace grove::support_messages
