#pragma once
// A dense float32 tensor, row-major. Weights, outputs and test fixtures use it.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grove {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // product(shape) elements, row-major

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s) : shape(std::move(s)), data(num_elements(shape), 0.0f) {}

  static int64_t num_elements(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// A model's weights by parameter name (the names of docs/MODELS.md).
using Weights = std::map<std::string, Tensor>;

// "[3, 256]" — how shapes appear in messages.
std::string shape_string(const std::vector<int64_t> &shape);

}  // namespace grove
