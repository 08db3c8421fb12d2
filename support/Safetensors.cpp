#include "support/Safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Messages.h"

namespace grove {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
static_assert(sizeof(float) == 4);

namespace msg = support_messages;
using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

// One tensor's header entry, validated against the file.
struct Entry {
  SafetensorsTensorInfo info;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

// Where read_safetensors takes its bytes from: a file, or bytes already in memory. `read` fills
// `out` with exactly `size` bytes at `offset` (offset + size <= size_in_bytes) or throws.
struct Source {
  const std::string &path;  // names the file in messages
  uint64_t size_in_bytes;
  std::function<void(uint64_t offset, char *out, uint64_t size)> read;
};

// Reads exactly `size` bytes at `offset` of `in`, or throws.
void read_exact(std::ifstream &in, const std::string &path, uint64_t offset, char *out, uint64_t size) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(out, static_cast<std::streamsize>(size));
  if (!in || static_cast<uint64_t>(in.gcount()) != size) user_error(msg::kCannotRead, path);
}

// Parses the header JSON, rejecting duplicate top-level names (nlohmann would keep the last).
json parse_header(const std::string &path, const std::string &text) {
  std::set<std::string> seen;
  auto reject_duplicates = [&](int depth, json::parse_event_t event, json &parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!seen.insert(key).second) user_error(msg::kSafetensorsDuplicate, path, key);
    }
    return true;
  };
  try {
    return json::parse(text, reject_duplicates);
  } catch (const json::exception &e) {
    // Not only parse_error: a number too large for a double (1E400) is an out_of_range error.
    user_error(msg::kSafetensorsBadJson, path, e.what());
  }
}

const json &field(const std::string &path, const std::string &name, const json &entry, const char *key) {
  auto it = entry.find(key);
  if (it == entry.end()) user_error(msg::kSafetensorsMissingField, path, name, key);
  return *it;
}

// Validates one tensor's entry: a dtype the sink reads, a non-negative shape whose byte size fits,
// and offsets inside a data section of `data_size` bytes that span exactly that size.
Entry parse_entry(const std::string &path, const std::string &name, const json &entry, uint64_t data_size,
                  const SafetensorsSink &sink) {
  if (!entry.is_object()) user_error(msg::kSafetensorsEntryNotObject, path, name, entry.type_name());

  const json &dtype = field(path, name, entry, "dtype");
  if (!dtype.is_string())
    user_error(msg::kSafetensorsFieldType, path, name, "dtype", "a string", dtype.dump());

  Entry result;
  result.info.name = name;
  result.info.dtype = dtype.get<std::string>();
  const uint64_t element_size = sink.element_size(result.info);
  GROVE_CHECK(element_size >= 1 && element_size <= 16, "element size {} for dtype {}", element_size,
              result.info.dtype);
  const json &shape = field(path, name, entry, "shape");
  if (!shape.is_array()) {
    user_error(msg::kSafetensorsFieldType, path, name, "shape", "an array of integers", shape.dump());
  }
  // Bytes needed so far, kept below int64's range.
  constexpr uint64_t kMaxBytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 2;
  uint64_t bytes = element_size;
  for (const json &dim : shape) {
    if (dim.is_number_integer() && !dim.is_number_unsigned()) {
      user_error(msg::kSafetensorsNegativeDim, path, name, shape.dump());
    }
    if (!dim.is_number_unsigned()) {
      user_error(msg::kSafetensorsFieldType, path, name, "shape", "an array of integers", shape.dump());
    }
    uint64_t d = dim.get<uint64_t>();
    // A dimension beyond kMaxBytes is refused even after a 0, which would hide it from the product.
    if (d > kMaxBytes || (d != 0 && bytes > kMaxBytes / d))
      user_error(msg::kSafetensorsShapeOverflow, path, name, shape.dump());
    bytes *= d;
    result.info.shape.push_back(static_cast<int64_t>(d));
  }

  const json &offsets = field(path, name, entry, "data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    user_error(msg::kSafetensorsFieldType, path, name, "data_offsets",
               "an array of two non-negative integers", offsets.dump());
  }
  result.begin = offsets[0].get<uint64_t>();
  result.end = offsets[1].get<uint64_t>();
  if (result.begin > result.end || result.end > data_size) {
    user_error(msg::kSafetensorsOffsetsOutside, path, name, result.begin, result.end, data_size);
  }
  if (result.end - result.begin != bytes) {
    user_error(msg::kSafetensorsOffsetsSize, path, name, result.begin, result.end, result.end - result.begin,
               shape_string(result.info.shape), result.info.dtype, bytes);
  }
  return result;
}

// Reads and validates every tensor of `source` into `sink`; nothing is allocated beyond what it holds.
void read_source(const Source &source, const SafetensorsSink &sink) {
  const std::string &path = source.path;
  const uint64_t file_size = source.size_in_bytes;
  auto read = [&](uint64_t offset, char *out, uint64_t size) {
    if (size == 0) return;  // `out` may be the null data() of an empty tensor
    source.read(offset, out, size);
  };

  // 1. The header length, checked against the real file size before anything is allocated.
  if (file_size < 8) user_error(msg::kSafetensorsTooShort, path, file_size);
  unsigned char length_bytes[8];
  read(0, reinterpret_cast<char *>(length_bytes), 8);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];
  if (header_size > file_size - 8)
    user_error(msg::kSafetensorsHeaderPastEnd, path, header_size, file_size - 8);
  if (header_size > kMaxSafetensorsHeader) {
    user_error(msg::kSafetensorsHeaderTooLong, path, header_size, kMaxSafetensorsHeader);
  }

  // 2. The header: every entry is validated before any tensor data is read.
  std::string text(header_size, '\0');
  read(8, text.data(), header_size);
  const json header = parse_header(path, text);
  if (!header.is_object()) user_error(msg::kSafetensorsHeaderNotObject, path, header.type_name());
  const uint64_t data_begin = 8 + header_size;
  const uint64_t data_size = file_size - data_begin;
  std::vector<Entry> entries;
  for (const auto &[name, entry] : header.items()) {
    if (name == kMetadataKey) continue;
    entries.push_back(parse_entry(path, name, entry, data_size, sink));
  }

  if (sink.disjoint) {
    std::vector<const Entry *> by_offset;
    for (const Entry &entry : entries) {
      if (entry.end > entry.begin) by_offset.push_back(&entry);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Entry *a, const Entry *b) { return a->begin < b->begin; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const Entry &a = *by_offset[i - 1], &b = *by_offset[i];
      if (b.begin < a.end) {
        user_error(msg::kSafetensorsOverlap, path, a.info.name, b.info.name, a.begin, a.end, b.begin, b.end);
      }
    }
  }

  // 3. The data, each tensor read straight into its own buffer.
  for (const Entry &entry : entries) {
    read(data_begin + entry.begin, sink.allocate(entry.info), entry.end - entry.begin);
  }
}

// A sink for F32 tensors only, into `weights`.
SafetensorsSink weights_sink(const std::string &path, Weights &weights) {
  return {[&path](const SafetensorsTensorInfo &info) -> uint64_t {
            if (info.dtype != "F32") user_error(msg::kSafetensorsDtype, path, info.name, info.dtype);
            return sizeof(float);
          },
          [&weights](const SafetensorsTensorInfo &info) {
            // Map nodes never move, so the buffer stays put while later tensors are added.
            Tensor &tensor = weights.emplace(info.name, Tensor(info.shape)).first->second;
            return reinterpret_cast<char *>(tensor.data.data());
          }};
}

// Reads `path` with read_source and `sink`.
void read_file(const std::string &path, const SafetensorsSink &sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kCannotOpen, path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) user_error(msg::kCannotOpen, path, "cannot determine its size");
  read_source({path, static_cast<uint64_t>(end),
               [&](uint64_t offset, char *out, uint64_t size) { read_exact(in, path, offset, out, size); }},
              sink);
}

}  // namespace

Weights read_safetensors(const std::string &path) {
  Weights weights;
  read_file(path, weights_sink(path, weights));
  return weights;
}

Weights read_safetensors_bytes(std::string_view bytes, const std::string &name) {
  Weights weights;
  read_source(
      {name, bytes.size(),
       [&](uint64_t offset, char *out, uint64_t size) { std::memcpy(out, bytes.data() + offset, size); }},
      weights_sink(name, weights));
  return weights;
}

void read_safetensors_into(const std::string &path, const SafetensorsSink &sink) { read_file(path, sink); }

void write_safetensors(const std::string &path, const Weights &weights) {
  std::vector<std::pair<SafetensorsTensorInfo, std::string_view>> tensors;
  for (const auto &[name, tensor] : weights) {
    GROVE_CHECK(tensor.size() == Tensor::num_elements(tensor.shape), "tensor {} has {} elements for shape {}",
                name, tensor.size(), shape_string(tensor.shape));
    tensors.emplace_back(SafetensorsTensorInfo{name, "F32", tensor.shape},
                         std::string_view(reinterpret_cast<const char *>(tensor.data.data()),
                                          tensor.data.size() * sizeof(float)));
  }
  write_safetensors_tensors(path, tensors);
}

void write_safetensors_tensors(
    const std::string &path, const std::vector<std::pair<SafetensorsTensorInfo, std::string_view>> &tensors) {
  json header = json::object();
  std::vector<std::string_view> pieces(1);  // pieces[0] becomes the length and header
  uint64_t offset = 0;
  for (const auto &[info, bytes] : tensors) {
    GROVE_CHECK(!header.contains(info.name) && info.name != kMetadataKey, "tensor '{}' written twice",
                info.name);
    header[info.name] = {
        {"dtype", info.dtype}, {"shape", info.shape}, {"data_offsets", {offset, offset + bytes.size()}}};
    pieces.push_back(bytes);
    offset += bytes.size();
  }
  header[std::string(kMetadataKey)] = {{"producer", "grove"}};

  // The format lets the header be padded with spaces; 8-byte alignment keeps the data aligned.
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
  prefix += text;
  pieces[0] = prefix;
  write_file_atomically(path, pieces);
}

}  // namespace grove
