#pragma once
// The timed pass runner every pipeline uses (the ILIR → Halide lowering, lowering/cpu/Lower.cpp; the
// Relay pass list, frontend/relay/passes/PassList.cpp). `GROVE_DEBUG=1` prints each pass's time on
// standard error, `GROVE_DEBUG=2` also the IR after each pass that changed it:
//
//   [grove] <pipeline> pass <name>   <ms> ms
//   [grove] after <name>:
//   <the IR as `show` prints it>
//
// The runner knows no IR: the caller says how to print one and whether a pass changed it.

#include <chrono>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace grove {

// GROVE_DEBUG's value (0 when unset or not a number).
int debug_level();

// Writes the lines above to `out` (standard error when null): the pass's time, then, when `after` is
// given, the IR after it.
void report_pass(std::ostream *out, std::string_view pipeline, std::string_view name, double ms,
                 const std::string *after);

// Runs `pass(ir)` and reports it at the debug level `level` to `out` (standard error when null).
// `show(x)` prints the pass's result; `same(before, after)` says whether a pass whose result is of
// the input's type left it as it was (asked only at level 2; a pass from one IR to another always
// shows its result there).
template <typename IR, typename Pass, typename Show, typename Same>
auto run_timed_pass(std::string_view pipeline, std::string_view name, int level, const IR &ir, Pass &&pass,
                    Show &&show, Same &&same, std::ostream *out = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  auto result = std::forward<Pass>(pass)(ir);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (level >= 1) {
    bool changed = level >= 2;
    if constexpr (std::is_same_v<std::decay_t<decltype(result)>, IR>) changed = changed && !same(ir, result);
    std::string after;
    if (changed) after = show(result);
    report_pass(out, pipeline, name, ms, changed ? &after : nullptr);
  }
  return result;
}

}  // namespace grove
