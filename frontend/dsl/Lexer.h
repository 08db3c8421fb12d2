#pragma once
// The model language's lexer: text → tokens with source locations.
// Assumes nothing of the text; guarantees a token list ending in End, or a UserError at the first
// character that cannot start a token or a malformed number.

#include <cstdint>
#include <string>
#include <vector>

#include "support/Diagnostics.h"

namespace grove::dsl {

#define GROVE_DSL_KEYWORDS(X) \
  X(Model, "model")           \
  X(Structure, "structure")   \
  X(Param, "param")           \
  X(State, "state")           \
  X(Leaf, "leaf")             \
  X(Internal, "internal")     \
  X(Output, "output")         \
  X(Schedule, "schedule")     \
  X(Sum, "sum")               \
  X(In, "in")                 \
  X(Children, "children")     \
  X(Token, "token")           \
  X(Left, "left")             \
  X(Right, "right")           \
  X(Node, "node")             \
  X(Pred0, "pred0")           \
  X(Pred1, "pred1")           \
  X(Prev, "prev")

enum class Tok {
  Ident,
  Number,
#define GROVE_DSL_KEYWORD_ENUM(E, S) E,
  GROVE_DSL_KEYWORDS(GROVE_DSL_KEYWORD_ENUM)
#undef GROVE_DSL_KEYWORD_ENUM
      LBracket,
  RBracket,
  LParen,
  RParen,
  LBrace,
  RBrace,
  Semi,
  Colon,
  Comma,
  Assign,
  Plus,
  Minus,
  Star,
  Slash,
  At,
  End,
};

// How a token kind reads in a message: "']'", "identifier", "'model'", "end of file".
std::string describe(Tok kind);

struct Token {
  Tok kind;
  std::string text;
  Loc loc;
  // True when no whitespace or comment separates this token from the previous one: `3H` is the
  // number 3 directly followed by the identifier H, a size coefficient.
  bool glued = false;
  double number = 0;        // Number: its value
  bool is_integer = false;  // Number: written without '.' or exponent
  int64_t integer = 0;      // Number: its value when is_integer
};

std::vector<Token> lex(const SourceFile &source);

// Whether `name` lexes as one identifier: a letter or `_`, then letters, digits and `_`, and not a
// keyword. (Writers of model text — the printer, the Relay translation — name things with it.)
bool is_identifier(const std::string &name);

}  // namespace grove::dsl
