#include "backends/runtime/SharedObject.h"

#include <dlfcn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "support/Error.h"

namespace grove {

TempDir::TempDir(const std::string &prefix, const std::string &who) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    user_error("{} could not create a temporary directory {}: {}", who, pattern, std::strerror(errno));
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void LibraryCloser::operator()(void *handle) const { dlclose(handle); }

std::string shell_quote(const std::string &s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

CommandResult run_command(const std::string &command, const std::string &who) {
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) user_error("{} could not run `{}`: {}", who, command, std::strerror(errno));
  CommandResult result;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) result.output.append(chunk, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

void write_text_file(const std::string &path, const std::string &text, const std::string &who) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) user_error("{} could not write {}: {}", who, path, std::strerror(errno));
}

}  // namespace grove
