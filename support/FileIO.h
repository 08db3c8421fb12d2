#pragma once
// File writes that never leave a truncated file behind: everything goes to a temporary file next to
// the destination, which replaces the destination only once it is complete.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace grove {

// Writes `pieces`, one after another, to a temporary file in `path`'s directory, then renames it
// over `path`. If anything fails, the temporary is removed, an existing `path` is left untouched,
// and a UserError names `path` and the reason.
void write_file_atomically(const std::string &path, std::span<const std::string_view> pieces);

// The same, written a piece at a time (a streamed output): created empty as a temporary; commit()
// syncs it and renames it over `path`. Destroyed without commit() — an error on the way — it removes
// the temporary, so `path` keeps what it held before. Every failure is a UserError naming `path`.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  // Appends at the end of what was written so far.
  void append(std::string_view bytes);
  // Writes at byte `offset` (which may be past the end: the gap reads as zeros until written).
  void write_at(uint64_t offset, std::string_view bytes);
  void commit();
  // Removes the temporary now (commit() is then an error).
  void discard();

  const std::string &path() const { return path_; }
  // The temporary's name (other processes may open it to write their part).
  const std::string &temporary() const { return temp_; }

 private:
  [[noreturn]] void fail(int error);
  std::string path_, temp_;
  int fd_ = -1;
  uint64_t end_ = 0;
};

// Whether `a` and `b` name the same file: the same file on disk if both exist (links, `./` and
// `..` included), else the same path once normalized (an output that does not exist yet). An
// output must never be one of the inputs it is computed from.
bool same_file(const std::string &a, const std::string &b);

}  // namespace grove
