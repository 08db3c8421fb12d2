// `grove relay` on the Child-Sum TreeLSTM over rose trees (models/relay/childsum_treelstm.relay):
// run under both executors gives PyTorch's roots (the fixture) and the same results, --explain says
// @childsum is compiled by grove, and `dump --stage ilir` prints its `structure tree` program.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "frontend/relay/NDArrayIO.h"
#include "tests/tools/CliRunner.h"

namespace grove::testing {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(GROVE_SOURCE_DIR) + "/models/relay/";

// The weights of the fixture as --arg NAME=FILE.npy flags, and its expected root h, [trees, H].
std::string childsum_weight_args(const TempDir &dir, relay::NDArray *expected) {
  auto fixture = relay::read_safetensors_arrays(kModels + "fixtures/childsum_treelstm.safetensors");
  std::string args;
  for (const char *name : {"emb", "W_iou", "U_iou", "b_iou", "W_f", "U_f", "b_f"}) {
    relay::write_npy_array(dir.file(std::string(name) + ".npy"), fixture.at(name));
    args += std::string(" --arg ") + name + "=" + dir.file(std::string(name) + ".npy");
  }
  *expected = fixture.at("expected");
  return args;
}

TEST(CliRelayRose, RunUnderBothExecutorsGivesPyTorchsRoots) {
  TempDir dir;
  relay::NDArray expected;
  const std::string args =
      childsum_weight_args(dir, &expected) + " --trees " + kModels + "fixtures/childsum_trees.txt";
  const int64_t trees = expected.shape()[0], h = expected.shape()[1];
  ASSERT_EQ(trees, 8);
  for (const char *executor : {"interp", "vm"}) {
    const std::string out = dir.file(std::string("out_") + executor);
    CliResult r = run_grove("relay run " + kModels + "childsum_treelstm.relay" + args + " --executor " +
                            executor + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    for (int64_t i = 0; i < trees; ++i) {
      relay::NDArray row = relay::read_npy_array(out + "/" + std::to_string(i) + ".npy");
      ASSERT_EQ(row.shape(), (relay::Shape{1, h})) << executor << " " << i;
      for (int64_t j = 0; j < h; ++j)
        EXPECT_NEAR(row.data<float>()[j], expected.data<float>()[i * h + j], 1e-5)
            << executor << ", tree " << i << ", column " << j;
    }
    EXPECT_FALSE(std::filesystem::exists(out + "/" + std::to_string(trees) + ".npy"));
  }
  // The two executors agree with each other as closely.
  for (int64_t i = 0; i < trees; ++i) {
    relay::NDArray a = relay::read_npy_array(dir.file("out_interp/" + std::to_string(i) + ".npy"));
    relay::NDArray b = relay::read_npy_array(dir.file("out_vm/" + std::to_string(i) + ".npy"));
    for (int64_t j = 0; j < h; ++j)
      EXPECT_NEAR(a.data<float>()[j], b.data<float>()[j], 1e-5) << i << " " << j;
  }
}

TEST(CliRelayRose, ExplainAndDumpShowTheCompiledRoseFunction) {
  TempDir dir;
  relay::NDArray expected;
  const std::string args = childsum_weight_args(dir, &expected);
  CliResult r = run_grove("relay opt " + kModels + "childsum_treelstm.relay --passes dce --explain");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("@childsum: compiled by grove's recursive compiler (over its tree "
                                  "parameter %t, 7 weights passed through)"));
  r = run_grove("relay dump " + kModels + "childsum_treelstm.relay --stage ilir" + args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("program relay_childsum over tree"));
  EXPECT_THAT(r.output, HasSubstr("sum(k0 < num_children(n), g_all[child(n, k0), i0])"));
  r = run_grove("relay dump " + kModels + "childsum_treelstm.relay --stage vm");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("ext0: @grove_map_childsum: @childsum over a List (grove recursive compiler)"));
}

}  // namespace
}  // namespace grove::testing
