#pragma once
// Comparing run-time values of Relay programs (relay/Value.h) in tests that run one program two
// ways (the VM against the interpreter: test_vm.cpp, test_vm_differential.cpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "frontend/relay/Value.h"

namespace grove::relay::testing {

// Whether two tensors agree: bit for bit when `rtol` is 0; else same dtype and shape, integers and
// bools equal, floats within `rtol` relative to the larger magnitude (or `rtol` absolute near zero),
// NaN matching NaN.
inline bool same_tensor(const NDArray &a, const NDArray &b, double rtol) {
  if (rtol == 0) return a.bitwise_equal(b);
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.element_as_double(i), y = b.element_as_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return false;
      continue;
    }
    if (x == y) continue;  // infinities of one sign, exact values
    if (!is_float(a.dtype()) || std::abs(x - y) > rtol * std::max({std::abs(x), std::abs(y), 1.0}))
      return false;
  }
  return true;
}

// Whether two values are the same: tensors by same_tensor, tuples and ADTs field by field (ADTs by
// constructor name and tag), references by their contents; closures are not compared. Iterative,
// for 100,000-element lists. `why` says where they differ.
inline bool same_value(const Value &a, const Value &b, std::string *why, double rtol = 0) {
  std::vector<std::pair<Value, Value>> todo{{a, b}};
  while (!todo.empty()) {
    Value x = todo.back().first, y = todo.back().second;  // not a structured binding: lambdas capture these
    todo.pop_back();
    auto differ = [&] {
      *why = value_to_string(x) + " vs " + value_to_string(y);
      return false;
    };
    if (x->kind != y->kind) return differ();
    const std::vector<Value> *xs = nullptr, *ys = nullptr;
    switch (x->kind) {
      case ValueKind::Tensor:
        if (!same_tensor(tensor_of(x), tensor_of(y), rtol)) return differ();
        break;
      case ValueKind::Tuple:
        xs = &x->as<TupleValue>()->fields;
        ys = &y->as<TupleValue>()->fields;
        break;
      case ValueKind::ADT:
        if (x->as<ADTValue>()->tag != y->as<ADTValue>()->tag ||
            x->as<ADTValue>()->constructor.as<Constructor>()->name !=
                y->as<ADTValue>()->constructor.as<Constructor>()->name)
          return differ();
        xs = &x->as<ADTValue>()->fields;
        ys = &y->as<ADTValue>()->fields;
        break;
      case ValueKind::Ref:
        todo.emplace_back(x->as<RefValue>()->read(), y->as<RefValue>()->read());
        break;
      case ValueKind::Closure:
        break;
    }
    if (xs == nullptr) continue;
    if (xs->size() != ys->size()) return differ();
    for (size_t i = 0; i < xs->size(); ++i) todo.emplace_back((*xs)[i], (*ys)[i]);
  }
  return true;
}

}  // namespace grove::relay::testing
