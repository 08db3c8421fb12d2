#pragma once
// Building source text into a shared object with the system compiler and loading it: what the
// ccompiler code generator (backends/relay/byoc/CCompiler.cpp) and the CUDA back end's CPU
// emulation (backends/cuda/HostEmulation.cpp) share. Errors name `who` ("the ccompiler code
// generator") so that each caller's messages stay its own.

#include <memory>
#include <string>

namespace grove {

// A directory of our own (mkdtemp: mode 0700) under $TMPDIR or /tmp, named `prefix`-XXXXXX,
// removed with its contents when this goes: a loaded library stays mapped after its file is gone.
class TempDir {
 public:
  TempDir(const std::string &prefix, const std::string &who);
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

struct LibraryCloser {
  void operator()(void *handle) const;
};
using Library = std::unique_ptr<void, LibraryCloser>;

// `s` quoted for /bin/sh.
std::string shell_quote(const std::string &s);

// Runs `command` through /bin/sh with its standard output (and whatever it redirects there)
// captured. `exit_code` is the command's exit status, 127 for no such program, -1 if killed.
struct CommandResult {
  int exit_code = 0;
  std::string output;
};
CommandResult run_command(const std::string &command, const std::string &who);

// Writes `text` to `path`; a UserError naming `who` if it cannot.
void write_text_file(const std::string &path, const std::string &text, const std::string &who);

}  // namespace grove
