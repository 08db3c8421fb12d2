#include "frontend/relay/Metadata.h"

#include <fmt/format.h>

#include <boost/archive/iterators/base64_from_binary.hpp>
#include <boost/archive/iterators/binary_from_base64.hpp>
#include <boost/archive/iterators/transform_width.hpp>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "frontend/relay/Messages.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;
constexpr int32_t kDLCPU = 1;
constexpr char kConstantKey[] = "relay.Constant";

// DLPack's type codes.
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2 };

struct DLType {
  uint8_t code, bits;
};

DLType dl_type(DType t) {
  switch (t) {
    case DType::Bool:
      return {kDLUInt, 1};
    case DType::Int8:
      return {kDLInt, 8};
    case DType::Int16:
      return {kDLInt, 16};
    case DType::Int32:
      return {kDLInt, 32};
    case DType::Int64:
      return {kDLInt, 64};
    case DType::UInt8:
      return {kDLUInt, 8};
    case DType::UInt16:
      return {kDLUInt, 16};
    case DType::UInt32:
      return {kDLUInt, 32};
    case DType::UInt64:
      return {kDLUInt, 64};
    case DType::Float16:
      return {kDLFloat, 16};
    case DType::Float32:
      return {kDLFloat, 32};
    case DType::Float64:
      return {kDLFloat, 64};
  }
  GROVE_CHECK(false, "a dtype without a DLPack code");
  return {};
}

std::optional<DType> from_dl_type(uint8_t code, uint8_t bits) {
  for (DType t :
       {DType::Bool, DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16,
        DType::UInt32, DType::UInt64, DType::Float16, DType::Float32, DType::Float64})
    if (DLType d = dl_type(t); d.code == code && d.bits == bits) return t;
  return std::nullopt;
}

using Base64Encoder = boost::archive::iterators::base64_from_binary<
    boost::archive::iterators::transform_width<std::string::const_iterator, 6, 8>>;
using Base64Decoder = boost::archive::iterators::transform_width<
    boost::archive::iterators::binary_from_base64<std::string::const_iterator>, 8, 6>;

std::string base64_decode(std::string_view text, const std::string &where) {
  std::string s(text);
  while (!s.empty() && s.back() == '=') s.pop_back();  // the decoder takes no padding
  if (s.size() % 4 == 1) user_error(msg::kMetaBase64, where);
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/')
      user_error(msg::kMetaBase64, where);
  return std::string(Base64Decoder(s.cbegin()), Base64Decoder(s.cend()));
}

std::string base64_encode(const std::string &bytes) {
  std::string s(Base64Encoder(bytes.cbegin()), Base64Encoder(bytes.cend()));
  s.append((3 - bytes.size() % 3) % 3, '=');
  return s;
}

// Little-endian reads of the save format's fields, each checked against the end.
class Reader {
 public:
  Reader(const std::string &bytes, const std::string &where) : bytes_(bytes), where_(where) {}
  template <typename T>
  T read(const char *field) {
    if (bytes_.size() - pos_ < sizeof(T)) user_error(msg::kMetaNDArrayShort, where_, field);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  size_t left() const { return bytes_.size() - pos_; }
  const char *here() const { return bytes_.data() + pos_; }

 private:
  const std::string &bytes_;
  const std::string &where_;
  size_t pos_ = 0;
};

template <typename T>
void append(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}

// An attribute of a JSON graph node holding a node or array index, as TVM writes it: a decimal
// string ("3"), or a number.
int64_t index_attr(const nlohmann::json &node, const char *name, const std::string &where) {
  const nlohmann::json *attrs = node.contains("attrs") ? &node["attrs"] : nullptr;
  if (!attrs || !attrs->is_object() || !attrs->contains(name)) user_error(msg::kMetaNodeField, where, name);
  const nlohmann::json &v = (*attrs)[name];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char *end = nullptr;
    errno = 0;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0' && errno == 0) return n;
  }
  user_error(msg::kMetaNodeField, where, name);
  return -1;
}

// A node's type_key, or "" when it has none or it is not a string.
std::string type_key(const nlohmann::json &node) {
  const auto it = node.find("type_key");
  return it != node.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

NDArray decode_tvm_ndarray(std::string_view base64, const std::string &where) {
  const std::string bytes = base64_decode(base64, where);
  Reader r(bytes, where);
  if (r.read<uint64_t>("magic") != kNDArrayMagic) user_error(msg::kMetaNDArrayMagic, where);
  r.read<uint64_t>("reserved");
  const int32_t device = r.read<int32_t>("device type");
  r.read<int32_t>("device id");
  if (device != kDLCPU) user_error(msg::kMetaNDArrayDevice, where, device);
  const int32_t ndim = r.read<int32_t>("rank");
  const uint8_t code = r.read<uint8_t>("type code"), bits = r.read<uint8_t>("type bits");
  const uint16_t lanes = r.read<uint16_t>("type lanes");
  if (lanes != 1) user_error(msg::kMetaNDArrayLanes, where, lanes);
  std::optional<DType> dtype = from_dl_type(code, bits);
  if (!dtype) user_error(msg::kMetaNDArrayDType, where, code, bits);
  if (ndim < 0 || static_cast<size_t>(ndim) > r.left() / 8) user_error(msg::kMetaNDArrayRank, where, ndim);
  Shape shape;
  int64_t elements = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    const int64_t n = r.read<int64_t>("shape");
    if (n < 0 || (n > 0 && elements > INT64_MAX / n)) user_error(msg::kMetaNDArrayShape, where, n);
    shape.push_back(n);
    elements *= n;
  }
  const int64_t nbytes = r.read<int64_t>("byte count");
  const size_t width = dtype_bytes(*dtype);
  if (elements > INT64_MAX / static_cast<int64_t>(width) ||
      nbytes != elements * static_cast<int64_t>(width) || static_cast<size_t>(nbytes) != r.left())
    user_error(msg::kMetaNDArrayBytes, where, nbytes, to_string(*dtype), shape_to_string(shape), r.left());
  NDArray a(*dtype, shape);
  if (nbytes > 0) std::memcpy(a.raw(), r.here(), static_cast<size_t>(nbytes));
  return a;
}

std::string encode_tvm_ndarray(const NDArray &a) {
  std::string out;
  append<uint64_t>(out, kNDArrayMagic);
  append<uint64_t>(out, 0);
  append<int32_t>(out, kDLCPU);
  append<int32_t>(out, 0);
  append<int32_t>(out, static_cast<int32_t>(a.ndim()));
  const DLType t = dl_type(a.dtype());
  append<uint8_t>(out, t.code);
  append<uint8_t>(out, t.bits);
  append<uint16_t>(out, 1);
  for (int64_t n : a.shape()) append<int64_t>(out, n);
  append<int64_t>(out, static_cast<int64_t>(a.nbytes()));
  if (a.nbytes() > 0) out.append(reinterpret_cast<const char *>(a.raw()), a.nbytes());
  return base64_encode(out);
}

// 1. Parse the JSON. 2. From the root Map, the Array under "relay.Constant". 3. Each of its
// nodes a relay.Constant whose `data` indexes b64ndarrays; decode each.
std::vector<NDArray> read_tvm_metadata(std::string_view json, const std::string &where) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) user_error(msg::kMetaJson, where);
  const nlohmann::json &nodes = j.value("nodes", nlohmann::json());
  const nlohmann::json &arrays = j.value("b64ndarrays", nlohmann::json::array());
  if (!nodes.is_array() || !arrays.is_array() || !j.contains("root") || !j["root"].is_number_integer())
    user_error(msg::kMetaJson, where);
  auto node = [&](int64_t i, const char *what) -> const nlohmann::json & {
    if (i < 0 || static_cast<size_t>(i) >= nodes.size() || !nodes[i].is_object())
      user_error(msg::kMetaNodeIndex, where, what, i, nodes.size());
    return nodes[i];
  };
  const nlohmann::json &root = node(j["root"].get<int64_t>(), "root");
  if (type_key(root) != "Map" || !root.contains("keys") || !root.contains("data") ||
      !root["keys"].is_array() || !root["data"].is_array() || root["keys"].size() != root["data"].size())
    user_error(msg::kMetaRoot, where);
  std::vector<NDArray> out;
  for (size_t k = 0; k < root["keys"].size(); ++k) {
    if (!root["keys"][k].is_string() || root["keys"][k] != kConstantKey)
      continue;  // other kinds are not referred to by meta[relay.Constant]
    if (!root["data"][k].is_number_integer()) user_error(msg::kMetaRoot, where);
    const nlohmann::json &list = node(root["data"][k].get<int64_t>(), "relay.Constant list");
    if (type_key(list) != "Array" || !list.contains("data") || !list["data"].is_array())
      user_error(msg::kMetaRoot, where);
    for (size_t i = 0; i < list["data"].size(); ++i) {
      const std::string item = fmt::format("{}: meta[relay.Constant][{}]", where, i);
      if (!list["data"][i].is_number_integer()) user_error(msg::kMetaNotConstant, item, "a non-index");
      const nlohmann::json &c = node(list["data"][i].get<int64_t>(), "relay.Constant");
      if (type_key(c) != kConstantKey) user_error(msg::kMetaNotConstant, item, "a " + type_key(c) + " node");
      const int64_t data = index_attr(c, "data", item);
      if (data < 0 || static_cast<size_t>(data) >= arrays.size() || !arrays[data].is_string())
        user_error(msg::kMetaArrayIndex, item, data, arrays.size());
      out.push_back(decode_tvm_ndarray(arrays[data].get<std::string>(), item));
    }
  }
  return out;
}

std::string write_tvm_metadata(const std::vector<NDArray> &constants) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  nodes.push_back({{"type_key", ""}});
  nodes.push_back({{"type_key", "Map"}, {"keys", {kConstantKey}}, {"data", {2}}});
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < constants.size(); ++i) list.push_back(3 + i);
  nodes.push_back({{"type_key", "Array"}, {"data", list}});
  nlohmann::ordered_json arrays = nlohmann::ordered_json::array();
  for (size_t i = 0; i < constants.size(); ++i) {
    nodes.push_back({{"type_key", kConstantKey}, {"attrs", {{"data", std::to_string(i)}, {"span", "0"}}}});
    arrays.push_back(encode_tvm_ndarray(constants[i]));
  }
  nlohmann::ordered_json j = {
      {"root", 1}, {"nodes", nodes}, {"b64ndarrays", arrays}, {"attrs", {{"tvm_version", "0.13.0"}}}};
  return j.dump(2) + "\n";
}

}  // namespace grove::relay
