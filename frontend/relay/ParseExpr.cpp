// The Relay text parser's expressions, types, patterns and attributes (see Parser_Internal.h).
//
// Grammar (TVM's relay/parser/parser.cc, text format 0.0.5), from the outside in:
//   sequence := ( 'let' %x [':' type] '=' expr ';' | %N '=' expr ';' | 'free_var' %x [':' type] ';'
//               | expr ';' )* expr
//   expr     := postfix ( binop postfix )*        binop: * / (12) + - (10) < <= > >= (8) == != (7)
//   postfix  := atomic ( '(' args ')' | '[' types ']' '(' args ')' | '.' index )*
//   atomic   := literal | %x | %N | @f | op.name | Ctor | meta[relay.Constant][i] | fn ... | if ...
//             | match ... | ref(...) | ref_read(...) | ref_write(..., ...) | '(' ... ')' | '{' sequence '}'
// `let` scopes its variable over the rest of the sequence; a graph binding `%0 = e;` names the node
// `e` itself, so each later `%0` shares it. `e1; e2` is `let %"" = e1; e2`.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "frontend/relay/Messages.h"
#include "frontend/relay/Parser_Internal.h"
#include "frontend/relay/ops/Op.h"

namespace grove::relay::parser {

namespace {

struct BinaryOp {
  Tok token;
  const char *op;
  int precedence;
};

// TVM's operator table (relay/parser/op_table.h); all left-associative.
constexpr BinaryOp kBinaryOps[] = {
    {Tok::Star, "multiply", 12},  {Tok::Slash, "divide", 12},
    {Tok::Plus, "add", 10},       {Tok::Minus, "subtract", 10},
    {Tok::Less, "less", 8},       {Tok::LessEq, "less_equal", 8},
    {Tok::Greater, "greater", 8}, {Tok::GreaterEq, "greater_equal", 8},
    {Tok::EqEq, "equal", 7},      {Tok::NotEq, "not_equal", 7},
};

const BinaryOp *binary_op(Tok t) {
  for (const BinaryOp &op : kBinaryOps)
    if (op.token == t) return &op;
  return nullptr;
}

// A name TVM would read as a dtype (`int8x4`, `bfloat16`, `handle`) that grove may not have.
bool looks_like_dtype(std::string_view s) {
  for (std::string_view base : {"uint", "int", "bfloat", "float", "bool", "handle"}) {
    if (s.substr(0, base.size()) != base) continue;
    std::string_view rest = s.substr(base.size());
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
    if (rest.empty()) return true;
    if (rest.front() != 'x' || rest.size() == 1) return false;
    return std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
  }
  return false;
}

}  // namespace

const Token &Parser::expect(Tok kind, const char *what) {
  if (peek().kind != kind) error(peek(), msg::kExpected, what, describe(peek()));
  return next();
}

// 1. Read bindings left to right in a loop, keeping (var, value) pairs and binding each let's
//    variable for what follows; 2. read the final expression; 3. close the scope; 4. fold the pairs
//    into nested Lets from the right. Nothing recurses per binding.
Expr Parser::parse_sequence() {
  struct Binding {
    Expr var, value;
    Span span;
  };
  std::vector<Binding> bindings;
  vars_.push();
  Expr body;
  for (;;) {
    const Token &t = peek();
    if (t.kind == Tok::Let) {
      next();
      const Token &name = expect(Tok::Local, "a local variable %name after 'let'");
      Type annotation;
      if (accept(Tok::Colon)) annotation = parse_type();
      expect(Tok::Assign, "'=' after the let-bound variable");
      Expr var = Var::make(std::string(name.text), annotation, span_of(name));
      // A let-bound function may call itself; any other value still sees an outer %name.
      const bool recursive = peek().kind == Tok::Fn;
      if (recursive) vars_.bind(name.text, var);
      Expr value = parse_expr();
      if (!recursive) vars_.bind(name.text, var);
      expect(Tok::Semi, "';' after the let binding's value");
      bindings.push_back({std::move(var), std::move(value), span_of(t)});
    } else if (t.kind == Tok::Graph && peek(1).kind == Tok::Assign) {
      next();
      next();
      Expr value = parse_expr();
      expect(Tok::Semi, "';' after the graph binding's value");
      graph_[t.bits] = std::move(value);
    } else if (t.kind == Tok::FreeVar) {
      parse_free_var();
    } else {
      Expr e = parse_expr();
      if (!accept(Tok::Semi)) {
        body = std::move(e);
        break;
      }
      bindings.push_back({Var::make("", {}, span_of(t)), std::move(e), span_of(t)});
    }
  }
  vars_.pop();
  for (auto it = bindings.rbegin(); it != bindings.rend(); ++it)
    body = Let::make(std::move(it->var), std::move(it->value), std::move(body), it->span);
  return body;
}

// Operator precedence with explicit stacks, so that `1 + 1 + ... + 1` does not recurse per term.
Expr Parser::parse_expr() {
  DepthGuard guard(*this, peek());
  std::vector<Expr> operands;
  std::vector<std::pair<const BinaryOp *, const Token *>> ops;
  auto reduce = [&] {
    auto [op, at] = ops.back();
    ops.pop_back();
    Expr rhs = std::move(operands.back());
    operands.pop_back();
    Expr lhs = std::move(operands.back());
    operands.pop_back();
    operands.push_back(
        Call::make(lookup_op(op->op, *at), {std::move(lhs), std::move(rhs)}, {}, {}, span_of(*at)));
  };
  operands.push_back(parse_postfix());
  while (const BinaryOp *op = binary_op(peek().kind)) {
    const Token &at = next();
    while (!ops.empty() && ops.back().first->precedence >= op->precedence) reduce();
    ops.emplace_back(op, &at);
    operands.push_back(parse_postfix());
  }
  while (!ops.empty()) reduce();
  return operands.back();
}

Expr Parser::parse_postfix() {
  const Token &start = peek();
  Expr e = parse_atomic();
  for (;;) {
    if (peek().kind == Tok::LParen) {
      e = parse_call(std::move(e), {}, start);
    } else if (peek().kind == Tok::LBracket) {
      // Explicit type arguments: `@f[int32](%x)`.
      next();
      std::vector<Type> type_args = parse_type_list(Tok::RBracket);
      if (peek().kind != Tok::LParen)
        error(peek(), msg::kExpected, "'(' with the call's arguments after its type arguments",
              describe(peek()));
      e = parse_call(std::move(e), std::move(type_args), start);
    } else if (peek().kind == Tok::Period) {
      const Token &dot = next();
      const Token &index = peek();
      // The lexer reads digits after '.' as an index; anything else (`.-1`, `.1i64`) is not one.
      const bool digits_only =
          std::all_of(index.text.begin(), index.text.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (index.kind != Tok::Int || !digits_only || index.bits > static_cast<uint64_t>(INT32_MAX))
        error(index, msg::kTupleIndex, describe(index));
      next();
      e = TupleGetItem::make(std::move(e), static_cast<int>(index.bits), span_of(dot));
    } else {
      return e;
    }
  }
}

Expr Parser::parse_atomic() {
  const Token &t = peek();
  switch (t.kind) {
    case Tok::Int:
    case Tok::Float:
    case Tok::Bool:
      next();
      return literal(t);
    case Tok::Local: {
      next();
      if (const Expr *v = vars_.lookup(t.text)) return *v;
      auto it = free_vars_.find(t.text);
      if (it == free_vars_.end()) error(t, msg::kUndefinedVar, t.text);
      return it->second;
    }
    case Tok::Graph: {
      next();
      auto it = graph_.find(t.bits);
      if (it == graph_.end()) error(t, msg::kUndefinedGraphVar, t.text);
      return it->second;
    }
    case Tok::Global:
      next();
      if (globals_ && !globals_->count(t.text)) error(t, msg::kUndefinedGlobal, t.text, t.text);
      return GlobalVar::make(std::string(t.text), span_of(t));
    case Tok::Ident:
      return parse_identifier();
    case Tok::Fn:
      next();
      return parse_function(t);
    case Tok::If:
      return parse_if();
    case Tok::Match:
    case Tok::MatchPartial:
      return parse_match();
    case Tok::Ref:
    case Tok::RefRead:
    case Tok::RefWrite:
      return parse_ref_builtin();
    case Tok::LParen:
      return parse_paren();
    case Tok::LBrace: {
      next();
      Expr e = parse_sequence();
      expect(Tok::RBrace, "'}' to close the block");
      return e;
    }
    default:
      error(t, msg::kExpectedExpression, describe(t));
  }
}

Expr Parser::literal(const Token &t) {
  if (t.kind == Tok::Bool)
    return Constant::make(NDArray::scalar(DType::Bool, t.bits ? 1.0 : 0.0), span_of(t));
  if (t.kind == Tok::Float) return Constant::make(NDArray::scalar(t.dtype, t.value), span_of(t));
  // Integers are stored from their bits, not through a double, so that int64 and uint64 keep
  // every digit.
  NDArray a(t.dtype, {});
  switch (t.dtype) {
    case DType::Int8:
      *a.data<int8_t>() = static_cast<int8_t>(t.bits);
      break;
    case DType::Int16:
      *a.data<int16_t>() = static_cast<int16_t>(t.bits);
      break;
    case DType::Int32:
      *a.data<int32_t>() = static_cast<int32_t>(t.bits);
      break;
    case DType::Int64:
      *a.data<int64_t>() = static_cast<int64_t>(t.bits);
      break;
    case DType::UInt8:
      *a.data<uint8_t>() = static_cast<uint8_t>(t.bits);
      break;
    case DType::UInt16:
      *a.data<uint16_t>() = static_cast<uint16_t>(t.bits);
      break;
    case DType::UInt32:
      *a.data<uint32_t>() = static_cast<uint32_t>(t.bits);
      break;
    case DType::UInt64:
      *a.data<uint64_t>() = t.bits;
      break;
    default:
      GROVE_CHECK(false, "an integer literal of dtype {}", to_string(t.dtype));
  }
  return Constant::make(std::move(a), span_of(t));
}

Expr Parser::parse_identifier() {
  const Token &t = peek();
  if (t.text == "meta" && peek(1).kind == Tok::LBracket) return parse_meta_constant();
  if (auto it = constructors_.find(t.text); it != constructors_.end()) {
    next();
    const Expr &ctor = it->second;
    // TVM writes the call of a constructor without fields bare: `Nil` is `Nil()`.
    if (ctor.as<Constructor>()->inputs.empty() && peek().kind != Tok::LParen && peek().kind != Tok::LBracket)
      return Call::make(ctor, {}, {}, {}, span_of(t));
    return ctor;
  }
  return lookup_op(parse_dotted_name(), t);
}

std::string Parser::parse_dotted_name() {
  std::string name(expect(Tok::Ident, "a name").text);
  while (peek().kind == Tok::Period && peek(1).kind == Tok::Ident) {
    next();
    name += '.';
    name += next().text;
  }
  return name;
}

// Op::make's message names the location but not in the caret format; re-issue it at `at`.
Expr Parser::lookup_op(const std::string &name, const Token &at) {
  try {
    return Op::make(name, span_of(at));
  } catch (const UserError &e) {
    std::string message = e.what();
    const std::string prefix = to_string(span_of(at)) + ": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    error(at, "{}", message);
  }
}

// `meta[kind][index]`: the constant for kind relay.Constant, an error for any other kind.
Expr Parser::parse_meta_constant() {
  const Token &at = next();
  expect(Tok::LBracket, "'[' after meta");
  std::string kind;
  while (peek().kind != Tok::RBracket && peek().kind != Tok::End) kind += next().text;
  expect(Tok::RBracket, "']' after the meta kind");
  if (kind != "relay.Constant") error(at, msg::kUnsupportedMeta, kind);
  expect(Tok::LBracket, "'[' with the index of the constant");
  const Token &index = peek();
  if (index.kind != Tok::Int || index.integer() < 0)
    error(index, msg::kExpected, "a non-negative constant index", describe(index));
  next();
  expect(Tok::RBracket, "']' after the constant index");
  const size_t i = static_cast<size_t>(index.integer());
  return Constant::make(meta_constants(at, i)[i], span_of(at));
}

Expr Parser::parse_call(Expr callee, std::vector<Type> type_args, const Token &start) {
  next();  // '('
  std::vector<Expr> args;
  Attrs attrs;
  // Attributes may follow the arguments of any call: an operator's configure it; on a call of a
  // global, a closure or a constructor TVM keeps them as the call's attributes (a DictAttrs, or the
  // class `attrs_type_key` names), which evaluation ignores. grove keeps them too, key for key.
  const Token *first_attr = nullptr;
  while (peek().kind != Tok::RParen) {
    if (attribute_ahead()) {
      if (!first_attr) first_attr = &peek();
      parse_attribute(attrs);
    } else {
      if (first_attr) error(peek(), msg::kPositionalAfterAttrs, describe(peek()));
      args.push_back(parse_sequence());
    }
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RParen, "',' or ')' in the call's arguments");
  if (const auto *c = callee.as<Constructor>(); c && c->inputs.size() != args.size())
    error(start, msg::kConstructorArity, c->name, c->inputs.size(), args.size());
  return Call::make(std::move(callee), std::move(args), std::move(attrs), std::move(type_args),
                    span_of(start));
}

bool Parser::attribute_ahead() const {
  if (peek().kind != Tok::Ident) return false;
  size_t i = 0;
  while (peek(i + 1).kind == Tok::Period && peek(i + 2).kind == Tok::Ident) i += 2;
  return peek(i + 1).kind == Tok::Assign;
}

void Parser::parse_attribute(Attrs &attrs) {
  const Token &at = peek();
  std::string key = parse_dotted_name();
  expect(Tok::Assign, "'=' after the attribute name");
  AttrValue value = parse_attr_value();
  if (attrs.has(key)) error(at, msg::kDuplicateAttr, key);
  attrs = attrs.with(key, std::move(value));
}

AttrValue Parser::parse_attr_value() {
  DepthGuard guard(*this, peek());
  const Token &t = peek();
  switch (t.kind) {
    case Tok::Int:
      next();
      return AttrValue::of_int(t.integer());
    case Tok::Float:
      next();
      return AttrValue::of_float(t.value);
    case Tok::Bool:
      next();
      return AttrValue::of_bool(t.bits != 0);
    case Tok::String:
      next();
      return AttrValue::of_string(unescape(t.text));
    case Tok::Ident:
      if (t.text == "None" || t.text == "nullptr") {
        next();
        return AttrValue::none();
      }
      if (t.text == "meta" && peek(1).kind == Tok::LBracket) {
        next();
        next();
        std::string kind;
        while (peek().kind != Tok::RBracket && peek().kind != Tok::End) kind += next().text;
        error(t, msg::kUnsupportedMeta, kind);
      }
      break;
    case Tok::LBracket:
    case Tok::LParen: {
      // `[a, b]` is a list; TVM also writes `(a)` for a single value, and `(a, b)` reads as a list.
      const Tok close = t.kind == Tok::LBracket ? Tok::RBracket : Tok::RParen;
      next();
      std::vector<AttrValue> list;
      bool trailing_comma = false;
      while (peek().kind != close) {
        list.push_back(parse_attr_value());
        trailing_comma = accept(Tok::Comma);
        if (!trailing_comma) break;
      }
      expect(close, close == Tok::RBracket ? "',' or ']' in the attribute list"
                                           : "',' or ')' in the attribute value");
      if (close == Tok::RParen && list.size() == 1 && !trailing_comma) return std::move(list[0]);
      return AttrValue::of_list(std::move(list));
    }
    default:
      break;
  }
  error(t, msg::kExpectedAttrValue, describe(t));
}

Expr Parser::parse_function(const Token &start) {
  type_vars_.push();
  vars_.push();
  std::vector<Type> type_params;
  if (peek().kind == Tok::LBracket) type_params = parse_type_params();
  expect(Tok::LParen, "'(' with the function's parameters");
  std::vector<Expr> params;
  Attrs attrs;
  bool has_attrs = false;
  std::unordered_set<std::string_view> names;
  while (peek().kind != Tok::RParen) {
    if (attribute_ahead()) {
      has_attrs = true;
      parse_attribute(attrs);
    } else {
      if (has_attrs) error(peek(), msg::kPositionalAfterAttrs, describe(peek()));
      const Token &name = expect(Tok::Local, "a parameter %name or an attribute name=value");
      if (peek().kind == Tok::LBrace) error(name, msg::kUnsupportedVirtualDevice, name.text);
      Type annotation;
      if (accept(Tok::Colon)) annotation = parse_type();
      if (!names.insert(name.text).second) error(name, msg::kDuplicateParam, name.text);
      Expr var = Var::make(std::string(name.text), annotation, span_of(name));
      vars_.bind(name.text, var);
      params.push_back(std::move(var));
    }
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RParen, "',' or ')' in the parameter list");
  Type ret_type;
  if (accept(Tok::Arrow)) ret_type = parse_type();
  expect(Tok::LBrace, "'{' with the function's body");
  Expr body = parse_sequence();
  expect(Tok::RBrace, "'}' to close the function's body");
  vars_.pop();
  type_vars_.pop();
  if (attrs.has("Extern")) error(start, msg::kUnsupportedExternAttr);
  return Function::make(std::move(params), std::move(body), std::move(ret_type), std::move(type_params),
                        std::move(attrs), span_of(start));
}

std::vector<Type> Parser::parse_type_params() {
  expect(Tok::LBracket, "'[' with the type parameters");
  std::vector<Type> params;
  std::unordered_set<std::string_view> seen;
  while (peek().kind != Tok::RBracket) {
    const Token &name = expect(Tok::Ident, "a type parameter name");
    if (!seen.insert(name.text).second) error(name, msg::kDuplicateTypeParam, name.text);
    Type tv = TypeVar::make(std::string(name.text), span_of(name));
    type_vars_.bind(name.text, tv);
    params.push_back(std::move(tv));
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RBracket, "',' or ']' in the type parameters");
  return params;
}

Expr Parser::parse_if() {
  const Token &kw = next();
  expect(Tok::LParen, "'(' after 'if'");
  Expr cond = parse_sequence();
  expect(Tok::RParen, "')' after the condition");
  expect(Tok::LBrace, "'{' with the then-branch");
  Expr then_branch = parse_sequence();
  expect(Tok::RBrace, "'}' to close the then-branch");
  expect(Tok::Else, "'else' after the then-branch");
  expect(Tok::LBrace, "'{' with the else-branch");
  Expr else_branch = parse_sequence();
  expect(Tok::RBrace, "'}' to close the else-branch");
  return If::make(std::move(cond), std::move(then_branch), std::move(else_branch), span_of(kw));
}

Expr Parser::parse_match() {
  DepthGuard guard(*this, peek());
  const Token &kw = next();
  Expr data = parse_postfix();
  expect(Tok::LBrace, "'{' with the match's clauses");
  std::vector<Clause> clauses;
  while (peek().kind != Tok::RBrace) {
    vars_.push();
    std::unordered_set<std::string_view> bound;
    Pattern lhs = parse_pattern(bound);
    expect(Tok::FatArrow, "'=>' after the pattern");
    Expr rhs = parse_sequence();
    vars_.pop();
    clauses.push_back({std::move(lhs), std::move(rhs)});
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RBrace, "',' or '}' after the match clause");
  return Match::make(std::move(data), std::move(clauses), kw.kind == Tok::Match, span_of(kw));
}

Pattern Parser::parse_pattern(std::unordered_set<std::string_view> &bound) {
  DepthGuard guard(*this, peek());
  const Token &t = next();
  auto sub_patterns = [&] {
    std::vector<Pattern> patterns;
    while (peek().kind != Tok::RParen) {
      patterns.push_back(parse_pattern(bound));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "',' or ')' in the pattern");
    return patterns;
  };
  switch (t.kind) {
    case Tok::Underscore:
      return PatternNode::wildcard(span_of(t));
    case Tok::Local: {
      Type annotation;
      if (accept(Tok::Colon)) annotation = parse_type();
      if (!bound.insert(t.text).second) error(t, msg::kDuplicatePatternVar, t.text);
      Expr var = Var::make(std::string(t.text), annotation, span_of(t));
      vars_.bind(t.text, var);
      return PatternNode::variable(std::move(var), span_of(t));
    }
    case Tok::Ident: {
      auto it = constructors_.find(t.text);
      if (it == constructors_.end()) error(t, msg::kUndefinedPatternCtor, t.text);
      std::vector<Pattern> patterns;
      if (accept(Tok::LParen)) patterns = sub_patterns();
      const auto *c = it->second.as<Constructor>();
      if (patterns.size() != c->inputs.size())
        error(t, msg::kPatternArity, c->name, c->inputs.size(), patterns.size());
      return PatternNode::constructor_of(it->second, std::move(patterns), span_of(t));
    }
    case Tok::LParen:
      return PatternNode::tuple(sub_patterns(), span_of(t));
    default:
      error(t, msg::kExpectedPattern, describe(t));
  }
}

Expr Parser::parse_ref_builtin() {
  const Token &kw = next();
  expect(Tok::LParen, "'(' after the reference builtin");
  Expr first = parse_sequence();
  Expr result;
  if (kw.kind == Tok::RefWrite) {
    expect(Tok::Comma, "',' between ref_write's reference and value");
    Expr value = parse_sequence();
    result = RefWrite::make(std::move(first), std::move(value), span_of(kw));
  } else if (kw.kind == Tok::RefRead) {
    result = RefRead::make(std::move(first), span_of(kw));
  } else {
    result = RefCreate::make(std::move(first), span_of(kw));
  }
  expect(Tok::RParen, "')' to close the reference builtin's arguments");
  return result;
}

// `()` is the empty tuple, `(e)` is e, `(e,)` and `(a, b)` are tuples.
Expr Parser::parse_paren() {
  const Token &open = next();
  if (accept(Tok::RParen)) return Tuple::make({}, span_of(open));
  Expr first = parse_sequence();
  if (accept(Tok::RParen)) return first;
  expect(Tok::Comma, "',' or ')'");
  std::vector<Expr> fields{std::move(first)};
  while (peek().kind != Tok::RParen) {
    fields.push_back(parse_sequence());
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RParen, "',' or ')' in the tuple");
  return Tuple::make(std::move(fields), span_of(open));
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

Type Parser::parse_type() {
  DepthGuard guard(*this, peek());
  const Token &t = peek();
  switch (t.kind) {
    case Tok::LParen: {
      // `(T)` groups (TVM's prelude writes `-> (fn(A) -> A)`); a 1-tuple type is written `(T,)`.
      next();
      std::vector<Type> fields;
      bool trailing_comma = false;
      while (peek().kind != Tok::RParen) {
        fields.push_back(parse_type());
        trailing_comma = accept(Tok::Comma);
        if (!trailing_comma) break;
      }
      expect(Tok::RParen, "',' or ')' in the tuple type");
      if (fields.size() == 1 && !trailing_comma) return fields[0];
      return TupleType::make(std::move(fields), span_of(t));
    }
    case Tok::Fn: {
      next();
      type_vars_.push();
      std::vector<Type> type_params;
      if (peek().kind == Tok::LBracket) type_params = parse_type_params();
      expect(Tok::LParen, "'(' with the function type's argument types");
      std::vector<Type> args = parse_type_list(Tok::RParen);
      expect(Tok::Arrow, "'->' and the function type's result type");
      Type ret = parse_type();
      type_vars_.pop();
      return FuncType::make(std::move(args), std::move(ret), std::move(type_params), span_of(t));
    }
    case Tok::Underscore:
      next();
      return IncompleteType::make(span_of(t));
    case Tok::Ref: {
      // TVM prints a reference type as `ref(T)`.
      next();
      expect(Tok::LParen, "'(' after 'ref' in a type");
      Type value = parse_type();
      expect(Tok::RParen, "')' to close the reference type");
      return RefType::make(std::move(value), span_of(t));
    }
    case Tok::Ident:
      return parse_named_type();
    default:
      error(t, msg::kExpectedType, describe(t));
  }
}

// After the opening bracket: types separated by commas (a trailing one allowed), then `close`.
std::vector<Type> Parser::parse_type_list(Tok close) {
  std::vector<Type> types;
  while (peek().kind != close) {
    types.push_back(parse_type());
    if (!accept(Tok::Comma)) break;
  }
  expect(close,
         close == Tok::RParen ? "',' or ')' in the list of types" : "',' or ']' in the type arguments");
  return types;
}

Type Parser::parse_named_type() {
  const Token &t = next();
  auto dtype_of = [&](const Token &name, bool in_tensor) -> DType {
    if (auto d = parse_dtype(std::string(name.text))) return *d;
    // TVM's short names: `int` is int32, `uint` uint32, `float` float32.
    if (name.text == "int") return DType::Int32;
    if (name.text == "uint") return DType::UInt32;
    if (name.text == "float") return DType::Float32;
    if (looks_like_dtype(name.text)) error(name, msg::kUnsupportedDType, name.text);
    if (in_tensor) error(name, msg::kUnknownDType, name.text);
    error(name, msg::kUndefinedType, name.text);
  };
  if (t.text == "Tensor") {
    expect(Tok::LBracket, "'[' after Tensor");
    expect(Tok::LParen, "'(' with the tensor's shape");
    Shape shape;
    while (peek().kind != Tok::RParen) {
      shape.push_back(parse_dim());
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "',' or ')' in the shape");
    expect(Tok::Comma, "',' and the dtype after the shape");
    const DType dtype = dtype_of(expect(Tok::Ident, "a dtype such as float32"), true);
    expect(Tok::RBracket, "']' to close the tensor type");
    return TensorType::make(std::move(shape), dtype, span_of(t));
  }
  if (const Type *tv = type_vars_.lookup(t.text)) {
    if (peek().kind == Tok::LBracket) error(peek(), msg::kTypeVarArgs, t.text);
    return *tv;
  }
  if (auto it = adts_.find(t.text); it != adts_.end()) {
    std::vector<Type> args;
    if (accept(Tok::LBracket)) args = parse_type_list(Tok::RBracket);
    const AdtInfo &adt = it->second;
    if (args.size() != adt.num_params) error(t, msg::kTypeArity, t.text, adt.num_params, args.size());
    if (adt.num_params == 0) return adt.header;
    return TypeCall::make(adt.header, std::move(args), span_of(t));
  }
  return TensorType::make({}, dtype_of(t, false), span_of(t));
}

int64_t Parser::parse_dim() {
  const Token &t = peek();
  if (accept(Tok::Question)) return kAnyDim;
  if (t.kind == Tok::Int) {
    next();
    if (t.integer() < 0) error(t, msg::kNegativeDim, t.text);
    return t.integer();
  }
  if (t.kind == Tok::Ident && t.text == "meta") error(t, msg::kUnsupportedMeta, "a shape dimension");
  if (t.kind == Tok::Ident) error(t, msg::kSymbolicDim, t.text);
  error(t, msg::kExpected, "a dimension (a non-negative integer or ?)", describe(t));
}

}  // namespace grove::relay::parser
