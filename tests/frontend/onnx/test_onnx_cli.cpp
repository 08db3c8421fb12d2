// `grove relay import` and `grove relay run|bench|build MODEL.onnx` as a user runs them: the files
// they write, their results against PyTorch's, and their errors (message and exit status).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "frontend/relay/NDArrayIO.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;

const std::string kFixtures = std::string(GROVE_SOURCE_DIR) + "/tests/frontend/onnx/fixtures/";

// max |a - b| over max(1, max |b|) (the tolerance of tests/frontend/onnx: 1e-5).
double relative_error(const relay::NDArray &a, const relay::NDArray &b) {
  double scale = 1, worst = 0;
  for (int64_t i = 0; i < b.size(); ++i) scale = std::max(scale, std::abs(b.element_as_double(i)));
  for (int64_t i = 0; i < b.size(); ++i)
    worst = std::max(worst, std::abs(a.element_as_double(i) - b.element_as_double(i)));
  return worst / scale;
}

TEST(OnnxCli, ImportWritesRelayTextAndTheSidecar) {
  TempDir dir;
  CliResult r = run_grove("relay import " + kFixtures + "cnn.onnx --out " + dir.file("cnn.relay"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("cnn.meta.safetensors")));
  CliResult check = run_grove("relay check " + dir.file("cnn.relay"));
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("nn.conv2d"));
  EXPECT_THAT(check.output, HasSubstr("nn.batch_norm"));
  // The written program runs as the ONNX file does.
  CliResult run = run_grove("relay run " + dir.file("cnn.relay") + " --arg input=" + kFixtures +
                            "cnn.input.npy --out " + dir.file("y.npy"));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_LE(relative_error(relay::read_npy_array(dir.file("y.npy")),
                           relay::read_npy_array(kFixtures + "cnn.output.npy")),
            1e-5);
}

TEST(OnnxCli, RunTakesTheOnnxFileDirectly) {
  TempDir dir;
  for (const char *executor : {"vm", "interp"}) {
    CliResult r = run_grove("relay run " + kFixtures + "lstm.onnx --arg input=" + kFixtures +
                            "lstm.input.npy --executor " + executor + " --out " + dir.file("h.npy"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_LE(relative_error(relay::read_npy_array(dir.file("h.npy")),
                             relay::read_npy_array(kFixtures + "lstm.output.npy")),
              1e-5)
        << executor;
  }
}

TEST(OnnxCli, BenchAndBuildTakeTheOnnxFile) {
  TempDir dir;
  CliResult bench = run_grove("relay bench " + kFixtures + "mlp.onnx --arg input=" + kFixtures +
                              "mlp.input.npy --repeat 2 --json --quiet");
  EXPECT_EQ(bench.status, 0) << bench.output;
  EXPECT_THAT(bench.output, HasSubstr("median_ms_per_call"));
  CliResult build = run_grove("relay build " + kFixtures + "mlp.onnx --out " + dir.file("built"));
  ASSERT_EQ(build.status, 0) << build.output;
  CliResult run = run_grove("relay run " + dir.file("built") + " --arg input=" + kFixtures +
                            "mlp.input.npy --out " + dir.file("y.npy"));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_LE(relative_error(relay::read_npy_array(dir.file("y.npy")),
                           relay::read_npy_array(kFixtures + "mlp.output.npy")),
            1e-5);
}

TEST(OnnxCli, ImportNeverOverwritesItsInput) {
  TempDir dir;
  std::filesystem::copy_file(kFixtures + "mlp.onnx", dir.file("m.onnx"));
  CliResult r = run_grove("relay import " + dir.file("m.onnx") + " --out " + dir.file("m.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--out " + dir.file("m.onnx") +
                                  " is also the ONNX file: grove never overwrites its own inputs"));
  EXPECT_EQ(std::filesystem::file_size(dir.file("m.onnx")),
            std::filesystem::file_size(kFixtures + "mlp.onnx"));
}

TEST(OnnxCli, ErrorsNameTheFileAndTheNode) {
  TempDir dir;
  std::ifstream in(kFixtures + "mlp.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir.file("half.onnx"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CliResult r = run_grove("relay run " + dir.file("half.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("grove: error: '" + dir.file("half.onnx") +
                                  "' is not an ONNX model: its bytes do not parse as an ONNX ModelProto"));
  CliResult missing = run_grove("relay run " + kFixtures + "mlp.onnx");
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.output, HasSubstr("%input"));
}

}  // namespace
}  // namespace grove::testing
