#pragma once
// grove's two error channels.
//
//   * UserError     — the user's input is wrong: a model file, a weight file, a tree, a flag.
//                     The message says what is wrong, where (file:line:col, or tree and node) and
//                     what was expected. The `grove` program prints it and exits with status 1.
//   * InternalError — a bug in grove. Reported with the source location of the failed check.
//
// Neither is compiled out. The message texts live in one place per layer (`*/Messages.h`).

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace grove {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string &message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string &message) : std::logic_error(message) {}
};

template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> format, Args &&...args) {
  throw UserError(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void internal_error(const char *file, int line, const std::string &message);

}  // namespace grove

// GROVE_CHECK(cond, "fmt", args...): an internal invariant; failing it is a grove bug.
#define GROVE_CHECK(cond, ...)                                                                               \
  do {                                                                                                       \
    if (!(cond))                                                                                             \
      ::grove::internal_error(__FILE__, __LINE__, "check failed: " #cond ": " + ::fmt::format(__VA_ARGS__)); \
  } while (0)
