#include "support/FileIO.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "support/Error.h"
#include "support/Messages.h"

namespace grove {
namespace {

namespace msg = support_messages;

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
  AtomicFile file(path);
  for (std::string_view piece : pieces) file.append(piece);
  file.commit();
}

// The temporary sits in `path`'s directory so that rename() replaces `path` atomically.
AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  fd_ = create_temporary(path_, temp_);
  if (fd_ < 0) user_error(msg::kCannotWrite, path_, std::strerror(errno));
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_.c_str());
  fd_ = -1;
}

void AtomicFile::fail(int error) {
  discard();
  user_error(msg::kCannotWrite, path_, std::strerror(error));
}

void AtomicFile::append(std::string_view bytes) { write_at(end_, bytes); }

void AtomicFile::write_at(uint64_t offset, std::string_view bytes) {
  GROVE_CHECK(fd_ >= 0, "write to {} after commit or discard", path_);
  uint64_t at = offset;
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  end_ = std::max(end_, at);
}

// fsync before rename: after a crash, `path` holds the old contents or the new, never a stub.
void AtomicFile::commit() {
  GROVE_CHECK(fd_ >= 0, "commit of {} after commit or discard", path_);
  if (::fsync(fd_) != 0) fail(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 || ::rename(temp_.c_str(), path_.c_str()) != 0) {
    int error = errno;
    ::unlink(temp_.c_str());
    user_error(msg::kCannotWrite, path_, std::strerror(error));
  }
}

bool same_file(const std::string &a, const std::string &b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec))
    return std::filesystem::equivalent(a, b, ec);
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

}  // namespace grove
