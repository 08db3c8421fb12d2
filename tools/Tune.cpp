#include "tools/Tune.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "scheduling/Schedule.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/CudaCommands.h"
#include "tools/Messages.h"
#include "tools/Progress.h"

namespace grove::tool {

namespace msg = tool_messages;

std::string default_tune_cache() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/grove/schedules.json";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/grove/schedules.json";
  return ".grove-schedules.json";
}

std::string tune_key(const ilir::Program &program, const std::map<std::string, int64_t> &sizes, int64_t batch,
                     const std::string &schedule, const std::string &target) {
  scheduling::Schedule s = scheduling::default_schedule(program);
  s.apply(schedule, "--schedule");
  return fmt::format("{} {} batch={} threads={} target={}", program.name, sizes_string(sizes), batch,
                     s.team_size(), target);
}

namespace {

nlohmann::json read_cache(const std::string &path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.is_object()) user_error(msg::kTuneCacheMalformed, path, "the top level is not an object");
    return j;
  } catch (const nlohmann::json::exception &e) {
    user_error(msg::kTuneCacheMalformed, path, e.what());
  }
}

std::string joined(const std::vector<std::pair<std::string, std::string>> &settings) {
  std::string s;
  for (const auto &[key, value] : settings) s += fmt::format("{}{}={}", s.empty() ? "" : ",", key, value);
  return s;
}

}  // namespace

std::string cached_schedule(const std::string &cache, const std::string &key) {
  std::string path = cache.empty() ? default_tune_cache() : cache;
  nlohmann::json j = read_cache(path);
  if (!j.contains(key)) user_error(msg::kTuneNoEntry, key, path);
  const nlohmann::json &entry = j[key];
  if (!entry.is_object() || !entry.contains("schedule") || !entry["schedule"].is_string())
    user_error(msg::kTuneCacheMalformed, path, fmt::format("entry '{}' has no schedule string", key));
  std::string schedule = entry["schedule"].get<std::string>();
  scheduling::Schedule check;  // a bad entry is the cache's error, not --schedule's
  check.apply(schedule, fmt::format("tuning cache {}, entry '{}'", path, key));
  return schedule;
}

std::string tuned_schedule(const BenchCommand &c, const BenchInputs &in) {
  std::string base = bench_compile_options(c, c.schedule).schedule;
  return cached_schedule(c.cache, tune_key(in.program, in.sizes, c.batch, base, c.target));
}

int tune(const TuneCommand &command, std::ostream &out) {
  const BenchCommand &c = command.bench;
  if (is_cuda_target(c.target)) refuse_cuda_target("tune");
  note_unused_cuda_options(c.cuda);
  BenchInputs in = load_bench_inputs(c);
  const std::string base = bench_compile_options(c, c.schedule).schedule;
  const std::string key = tune_key(in.program, in.sizes, c.batch, base, c.target);
  const std::string cache = c.cache.empty() ? default_tune_cache() : c.cache;
  read_cache(cache);  // a malformed cache is an error before minutes of search, not after

  const std::vector<std::pair<std::string, std::vector<std::string>>> knobs = {
      {"node_block", {"4", "16"}}, {"panel", {"16", "64"}}, {"persist", {"off"}},
      {"region", {"off"}},         {"unroll", {"2", "3"}},
  };
  Progress progress("tune " + in.program.name, "schedules", progress_wanted(c.quiet));
  int64_t candidates = 1, tried = 0;  // the default schedule, then one per knob value
  for (const auto &knob : knobs) candidates += int64_t(knob.second.size());
  progress.set_total(candidates);

  // The median ms per batch of `settings` over the base schedule.
  auto measure = [&](const std::vector<std::pair<std::string, std::string>> &settings) {
    std::string settings_text = joined(settings);
    std::string schedule = base + (base.empty() || settings_text.empty() ? "" : ",") + settings_text;
    cpu::CompiledModel model =
        cpu::CompiledModel::compile(in.program, in.weights, bench_compile_options(c, schedule));
    double ms = percentile(time_passes(model, in.inputs, c.batch, c.repeat).ms_per_batch, 50);
    progress.clear();  // on a terminal the report's lines go above the progress line
    out << fmt::format("  {:<40} {:.4f} ms per batch", settings_text.empty() ? "(default)" : settings_text,
                       ms)
        << std::endl;
    progress.update(++tried);
    return ms;
  };

  out << fmt::format("tune      {}", key) << std::endl;
  progress.update(0);
  std::vector<std::pair<std::string, std::string>> best;
  const double default_ms = measure(best);
  double best_ms = default_ms;
  for (const auto &[knob, values] : knobs) {
    for (const std::string &value : values) {
      // The best so far with this knob (replacing a value kept for it earlier) set to `value`.
      std::vector<std::pair<std::string, std::string>> candidate = best;
      std::erase_if(candidate, [&k = knob](const auto &setting) { return setting.first == k; });
      candidate.emplace_back(knob, value);
      double ms = measure(candidate);
      if (ms < best_ms * 0.98) {
        best = std::move(candidate);
        best_ms = ms;
      }
    }
  }

  progress.finish();

  nlohmann::json j = read_cache(cache);
  j[key] = {{"schedule", joined(best)},
            {"median_ms_per_batch", best_ms},
            {"default_ms_per_batch", default_ms},
            {"inputs", in.inputs.path},
            {"repeat", c.repeat}};
  std::filesystem::path dir = std::filesystem::path(cache).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::string text = j.dump(2) + "\n";
  write_file_atomically(cache, std::vector<std::string_view>{text});
  out << fmt::format("best      {} — {:.4f} ms per batch, {:.2f}x the default's {:.4f}\n",
                     best.empty() ? "the default schedule" : "--schedule '" + joined(best) + "'", best_ms,
                     best_ms / default_ms, default_ms);
  out << fmt::format("cached in {} (grove bench/run --tuned use it)\n", cache);
  return 0;
}

}  // namespace grove::tool
