#include "backends/runtime/RandomWeights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "backends/runtime/Messages.h"
#include "support/Error.h"

namespace grove {

namespace msg = runtime_messages;

std::map<std::string, int64_t> parse_sizes(const std::string &text) {
  std::map<std::string, int64_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) user_error(msg::kBadSizes, text);
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != value.size() || value.empty() || v <= 0 || v > (int64_t(1) << 31))
      user_error(msg::kBadSizeValue, name, value);
    sizes[name] = v;
  }
  return sizes;
}

void check_sizes(const ilir::Program &p, const std::map<std::string, int64_t> &sizes, bool complete) {
  for (const auto &[name, value] : sizes)
    if (std::find(p.size_vars.begin(), p.size_vars.end(), name) == p.size_vars.end())
      user_error(msg::kUnknownSize, p.name, name, fmt::join(p.size_vars, ", "));
  if (complete)
    for (const std::string &v : p.size_vars)
      if (!sizes.count(v)) user_error(msg::kMissingSize, p.name, v);
}

Weights random_weights(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                       uint64_t seed) {
  check_sizes(program, sizes, true);
  std::mt19937_64 rng(seed);
  Weights weights;
  for (const ilir::TensorDecl &t : program.tensors) {
    if (t.kind != ilir::TensorKind::Param) continue;
    Tensor w;
    for (const ilir::Expr &d : t.shape) w.shape.push_back(ilir::eval_size(d, sizes));
    w.data.resize(Tensor::num_elements(w.shape));
    float a = w.shape.size() >= 2 ? 1.0f / std::sqrt(float(w.shape.back())) : 0.1f;
    for (float &x : w.data) x = a * float(2.0 * double(rng() >> 11) * 0x1.0p-53 - 1.0);
    weights.emplace(t.name, std::move(w));
  }
  return weights;
}

}  // namespace grove
