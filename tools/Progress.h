#pragma once
// A progress line on standard error for long runs (`grove run`, `bench`, `tune`):
//   run: 1,204,000 of ~5,000,000 trees (24%)  81,300 trees/s  47 s left
// redrawn in place (carriage return, erase to the end of the line) at most a few times a second,
// and erased when the work is done, so that it never mixes into what the command prints. It is
// shown only when standard error is a terminal and the user did not ask for quiet; otherwise every
// call does nothing, so callers never test for it.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace grove::tool {

// Whether a command shows progress: standard error is a terminal and `quiet` is false.
bool progress_wanted(bool quiet);

class Progress {
 public:
  // `label` starts the line ("run", "bench treelstm"), `noun` counts the units ("trees", "runs",
  // "schedules"). `enabled` false makes every call a no-op; `out` is where the line goes (a test
  // passes a file).
  Progress(std::string label, std::string noun, bool enabled, std::FILE *out = stderr);
  ~Progress();  // finish()
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  // `done` units so far. `fraction` (0..1), where the total is not a count the caller knows (a stream
  // read by bytes), estimates how much of the work is done; the line then shows the estimated total
  // as "~N". With `total` set (set_total), the fraction is done / total. Redraws at most every
  // 200 ms (the first call and finish() always draw).
  void update(int64_t done, std::optional<double> fraction = std::nullopt);
  void set_total(int64_t total);

  // Erases the line for now, so that the caller can print a line of its own to a terminal that
  // shows both; the next update() draws again at once. finish() is for the end of the work.
  void clear();

  // Erases the line; later calls do nothing. Idempotent.
  void finish();

  // The text of the line for `done` units after `elapsed_s` seconds with `fraction` done (or
  // nullopt): exposed for tests. The rate and the time left appear after the first second.
  std::string line(int64_t done, std::optional<double> fraction, double elapsed_s) const;

 private:
  std::string label_, noun_;
  bool enabled_;
  std::FILE *out_;
  std::optional<int64_t> total_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;  // the line is on the terminal now
  bool finished_ = false;
};

}  // namespace grove::tool
