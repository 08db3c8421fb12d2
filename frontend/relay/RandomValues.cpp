#include "frontend/relay/RandomValues.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "frontend/relay/TypeSolver.h"

namespace grove::relay {

namespace {

// Levels past options.adt_depth after which an ADT is taken to have no finite value (every
// constructor refers back to it).
constexpr int kMaxExtraDepth = 16;

// Uniform in [-1, 1), from the top 53 bits of one draw.
double uniform_pm1(std::mt19937_64 &rng) { return 2.0 * double(rng() >> 11) * 0x1.0p-53 - 1.0; }

// How many of a constructor's fields are ADTs: the fewer, the sooner a value of it ends.
size_t adt_fields(const Constructor &c) {
  return size_t(std::count_if(c.inputs.begin(), c.inputs.end(), [](const Type &t) {
    return t->kind == TypeKind::TypeCall || t->kind == TypeKind::GlobalTypeVar;
  }));
}

class Generator {
 public:
  Generator(const Module &m, std::mt19937_64 &rng, const RandomValueOptions &o, std::string *why)
      : module_(m), rng_(rng), options_(o), why_(why) {}

  // Recursion over the type's structure and the ADT levels built, both bounded.
  std::optional<Value> build(const Type &type, int depth) {
    switch (type->kind) {
      case TypeKind::TensorType:
        return tensor_value(random_tensor(*type.as<TensorType>(), rng_, options_));
      case TypeKind::TupleType: {
        std::vector<Value> fields;
        for (const Type &f : type.as<TupleType>()->fields) {
          std::optional<Value> v = build(f, depth);
          if (!v) return std::nullopt;
          fields.push_back(*v);
        }
        return tuple_value(std::move(fields));
      }
      case TypeKind::RefType: {
        std::optional<Value> v = build(type.as<RefType>()->value, depth);
        if (!v) return std::nullopt;
        return ref_value(*v);
      }
      case TypeKind::TypeCall:
      case TypeKind::GlobalTypeVar:
        return adt(type, depth);
      default:
        return fail(fmt::format("no random value of type {}", to_string(type)));
    }
  }

 private:
  std::optional<Value> fail(std::string message) {
    *why_ = std::move(message);
    return std::nullopt;
  }

  // 1. Find the ADT and its type arguments (none for a bare GlobalTypeVar).
  // 2. Pick a constructor: any below options.adt_depth, else one of those with fewest ADT fields.
  // 3. Build each field at its type with the ADT's type variables replaced by the arguments.
  std::optional<Value> adt(const Type &type, int depth) {
    const auto *call = type.as<TypeCall>();
    const auto *head = (call ? call->func : type).as<GlobalTypeVar>();
    const TypeData *data = head ? module_.find_type(head->name) : nullptr;
    if (data == nullptr) return fail(fmt::format("no ADT of type {} in the module", to_string(type)));
    std::vector<Type> args = call ? call->args : std::vector<Type>{};
    if (data->constructors.empty() || args.size() != data->type_vars.size() ||
        depth > options_.adt_depth + kMaxExtraDepth)
      return fail(fmt::format("no finite value of type {}", to_string(type)));

    std::vector<const Constructor *> choices;
    for (const Expr &c : data->constructors) choices.push_back(c.as<Constructor>());
    if (depth >= options_.adt_depth) {
      size_t fewest = adt_fields(*choices[0]);
      for (const Constructor *c : choices) fewest = std::min(fewest, adt_fields(*c));
      std::erase_if(choices, [&](const Constructor *c) { return adt_fields(*c) != fewest; });
    }
    const Constructor *chosen = choices[rng_() % choices.size()];

    std::vector<Value> fields;
    for (const Type &input : chosen->inputs) {
      std::optional<Value> v = build(TypeSolver::substitute(input, data->type_vars, args), depth + 1);
      if (!v) return std::nullopt;
      fields.push_back(*v);
    }
    for (const Expr &c : data->constructors)
      if (c.as<Constructor>() == chosen) return adt_value(c, std::move(fields));
    return std::nullopt;  // unreachable: `chosen` is one of them
  }

  const Module &module_;
  std::mt19937_64 &rng_;
  const RandomValueOptions &options_;
  std::string *why_;
};

}  // namespace

NDArray random_tensor(const TensorType &type, std::mt19937_64 &rng, const RandomValueOptions &options) {
  Shape shape = type.shape;
  for (int64_t &d : shape)
    if (d == kAnyDim) d = options.unknown_dim > 0 ? options.unknown_dim : 1 + int64_t(rng() % 3);
  NDArray a(type.dtype, shape);
  int64_t fan_in = 1;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
  float bound = shape.size() >= 2 ? 1.0f / std::sqrt(float(std::max<int64_t>(fan_in, 1))) : 0.1f;
  if (type.dtype == DType::Float32) {
    // Written out (not through NDArray::scalar) for speed on weights of millions of elements.
    float *x = a.data<float>();
    for (int64_t i = 0; i < a.size(); ++i) x[i] = bound * float(uniform_pm1(rng));
    return a;
  }
  size_t bytes = dtype_bytes(type.dtype);
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = 0;
    if (is_float(type.dtype))
      v = double(bound * float(uniform_pm1(rng)));
    else if (type.dtype == DType::Bool)
      v = double(rng() & 1);
    else
      v = double(rng() % uint64_t(options.int_max + 1));
    std::memcpy(a.raw() + size_t(i) * bytes, NDArray::scalar(type.dtype, v).raw(), bytes);
  }
  return a;
}

std::optional<Value> random_value(const Module &module, const Type &type, std::mt19937_64 &rng,
                                  std::string *why, const RandomValueOptions &options) {
  return Generator(module, rng, options, why).build(type, 0);
}

}  // namespace grove::relay
