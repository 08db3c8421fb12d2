#pragma once
// NumPy's .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// the magic "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 256), } padded with spaces and a newline so
// that the data starts at a multiple of 64 bytes, then the data in C order.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/Tensor.h"

namespace grove {

// Writes `t` as a version 1.0 float32 ('<f4') C-order array, to a temporary file that is then
// renamed over `path`: a failed write never leaves a truncated file or destroys an existing one.
void write_npy(const std::string &path, const Tensor &t);

// Writes a float32 C-order array of rows of `row_shape` a block of rows at a time, in bounded memory,
// through a temporary file renamed over `path` by commit() (destroyed without commit(), it leaves
// `path` as it was). The header is written first with room for any row count and rewritten with
// the final count, so the bytes are those write_npy writes for the same array. Rows may also be
// written out of order (write_rows), each row exactly once; commit() then needs the total.
class NpyWriter {
 public:
  NpyWriter(const std::string &path, std::vector<int64_t> row_shape);
  ~NpyWriter();
  NpyWriter(NpyWriter &&) noexcept;

  // Appends `count` rows after the last row appended.
  void append(const float *rows, int64_t count);
  // Writes `count` rows starting at row `first`.
  void write_rows(int64_t first, const float *rows, int64_t count);
  // Rewrites the header for `total_rows` (by default, the rows appended) and renames the file.
  void commit(std::optional<int64_t> total_rows = std::nullopt);

  int64_t rows_appended() const;
  int64_t row_bytes() const;
  // Where row 0 starts in the file, and the temporary's name: for a process that writes its own rows.
  uint64_t data_offset() const;
  const std::string &temporary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a '<f4' C-order array (format version 1.0, 2.0 or 3.0); anything else is a UserError.
Tensor read_npy(const std::string &path);

// The generic forms, for arrays of any dtype as raw bytes (the Relay layer's NDArrays).
// What the reader asks of its caller: `element_size` gives the bytes per element of a header's
// descr ('<i8', '|b1', ...) and its name for messages, or throws a UserError naming the path for a
// descr the caller does not read; `allocate` returns where to put the product(shape) * size data
// bytes, once they are known to be in the file (null only when that is 0).
struct NpyElement {
  uint64_t size;
  std::string name;  // "float32", "int64", ...
};
struct NpySink {
  std::function<NpyElement(const std::string &descr)> element_size;
  std::function<char *(const std::string &descr, const std::vector<int64_t> &shape)> allocate;
};
// Reads a C-order array with read_npy's checks into `sink`'s buffer.
void read_npy_into(const std::string &path, const NpySink &sink);
// Writes `bytes` (product(shape) elements of `descr`, C order) as write_npy does.
void write_npy_bytes(const std::string &path, const std::string &descr, const std::vector<int64_t> &shape,
                     std::string_view bytes);

}  // namespace grove
