#include "tools/Progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace grove::tool {

namespace {

using Clock = std::chrono::steady_clock;

// Redraws closer together than this are skipped: the line stays readable and a loop that updates
// per tree spends nothing measurable on it.
constexpr auto kRedrawInterval = std::chrono::milliseconds(200);

// A rate over less time than this is noise (the first draw comes microseconds after the start):
// the rate and the time left show from then on.
constexpr double kMinRateSeconds = 1.0;

// Returns to the start of the line and erases it (VT100: carriage return, erase to end of line).
constexpr char kErase[] = "\r\x1b[K";

// 1234567 → "1,234,567".
std::string thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return n < 0 ? "-" + s : s;
}

// A rate with as many digits as say something: "81,300", "12.5", "0.42".
std::string rate_text(double rate) {
  if (rate >= 100) return thousands(int64_t(std::llround(rate)));
  return rate >= 10 ? fmt::format("{:.1f}", rate) : fmt::format("{:.2f}", rate);
}

// "47 s", "3 min 05 s", "2 h 05 min".
std::string duration_text(double seconds) {
  int64_t s = std::llround(std::max(seconds, 0.0));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

// `n` rounded to 3 significant digits (an estimate should not look more exact than it is), and
// never below `at_least`.
int64_t estimate(double n, int64_t at_least) {
  if (n < 1000) return std::max(int64_t(std::llround(n)), at_least);
  double scale = std::pow(10.0, std::floor(std::log10(n)) - 2);
  return std::max(int64_t(std::llround(n / scale) * scale), at_least);
}

// The terminal's width in columns, or 0 when `out` is not a terminal or does not say.
int columns(std::FILE *out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

}  // namespace

bool progress_wanted(bool quiet) { return !quiet && ::isatty(::fileno(stderr)); }

Progress::Progress(std::string label, std::string noun, bool enabled, std::FILE *out)
    : label_(std::move(label)), noun_(std::move(noun)), enabled_(enabled), out_(out), start_(Clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::set_total(int64_t total) { total_ = total; }

std::string Progress::line(int64_t done, std::optional<double> fraction, double elapsed_s) const {
  // 1. How much is done: the count of a known total, else the caller's estimate, else nothing.
  if (total_) fraction = *total_ > 0 ? double(done) / double(*total_) : 1.0;
  if (fraction) fraction = std::clamp(*fraction, 0.0, 1.0);
  // 2. "N of M noun (P%)" with a total, "N of ~M noun (P%)" with an estimate, else "N noun".
  std::string text = fmt::format("{}: {}", label_, thousands(done));
  if (total_)
    text += " of " + thousands(*total_);
  else if (fraction && *fraction > 0)
    text += " of ~" + thousands(estimate(double(done) / *fraction, done));
  text += " " + noun_;
  if (fraction && (total_ || *fraction > 0)) text += fmt::format(" ({}%)", int(std::floor(*fraction * 100)));
  // 3. The rate and the time left, once a second has passed and some work is done.
  if (elapsed_s >= kMinRateSeconds && done > 0) {
    text += fmt::format("  {} {}/s", rate_text(double(done) / elapsed_s), noun_);
    if (fraction && *fraction > 0)
      text += "  " + duration_text(elapsed_s * (1 - *fraction) / *fraction) + " left";
  }
  return text;
}

void Progress::update(int64_t done, std::optional<double> fraction) {
  if (!enabled_ || finished_) return;
  Clock::time_point now = Clock::now();
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  std::string text = line(done, fraction, std::chrono::duration<double>(now - start_).count());
  // A line wider than the terminal wraps, and erasing would then clear only its last row.
  if (int width = columns(out_); width > 1 && int(text.size()) >= width) text.resize(size_t(width - 1));
  std::fputs(kErase, out_);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  drawn_ = true;
  last_draw_ = now;
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fputs(kErase, out_);
  std::fflush(out_);
  drawn_ = false;
}

void Progress::finish() {
  clear();
  finished_ = true;
}

}  // namespace grove::tool
