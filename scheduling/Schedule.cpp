#include "scheduling/Schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "scheduling/Messages.h"
#include "support/Error.h"

namespace grove::scheduling {

namespace msg = scheduling_messages;

namespace {

struct BoolField {
  const char *key;
  bool Schedule::*field;
};
struct IntField {
  const char *key;
  int Schedule::*field;
  int min, max;
};

constexpr BoolField kBools[] = {
    {"batch", &Schedule::batch},       {"specialize", &Schedule::specialize},
    {"fuse", &Schedule::fuse},         {"gemm", &Schedule::gemm},
    {"hoist", &Schedule::hoist},       {"persist", &Schedule::persist},
    {"parallel", &Schedule::parallel}, {"region", &Schedule::region},
    {"epilogue", &Schedule::epilogue},
};
constexpr IntField kInts[] = {
    {"vector", &Schedule::vector, 1, 64},         {"panel", &Schedule::panel, 1, 256},
    {"node_block", &Schedule::node_block, 1, 32}, {"threads", &Schedule::threads, 0, 1024},
    {"unroll", &Schedule::unroll, 1, 64},
};

// Keys taking one of a few names.
constexpr const char *kPrecisionKey = "precision";
constexpr const char *kPrecisionNames[] = {"fp32", "bf16"};  // indexed by Schedule::Precision

std::string known_keys() {
  std::string s;
  for (const BoolField &b : kBools) s += (s.empty() ? "" : ", ") + std::string(b.key);
  for (const IntField &i : kInts) s += ", " + std::string(i.key);
  return s + ", " + kPrecisionKey;
}

}  // namespace

void Schedule::apply(const std::vector<std::pair<std::string, std::string>> &overrides,
                     const std::string &where) {
  for (const auto &[key, value] : overrides) {
    bool found = false;
    for (const BoolField &b : kBools) {
      if (key != b.key) continue;
      found = true;
      if (value == "on" || value == "true" || value == "1")
        this->*b.field = true;
      else if (value == "off" || value == "false" || value == "0")
        this->*b.field = false;
      else
        user_error(msg::kBadBool, where, key, value);
    }
    for (const IntField &i : kInts) {
      if (key != i.key) continue;
      found = true;
      size_t used = 0;
      long v = 0;
      try {
        v = std::stol(value, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != value.size() || v < i.min || v > i.max)
        user_error(msg::kBadInt, where, key, i.min, i.max, value);
      this->*i.field = int(v);
    }
    if (key == kPrecisionKey) {
      found = true;
      auto it = std::find(std::begin(kPrecisionNames), std::end(kPrecisionNames), value);
      if (it == std::end(kPrecisionNames)) user_error(msg::kBadChoice, where, key, "fp32 or bf16", value);
      precision = Precision(it - std::begin(kPrecisionNames));
    }
    if (!found) user_error(msg::kUnknownKey, where, key, known_keys());
    if (!asked(key)) requested.push_back(key);
  }
  if (panel % vector != 0) user_error(msg::kPanelNotMultiple, where, panel, vector);
}

void Schedule::apply(const std::string &overrides, const std::string &where) {
  std::vector<std::pair<std::string, std::string>> items;
  std::stringstream in(overrides);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) user_error(msg::kBadItem, where, item);
    items.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  apply(items, where);
}

namespace {

// "batch=on and specialize=on" for the conditions among `needs` that do not hold, named as settings.
std::string missing(std::initializer_list<std::pair<const char *, bool>> needs) {
  std::vector<std::string> names;
  for (const auto &[name, holds] : needs)
    if (!holds) names.push_back(name);
  return fmt::format("{}", fmt::join(names, " and "));
}

}  // namespace

bool Schedule::asked(const std::string &key) const {
  return std::find(requested.begin(), requested.end(), key) != requested.end();
}

std::vector<std::string> Schedule::notes(ilir::StructureKind structure) const {
  const bool level_gemms = batch && specialize && gemm;
  const auto gemm_needs = {
      std::pair<const char *, bool>{"batch=on", batch}, {"specialize=on", specialize}, {"gemm=on", gemm}};
  const bool region_ready = batch && specialize && parallel && team_size() > 1;
  const auto region_needs = {std::pair<const char *, bool>{"batch=on", batch},
                             {"specialize=on", specialize},
                             {"parallel=on", parallel},
                             {"more than one thread", team_size() > 1}};
  std::vector<std::string> out;
  if (asked("epilogue") && epilogue && !level_gemms)
    out.push_back(fmt::format(msg::kNoteEpilogue, missing(gemm_needs)));
  if (asked(kPrecisionKey) && precision == Precision::Bf16 && !level_gemms)
    out.push_back(fmt::format(msg::kNotePrecision, missing(gemm_needs)));
  if (asked("persist") && persist && !level_gemms)
    out.push_back(fmt::format(msg::kNotePersist, missing(gemm_needs)));
  for (const char *key : {"panel", "node_block"})
    if (asked(key) && !level_gemms)
      out.push_back(fmt::format(msg::kNoteGemmBlocking, key, std::string(key) == "panel" ? panel : node_block,
                                missing(gemm_needs)));
  if (asked("region") && region && !region_ready)
    out.push_back(fmt::format(msg::kNoteRegion, missing(region_needs)));
  if (asked("unroll") && unroll > 1) {
    if (ilir::has_predecessor_slots(structure))
      out.push_back(fmt::format(msg::kNoteUnrollStructure, unroll, ilir::to_string(structure)));
    else if (!uses_region())
      out.push_back(fmt::format(msg::kNoteUnrollRegion, unroll,
                                region_ready ? std::string("region=on") : missing(region_needs)));
  }
  return out;
}

int Schedule::team_size() const {
  return threads > 0 ? threads : std::max(1, int(std::thread::hardware_concurrency()));
}

std::string Schedule::to_string() const {
  std::string s;
  for (const BoolField &b : kBools)
    s += fmt::format("{}{}={}", s.empty() ? "" : ",", b.key, this->*b.field ? "on" : "off");
  for (const IntField &i : kInts) s += fmt::format(",{}={}", i.key, this->*i.field);
  return s + fmt::format(",{}={}", kPrecisionKey, kPrecisionNames[int(precision)]);
}

Schedule default_schedule(const ilir::Program &program, int vector_bytes) {
  // Every optimization on but recursive unrolling. The blocking fills the vector register file:
  // with AVX-512 (32 registers of 16 floats) a panel of 32 rows is two registers per node and 8
  // nodes per block keep 16 accumulators plus the weights live; with AVX/AVX2 (16 registers of 8
  // floats) and SSE/NEON (16 of 4) the panel is two registers and 4 nodes keep 8 accumulators.
  Schedule s;
  s.vector = std::max(4, vector_bytes / 4);
  s.panel = 2 * s.vector;
  s.node_block = vector_bytes >= 64 ? 8 : 4;
  s.apply(program.schedule, "schedule block of model " + program.name);
  return s;
}

}  // namespace grove::scheduling
