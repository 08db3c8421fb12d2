#pragma once
// Tensor files for the Relay layer: NDArrays of every DType in safetensors and .npy files, and the
// constants sidecar of a Relay text file. Readers reject hostile files with a UserError naming the
// file and the tensor; writers go through a temporary file, so a failed write never clobbers one.
//
// Dtypes: safetensors BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32, F64; .npy descrs '|b1',
// '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '<f2', '<f4', '<f8' (little-endian, C order).

#include <map>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// Every tensor of a safetensors file, by name.
std::map<std::string, NDArray> read_safetensors_arrays(const std::string &path);
// Writes `arrays` (in name order) as a safetensors file.
void write_safetensors_arrays(const std::string &path, const std::map<std::string, NDArray> &arrays);

// A .npy file's array (format version 1.0, 2.0 or 3.0).
NDArray read_npy_array(const std::string &path);
// Writes `array` as a version 1.0 .npy file.
void write_npy_array(const std::string &path, const NDArray &array);

// The constants sidecar of a Relay file: tensors "relay.Constant.0", "relay.Constant.1", ... in
// order (the i-th is `meta[relay.Constant][i]` in the text). Any other name, or a gap, is a UserError.
std::vector<NDArray> read_meta_constants(const std::string &path);
void write_meta_constants(const std::string &path, const std::vector<NDArray> &constants);

}  // namespace grove::relay
