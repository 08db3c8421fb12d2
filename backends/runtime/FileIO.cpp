#include "backends/runtime/FileIO.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "backends/runtime/Messages.h"
#include "ilir/Error.h"

namespace grove {
namespace {

namespace msg = runtime_messages;

// Writes all of `bytes` to `fd`, retrying short writes; returns false (errno set) on failure.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Creates a new file next to `path`, named `path`.tmp-<pid>-<n>. O_EXCL makes the name ours, and
// mode 0666 lets the umask give it the permissions any new file would have.
int create_temporary(const std::string &path, std::string &temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter++);
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

void write_file_atomically(const std::string &path, std::span<const std::string_view> pieces) {
  // The temporary sits in `path`'s directory so that rename() replaces `path` atomically.
  std::string temp;
  int fd = create_temporary(path, temp);
  if (fd < 0) user_error(msg::kCannotWrite, path, std::strerror(errno));

  bool ok = true;
  for (std::string_view piece : pieces) {
    if (!(ok = write_all(fd, piece))) break;
  }
  // fsync before rename: after a crash, `path` holds the old contents or the new, never a stub.
  if (ok && ::fsync(fd) != 0) ok = false;
  int saved_errno = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    saved_errno = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    user_error(msg::kCannotWrite, path, std::strerror(saved_errno));
  }
}

}  // namespace grove
