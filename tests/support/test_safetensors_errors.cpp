// Hostile and broken safetensors files: each is rejected with a message naming the file and tensor,
// without crashing and without allocating more than the file holds.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "support/Safetensors.h"
#include "tests/TestFiles.h"
#include "tests/UserError.h"

// The largest single allocation since the last reset, so tests can prove a hostile header length
// is not trusted. Replacing the global operator new is how C++ lets a program observe this.
static std::atomic<size_t> largest_allocation{0};

void *operator new(size_t size) {
  size_t seen = largest_allocation.load();
  while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
  }
  if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Out of line, so the compiler does not pair the inlined free() with operator new and warn.
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, size_t) noexcept { std::free(p); }

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::float_bytes;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::user_error_of;
using testing::write_bytes;

std::string length_bytes(uint64_t n) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes;
}

std::string safetensors_bytes(const std::string &header, const std::string &data) {
  return length_bytes(header.size()) + header + data;
}

// The message read_safetensors throws for a file holding `bytes`.
std::string read_error(const TempDir &dir, const std::string &bytes) {
  write_bytes(dir.file("bad.safetensors"), bytes);
  return user_error_of([&] { read_safetensors(dir.file("bad.safetensors")); });
}

// The message for a file whose header is `header` and whose data section is 16 bytes.
std::string header_error(const TempDir &dir, const std::string &header) {
  return read_error(dir, safetensors_bytes(header, float_bytes({1, 2, 3, 4})));
}

TEST(SafetensorsErrors, MissingFile) {
  TempDir dir;
  EXPECT_THAT(user_error_of([&] { read_safetensors(dir.file("absent.safetensors")); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.safetensors"),
                    HasSubstr("No such file or directory")));
}

TEST(SafetensorsErrors, FileShorterThanTheLengthField) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, "abc"), AllOf(HasSubstr("bad.safetensors"),
                                            HasSubstr("it is 3 bytes long, shorter than the 8-byte header")));
  EXPECT_THAT(read_error(dir, ""), HasSubstr("it is 0 bytes long"));
}

TEST(SafetensorsErrors, HeaderLengthPastTheEndOfTheFile) {
  TempDir dir;
  EXPECT_THAT(
      read_error(dir, length_bytes(100) + "{}"),
      AllOf(HasSubstr("bad.safetensors"), HasSubstr("the header length field says 100 bytes but only 2")));
}

TEST(SafetensorsErrors, HugeHeaderLengthFailsWithoutAllocatingIt) {
  TempDir dir;
  for (uint64_t claimed : {uint64_t{1} << 62, ~uint64_t{0}, uint64_t{1} << 33}) {
    write_bytes(dir.file("bad.safetensors"), length_bytes(claimed) + "{}      ");  // 16 bytes in all
    largest_allocation = 0;
    EXPECT_THAT(user_error_of([&] { read_safetensors(dir.file("bad.safetensors")); }),
                HasSubstr(std::to_string(claimed) + " bytes but only 8"));
    EXPECT_LT(largest_allocation.load(), size_t{1} << 16)
        << "for a claimed header of " << claimed << " bytes";
  }
}

TEST(SafetensorsErrors, HeaderOverTheLimit) {
  // A sparse file: the header length is within the file, but past grove's 100 MB limit.
  TempDir dir;
  const uint64_t claimed = kMaxSafetensorsHeader + 1;
  write_bytes(dir.file("big.safetensors"), length_bytes(claimed));
  ASSERT_EQ(truncate(dir.file("big.safetensors").c_str(), static_cast<off_t>(8 + claimed)), 0);
  largest_allocation = 0;
  EXPECT_THAT(user_error_of([&] { read_safetensors(dir.file("big.safetensors")); }),
              AllOf(HasSubstr("big.safetensors"), HasSubstr("100000001 bytes long"),
                    HasSubstr("at most 100000000 bytes")));
  EXPECT_LT(largest_allocation.load(), size_t{1} << 16);
}

TEST(SafetensorsErrors, InvalidJson) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32",)"),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("header is not valid JSON")));
}

// Found by fuzz_safetensors: nlohmann reports a number out of a double's range as out_of_range,
// not parse_error; it is still invalid JSON to grove, not a crash.
TEST(SafetensorsErrors, NumberOutOfRangeInTheHeader) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": 11E111111111111111111})"),
              AllOf(HasSubstr("bad.safetensors: the safetensors header is not valid JSON: "),
                    HasSubstr("number overflow parsing '11E111111111111111111'")));
}

// An empty tensor may not carry a dimension that is negative as int64 ([0, 2^64 - 1] holds 0 floats).
TEST(SafetensorsErrors, HugeDimensionOfAnEmptyTensor) {
  TempDir dir;
  EXPECT_THAT(
      header_error(dir, R"({"w": {"dtype": "F32", "shape": [0, 18446744073709551615], )"
                        R"("data_offsets": [0, 0]}})"),
      HasSubstr("tensor 'w': shape [0,18446744073709551615] has more elements than any file can hold"));
}

// The in-memory reader gives the same results and the same messages, naming what it was told to.
TEST(SafetensorsErrors, BytesInMemory) {
  const std::string good = safetensors_bytes(
      R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})", float_bytes({1, 2, 3, 4}));
  Weights w = read_safetensors_bytes(good, "memory.safetensors");
  ASSERT_EQ(w.count("w"), 1u);
  EXPECT_EQ(w.at("w").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(w.at("w").data, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THAT(
      user_error_of([&] { read_safetensors_bytes(good.substr(0, good.size() - 1), "memory.safetensors"); }),
      HasSubstr("memory.safetensors: tensor 'w': data_offsets [0, 16] lie outside the data section, which is "
                "15 bytes long"));
}

TEST(SafetensorsErrors, HeaderNotAnObject) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, "[1, 2]"), HasSubstr("header must be a JSON object, found array"));
}

TEST(SafetensorsErrors, EntryNotAnObject) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"W_iou": 5})"),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("tensor 'W_iou'"),
                    HasSubstr("must be an object with dtype, shape and data_offsets, found number")));
}

TEST(SafetensorsErrors, MissingFields) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"shape": [4], "data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("has no 'dtype' field")));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("has no 'shape' field")));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("has no 'data_offsets' field")));
}

TEST(SafetensorsErrors, FieldsOfTheWrongType) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": 32, "shape": [4], "data_offsets": [0, 16]}})"),
              HasSubstr("tensor 'w': 'dtype' must be a string, found 32"));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}})"),
              HasSubstr("tensor 'w': 'shape' must be an array of integers, found \"4\""));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4.0], "data_offsets": [0, 16]}})"),
              HasSubstr("tensor 'w': 'shape' must be an array of integers, found [4.0]"));
  EXPECT_THAT(
      header_error(dir, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [16]}})"),
      HasSubstr("tensor 'w': 'data_offsets' must be an array of two non-negative integers, found [16]"));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [-4, 12]}})"),
              HasSubstr("'data_offsets' must be an array of two non-negative integers, found [-4,12]"));
}

TEST(SafetensorsErrors, DtypeOtherThanF32) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"emb": {"dtype": "F16", "shape": [8], "data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("tensor 'emb' has dtype F16"),
                    HasSubstr("grove needs F32")));
  EXPECT_THAT(header_error(dir, R"({"emb": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})"),
              HasSubstr("tensor 'emb' has dtype F64"));
}

TEST(SafetensorsErrors, NegativeDimension) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("shape [-1,4] has a negative dimension")));
}

TEST(SafetensorsErrors, OverflowingShape) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], )"
                                R"("data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("has more elements than any file can hold")));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [18446744073709551615], )"
                                R"("data_offsets": [0, 16]}})"),
              HasSubstr("has more elements than any file can hold"));
}

TEST(SafetensorsErrors, OffsetsOutsideTheDataSection) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [4, 20]}})"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("data_offsets [4, 20] lie outside the data section"),
                    HasSubstr("16 bytes long")));
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})"),
              HasSubstr("data_offsets [8, 4] lie outside"));
  // A huge tensor whose offsets claim the same huge size must not be allocated.
  largest_allocation = 0;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [1000000000], )"
                                R"("data_offsets": [0, 4000000000]}})"),
              HasSubstr("lie outside"));
  EXPECT_LT(largest_allocation.load(), size_t{1} << 16);
}

TEST(SafetensorsErrors, OffsetsNotMatchingTheShape) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})"),
              AllOf(HasSubstr("tensor 'w'"),
                    HasSubstr("data_offsets [0, 16] span 16 bytes but shape [3] of F32 needs 12 bytes")));
}

TEST(SafetensorsErrors, DuplicateNames) {
  TempDir dir;
  EXPECT_THAT(header_error(dir, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                                R"( "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})"),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("tensor 'w' appears more than once")));
}

TEST(SafetensorsErrors, FailedWriteKeepsTheExistingFile) {
  TempDir dir;
  write_bytes(dir.file("w.safetensors"), "previous weights");
  Weights weights;
  weights["big"] = Tensor({10000});
  EXPECT_THAT(user_error_of([&] {
                testing::FileSizeLimit limit(1000);
                write_safetensors(dir.file("w.safetensors"), weights);
              }),
              AllOf(HasSubstr("cannot write"), HasSubstr("w.safetensors"), HasSubstr("File too large")));
  EXPECT_EQ(testing::read_bytes(dir.file("w.safetensors")), "previous weights");
  EXPECT_THAT(dir.entries(), ElementsAre("w.safetensors"));
}

TEST(SafetensorsErrors, WriteIntoAMissingDirectory) {
  TempDir dir;
  EXPECT_THAT(user_error_of([&] { write_safetensors(dir.file("no/such/dir/w.safetensors"), {}); }),
              AllOf(HasSubstr("cannot write"), HasSubstr("no/such/dir/w.safetensors"),
                    HasSubstr("No such file or directory")));
}

}  // namespace
}  // namespace grove
