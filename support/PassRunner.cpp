#include "support/PassRunner.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

namespace grove {

int debug_level() {
  const char *v = std::getenv("GROVE_DEBUG");
  return v ? std::atoi(v) : 0;
}

void report_pass(std::ostream *out, std::string_view pipeline, std::string_view name, double ms,
                 const std::string *after) {
  std::ostream &os = out ? *out : std::cerr;
  const std::string label = pipeline.empty() ? std::string("pass") : fmt::format("{} pass", pipeline);
  os << fmt::format("[grove] {} {:<28} {:8.2f} ms\n", label, name, ms);
  if (after) os << "[grove] after " << name << ":\n" << *after << "\n";
}

}  // namespace grove
