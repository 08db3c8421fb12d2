// Tensor files of every dtype: NumPy-written fixtures read back exactly, grove writes the bytes
// NumPy writes, round trips (rank 0 and empty arrays included), the constants sidecar, and every
// error with its message. Fixtures: fixtures/make_ndarray_io_fixtures.py (NumPy 1.24).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend/relay/NDArrayIO.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::FileSizeLimit;
using grove::testing::read_bytes;
using grove::testing::TempDir;
using grove::testing::user_error_of;
using grove::testing::write_bytes;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string fixture(const std::string &name) {
  return std::string(GROVE_SOURCE_DIR) + "/tests/relay/fixtures/ndarray_io/" + name;
}

template <typename T>
std::string bytes_of(std::vector<T> values) {
  return std::string(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(T));
}

std::string raw_bytes(const NDArray &a) {
  return std::string(reinterpret_cast<const char *>(a.raw()), a.nbytes());
}

// The (2, 3) arrays of make_ndarray_io_fixtures.py, as little-endian bytes written out here by hand.
struct Expected {
  const char *name;
  DType dtype;
  std::string bytes;
};
std::vector<Expected> expected_arrays() {
  const float f32_nan = std::numeric_limits<float>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"bool", DType::Bool, bytes_of<uint8_t>({1, 0, 1, 1, 0, 0})},
      {"int8", DType::Int8, bytes_of<int8_t>({-128, -1, 0, 1, 100, 127})},
      {"int16", DType::Int16, bytes_of<int16_t>({-32768, -2, 0, 3, 1000, 32767})},
      {"int32", DType::Int32, bytes_of<int32_t>({-2147483647 - 1, -5, 0, 7, 123456, 2147483647})},
      {"int64", DType::Int64,
       bytes_of<int64_t>({std::numeric_limits<int64_t>::min(), -9, 0, 11, int64_t{1} << 40,
                          std::numeric_limits<int64_t>::max()})},
      {"uint8", DType::UInt8, bytes_of<uint8_t>({0, 1, 2, 128, 200, 255})},
      {"uint16", DType::UInt16, bytes_of<uint16_t>({0, 1, 2, 32768, 40000, 65535})},
      {"uint32", DType::UInt32, bytes_of<uint32_t>({0, 1, 2, 2147483648u, 3000000000u, 4294967295u})},
      {"uint64", DType::UInt64,
       bytes_of<uint64_t>({0, 1, 2, uint64_t{1} << 63, ~uint64_t{0} - 1, ~uint64_t{0}})},
      // IEEE half bit patterns of -2.5, -0.0, 0.0, 1.0, 65504 and inf.
      {"float16", DType::Float16, bytes_of<uint16_t>({0xC100, 0x8000, 0x0000, 0x3C00, 0x7BFF, 0x7C00})},
      {"float32", DType::Float32,
       bytes_of<float>(
           {-1.5f, 0.1f, 3.4028235e38f, 1e-45f, f32_nan, -std::numeric_limits<float>::infinity()})},
      {"float64", DType::Float64, bytes_of<double>({M_PI, -0.1, 1e308, 5e-324, inf, -2.0})},
  };
}

// One array per dtype with varied contents, for round trips.
NDArray sample(DType dtype, Shape shape) {
  NDArray a(dtype, std::move(shape));
  for (size_t i = 0; i < a.nbytes(); ++i) a.raw()[i] = static_cast<std::byte>((i * 37 + 11) & 0xff);
  if (dtype == DType::Bool) {
    for (size_t i = 0; i < a.nbytes(); ++i) a.raw()[i] = static_cast<std::byte>(i % 3 == 0);
  }
  return a;
}

const DType kAllDtypes[] = {DType::Bool,   DType::Int8,    DType::Int16,   DType::Int32,
                            DType::Int64,  DType::UInt8,   DType::UInt16,  DType::UInt32,
                            DType::UInt64, DType::Float16, DType::Float32, DType::Float64};

// ---------------------------------------------------------------------------------------------
// Correctness
// ---------------------------------------------------------------------------------------------

TEST(NDArrayIO, ReadsNumpyFilesOfEveryDtype) {
  for (const Expected &e : expected_arrays()) {
    NDArray a = read_npy_array(fixture(std::string(e.name) + ".npy"));
    EXPECT_EQ(a.dtype(), e.dtype) << e.name;
    EXPECT_THAT(a.shape(), ElementsAre(2, 3)) << e.name;
    EXPECT_EQ(raw_bytes(a), e.bytes) << e.name;
  }
  NDArray scalar = read_npy_array(fixture("scalar.npy"));
  EXPECT_EQ(scalar.dtype(), DType::Float64);
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.element_as_double(0), 2.5);
  NDArray empty = read_npy_array(fixture("empty.npy"));
  EXPECT_EQ(empty.dtype(), DType::Int32);
  EXPECT_THAT(empty.shape(), ElementsAre(0, 3));
  EXPECT_EQ(empty.nbytes(), 0u);
}

TEST(NDArrayIO, WritesTheBytesNumpyWrites) {
  TempDir dir;
  for (const char *name : {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                           "float16", "float32", "float64", "scalar", "empty"}) {
    write_npy_array(dir.file("out.npy"), read_npy_array(fixture(std::string(name) + ".npy")));
    EXPECT_EQ(read_bytes(dir.file("out.npy")), read_bytes(fixture(std::string(name) + ".npy"))) << name;
  }
}

TEST(NDArrayIO, ReadsSafetensorsOfEveryDtype) {
  std::map<std::string, NDArray> arrays = read_safetensors_arrays(fixture("all.safetensors"));
  EXPECT_EQ(arrays.size(), expected_arrays().size() + 2);
  for (const Expected &e : expected_arrays()) {
    ASSERT_TRUE(arrays.count(e.name)) << e.name;
    EXPECT_EQ(arrays[e.name].dtype(), e.dtype) << e.name;
    EXPECT_THAT(arrays[e.name].shape(), ElementsAre(2, 3)) << e.name;
    EXPECT_EQ(raw_bytes(arrays[e.name]), e.bytes) << e.name;
  }
  EXPECT_TRUE(arrays["scalar"].shape().empty());
  EXPECT_EQ(arrays["scalar"].element_as_double(0), 2.5);
  EXPECT_THAT(arrays["empty"].shape(), ElementsAre(0, 3));
}

TEST(NDArrayIO, RoundTripsEveryDtypeAndRank) {
  TempDir dir;
  for (DType dtype : kAllDtypes) {
    for (const Shape &shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 0, 4}, Shape{1, 2, 3, 2}}) {
      NDArray a = sample(dtype, shape);
      write_npy_array(dir.file("a.npy"), a);
      EXPECT_TRUE(read_npy_array(dir.file("a.npy")).bitwise_equal(a))
          << to_string(dtype) << shape_to_string(shape);
      write_safetensors_arrays(dir.file("a.safetensors"), {{"a", a}, {"b", sample(DType::Float32, {3})}});
      auto arrays = read_safetensors_arrays(dir.file("a.safetensors"));
      ASSERT_EQ(arrays.size(), 2u);
      EXPECT_TRUE(arrays["a"].bitwise_equal(a)) << to_string(dtype) << shape_to_string(shape);
    }
  }
  EXPECT_THAT(dir.entries(), ::testing::UnorderedElementsAre("a.npy", "a.safetensors"));
}

TEST(NDArrayIO, MetaConstantsKeepTheirOrder) {
  TempDir dir;
  // Twelve constants: in name order "relay.Constant.10" sorts before "relay.Constant.2".
  std::vector<NDArray> constants;
  for (int i = 0; i < 12; ++i) constants.push_back(sample(kAllDtypes[i], i % 2 ? Shape{} : Shape{2, i + 1}));
  write_meta_constants(dir.file("p.meta.safetensors"), constants);
  std::vector<NDArray> read = read_meta_constants(dir.file("p.meta.safetensors"));
  ASSERT_EQ(read.size(), constants.size());
  for (size_t i = 0; i < read.size(); ++i) EXPECT_TRUE(read[i].bitwise_equal(constants[i])) << i;

  auto named = read_safetensors_arrays(dir.file("p.meta.safetensors"));
  EXPECT_TRUE(named.count("relay.Constant.0") && named.count("relay.Constant.11"));
  write_meta_constants(dir.file("none.meta.safetensors"), {});
  EXPECT_TRUE(read_meta_constants(dir.file("none.meta.safetensors")).empty());
}

TEST(NDArrayIO, ReadsBothByteOrderSpellingsOfOneByteTypes) {
  TempDir dir;
  std::string dict = "{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }";
  dict += std::string(63 - (10 + dict.size()) % 64, ' ') + "\n";
  write_bytes(dir.file("a.npy"), std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' +
                                     dict + "\xff\x05");
  NDArray a = read_npy_array(dir.file("a.npy"));
  EXPECT_EQ(a.dtype(), DType::Int8);
  EXPECT_EQ(a.element_as_int(0), -1);
  EXPECT_EQ(a.element_as_int(1), 5);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

std::string safetensors_file(const std::string &header, const std::string &data) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

std::string npy_file(const std::string &descr, const std::string &shape, const std::string &data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  dict += std::string(63 - (10 + dict.size()) % 64, ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size() & 0xff) +
         static_cast<char>(dict.size() >> 8) + dict + data;
}

TEST(NDArrayIOErrors, UnknownDtypes) {
  TempDir dir;
  write_bytes(
      dir.file("bad.safetensors"),
      safetensors_file(R"({"emb": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})", "abcd"));
  EXPECT_THAT(
      user_error_of([&] { read_safetensors_arrays(dir.file("bad.safetensors")); }),
      AllOf(HasSubstr("bad.safetensors: tensor 'emb' has dtype BF16"), HasSubstr("grove reads BOOL, I8")));
  write_bytes(dir.file("bad.npy"), npy_file(">i4", "(1,)", "abcd"));
  EXPECT_THAT(user_error_of([&] { read_npy_array(dir.file("bad.npy")); }),
              AllOf(HasSubstr("bad.npy: the array has dtype '>i4'"), HasSubstr("grove reads little-endian")));
  write_bytes(dir.file("bad.npy"), npy_file("<c8", "(1,)", "abcdefgh"));
  EXPECT_THAT(user_error_of([&] { read_npy_array(dir.file("bad.npy")); }), HasSubstr("dtype '<c8'"));
}

TEST(NDArrayIOErrors, SizeMismatchNamesTheDtype) {
  TempDir dir;
  write_bytes(dir.file("bad.safetensors"),
              safetensors_file(R"({"w": {"dtype": "I64", "shape": [2], "data_offsets": [0, 12]}})",
                               std::string(12, '\0')));
  EXPECT_THAT(user_error_of([&] { read_safetensors_arrays(dir.file("bad.safetensors")); }),
              AllOf(HasSubstr("bad.safetensors: tensor 'w'"),
                    HasSubstr("data_offsets [0, 12] span 12 bytes but shape [2] of I64 needs 16 bytes")));
  write_bytes(dir.file("bad.npy"), npy_file("<i8", "(3,)", std::string(16, '\0')));
  EXPECT_THAT(user_error_of([&] { read_npy_array(dir.file("bad.npy")); }),
              HasSubstr("bad.npy: shape [3] of int64 needs 24 data bytes but the file has 16"));
}

TEST(NDArrayIOErrors, OverlappingTensorsAreRefused) {
  // Overlaps would let a small file claim many copies of its data section.
  TempDir dir;
  write_bytes(dir.file("bad.safetensors"),
              safetensors_file(R"({"a": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]},)"
                               R"( "b": {"dtype": "I32", "shape": [2], "data_offsets": [4, 12]}})",
                               std::string(12, '\0')));
  EXPECT_THAT(
      user_error_of([&] { read_safetensors_arrays(dir.file("bad.safetensors")); }),
      HasSubstr("bad.safetensors: tensors 'a' and 'b' overlap in the data section (data_offsets [0, 8] "
                "and [4, 12])"));
}

TEST(NDArrayIOErrors, BoolsMustBeZeroOrOne) {
  TempDir dir;
  write_bytes(dir.file("bad.safetensors"),
              safetensors_file(R"({"mask": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}})",
                               std::string("\x01\x00\x02", 3)));
  EXPECT_THAT(user_error_of([&] { read_safetensors_arrays(dir.file("bad.safetensors")); }),
              HasSubstr("bad.safetensors: tensor 'mask': bool element 2 is the byte 2, not 0 or 1"));
  write_bytes(dir.file("bad.npy"), npy_file("|b1", "(2,)", "\x01\xff"));
  EXPECT_THAT(user_error_of([&] { read_npy_array(dir.file("bad.npy")); }),
              HasSubstr("bad.npy: the array: bool element 1 is the byte 255, not 0 or 1"));
}

TEST(NDArrayIOErrors, MetaConstantsNeedTheirNames) {
  TempDir dir;
  write_safetensors_arrays(dir.file("w.meta.safetensors"), {{"relay.Constant.0", sample(DType::Int32, {2})},
                                                            {"weight", sample(DType::Int32, {2})}});
  EXPECT_THAT(user_error_of([&] { read_meta_constants(dir.file("w.meta.safetensors")); }),
              AllOf(HasSubstr("w.meta.safetensors: tensor 'weight' is not a Relay constant"),
                    HasSubstr("relay.Constant.0, relay.Constant.1, ... only")));
  write_safetensors_arrays(dir.file("w.meta.safetensors"),
                           {{"relay.Constant.01", sample(DType::Int32, {2})}});
  EXPECT_THAT(user_error_of([&] { read_meta_constants(dir.file("w.meta.safetensors")); }),
              HasSubstr("tensor 'relay.Constant.01' is not a Relay constant"));
  write_safetensors_arrays(dir.file("w.meta.safetensors"),
                           {{"relay.Constant.-1", sample(DType::Int32, {2})}});
  EXPECT_THAT(user_error_of([&] { read_meta_constants(dir.file("w.meta.safetensors")); }),
              HasSubstr("tensor 'relay.Constant.-1' is not a Relay constant"));
  write_safetensors_arrays(dir.file("w.meta.safetensors"), {{"relay.Constant.0", sample(DType::Int32, {2})},
                                                            {"relay.Constant.2", sample(DType::Int32, {2})}});
  EXPECT_THAT(
      user_error_of([&] { read_meta_constants(dir.file("w.meta.safetensors")); }),
      HasSubstr("w.meta.safetensors: relay.Constant.1 is missing: the file holds 2 constants, so they "
                "must be relay.Constant.0 to relay.Constant.1"));
  write_safetensors_arrays(dir.file("w.meta.safetensors"),
                           {{"relay.Constant.99999999999999999999999", sample(DType::Int32, {2})}});
  EXPECT_THAT(user_error_of([&] { read_meta_constants(dir.file("w.meta.safetensors")); }),
              HasSubstr("is not a Relay constant"));
}

TEST(NDArrayIOErrors, MissingFilesAreNamed) {
  TempDir dir;
  EXPECT_THAT(user_error_of([&] { read_npy_array(dir.file("absent.npy")); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.npy")));
  EXPECT_THAT(user_error_of([&] { read_safetensors_arrays(dir.file("absent.safetensors")); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.safetensors")));
  EXPECT_THAT(user_error_of([&] { read_meta_constants(dir.file("p.meta.safetensors")); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("p.meta.safetensors")));
}

TEST(NDArrayIOErrors, FailedWritesLeaveExistingFilesAlone) {
  TempDir dir;
  for (const char *name : {"a.npy", "a.safetensors", "a.meta.safetensors"})
    write_bytes(dir.file(name), "old");
  NDArray big = sample(DType::Float64, {1000});
  {
    FileSizeLimit limit(4000);
    EXPECT_THAT(user_error_of([&] { write_npy_array(dir.file("a.npy"), big); }),
                AllOf(HasSubstr("cannot write"), HasSubstr("a.npy"), HasSubstr("File too large")));
    EXPECT_THAT(user_error_of([&] {
                  write_safetensors_arrays(dir.file("a.safetensors"), {{"x", big}});
                }),
                AllOf(HasSubstr("cannot write"), HasSubstr("a.safetensors")));
    EXPECT_THAT(user_error_of([&] { write_meta_constants(dir.file("a.meta.safetensors"), {big}); }),
                AllOf(HasSubstr("cannot write"), HasSubstr("a.meta.safetensors")));
  }
  for (const char *name : {"a.npy", "a.safetensors", "a.meta.safetensors"}) {
    EXPECT_EQ(read_bytes(dir.file(name)), "old") << name;
  }
  EXPECT_EQ(dir.entries().size(), 3u);  // no temporaries left behind
}

}  // namespace
}  // namespace grove::relay
