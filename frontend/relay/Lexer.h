#pragma once
// The Relay text format's lexer: text → tokens with 1-based line and column (private to the parser).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/relay/IR.h"
#include "support/Diagnostics.h"

namespace grove::relay {

#define GROVE_RELAY_KEYWORDS(X) \
  X(Let, "let")                 \
  X(Fn, "fn")                   \
  X(Def, "def")                 \
  X(If, "if")                   \
  X(Else, "else")               \
  X(Type, "type")               \
  X(Match, "match")             \
  X(Extern, "extern")           \
  X(FreeVar, "free_var")        \
  X(Ref, "ref")                 \
  X(RefRead, "ref_read")        \
  X(RefWrite, "ref_write")

enum class Tok {
  Ident,   // foo, nn (op names are Ident '.' Ident ...)
  Local,   // %x            (text: x)
  Graph,   // %0            (text: 0, integer: 0)
  Global,  // @f            (text: f)
  Int,     // 1, -42i64, 3u8
  Float,   // 1f, 1.5, 1e-05f, -inff
  Bool,    // True, False
  String,  // "NCHW"        (text: the raw characters between the quotes; decode with unescape())
#define GROVE_RELAY_KEYWORD_ENUM(E, S) E,
  GROVE_RELAY_KEYWORDS(GROVE_RELAY_KEYWORD_ENUM)
#undef GROVE_RELAY_KEYWORD_ENUM
      MatchPartial,  // match?
  Underscore,        // _
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Semi,
  Colon,
  Period,
  Assign,     // =
  Arrow,      // ->
  FatArrow,   // =>
  Question,   // ?
  Plus,       // +
  Minus,      // -
  Star,       // *
  Slash,      // /
  Less,       // <
  Greater,    // >
  LessEq,     // <=
  GreaterEq,  // >=
  EqEq,       // ==
  NotEq,      // !=
  End,
};

struct Token {
  Tok kind = Tok::End;
  int line = 1;
  int col = 1;
  // Names without their sigil, a string's raw contents, or a literal's text; points into the
  // SourceFile's text, which must outlive the tokens.
  std::string_view text;
  DType dtype = DType::Int32;  // Int, Float
  uint64_t bits = 0;           // Int (two's complement of the value), Graph (the number), Bool (0 or 1)
  double value = 0.0;          // Float

  int64_t integer() const { return static_cast<int64_t>(bits); }
  Loc loc() const { return {line, col}; }
};

// How a token reads in a message: "'('", "'let'", "'%x'", "'1.5f'", "end of file".
std::string describe(const Token &token);
// A string token's contents with its escapes (\" \\ \n \t) decoded.
std::string unescape(std::string_view raw);

// Tokens ending in End (comments, whitespace and the `#[version = "0.0.5"]` header dropped), or a
// UserError at a character that starts no token, an unterminated comment or string, a malformed or
// out-of-range number, or a `#[metadata]` section.
std::vector<Token> lex(const SourceFile &source);

}  // namespace grove::relay
