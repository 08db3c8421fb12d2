#pragma once
// Reading the op fixtures of tests/relay/fixtures (made by make_op_fixtures.py: inputs and the
// outputs NumPy/PyTorch compute for them) and comparing kernel results with them.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/ops/Op.h"

namespace grove::relay::testing {

struct OpCase {
  std::string name;  // "add/float32/2x1x3+4x3"
  std::string op;
  Attrs attrs;
  std::vector<NDArray> inputs;
  std::vector<NDArray> outputs;
};

inline AttrValue attr_from_json(const nlohmann::json &j) {
  if (j.is_null()) return AttrValue::none();
  if (j.is_boolean()) return AttrValue::of_bool(j.get<bool>());
  if (j.is_number_integer()) return AttrValue::of_int(j.get<int64_t>());
  if (j.is_number_float()) return AttrValue::of_float(j.get<double>());
  if (j.is_string()) return AttrValue::of_string(j.get<std::string>());
  std::vector<AttrValue> list;
  for (const auto &x : j) list.push_back(attr_from_json(x));
  return AttrValue::of_list(std::move(list));
}

// {"dtype": "float32", "shape": [2, 3], "data": [...]} -> NDArray (bool data as 0/1).
inline NDArray array_from_json(const nlohmann::json &j) {
  const std::string dtype_name = j.at("dtype").get<std::string>();
  const std::optional<DType> dtype = parse_dtype(dtype_name);
  if (!dtype) throw std::runtime_error("fixture dtype " + dtype_name);
  NDArray a(*dtype, j.at("shape").get<Shape>());
  const auto &data = j.at("data");
  if (static_cast<int64_t>(data.size()) != a.size()) throw std::runtime_error("fixture data size");
  for (int64_t i = 0; i < a.size(); ++i) {
    switch (*dtype) {
      case DType::Float32:
        a.data<float>()[i] = static_cast<float>(data[i].get<double>());
        break;
      case DType::Float64:
        a.data<double>()[i] = data[i].get<double>();
        break;
      case DType::Int32:
        a.data<int32_t>()[i] = data[i].get<int32_t>();
        break;
      case DType::Int64:
        a.data<int64_t>()[i] = data[i].get<int64_t>();
        break;
      case DType::Bool:
        a.data<bool>()[i] = data[i].get<int64_t>() != 0;
        break;
      case DType::Float16:  // the fixture's values are float16's, so the conversion is exact
        std::memcpy(a.raw() + 2 * i, NDArray::scalar(DType::Float16, data[i].get<double>()).raw(), 2);
        break;
      default:
        throw std::runtime_error("fixture dtype " + dtype_name);
    }
  }
  return a;
}

// The cases of tests/relay/fixtures/<file>.
inline std::vector<OpCase> load_op_cases(const std::string &file) {
  const std::string path = std::string(GROVE_SOURCE_DIR) + "/tests/relay/fixtures/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<OpCase> cases;
  for (const auto &c : doc.at("cases")) {
    OpCase oc;
    oc.name = c.at("name").get<std::string>();
    oc.op = c.at("op").get<std::string>();
    for (const auto &[k, v] : c.at("attrs").items()) oc.attrs = oc.attrs.with(k, attr_from_json(v));
    for (const auto &x : c.at("inputs")) oc.inputs.push_back(array_from_json(x));
    for (const auto &x : c.at("outputs")) oc.outputs.push_back(array_from_json(x));
    cases.push_back(std::move(oc));
  }
  return cases;
}

inline Type type_of(const NDArray &a) { return TensorType::make(a.shape(), a.dtype()); }

// A tensor of `shape` holding `values` (row-major) converted to `dtype` (float16 included), for
// hand-computed cases.
inline NDArray array_of(Shape shape, const std::vector<double> &values, DType dtype = DType::Float32) {
  NDArray a(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != a.size())
    throw std::runtime_error("array_of: wrong value count");
  const size_t esize = dtype_bytes(dtype);
  for (size_t k = 0; k < values.size(); ++k)
    std::memcpy(a.raw() + k * esize, NDArray::scalar(dtype, values[k]).raw(), esize);
  return a;
}

// The elements of `a` (row-major) as doubles.
inline std::vector<double> elements_of(const NDArray &a) {
  std::vector<double> v;
  for (int64_t k = 0; k < a.size(); ++k) v.push_back(a.element_as_double(k));
  return v;
}

// Same dtype and shape, and every element within atol + rtol * |want| (exactly equal for integers
// and bool, where both tolerances should be 0). Reports the first differing element.
inline ::testing::AssertionResult arrays_close(const NDArray &got, const NDArray &want, double rtol,
                                               double atol) {
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << to_string(got.dtype()) << ", expected " << to_string(want.dtype());
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(got.shape()) << ", expected " << shape_to_string(want.shape());
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    const bool ok = (std::isnan(g) && std::isnan(w)) || std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok)
      return ::testing::AssertionFailure()
             << fmt::format("element {}: {} (expected {}; rtol {}, atol {})", i, g, w, rtol, atol);
  }
  return ::testing::AssertionSuccess();
}

// Every dimension of `unknown` (a relation's result on arguments with `?` dims) is `?` or the size in
// `known` (its result on concrete arguments).
inline ::testing::AssertionResult less_precise(const Shape &unknown, const Shape &known) {
  bool ok = unknown.size() == known.size();
  for (size_t i = 0; ok && i < known.size(); ++i) ok = unknown[i] == kAnyDim || unknown[i] == known[i];
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << shape_to_string(unknown) << " is not a less precise " << shape_to_string(known);
}

// The message of the OpError f() throws, or "<no OpError>".
template <typename F>
std::string op_error(F &&f) {
  try {
    f();
  } catch (const OpError &e) {
    return e.what();
  }
  return "<no OpError>";
}

// ---------------------------------------------------------------------------------------------
// Building what the op tests feed the relations: op lookups, types, attributes.
// ---------------------------------------------------------------------------------------------

inline const OpDef &op(const std::string &name) {
  const OpDef *def = find_op(name);
  if (!def) throw std::runtime_error("no op " + name);
  return *def;
}

inline Type tensor(Shape shape, DType dtype = DType::Float32) {
  return TensorType::make(std::move(shape), dtype);
}

inline Attrs attrs_of(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  Attrs a;
  for (const auto &[k, v] : entries) a = a.with(k, v);
  return a;
}
inline AttrValue ints(std::vector<int64_t> v) {
  std::vector<AttrValue> list;
  for (int64_t x : v) list.push_back(AttrValue::of_int(x));
  return AttrValue::of_list(std::move(list));
}
inline AttrValue i(int64_t v) { return AttrValue::of_int(v); }
inline AttrValue s(std::string v) { return AttrValue::of_string(std::move(v)); }

// The shapes of a relation's result: one per field of a tuple result, else one.
inline std::vector<Shape> result_shapes(const Type &t) {
  if (const auto *tt = t.as<TensorType>()) return {tt->shape};
  std::vector<Shape> shapes;
  if (const auto *tup = t.as<TupleType>())
    for (const Type &f : tup->fields) shapes.push_back(f.as<TensorType>()->shape);
  return shapes;
}

inline Shape shape_of(const Type &t) {
  const auto *tt = t.as<TensorType>();
  if (!tt) throw std::runtime_error("not a tensor type: " + to_string(t));
  return tt->shape;
}

inline std::vector<Type> input_types(const OpCase &c) {
  std::vector<Type> types;
  for (const NDArray &a : c.inputs) types.push_back(type_of(a));
  return types;
}

}  // namespace grove::relay::testing
