#include "support/Npy.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Messages.h"

namespace grove {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy data is written as little-endian '<f4'");

namespace msg = support_messages;

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlignment = 64;

// A reader for the header's dict literal. It accepts exactly the keys 'descr', 'fortran_order' and
// 'shape' (numpy writes no others), with values a quoted string, True/False, and a tuple of integers.
class HeaderParser {
 public:
  HeaderParser(const std::string &path, std::string_view text) : path_(path), text_(text) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Header parse() {
    Header header;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!accept('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        header.descr = quoted();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = tuple();
        has_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (!has_descr || !has_order || !has_shape)
      fail("it needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string &what) { user_error(msg::kNpyBadHeader, path_, what, text_); }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail("expected a quoted string");
    char quote = text_[pos_++];
    size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string result(text_.substr(pos_, close - pos_));
    pos_ = close + 1;
    return result;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!accept(')')) {
      skip_space();
      int64_t dim = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int digit = text_[pos_++] - '0';
        if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("dimension too large");
        dim = dim * 10 + digit;
        ++digits;
      }
      if (digits == 0) fail("expected a non-negative integer in the shape");
      dims.push_back(dim);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  const std::string &path_;
  std::string_view text_;
  size_t pos_ = 0;
};

// The header of a C-order array of `shape` (magic, version, length, the dict literal padded with
// spaces and ending in '\n'), padded to the alignment and to at least `min_size` bytes.
std::string npy_header(const std::string &descr, const std::vector<int64_t> &shape, size_t min_size = 0) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  // A 1-tuple needs its trailing comma, "(5,)"; numpy writes "(3, 256)" for longer ones.
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";

  // magic (6) + version (2) + header length (2) + header, padded with spaces, ending in '\n'.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  size_t padded = std::max(unpadded + (kAlignment - unpadded % kAlignment) % kAlignment, min_size);
  header.append(padded - unpadded, ' ');
  header += '\n';
  GROVE_CHECK(header.size() <= std::numeric_limits<uint16_t>::max(), "npy header of {} bytes", header.size());

  std::string prefix(kMagic);
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);
  return prefix + header;
}

std::string_view float_bytes(const float *data, size_t count) {
  return {reinterpret_cast<const char *>(data), count * sizeof(float)};
}

}  // namespace

void write_npy(const std::string &path, const Tensor &t) {
  GROVE_CHECK(t.size() == Tensor::num_elements(t.shape), "{} elements for shape {}", t.size(),
              shape_string(t.shape));
  write_npy_bytes(
      path, "<f4", t.shape,
      std::string_view(reinterpret_cast<const char *>(t.data.data()), t.data.size() * sizeof(float)));
}

void write_npy_bytes(const std::string &path, const std::string &descr, const std::vector<int64_t> &shape,
                     std::string_view bytes) {
  const std::string header = npy_header(descr, shape);
  const std::string_view pieces[] = {header, bytes};
  write_file_atomically(path, pieces);
}

struct NpyWriter::Impl {
  AtomicFile file;
  std::vector<int64_t> row_shape;
  int64_t row_elements = 1, rows = 0;
  size_t header_size = 0;

  std::vector<int64_t> shape(int64_t total) const {
    std::vector<int64_t> s{total};
    s.insert(s.end(), row_shape.begin(), row_shape.end());
    return s;
  }
};

// The header written first is that of the largest row count, so the final one always fits.
NpyWriter::NpyWriter(const std::string &path, std::vector<int64_t> row_shape)
    : impl_(new Impl{AtomicFile(path), std::move(row_shape)}) {
  for (int64_t d : impl_->row_shape) impl_->row_elements *= d;
  std::string header = npy_header("<f4", impl_->shape(std::numeric_limits<int64_t>::max()));
  impl_->header_size = header.size();
  impl_->file.append(header);
}

NpyWriter::~NpyWriter() = default;
NpyWriter::NpyWriter(NpyWriter &&) noexcept = default;

void NpyWriter::append(const float *rows, int64_t count) {
  write_rows(impl_->rows, rows, count);
  impl_->rows += count;
}

void NpyWriter::write_rows(int64_t first, const float *rows, int64_t count) {
  if (count == 0) return;
  impl_->file.write_at(data_offset() + uint64_t(first) * uint64_t(row_bytes()),
                       float_bytes(rows, size_t(count * impl_->row_elements)));
}

void NpyWriter::commit(std::optional<int64_t> total_rows) {
  impl_->file.write_at(0,
                       npy_header("<f4", impl_->shape(total_rows.value_or(impl_->rows)), impl_->header_size));
  impl_->file.commit();
}

int64_t NpyWriter::rows_appended() const { return impl_->rows; }
int64_t NpyWriter::row_bytes() const { return impl_->row_elements * int64_t(sizeof(float)); }
uint64_t NpyWriter::data_offset() const { return impl_->header_size; }
const std::string &NpyWriter::temporary() const { return impl_->file.temporary(); }

Tensor read_npy(const std::string &path) {
  Tensor t;
  read_npy_into(path, {[&path](const std::string &descr) {
                         if (descr != "<f4") user_error(msg::kNpyDtype, path, descr);
                         return NpyElement{sizeof(float), "float32"};
                       },
                       [&t](const std::string &, const std::vector<int64_t> &shape) {
                         t = Tensor(shape);
                         return reinterpret_cast<char *>(t.data.data());
                       }});
  return t;
}

void read_npy_into(const std::string &path, const NpySink &sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kCannotOpen, path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) user_error(msg::kCannotOpen, path, "cannot determine its size");
  in.seekg(0);
  std::string bytes(static_cast<size_t>(end), '\0');
  in.read(bytes.data(), end);
  if (in.gcount() != end) user_error(msg::kCannotRead, path);

  // Magic, version, header length: 2 bytes in version 1.0, 4 bytes in 2.0 and 3.0.
  if (bytes.size() < kMagic.size() + 2 || std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    user_error(msg::kNpyNotNpy, path, "it does not start with \\x93NUMPY");
  }
  const auto major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) user_error(msg::kNpyVersion, path, major, minor);
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t header_begin = 8 + length_bytes;
  if (bytes.size() < header_begin)
    user_error(msg::kNpyNotNpy, path, "the file ends inside the header length");
  uint64_t header_size = 0;
  for (size_t i = length_bytes; i-- > 0;)
    header_size = (header_size << 8) | static_cast<unsigned char>(bytes[8 + i]);
  if (header_size > bytes.size() - header_begin) {
    user_error(msg::kNpyNotNpy, path, "the header length points past the end of the file");
  }

  std::string_view header_text = std::string_view(bytes).substr(header_begin, header_size);
  const auto header = HeaderParser(path, header_text).parse();
  const NpyElement element = sink.element_size(header.descr);
  if (header.fortran_order) user_error(msg::kNpyFortran, path);

  // The byte count is checked against the file size before the array is allocated.
  const uint64_t data_size = bytes.size() - header_begin - header_size;
  uint64_t needed = element.size;
  for (int64_t d : header.shape) {
    if (__builtin_mul_overflow(needed, static_cast<uint64_t>(d), &needed)) {
      user_error(msg::kNpyDataSize, path, shape_string(header.shape), element.name,
                 fmt::format("more than {}", std::numeric_limits<uint64_t>::max()), data_size);
    }
  }
  if (needed != data_size) {
    user_error(msg::kNpyDataSize, path, shape_string(header.shape), element.name, std::to_string(needed),
               data_size);
  }
  char *out = sink.allocate(header.descr, header.shape);
  // An empty array's buffer may be null, which memcpy must not see even for 0 bytes.
  if (data_size > 0) std::memcpy(out, bytes.data() + header_begin + header_size, data_size);
}

}  // namespace grove
