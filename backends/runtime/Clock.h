#pragma once
// Wall-clock intervals for the timings grove reports (compile, inspector, run, benchmark passes).

#include <chrono>

namespace grove {

// Milliseconds from `start` to now, on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace grove
