// TVM's #[metadata] section (frontend/relay/Metadata.h): modules printed by TVM with their
// constants in the text. The tensors here are written byte by byte in TVM's NDArray save format
// (made with Python's struct and base64, independent of grove's encoder): a float32 [2, 3] of
// 1..6, an int64 scalar -42 and a float16 [2] of 0.5, -2.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Metadata.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

constexpr char kFloat23[] =
    "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/"
    "AAAAQAAAQEAAAIBAAACgQAAAwEA=";
constexpr char kInt64Scalar[] = "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAAAAAABAAQAIAAAAAAAAANb/////////";
constexpr char kFloat16Pair[] = "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIQAQACAAAAAAAAAAQAAAAAAAAAADgAwA==";

// A section as TVM 0.13 prints one: the Map, the Array, relay.Constant nodes with their
// _checked_type_ and virtual_device_ attributes pointing at nodes grove does not read.
std::string section(const std::vector<std::string> &arrays) {
  std::string nodes = R"({"type_key": ""}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}, )";
  std::string list;
  for (size_t i = 0; i < arrays.size(); ++i) list += (i ? ", " : "") + std::to_string(3 + i);
  nodes += R"({"type_key": "Array", "data": [)" + list + "]}";
  for (size_t i = 0; i < arrays.size(); ++i)
    nodes += R"(, {"type_key": "relay.Constant", "attrs": {"_checked_type_": "0", "data": ")" +
             std::to_string(i) + R"(", "span": "0", "virtual_device_": "0"}})";
  std::string b64;
  for (size_t i = 0; i < arrays.size(); ++i) b64 += (i ? ", \"" : "\"") + arrays[i] + "\"";
  return "{\n  \"root\": 1,\n  \"nodes\": [" + nodes + "],\n  \"b64ndarrays\": [" + b64 +
         "],\n  \"attrs\": {\"tvm_version\": \"0.13.0\"}\n}\n";
}

TEST(TvmMetadata, DecodesTvmsNDArrays) {
  std::vector<NDArray> c = read_tvm_metadata(section({kFloat23, kInt64Scalar, kFloat16Pair}), "m.relay:3");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].dtype(), DType::Float32);
  EXPECT_EQ(c[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c[0].data<float>()[i], float(i + 1));
  EXPECT_EQ(c[1].dtype(), DType::Int64);
  EXPECT_EQ(c[1].shape(), Shape{});
  EXPECT_EQ(c[1].data<int64_t>()[0], -42);
  EXPECT_EQ(c[2].dtype(), DType::Float16);
  EXPECT_EQ(c[2].shape(), Shape{2});
  EXPECT_EQ(c[2].nbytes(), 4u);  // 0x3800 (0.5) and 0xC000 (-2)
  EXPECT_EQ(std::to_integer<int>(c[2].raw()[1]), 0x38);
  EXPECT_EQ(std::to_integer<int>(c[2].raw()[3]), 0xC0);
  // grove's encoder writes the same bytes TVM's format has.
  EXPECT_EQ(encode_tvm_ndarray(c[0]), kFloat23);
  EXPECT_EQ(encode_tvm_ndarray(c[1]), kInt64Scalar);
  EXPECT_EQ(encode_tvm_ndarray(c[2]), kFloat16Pair);
}

// A module as TVM's mod.astext() prints it, constants in the text: parsed, typed and run.
TEST(TvmMetadata, APrintedModuleRunsWithItsConstants) {
  const std::string text =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {\n"
      "  add(%x, meta[relay.Constant][0] /* ty=Tensor[(2, 3), float32] */)\n"
      "}\n\n#[metadata]\n" +
      section({kFloat23});
  Module m = parse_module(text, "printed.relay");
  infer_types(m);
  NDArray x(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = 10.0f * i;
  Value y = run_main(m, {tensor_value(x)});
  const NDArray &out = y->as<TensorValue>()->data;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.data<float>()[i], 10.0f * i + float(i + 1));
}

// `--meta inline`: the printer's section reads back as the same module, with no sidecar.
TEST(TvmMetadata, PrinterWritesASectionThatReadsBack) {
  const std::string text =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {\n"
      "  multiply(%x, meta[relay.Constant][0])\n"
      "}\n\n#[metadata]\n" +
      section({kFloat23});
  Module m = parse_module(text, "printed.relay");
  PrintOptions options;
  options.inline_meta = true;
  PrintedModule printed = print_module(m, options);
  EXPECT_THAT(printed.text, HasSubstr("\n#[metadata]\n{"));
  EXPECT_THAT(printed.text, HasSubstr(kFloat23));
  Module again = parse_module(printed.text, "again.relay");
  EXPECT_TRUE(structural_equal(m, again).equal) << printed.text;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "grove_metadata_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "inline.relay").string();
  write_relay_file(path, m, options);
  EXPECT_FALSE(std::filesystem::exists(meta_path(path))) << "no sidecar with inline constants";
  EXPECT_TRUE(structural_equal(m, parse_relay_file(path)).equal);
  std::filesystem::remove_all(dir);
}

TEST(TvmMetadataErrors, SayWhatIsWrongAndWhere) {
  auto error = [](const std::string &json) {
    return user_error_of([&] { read_tvm_metadata(json, "m.relay:7"); });
  };
  EXPECT_THAT(error("{\"root\": 1"),
              HasSubstr("m.relay:7: the #[metadata] section is not TVM's JSON object graph"));
  EXPECT_THAT(error(R"({"root": 1, "nodes": [], "b64ndarrays": []})"),
              HasSubstr("m.relay:7: the #[metadata] section's root is node 1, but it has 0 node(s)"));
  EXPECT_THAT(error(R"({"root": 0, "nodes": [{"type_key": "Array"}], "b64ndarrays": []})"),
              HasSubstr("root is not a Map"));
  std::string s = section({kFloat23});
  EXPECT_THAT(
      error(s.replace(s.find("\"data\": \"0\""), 11, "\"data\": \"7\"")),
      HasSubstr("m.relay:7: meta[relay.Constant][0]: its data is b64ndarrays[7], but the section has 1"));
  // Tensors: truncated, not base64, another magic number, on a GPU, a vector dtype, bytes short of
  // the shape, a DLPack type code grove has no name for (5).
  EXPECT_THAT(error(section({"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAA"})),
              HasSubstr("meta[relay.Constant][0]: its tensor ends before its"));
  EXPECT_THAT(error(section({"not*base64"})), HasSubstr("its tensor is not valid base64"));
  EXPECT_THAT(
      error(section({"AQAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/"
                     "AAAAQAAAQEAAAIBAAACgQAAAwEA="})),
      HasSubstr("does not start with TVM's NDArray magic number"));
  EXPECT_THAT(
      error(section({"P6G0lvBAXt0AAAAAAAAAAAIAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/"
                     "AAAAQAAAQEAAAIBAAACgQAAAwEA="})),
      HasSubstr("its tensor is on device type 2; grove reads CPU tensors (1) only"));
  EXPECT_THAT(
      error(section({"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIgBAACAAAAAAAAAAgAAAAAAAAAAACAPwAAAEA="})),
      HasSubstr("a vector dtype of 4 lanes"));
  EXPECT_THAT(
      error(section({"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAFAAAAAAAAAAAAIA/"
                     "AAAAQAAAQEAAAIBAAACgQA=="})),
      HasSubstr("its tensor holds 20 bytes, but a float32 tensor of shape (2, 3) needs another count"));
  EXPECT_THAT(error(section({"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAUgAQABAAAAAAAAAAQAAAAAAAAAAACAPw=="})),
              HasSubstr("DLPack dtype (code 5, 32 bits) has no grove name"));
}

// In a module, the section's errors carry the file and the section's line; a reference past its
// constants is the parser's usual message.
TEST(TvmMetadataErrors, InAModuleNameTheFileAndLine) {
  const std::string head = "#[version = \"0.0.5\"]\ndef @main() { meta[relay.Constant][1] }\n#[metadata]\n";
  EXPECT_THAT(user_error_of([&] { parse_module(head + "{\"root\": 1}", "m.relay"); }),
              HasSubstr("m.relay:3: the #[metadata] section is not TVM's JSON object graph"));
  EXPECT_THAT(user_error_of([&] { parse_module(head + section({kFloat23}), "m.relay"); }),
              HasSubstr("meta[relay.Constant][1] is out of range: the program was given 1 constant(s)"));
}

}  // namespace
}  // namespace grove::relay
