#pragma once
// `grove tune`: searches the schedule space for one model, its sizes, a batch size, a thread count
// and a target, on the user's trees, and caches the fastest schedule.
//
// Search: coordinate descent from the default schedule (with the user's --schedule applied). Each
// knob in turn — node_block, panel, persist, region, unroll — is set to each of its values with
// the others at their best so far; a value is kept only if its median time (grove bench's
// protocol) beats the best so far by more than 2%, so noise does not pick a schedule. About a
// dozen compilations.
//
// Cache: a JSON file, by default $XDG_CACHE_HOME/grove/schedules.json (~/.cache/grove/...), one
// entry per key "MODEL SIZES batch=N threads=T target=TARGET" with the schedule overrides found,
// its time and the default's; written atomically, other entries kept. `grove bench --tuned` and
// `grove run --tuned` start from the entry for their key (a UserError names the key and the file
// if there is none).

#include <ostream>
#include <string>

#include "tools/Bench.h"

namespace grove::tool {

struct TuneCommand {
  BenchCommand bench;  // inputs, batch, threads, repeat, target, base --schedule, cache
};

int tune(const TuneCommand &c, std::ostream &out);

// The default cache file.
std::string default_tune_cache();

// The cache key of a model and sizes run in calls of `batch` trees with `schedule` overrides.
std::string tune_key(const ilir::Program &program, const std::map<std::string, int64_t> &sizes, int64_t batch,
                     const std::string &schedule, const std::string &target);

// The cached overrides for `key` in `cache` (default_tune_cache() if empty); a UserError if none.
std::string cached_schedule(const std::string &cache, const std::string &key);

// The cached overrides for bench command `c` on inputs `in`.
std::string tuned_schedule(const BenchCommand &c, const BenchInputs &in);

}  // namespace grove::tool
