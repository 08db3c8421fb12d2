// Safetensors round trips and byte layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/Safetensors.h"
#include "tests/TestFiles.h"

namespace grove {
namespace {

using ::testing::ElementsAre;
using testing::float_bytes;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

Tensor make_tensor(std::vector<int64_t> shape, float first) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data[i] = first + 0.25f * static_cast<float>(i);
  return t;
}

// 8-byte little-endian header length, the header, the data.
std::string safetensors_bytes(const std::string &header, const std::string &data) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

TEST(Safetensors, RoundTripKeepsNamesShapesAndValues) {
  TempDir dir;
  Weights weights;
  weights["W_iou"] = make_tensor({6, 3}, -2.0f);
  weights["b_f"] = make_tensor({2}, 1.5f);
  weights["scalar"] = make_tensor({}, 7.0f);
  weights["empty"] = make_tensor({0, 4}, 0.0f);
  write_safetensors(dir.file("w.safetensors"), weights);

  Weights read = read_safetensors(dir.file("w.safetensors"));
  ASSERT_EQ(read.size(), weights.size());
  for (const auto &[name, tensor] : weights) {
    ASSERT_TRUE(read.count(name)) << name;
    EXPECT_EQ(read[name].shape, tensor.shape) << name;
    EXPECT_EQ(read[name].data, tensor.data) << name;
  }
}

TEST(Safetensors, WritesTheDocumentedLayout) {
  TempDir dir;
  Weights weights;
  weights["a"] = make_tensor({2, 2}, 1.0f);
  weights["b"] = make_tensor({3}, 10.0f);
  write_safetensors(dir.file("w.safetensors"), weights);

  std::string bytes = read_bytes(dir.file("w.safetensors"));
  ASSERT_GE(bytes.size(), 8u);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(header_size % 8, 0u) << "the header is padded so the data stays aligned";
  ASSERT_EQ(bytes.size(), 8 + header_size + 7 * sizeof(float));

  auto header = nlohmann::json::parse(bytes.substr(8, header_size));
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json({2, 2}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json({0, 16}));
  EXPECT_EQ(header["b"]["shape"], nlohmann::json({3}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({16, 28}));
  EXPECT_EQ(header["__metadata__"]["producer"], "grove");
  EXPECT_EQ(bytes.substr(8 + header_size), float_bytes(weights["a"].data) + float_bytes(weights["b"].data));
}

TEST(Safetensors, ReadsFilesWrittenByOtherTools) {
  // As Python's safetensors writes them: unpadded header, metadata, offsets not in name order.
  TempDir dir;
  std::string header =
      R"({"__metadata__":{"format":"pt"},"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1,3],"data_offsets":[8,20]}})";
  write_bytes(dir.file("w.safetensors"), safetensors_bytes(header, float_bytes({1, 2, 3, 4, 5})));

  Weights weights = read_safetensors(dir.file("w.safetensors"));
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_THAT(weights["z"].shape, ElementsAre(2));
  EXPECT_THAT(weights["z"].data, ElementsAre(1, 2));
  EXPECT_THAT(weights["a"].shape, ElementsAre(1, 3));
  EXPECT_THAT(weights["a"].data, ElementsAre(3, 4, 5));
}

TEST(Safetensors, TensorsMayShareOrSkipBytes) {
  // The format does not require the data section to be tiled exactly; grove reads what is named.
  TempDir dir;
  std::string header =
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  write_bytes(dir.file("w.safetensors"), safetensors_bytes(header, float_bytes({9, 8, 7, 6})));
  Weights weights = read_safetensors(dir.file("w.safetensors"));
  EXPECT_THAT(weights["x"].data, ElementsAre(8));
  EXPECT_THAT(weights["y"].data, ElementsAre(8, 7));
}

TEST(Safetensors, EmptyWeightsRoundTrip) {
  TempDir dir;
  write_safetensors(dir.file("w.safetensors"), {});
  EXPECT_TRUE(read_safetensors(dir.file("w.safetensors")).empty());
}

TEST(Safetensors, OverwritesAnExistingFileAndLeavesNoTemporary) {
  TempDir dir;
  write_bytes(dir.file("w.safetensors"), "old contents");
  Weights weights;
  weights["w"] = make_tensor({4}, 3.0f);
  write_safetensors(dir.file("w.safetensors"), weights);
  EXPECT_THAT(dir.entries(), ElementsAre("w.safetensors"));
  EXPECT_EQ(read_safetensors(dir.file("w.safetensors"))["w"].data, weights["w"].data);
}

}  // namespace
}  // namespace grove
