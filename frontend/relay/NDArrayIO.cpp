#include "frontend/relay/NDArrayIO.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "frontend/relay/Messages.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "support/Safetensors.h"

namespace grove::relay {
namespace {

static_assert(std::endian::native == std::endian::little, "both formats store little-endian data");

constexpr std::string_view kConstantPrefix = "relay.Constant.";

// Each DType's name in the two formats. 1-byte .npy types have no byte order ('|'), as NumPy writes them.
struct DtypeNames {
  DType dtype;
  const char *safetensors;
  const char *npy;
};
constexpr DtypeNames kDtypes[] = {
    {DType::Bool, "BOOL", "|b1"},   {DType::Int8, "I8", "|i1"},     {DType::Int16, "I16", "<i2"},
    {DType::Int32, "I32", "<i4"},   {DType::Int64, "I64", "<i8"},   {DType::UInt8, "U8", "|u1"},
    {DType::UInt16, "U16", "<u2"},  {DType::UInt32, "U32", "<u4"},  {DType::UInt64, "U64", "<u8"},
    {DType::Float16, "F16", "<f2"}, {DType::Float32, "F32", "<f4"}, {DType::Float64, "F64", "<f8"},
};

const DtypeNames &names_of(DType dtype) {
  for (const DtypeNames &names : kDtypes) {
    if (names.dtype == dtype) return names;
  }
  GROVE_CHECK(false, "DType {} has no file names", static_cast<int>(dtype));
}

std::optional<DType> from_safetensors(const std::string &name) {
  for (const DtypeNames &names : kDtypes) {
    if (name == names.safetensors) return names.dtype;
  }
  return std::nullopt;
}

// NumPy writes '|' for 1-byte types; '<' is accepted there too, since byte order cannot matter.
std::optional<DType> from_npy(const std::string &descr) {
  for (const DtypeNames &names : kDtypes) {
    std::string_view npy = names.npy;
    if (descr == npy || (npy[0] == '|' && descr.size() == npy.size() && descr[0] == '<' &&
                         std::string_view(descr).substr(1) == npy.substr(1))) {
      return names.dtype;
    }
  }
  return std::nullopt;
}

// Where a reader puts an array's bytes (null for an empty array, which has none to read).
char *bytes_of(NDArray &array) {
  return array.nbytes() == 0 ? nullptr : reinterpret_cast<char *>(array.raw());
}

std::string_view bytes_view(const NDArray &array) {
  GROVE_CHECK(array.defined(), "writing an undefined NDArray");
  GROVE_CHECK(array.nbytes() == static_cast<size_t>(array.size()) * dtype_bytes(array.dtype()),
              "NDArray of {} elements of {} holds {} bytes", array.size(), to_string(array.dtype()),
              array.nbytes());
  return {array.nbytes() == 0 ? "" : reinterpret_cast<const char *>(array.raw()), array.nbytes()};
}

// A bool byte other than 0 or 1 would make element_as_int and the kernels disagree; refuse it.
void check_bools(const NDArray &array, const std::string &path, const std::string &what) {
  if (array.dtype() != DType::Bool) return;
  const auto *bytes = reinterpret_cast<const unsigned char *>(array.raw());
  for (int64_t i = 0; i < array.size(); ++i) {
    if (bytes[i] > 1) user_error(msg::kBoolNotZeroOrOne, path, what, i, static_cast<int>(bytes[i]));
  }
}

// The index i of "relay.Constant.<i>" (digits without leading zeros), or nullopt.
std::optional<size_t> constant_index(std::string_view name) {
  if (name.substr(0, kConstantPrefix.size()) != kConstantPrefix) return std::nullopt;
  std::string_view digits = name.substr(kConstantPrefix.size());
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  size_t index = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

}  // namespace

std::map<std::string, NDArray> read_safetensors_arrays(const std::string &path) {
  std::map<std::string, NDArray> arrays;
  SafetensorsSink sink;
  sink.element_size = [&path](const SafetensorsTensorInfo &info) -> uint64_t {
    std::optional<DType> dtype = from_safetensors(info.dtype);
    if (!dtype) user_error(msg::kSafetensorsDtypeUnknown, path, info.name, info.dtype);
    return dtype_bytes(*dtype);
  };
  sink.allocate = [&arrays](const SafetensorsTensorInfo &info) {
    NDArray &array = arrays[info.name] = NDArray(*from_safetensors(info.dtype), info.shape);
    return bytes_of(array);
  };
  sink.disjoint = true;
  read_safetensors_into(path, sink);
  for (const auto &[name, array] : arrays) check_bools(array, path, fmt::format("tensor '{}'", name));
  return arrays;
}

void write_safetensors_arrays(const std::string &path, const std::map<std::string, NDArray> &arrays) {
  std::vector<std::pair<SafetensorsTensorInfo, std::string_view>> tensors;
  for (const auto &[name, array] : arrays) {
    tensors.emplace_back(SafetensorsTensorInfo{name, names_of(array.dtype()).safetensors, array.shape()},
                         bytes_view(array));
  }
  write_safetensors_tensors(path, tensors);
}

NDArray read_npy_array(const std::string &path) {
  NDArray array;
  read_npy_into(path, {[&path](const std::string &descr) {
                         std::optional<DType> dtype = from_npy(descr);
                         if (!dtype) user_error(msg::kNpyDtypeUnknown, path, descr);
                         return NpyElement{dtype_bytes(*dtype), to_string(*dtype)};
                       },
                       [&array](const std::string &descr, const std::vector<int64_t> &shape) {
                         array = NDArray(*from_npy(descr), shape);
                         return bytes_of(array);
                       }});
  check_bools(array, path, "the array");
  return array;
}

void write_npy_array(const std::string &path, const NDArray &array) {
  write_npy_bytes(path, names_of(array.dtype()).npy, array.shape(), bytes_view(array));
}

std::vector<NDArray> read_meta_constants(const std::string &path) {
  std::map<std::string, NDArray> arrays = read_safetensors_arrays(path);
  // Names are unique, so n distinct indices below n are exactly 0 .. n-1.
  std::vector<NDArray> constants(arrays.size());
  std::set<size_t> seen;
  for (auto &[name, array] : arrays) {
    std::optional<size_t> index = constant_index(name);
    if (!index) user_error(msg::kMetaConstantName, path, name);
    if (*index < constants.size()) {
      constants[*index] = std::move(array);
      seen.insert(*index);
    }
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    if (!seen.count(i))
      user_error(msg::kMetaConstantMissing, path, i, constants.size(), constants.size() - 1);
  }
  return constants;
}

void write_meta_constants(const std::string &path, const std::vector<NDArray> &constants) {
  std::vector<std::pair<SafetensorsTensorInfo, std::string_view>> tensors;
  for (size_t i = 0; i < constants.size(); ++i) {
    tensors.emplace_back(
        SafetensorsTensorInfo{fmt::format("{}{}", kConstantPrefix, i),
                              names_of(constants[i].dtype()).safetensors, constants[i].shape()},
        bytes_view(constants[i]));
  }
  write_safetensors_tensors(path, tensors);
}

}  // namespace grove::relay
