#pragma once
// NumPy's .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// the magic "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 256), } padded with spaces and a newline so
// that the data starts at a multiple of 64 bytes, then the data in C order.

#include <string>

#include "backends/runtime/Tensor.h"

namespace grove {

// Writes `t` as a version 1.0 float32 ('<f4') C-order array, to a temporary file that is then
// renamed over `path`: a failed write never leaves a truncated file or destroys an existing one.
void write_npy(const std::string &path, const Tensor &t);

// Reads a '<f4' C-order array (format version 1.0, 2.0 or 3.0); anything else is a UserError.
Tensor read_npy(const std::string &path);

}  // namespace grove
