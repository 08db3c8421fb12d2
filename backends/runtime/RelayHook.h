#pragma once
// How grove_relay_open (CApi.cpp, in libgrove_runtime) reaches the Relay back end (backends/relay/
// CApiRelay.cpp, in grove_relay_backend) without linking it, as CompilerHook.h does for
// grove_model_compile: the runtime looks up kRelayHookName with dlsym(RTLD_DEFAULT, ...) and
// returns GROVE_ERROR_UNSUPPORTED when no loaded module defines it. A program that links the back
// end exports the symbol (ENABLE_EXPORTS, -Wl,--undefined=grove_compiler_relay_open_v1).
//
// The runtime checks the C arguments (null pointers, counts, enum values, shapes); the back end
// checks them against the program and throws grove's exceptions, which the C API turns into a
// status and a message.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "include/grove/grove.h"

namespace grove {

// A run's tensors as the C API hands them out; `owner` keeps their data and shapes alive.
struct RelayResultForCApi {
  std::shared_ptr<void> owner;
  std::vector<grove_tensor> tensors;
};

// An opened Relay program.
class RelayForCApi {
 public:
  virtual ~RelayForCApi() = default;
  // @main's parameters; the strings and shapes live as long as the program.
  virtual const std::vector<grove_relay_param> &params() const = 0;
  virtual const std::string &result_type() const = 0;
  // Runs @main; `inputs` hold `count` tensors the runtime checked (dtype in range, rank >= 0,
  // dimensions >= 0, shape and data present), `trees` is PTB text or null.
  virtual RelayResultForCApi run(const grove_tensor *inputs, size_t count, const char *trees) const = 0;
};

inline constexpr char kRelayHookName[] = "grove_compiler_relay_open_v1";

}  // namespace grove

// Opens the program file `path`, or parses `text` when `path` is null, with `options` (checked by
// the runtime; may be null). Fills `*out`; throws on any error.
extern "C" void grove_compiler_relay_open_v1(const char *path, const char *text,
                                             const grove_relay_options *options,
                                             std::unique_ptr<grove::RelayForCApi> *out);

using GroveCompilerRelayOpenFn = void (*)(const char *, const char *, const grove_relay_options *,
                                          std::unique_ptr<grove::RelayForCApi> *);
