#include "frontend/relay/Lexer.h"

#include <cfloat>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "frontend/relay/Messages.h"
#include "frontend/relay/Parser.h"

namespace grove::relay {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_letter(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Text for a message: long tokens are cut so that the message stays readable.
std::string shorten(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() <= kMax) return std::string(s);
  return std::string(s.substr(0, kMax)) + "...";
}

struct Keyword {
  std::string_view text;
  Tok kind;
};
constexpr Keyword kKeywords[] = {
#define GROVE_RELAY_KEYWORD_ENTRY(E, S) {S, Tok::E},
    GROVE_RELAY_KEYWORDS(GROVE_RELAY_KEYWORD_ENTRY)
#undef GROVE_RELAY_KEYWORD_ENTRY
};

// Scans the text left to right, one token per step. Two context rules keep TVM's spelling:
//   1. `-` directly before a digit is the sign of a literal (`-1f`, `axis=-1`, `--10` is 10) unless
//      the previous token ends an operand, where it is the binary minus (`%x -1`, `2-1`).
//   2. After `.`, a number is a tuple index: digits only, so `%t.0.1` is two projections.
class Lexer {
 public:
  explicit Lexer(const SourceFile &source) : source_(source), s_(source.text()) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (is_space(c)) {
        advance(1);
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance(1);
      } else if (c == '/' && at(pos_ + 1) == '*') {
        skip_block_comment();
      } else if (c == '#') {
        header();
      } else if (c == '"') {
        string_literal();
      } else if (c == '%') {
        local_or_graph();
      } else if (c == '@') {
        global();
      } else if (is_digit(c)) {
        if (!out_.empty() && out_.back().kind == Tok::Period)
          tuple_index();
        else
          number(pos_, 0);
      } else if (c == '-') {
        minus();
      } else if (is_letter(c)) {
        identifier();
      } else {
        punctuation(c);
      }
    }
    Token end;
    end.kind = Tok::End;
    end.line = line_;
    end.col = col_;
    out_.push_back(end);
    return std::move(out_);
  }

 private:
  char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }

  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_) {
      if (s_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  // Emits a token of kind `kind` for the `n` characters at the current position.
  Token &emit(Tok kind, size_t n) {
    Token t;
    t.kind = kind;
    t.line = line_;
    t.col = col_;
    t.text = s_.substr(pos_, n);
    advance(n);
    out_.push_back(t);
    return out_.back();
  }

  bool previous_ends_operand() const {
    if (out_.empty()) return false;
    switch (out_.back().kind) {
      case Tok::Ident:
      case Tok::Local:
      case Tok::Graph:
      case Tok::Global:
      case Tok::Int:
      case Tok::Float:
      case Tok::Bool:
      case Tok::String:
      case Tok::Underscore:
      case Tok::RParen:
      case Tok::RBracket:
        return true;
      default:
        return false;
    }
  }

  void skip_block_comment() {
    const Loc start{line_, col_};
    advance(2);
    int depth = 1;
    while (depth > 0) {
      if (pos_ >= s_.size()) source_.error(start, msg::kUnterminatedComment);
      if (s_[pos_] == '/' && at(pos_ + 1) == '*') {
        ++depth;
        advance(2);
      } else if (s_[pos_] == '*' && at(pos_ + 1) == '/') {
        --depth;
        advance(2);
      } else {
        advance(1);
      }
    }
  }

  // `#[version = "0.0.5"]`: checked and dropped. `#[metadata]` and TVMScript's `# from tvm.script`
  // get their own messages.
  void header() {
    const Loc start{line_, col_};
    if (at(pos_ + 1) != '[') {
      const size_t eol = s_.find('\n', pos_);
      const std::string_view line =
          s_.substr(pos_, eol == std::string_view::npos ? std::string_view::npos : eol - pos_);
      if (line.find("tvm.script") != std::string_view::npos) source_.error(start, msg::kTVMScript);
      source_.error(start, msg::kHashWithoutBracket);
    }
    size_t close = pos_ + 2;
    while (close < s_.size() && s_[close] != ']' && s_[close] != '\n') ++close;
    if (at(close) != ']') source_.error(start, msg::kUnterminatedAttribute);
    const std::string_view body = trim(s_.substr(pos_ + 2, close - pos_ - 2));
    if (body == "metadata") source_.error(start, msg::kMetadata, meta_path(source_.name()));
    if (body.substr(0, 7) == "version") {
      std::string_view rest = trim(body.substr(7));
      if (rest.empty() || rest.front() != '=')
        source_.error(start, msg::kUnknownAttribute, std::string(body));
      const std::string_view version = trim(rest.substr(1));
      if (version != "\"0.0.5\"") source_.error(start, msg::kBadVersion, std::string(version));
      if (!out_.empty()) source_.error(start, msg::kVersionNotFirst);
      advance(close + 1 - pos_);
      return;
    }
    source_.error(start, msg::kUnknownAttribute, shorten(body));
  }

  void string_literal() {
    const Loc start{line_, col_};
    size_t i = pos_ + 1;
    for (;;) {
      const char c = at(i);
      if (i >= s_.size() || c == '\n') source_.error(start, msg::kUnterminatedString);
      if (c == '"') break;
      if (c == '\\') {
        const char e = at(i + 1);
        if (e != '"' && e != '\\' && e != 'n' && e != 't') {
          if (i + 1 >= s_.size() || e == '\n') source_.error(start, msg::kUnterminatedString);
          source_.error(start, msg::kBadEscape, std::string(1, e));
        }
        i += 2;
      } else {
        ++i;
      }
    }
    Token &t = emit(Tok::String, i + 1 - pos_);
    t.text = t.text.substr(1, t.text.size() - 2);
  }

  // The length of the identifier starting at `i`. A '/' followed by a letter continues it, as in
  // TVM's names imported from TensorFlow (`%conv1/weights`).
  size_t ident_length(size_t i) const {
    size_t j = i;
    while (j < s_.size() && (is_ident_char(s_[j]) || (s_[j] == '/' && is_letter(at(j + 1))))) ++j;
    return j - i;
  }

  void local_or_graph() {
    const Loc start{line_, col_};
    if (is_digit(at(pos_ + 1))) {
      size_t j = pos_ + 1;
      while (is_digit(at(j))) ++j;
      if (is_letter(at(j))) source_.error(start, msg::kBadNumber, shorten(s_.substr(pos_, j + 1 - pos_)));
      uint64_t n = 0;
      const auto [p, ec] = std::from_chars(s_.data() + pos_ + 1, s_.data() + j, n);
      if (ec != std::errc() || n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
        source_.error(start, msg::kIntOutOfRange, shorten(s_.substr(pos_ + 1, j - pos_ - 1)),
                      "a graph binding");
      Token &t = emit(Tok::Graph, j - pos_);
      t.text.remove_prefix(1);
      t.bits = n;
      return;
    }
    if (!is_letter(at(pos_ + 1))) source_.error(start, msg::kLoneSigil, "%");
    Token &t = emit(Tok::Local, 1 + ident_length(pos_ + 1));
    t.text.remove_prefix(1);
  }

  void global() {
    const Loc start{line_, col_};
    if (!is_ident_char(at(pos_ + 1))) source_.error(start, msg::kLoneSigil, "@");
    const size_t n = 1 + ident_length(pos_ + 1);
    // TVMScript decorators (@R.function, @I.ir_module, @T.prim_func) mean a Relax or TIR program.
    if (n == 2 && at(pos_ + 2) == '.' && (at(pos_ + 1) == 'R' || at(pos_ + 1) == 'I' || at(pos_ + 1) == 'T'))
      source_.error(start, msg::kTVMScript);
    Token &t = emit(Tok::Global, n);
    t.text.remove_prefix(1);
  }

  void tuple_index() {
    const Loc start{line_, col_};
    size_t j = pos_;
    while (is_digit(at(j))) ++j;
    if (is_ident_char(at(j)))
      source_.error(start, msg::kTupleIndex, "'" + shorten(s_.substr(pos_, j + 1 - pos_)) + "'");
    uint64_t n = 0;
    const auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + j, n);
    if (ec != std::errc() || n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      source_.error(start, msg::kIntOutOfRange, shorten(s_.substr(pos_, j - pos_)), "a tuple index");
    Token &t = emit(Tok::Int, j - pos_);
    t.bits = n;
  }

  // A run of '-' directly before a number is its sign (rule 1 above); otherwise '-' or '->'.
  void minus() {
    if (at(pos_ + 1) == '>') {
      emit(Tok::Arrow, 2);
      return;
    }
    if (!previous_ends_operand()) {
      size_t j = pos_;
      while (at(j) == '-') ++j;
      if (is_digit(at(j)) || special_float_length(j) > 0) {
        number(j, static_cast<int>(j - pos_));
        return;
      }
    }
    emit(Tok::Minus, 1);
  }

  // The length of `inff`, `nanf16`, ... at `i` (TVM spells infinities `inff`), or 0.
  size_t special_float_length(size_t i) const {
    const size_t n = ident_length(i);
    const std::string_view w = s_.substr(i, n);
    for (std::string_view base : {"inff", "nanf"})
      if (w == base ||
          (w.substr(0, 4) == base && (w.substr(4) == "16" || w.substr(4) == "32" || w.substr(4) == "64")))
        return n;
    return 0;
  }

  // A numeric literal whose digits start at `digits`, preceded by `minuses` '-' signs at pos_.
  void number(size_t digits, int minuses) {
    const Loc start{line_, col_};
    const bool negative = minuses % 2 == 1;
    if (size_t n = special_float_length(digits)) {
      const std::string_view w = s_.substr(digits, n);
      Token &t = emit(Tok::Float, digits + n - pos_);
      t.dtype = w.size() == 4 ? DType::Float32 : *parse_dtype("float" + std::string(w.substr(4)));
      const double v =
          w[0] == 'i' ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      t.value = negative ? -v : v;
      return;
    }
    size_t j = digits;
    while (is_digit(at(j))) ++j;
    bool is_float = false;
    if (at(j) == '.' && is_digit(at(j + 1))) {
      is_float = true;
      j += 1;
      while (is_digit(at(j))) ++j;
    }
    if ((at(j) == 'e' || at(j) == 'E') &&
        (is_digit(at(j + 1)) || ((at(j + 1) == '+' || at(j + 1) == '-') && is_digit(at(j + 2))))) {
      is_float = true;
      j += is_digit(at(j + 1)) ? 1 : 2;
      while (is_digit(at(j))) ++j;
    }
    const size_t numeral_end = j;
    std::string_view suffix;
    if (at(j) == 'f' || at(j) == 'i' || at(j) == 'u') {
      size_t k = j + 1;
      while (is_digit(at(k))) ++k;
      suffix = s_.substr(j, k - j);
      j = k;
    }
    const std::string_view literal = s_.substr(pos_, j - pos_);
    if (is_ident_char(at(j)) || at(j) == '.')
      source_.error(start, msg::kBadNumber, shorten(s_.substr(pos_, j + ident_length(j) + 1 - pos_)));
    const std::string_view numeral = s_.substr(digits, numeral_end - digits);

    // The dtype from the suffix: f → float32, i → int32, none → int32 (int64 when it does not fit)
    // or float32 for a numeral with a fraction or an exponent.
    std::optional<DType> dtype;
    bool wide_default = false;
    if (suffix.empty()) {
      dtype = is_float ? DType::Float32 : DType::Int32;
      wide_default = !is_float;
    } else if (suffix == "f") {
      dtype = DType::Float32;
    } else if (suffix == "i") {
      dtype = DType::Int32;
    } else {
      const std::string base = suffix[0] == 'f' ? "float" : suffix[0] == 'i' ? "int" : "uint";
      dtype = parse_dtype(base + std::string(suffix.substr(1)));
      if (!dtype || *dtype == DType::Bool)
        source_.error(start, msg::kBadSuffix, std::string(suffix), std::string(literal));
    }
    if (is_float && !is_relay_float(*dtype))
      source_.error(start, msg::kIntSuffixOnFloat, std::string(literal), std::string(suffix));

    if (is_relay_float(*dtype)) {
      const double v = std::strtod(std::string(numeral).c_str(), nullptr);
      const double limit = *dtype == DType::Float16   ? 65504.0
                           : *dtype == DType::Float32 ? static_cast<double>(FLT_MAX)
                                                      : DBL_MAX;
      if (!(v <= limit)) source_.error(start, msg::kFloatOutOfRange, std::string(literal), to_string(*dtype));
      Token &t = emit(Tok::Float, j - pos_);
      t.dtype = *dtype;
      t.value = negative ? -v : v;
      return;
    }
    uint64_t magnitude = 0;
    const auto [p, ec] = std::from_chars(numeral.data(), numeral.data() + numeral.size(), magnitude);
    if (ec != std::errc()) source_.error(start, msg::kIntOutOfRange, std::string(literal), "int64");
    if (!fits(magnitude, negative, *dtype)) {
      if (!wide_default || !fits(magnitude, negative, DType::Int64))
        source_.error(start, msg::kIntOutOfRange, std::string(literal),
                      wide_default ? "int64" : to_string(*dtype));
      dtype = DType::Int64;
    }
    Token &t = emit(Tok::Int, j - pos_);
    t.dtype = *dtype;
    t.bits = negative ? ~magnitude + 1 : magnitude;
  }

  static bool is_relay_float(DType d) {
    return d == DType::Float16 || d == DType::Float32 || d == DType::Float64;
  }

  static bool fits(uint64_t magnitude, bool negative, DType d) {
    const int bits = static_cast<int>(dtype_bytes(d)) * 8;
    const bool is_unsigned =
        d == DType::UInt8 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64;
    if (is_unsigned) {
      if (negative) return magnitude == 0;
      return bits == 64 || magnitude <= (uint64_t{1} << bits) - 1;
    }
    const uint64_t max_positive = (uint64_t{1} << (bits - 1)) - 1;
    return negative ? magnitude <= max_positive + 1 : magnitude <= max_positive;
  }

  void identifier() {
    if (size_t n = special_float_length(pos_)) {
      (void)n;
      number(pos_, 0);
      return;
    }
    const size_t n = ident_length(pos_);
    const std::string_view word = s_.substr(pos_, n);
    if (word == "match" && at(pos_ + n) == '?') {
      emit(Tok::MatchPartial, n + 1);
      return;
    }
    for (const Keyword &k : kKeywords) {
      if (k.text == word) {
        emit(k.kind, n);
        return;
      }
    }
    if (word == "True" || word == "False") {
      emit(Tok::Bool, n).bits = word == "True";
    } else if (word == "_") {
      emit(Tok::Underscore, n);
    } else {
      emit(Tok::Ident, n);
    }
  }

  void punctuation(char c) {
    const char d = at(pos_ + 1);
    switch (c) {
      case '(':
        emit(Tok::LParen, 1);
        return;
      case ')':
        emit(Tok::RParen, 1);
        return;
      case '[':
        emit(Tok::LBracket, 1);
        return;
      case ']':
        emit(Tok::RBracket, 1);
        return;
      case '{':
        emit(Tok::LBrace, 1);
        return;
      case '}':
        emit(Tok::RBrace, 1);
        return;
      case ',':
        emit(Tok::Comma, 1);
        return;
      case ';':
        emit(Tok::Semi, 1);
        return;
      case ':':
        emit(Tok::Colon, 1);
        return;
      case '.':
        emit(Tok::Period, 1);
        return;
      case '?':
        emit(Tok::Question, 1);
        return;
      case '+':
        emit(Tok::Plus, 1);
        return;
      case '*':
        emit(Tok::Star, 1);
        return;
      case '/':
        emit(Tok::Slash, 1);
        return;
      case '<':
        if (d == '=')
          emit(Tok::LessEq, 2);
        else
          emit(Tok::Less, 1);
        return;
      case '>':
        if (d == '=')
          emit(Tok::GreaterEq, 2);
        else
          emit(Tok::Greater, 1);
        return;
      case '=':
        if (d == '=')
          emit(Tok::EqEq, 2);
        else if (d == '>')
          emit(Tok::FatArrow, 2);
        else
          emit(Tok::Assign, 1);
        return;
      case '!':
        if (d == '=') {
          emit(Tok::NotEq, 2);
          return;
        }
        break;
      default:
        break;
    }
    // Quote printable ASCII as is, anything else by its byte value.
    const auto byte = static_cast<unsigned char>(c);
    const std::string shown =
        byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
    source_.error({line_, col_}, msg::kBadCharacter, shown);
  }

  const SourceFile &source_;
  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::string describe(const Token &token) {
  switch (token.kind) {
    case Tok::End:
      return "end of file";
    case Tok::String:
      return "string \"" + shorten(token.text) + "\"";
    case Tok::Local:
    case Tok::Graph:
      return "'%" + shorten(token.text) + "'";
    case Tok::Global:
      return "'@" + shorten(token.text) + "'";
    default:
      return "'" + shorten(token.text) + "'";
  }
}

std::string unescape(std::string_view raw) {
  std::string s;
  s.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size()) {
      const char e = raw[++i];
      s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      s += raw[i];
    }
  }
  return s;
}

std::vector<Token> lex(const SourceFile &source) { return Lexer(source).run(); }

}  // namespace grove::relay
