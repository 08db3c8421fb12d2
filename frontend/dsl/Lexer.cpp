#include "frontend/dsl/Lexer.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <unordered_map>

#include "frontend/dsl/Messages.h"

namespace grove::dsl {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

const std::unordered_map<std::string, Tok> &keywords() {
  static const std::unordered_map<std::string, Tok> table = {
#define GROVE_DSL_KEYWORD_ENTRY(E, S) {S, Tok::E},
      GROVE_DSL_KEYWORDS(GROVE_DSL_KEYWORD_ENTRY)
#undef GROVE_DSL_KEYWORD_ENTRY
  };
  return table;
}

Tok punctuation(char c) {
  switch (c) {
    case '[':
      return Tok::LBracket;
    case ']':
      return Tok::RBracket;
    case '(':
      return Tok::LParen;
    case ')':
      return Tok::RParen;
    case '{':
      return Tok::LBrace;
    case '}':
      return Tok::RBrace;
    case ';':
      return Tok::Semi;
    case ':':
      return Tok::Colon;
    case ',':
      return Tok::Comma;
    case '=':
      return Tok::Assign;
    case '+':
      return Tok::Plus;
    case '-':
      return Tok::Minus;
    case '*':
      return Tok::Star;
    case '/':
      return Tok::Slash;
    case '@':
      return Tok::At;
    default:
      return Tok::End;  // not punctuation
  }
}

// Scans one token at a time, tracking line and column.
class Lexer {
 public:
  explicit Lexer(const SourceFile &source) : source_(source), text_(source.text()) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    bool glued = false;
    while (true) {
      glued = !skip_space_and_comments() && !tokens.empty();
      Loc loc = loc_;
      if (pos_ >= text_.size()) {
        tokens.push_back(Token{Tok::End, "", loc, glued});
        return tokens;
      }
      char c = text_[pos_];
      Token token{Tok::End, "", loc, glued};
      if (is_ident_start(c)) {
        size_t begin = pos_;
        while (pos_ < text_.size() && is_ident_char(text_[pos_])) advance();
        token.text = text_.substr(begin, pos_ - begin);
        auto keyword = keywords().find(token.text);
        token.kind = keyword == keywords().end() ? Tok::Ident : keyword->second;
      } else if (is_digit(c) || (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
        lex_number(token);
      } else if (punctuation(c) != Tok::End) {
        token.kind = punctuation(c);
        token.text = std::string(1, c);
        advance();
      } else {
        std::string shown = std::isprint(static_cast<unsigned char>(c))
                                ? std::string(1, c)
                                : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        source_.error(loc, msg::kBadCharacter, shown);
      }
      tokens.push_back(std::move(token));
    }
  }

 private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++loc_.line;
      loc_.col = 1;
    } else {
      ++loc_.col;
    }
    ++pos_;
  }

  // Returns whether anything was skipped.
  bool skip_space_and_comments() {
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else {
        break;
      }
    }
    return pos_ != start;
  }

  // Numbers: digits [. digits] [(e|E) [+|-] digits]. A letter right after the digits other than an
  // exponent starts a new identifier token (the `H` of `3H`).
  void lex_number(Token &token) {
    size_t begin = pos_;
    bool integer = true;
    bool malformed = false;
    while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integer = false;
      advance();
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) malformed = true;
      while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integer = false;
      advance();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) advance();
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) malformed = true;
      while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
    }
    // `1.2.3` or `1e5.0`: a second fraction is never part of a valid number.
    if (pos_ < text_.size() && text_[pos_] == '.') malformed = true;
    while (malformed && pos_ < text_.size() && (is_ident_char(text_[pos_]) || text_[pos_] == '.')) advance();
    token.kind = Tok::Number;
    token.text = text_.substr(begin, pos_ - begin);
    if (malformed) source_.error(token.loc, msg::kBadNumber, token.text);
    token.is_integer = integer;
    token.number = std::strtod(token.text.c_str(), nullptr);
    if (integer) {
      auto [end, error] =
          std::from_chars(token.text.data(), token.text.data() + token.text.size(), token.integer);
      if (error != std::errc()) source_.error(token.loc, msg::kNumberTooLarge, token.text);
    }
  }

  const SourceFile &source_;
  const std::string &text_;
  size_t pos_ = 0;
  Loc loc_;
};

}  // namespace

std::string describe(Tok kind) {
  switch (kind) {
    case Tok::Ident:
      return "a name";
    case Tok::Number:
      return "a number";
#define GROVE_DSL_KEYWORD_NAME(E, S) \
  case Tok::E:                       \
    return "'" S "'";
      GROVE_DSL_KEYWORDS(GROVE_DSL_KEYWORD_NAME)
#undef GROVE_DSL_KEYWORD_NAME
    case Tok::LBracket:
      return "'['";
    case Tok::RBracket:
      return "']'";
    case Tok::LParen:
      return "'('";
    case Tok::RParen:
      return "')'";
    case Tok::LBrace:
      return "'{'";
    case Tok::RBrace:
      return "'}'";
    case Tok::Semi:
      return "';'";
    case Tok::Colon:
      return "':'";
    case Tok::Comma:
      return "','";
    case Tok::Assign:
      return "'='";
    case Tok::Plus:
      return "'+'";
    case Tok::Minus:
      return "'-'";
    case Tok::Star:
      return "'*'";
    case Tok::Slash:
      return "'/'";
    case Tok::At:
      return "'@'";
    case Tok::End:
      return "end of file";
  }
  return "?";
}

std::vector<Token> lex(const SourceFile &source) { return Lexer(source).run(); }

bool is_identifier(const std::string &name) {
  if (name.empty() || !is_ident_start(name[0]) || keywords().count(name)) return false;
  for (char c : name)
    if (!is_ident_char(c)) return false;
  return true;
}

}  // namespace grove::dsl
