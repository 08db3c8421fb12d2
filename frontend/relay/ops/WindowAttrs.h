#pragma once
// The attributes of a sliding window over NCHW data — nn.conv2d and the 2-D pools — as TVM spells
// them, read in one place for the relations and kernels (ops/NN.cpp), the Halide kernels
// (backends/relay/halide/HalideNN.cpp) and oneDNN (backends/relay/byoc/Dnnl.cpp). Each throws OpError
// naming the attribute when it does not have a form TVM accepts.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// `padding`: 1 value for all sides, 2 for (top/bottom, left/right), 4 for (top, left, bottom, right);
// none negative. Absent: no padding.
struct Pad {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool any() const { return top != 0 || left != 0 || bottom != 0 || right != 0; }
};
Pad padding_attr(const Attrs &attrs);

// A 2-value attribute (strides, dilation, pool_size, kernel_size): one value stands for both; both
// positive. `fallback` when absent.
std::array<int64_t, 2> pair_attr(const Attrs &attrs, const std::string &name, std::vector<int64_t> fallback);

}  // namespace grove::relay
