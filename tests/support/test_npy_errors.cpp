// Broken .npy files are rejected with a message naming the file and the problem; failed writes
// leave existing files alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/Npy.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::float_bytes;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::user_error_of;
using testing::write_bytes;

// A version-1.0 file with header dict `dict` (padded as numpy pads it) followed by `data`.
std::string npy_bytes(std::string dict, const std::string &data, char major = 1) {
  dict += std::string(63 - (10 + dict.size()) % 64, ' ') + "\n";
  return std::string("\x93NUMPY", 6) + major + '\0' + static_cast<char>(dict.size() & 0xff) +
         static_cast<char>(dict.size() >> 8) + dict + data;
}

std::string read_error(const TempDir &dir, const std::string &bytes) {
  write_bytes(dir.file("bad.npy"), bytes);
  return user_error_of([&] { read_npy(dir.file("bad.npy")); });
}

TEST(NpyErrors, MissingFile) {
  TempDir dir;
  EXPECT_THAT(user_error_of([&] { read_npy(dir.file("absent.npy")); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.npy")));
}

TEST(NpyErrors, NotAnNpyFile) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, "PK\x03\x04 a zip file"),
              AllOf(HasSubstr("bad.npy"), HasSubstr("not a .npy file: it does not start with \\x93NUMPY")));
  EXPECT_THAT(read_error(dir, std::string("\x93NUMPY\x01\x00", 8) + "\x7f"),
              HasSubstr("the file ends inside the header length"));
  EXPECT_THAT(read_error(dir, std::string("\x93NUMPY\x01\x00", 8) + std::string("\xff\x00{}", 4)),
              HasSubstr("the header length points past the end of the file"));
}

TEST(NpyErrors, UnknownVersion) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                        float_bytes({1}), 4)),
              HasSubstr("format version 4.0 is not supported"));
}

TEST(NpyErrors, DtypeOtherThanFloat32) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                        float_bytes({1, 2, 3, 4}))),
              AllOf(HasSubstr("bad.npy"), HasSubstr("dtype '<f8'"), HasSubstr("only little-endian float32")));
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                        float_bytes({1}))),
              HasSubstr("dtype '>f4'"));
}

TEST(NpyErrors, FortranOrder) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                        float_bytes({1, 2, 3, 4}))),
              HasSubstr("Fortran (column-major) order; grove reads only C order"));
}

TEST(NpyErrors, MalformedHeader) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False}", "")),
              AllOf(HasSubstr("malformed .npy header"),
                    HasSubstr("needs the keys 'descr', 'fortran_order' and 'shape'")));
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", "")),
              HasSubstr("expected True or False"));
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "")),
              HasSubstr("expected a non-negative integer in the shape"));
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'order': 'C'}", "")),
              HasSubstr("unknown key 'order'"));
}

TEST(NpyErrors, EmptyFile) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, ""), HasSubstr("bad.npy: not a .npy file: it does not start with \\x93NUMPY"));
}

TEST(NpyErrors, TrailingBytesAfterTheData) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                        float_bytes({1, 2}) + "garbage")),
              HasSubstr("bad.npy: shape [2] of float32 needs 8 data bytes but the file has 15"));
}

TEST(NpyErrors, DataOfTheWrongSize) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                        float_bytes({1, 2, 3, 4, 5}))),
              AllOf(HasSubstr("bad.npy"),
                    HasSubstr("shape [2, 3] of float32 needs 24 data bytes but the file has 20")));
  EXPECT_THAT(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                                        "'shape': (4294967296, 4294967296, 4294967296), }",
                                        float_bytes({1}))),
              HasSubstr("needs more than 18446744073709551615 data bytes"));
}

TEST(NpyErrors, FailedWriteKeepsTheExistingFile) {
  TempDir dir;
  write_bytes(dir.file("roots.npy"), "previous output");
  EXPECT_THAT(user_error_of([&] {
                testing::FileSizeLimit limit(1000);
                write_npy(dir.file("roots.npy"), Tensor({100, 100}));
              }),
              AllOf(HasSubstr("cannot write"), HasSubstr("roots.npy"), HasSubstr("File too large")));
  EXPECT_EQ(testing::read_bytes(dir.file("roots.npy")), "previous output");
  EXPECT_THAT(dir.entries(), ElementsAre("roots.npy"));
}

TEST(NpyErrors, WriteIntoAMissingDirectory) {
  TempDir dir;
  EXPECT_THAT(user_error_of([&] { write_npy(dir.file("missing/out.npy"), Tensor({2})); }),
              AllOf(HasSubstr("cannot write"), HasSubstr("missing/out.npy")));
}

}  // namespace
}  // namespace grove
