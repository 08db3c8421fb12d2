// .npy output files: round trips, the exact bytes NumPy expects, and NumPy itself when available.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "support/Npy.h"
#include "tests/TestFiles.h"

namespace grove {
namespace {

using ::testing::ElementsAre;
using testing::float_bytes;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

Tensor make_tensor(std::vector<int64_t> shape) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data[i] = 0.5f * static_cast<float>(i) - 1.0f;
  return t;
}

// magic, version 1.0, little-endian header length.
std::string npy_prefix(size_t header_size) {
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header_size & 0xff) +
         static_cast<char>(header_size >> 8);
}

TEST(Npy, RoundTripOfEveryRank) {
  TempDir dir;
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{}, {5}, {2, 3}, {2, 3, 4}, {0, 4}, {1, 256}}) {
    Tensor t = make_tensor(shape);
    write_npy(dir.file("t.npy"), t);
    Tensor read = read_npy(dir.file("t.npy"));
    EXPECT_EQ(read.shape, t.shape) << shape_string(shape);
    EXPECT_EQ(read.data, t.data) << shape_string(shape);
  }
}

TEST(Npy, WritesVersion1WithA64ByteAlignedHeader) {
  TempDir dir;
  Tensor t = make_tensor({2, 3});
  write_npy(dir.file("t.npy"), t);
  std::string bytes = read_bytes(dir.file("t.npy"));

  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const size_t header_size = 128 - 10;  // the dict does not fit in 64 - 10 bytes
  std::string expected_header = dict + std::string(header_size - dict.size() - 1, ' ') + "\n";
  EXPECT_EQ(bytes, npy_prefix(header_size) + expected_header + float_bytes(t.data));
}

TEST(Npy, ShapeTuplesAsPythonWritesThem) {
  TempDir dir;
  write_npy(dir.file("t.npy"), make_tensor({5}));
  EXPECT_THAT(read_bytes(dir.file("t.npy")), ::testing::HasSubstr("'shape': (5,), }"));
  write_npy(dir.file("t.npy"), make_tensor({}));
  EXPECT_THAT(read_bytes(dir.file("t.npy")), ::testing::HasSubstr("'shape': (), }"));
  write_npy(dir.file("t.npy"), make_tensor({7, 1, 2}));
  EXPECT_THAT(read_bytes(dir.file("t.npy")), ::testing::HasSubstr("'shape': (7, 1, 2), }"));
}

TEST(Npy, LongHeadersStayAligned) {
  TempDir dir;
  write_npy(dir.file("t.npy"), make_tensor({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
  std::string bytes = read_bytes(dir.file("t.npy"));
  size_t header_size = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_size) % 64, 0u);
  EXPECT_GT(header_size, 64u);
  EXPECT_EQ(bytes[10 + header_size - 1], '\n');
}

TEST(Npy, ReadsHeadersInOtherLayouts) {
  // Another key order, double quotes, no trailing commas, version 2.0 with a 4-byte length.
  TempDir dir;
  std::string dict = R"({"shape": (3,), "fortran_order": False, "descr": "<f4"})";
  dict += std::string(63 - (12 + dict.size()) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x02\x00", 8) + static_cast<char>(dict.size()) +
                      std::string(3, '\0') + dict + float_bytes({1, 2, 3});
  write_bytes(dir.file("v2.npy"), bytes);
  Tensor t = read_npy(dir.file("v2.npy"));
  EXPECT_THAT(t.shape, ElementsAre(3));
  EXPECT_THAT(t.data, ElementsAre(1, 2, 3));
}

TEST(Npy, OverwritesAnExistingFileAndLeavesNoTemporary) {
  TempDir dir;
  write_bytes(dir.file("out.npy"), "old");
  write_npy(dir.file("out.npy"), make_tensor({4}));
  EXPECT_THAT(dir.entries(), ElementsAre("out.npy"));
  EXPECT_EQ(read_npy(dir.file("out.npy")).data, make_tensor({4}).data);
}

TEST(Npy, StreamedRowsAreTheBytesOfWriteNpy) {
  TempDir dir;
  Tensor rows = make_tensor({7, 3});
  write_npy(dir.file("whole.npy"), rows);
  NpyWriter writer(dir.file("streamed.npy"), {3});
  for (int64_t r = 0; r < 7; r += 3) writer.append(rows.data.data() + r * 3, std::min<int64_t>(3, 7 - r));
  EXPECT_EQ(writer.rows_appended(), 7);
  writer.commit();
  EXPECT_EQ(read_bytes(dir.file("streamed.npy")), read_bytes(dir.file("whole.npy")));
  // Rows written out of order, with the total given at the end.
  NpyWriter placed(dir.file("placed.npy"), {3});
  placed.write_rows(4, rows.data.data() + 12, 3);
  placed.write_rows(0, rows.data.data(), 4);
  placed.commit(7);
  EXPECT_EQ(read_bytes(dir.file("placed.npy")), read_bytes(dir.file("whole.npy")));
}

TEST(Npy, AStreamNotCommittedLeavesTheFileAsItWas) {
  TempDir dir;
  write_bytes(dir.file("out.npy"), "old");
  {
    NpyWriter writer(dir.file("out.npy"), {3});
    Tensor rows = make_tensor({2, 3});
    writer.append(rows.data.data(), 2);
  }  // an error on the way: destroyed without commit()
  EXPECT_EQ(read_bytes(dir.file("out.npy")), "old");
  EXPECT_THAT(dir.entries(), ElementsAre("out.npy"));
}

// A Python with numpy: Debian's (which `make build` installs python3-numpy for) before whatever
// python3 comes first on PATH (a pyenv one may lack numpy); empty if there is none.
std::string python_with_numpy() {
  for (const char *python : {"/usr/bin/python3", "python3"})
    if (std::system((std::string(python) + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0)
      return python;
  return "";
}

// numpy.load of `path` gives float32 [rows, 3] holding -1, -0.5, 0, 0.5, ... in order.
void expect_numpy_loads(const std::string &python, const std::string &path, int rows) {
  std::string check = python + " -c \"import numpy; a = numpy.load('" + path +
                      "'); assert a.dtype == numpy.float32 and a.shape == (" + std::to_string(rows) +
                      ", 3), a.shape; assert a.ravel().tolist() == [0.5 * i - 1 for i in range(a.size)], a\"";
  EXPECT_EQ(std::system(check.c_str()), 0) << path;
}

TEST(Npy, NumpyLoadsWhatGroveWrites) {
  std::string python = python_with_numpy();
  if (python.empty()) GTEST_SKIP() << "no python3 with numpy; the byte-level tests above cover the format";
  TempDir dir;
  write_npy(dir.file("t.npy"), make_tensor({2, 3}));
  expect_numpy_loads(python, dir.file("t.npy"), 2);
  // A streamed file: rows appended in pieces, the header rewritten with the final count.
  Tensor rows = make_tensor({5, 3});
  NpyWriter writer(dir.file("s.npy"), {3});
  writer.append(rows.data.data(), 2);
  writer.append(rows.data.data() + 6, 3);
  writer.commit();
  expect_numpy_loads(python, dir.file("s.npy"), 5);
}

}  // namespace
}  // namespace grove
