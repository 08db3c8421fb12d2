#pragma once
// Runs the built `grove` program in a scratch directory and captures what it printed and its exit
// status, for the command-line tests.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/Safetensors.h"
#include "tests/TestFiles.h"

namespace grove::testing {

// What one run of `grove` did.
struct CliResult {
  int status = -1;     // the exit status; -1 if it did not exit normally (a signal, a crash)
  std::string output;  // stdout and stderr together
};

// Runs shell text `command` (the tests' paths need no quoting), its stderr joined to stdout.
inline CliResult run_shell(const std::string &command_text) {
  const std::string command = "{ " + command_text + "; } 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  CliResult result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int wait_status = ::pclose(pipe);
  if (wait_status != -1 && WIFEXITED(wait_status)) result.status = WEXITSTATUS(wait_status);
  return result;
}

// Runs `grove ARGS`.
inline CliResult run_grove(const std::string &args) {
  return run_shell(std::string(GROVE_BINARY) + " " + args);
}

// The TreeFC model of models/ and the path of a model file in the source tree.
inline std::string model_path(const std::string &name) {
  return std::string(GROVE_SOURCE_DIR) + "/models/" + name + ".grove";
}

// TreeFC weights for H and V: emb [V, H], W [H, 2H], b [H], filled with small distinct values.
inline Weights treefc_weights(int64_t h, int64_t v) {
  Weights w;
  auto fill = [](std::vector<int64_t> shape, float scale) {
    Tensor t(std::move(shape));
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = scale * float(int(i % 7) - 3);
    return t;
  };
  w.emplace("emb", fill({v, h}, 0.1f));
  w.emplace("W", fill({h, 2 * h}, 0.05f));
  w.emplace("b", fill({h}, 0.01f));
  return w;
}

}  // namespace grove::testing
