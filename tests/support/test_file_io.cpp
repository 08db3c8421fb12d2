// grove::same_file: an output must never name one of its inputs, however the paths are spelled.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/FileIO.h"

namespace grove {
namespace {

namespace fs = std::filesystem;

class SameFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grove-same-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "sub");
    std::ofstream(dir_ / "a") << "a";
    std::ofstream(dir_ / "b") << "b";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string &rel) const { return (dir_ / rel).string(); }
  fs::path dir_;
};

TEST_F(SameFile, ExistingFilesByInode) {
  EXPECT_TRUE(same_file(at("a"), at("a")));
  EXPECT_TRUE(same_file(at("a"), at("sub/../a")));
  EXPECT_TRUE(same_file(at("a"), at("./a")));
  EXPECT_FALSE(same_file(at("a"), at("b")));
  fs::create_symlink(at("a"), at("link"));
  EXPECT_TRUE(same_file(at("link"), at("a")));
  fs::create_hard_link(at("a"), at("hard"));
  EXPECT_TRUE(same_file(at("hard"), at("a")));
}

TEST_F(SameFile, AnOutputNotYetWrittenByItsNormalizedPath) {
  EXPECT_TRUE(same_file(at("sub/../out.npy"), at("out.npy")));
  EXPECT_FALSE(same_file(at("out.npy"), at("a")));
  EXPECT_FALSE(same_file(at("sub/out.npy"), at("out.npy")));
}

}  // namespace
}  // namespace grove
