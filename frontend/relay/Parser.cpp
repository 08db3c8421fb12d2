// The Relay text parser's programs: definitions, ADTs, free variables, meta constants, and the
// public entry points (Parser.h). Expressions and types are in ParseExpr.cpp.

#include "frontend/relay/Parser.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "frontend/relay/Messages.h"
#include "frontend/relay/Metadata.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser_Internal.h"

namespace grove::relay {

namespace parser {

namespace {

// A module's text and, after a line `#[metadata]` (TVM's printer puts it last), its metadata.
struct Sections {
  std::string_view program;
  std::optional<std::string_view> metadata;
  int metadata_line = 0;
};

Sections split_sections(std::string_view text) {
  int line = 1;
  for (size_t pos = 0; pos < text.size(); ++line) {
    const size_t eol = text.find('\n', pos);
    std::string_view l = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.front()))) l.remove_prefix(1);
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.remove_suffix(1);
    if (l == "#[metadata]")
      return {text.substr(0, pos), eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1),
              line};
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return {text, std::nullopt, 0};
}

}  // namespace

Parser::Parser(std::string_view text, const std::string &file_name, MetaSource meta)
    : source_(file_name, std::string(split_sections(text).program)),
      file_(std::make_shared<const std::string>(file_name)),
      tokens_(lex(source_)),
      meta_(std::move(meta)) {
  // The module's own #[metadata] section holds its constants, whatever else was given.
  if (Sections s = split_sections(text); s.metadata) {
    meta_.loaded = read_tvm_metadata(*s.metadata, fmt::format("{}:{}", file_name, s.metadata_line));
    meta_.given = &meta_.loaded;
    meta_.sidecar.clear();
    meta_.tried = true;
  }
}

// A program is a module (definitions) or a single expression, told apart by its first token.
//   1. collect_definitions: the names of every `def` and `type`, so that globals, ADTs and
//      constructors may be used before the definition that introduces them;
//   2. every `type` body: its constructors;
//   3. every `def`, in order.
Module Parser::parse_program() {
  const Tok first = peek().kind;
  if (first != Tok::Def && first != Tok::Type && first != Tok::Extern && first != Tok::End) {
    defined_globals_.emplace("main", 0);
    globals_ = &defined_globals_;
    Module module;
    module.add_function("main", parse_main_expression());
    return module;
  }
  globals_ = &defined_globals_;
  collect_definitions();
  for (const TopLevel &t : top_level_)
    if (t.is_type) parse_type_definition(t.pos);
  for (TypeData &data : type_data_) module_.add_type(std::move(data));
  pos_ = 0;
  while (peek().kind != Tok::End) {
    switch (peek().kind) {
      case Tok::Type: {
        auto end = type_def_end_.find(pos_);
        if (end == type_def_end_.end()) error(peek(), msg::kExpectedDefinition, describe(peek()));
        pos_ = end->second;
        break;
      }
      case Tok::Def:
        parse_def();
        break;
      case Tok::Extern:
        error(peek(), msg::kUnsupportedExtern);
      default:
        error(peek(), msg::kExpectedDefinition, describe(peek()));
    }
  }
  return std::move(module_);
}

// Scans the tokens outside all brackets for `def @name` and `type Name [A, B]`.
void Parser::collect_definitions() {
  auto token = [&](size_t i) -> const Token & { return i < tokens_.size() ? tokens_[i] : tokens_.back(); };
  int depth = 0;
  for (size_t i = 0; i + 1 < tokens_.size(); ++i) {
    const Token &t = tokens_[i];
    switch (t.kind) {
      case Tok::LParen:
      case Tok::LBracket:
      case Tok::LBrace:
        ++depth;
        continue;
      case Tok::RParen:
      case Tok::RBracket:
      case Tok::RBrace:
        depth = std::max(0, depth - 1);
        continue;
      default:
        break;
    }
    if (depth > 0) continue;
    if (t.kind == Tok::Def) {
      const Token &name = token(i + 1);
      if (name.kind != Tok::Global)
        error(name, msg::kExpected, "a global name @name after 'def'", describe(name));
      if (auto it = defined_globals_.find(name.text); it != defined_globals_.end())
        error(name, msg::kDuplicateDef, name.text, it->second);
      defined_globals_.emplace(name.text, name.line);
      top_level_.push_back({i, false});
    } else if (t.kind == Tok::Type) {
      const Token &name = token(i + 1);
      if (name.kind != Tok::Ident)
        error(name, msg::kExpected, "the type's name after 'type'", describe(name));
      if (auto it = adts_.find(name.text); it != adts_.end())
        error(name, msg::kDuplicateType, name.text, it->second.line);
      size_t num_params = 0;
      if (token(i + 2).kind == Tok::LBracket)
        for (size_t j = i + 3; token(j).kind == Tok::Ident; j += 2) {
          ++num_params;
          if (token(j + 1).kind != Tok::Comma) break;
        }
      adts_.emplace(name.text, AdtInfo{GlobalTypeVar::make(std::string(name.text), span_of(name)), num_params,
                                       name.line});
      top_level_.push_back({i, true});
    }
  }
}

// `type Name [A, B] { Ctor(T, ...), Ctor2, }` — constructors get tags in order of appearance.
void Parser::parse_type_definition(size_t at) {
  pos_ = at;
  const Token &kw = next();
  const Token &name = expect(Tok::Ident, "the type's name after 'type'");
  const AdtInfo &adt = adts_.at(name.text);
  type_vars_.push();
  std::vector<Type> type_vars;
  if (peek().kind == Tok::LBracket) type_vars = parse_type_params();
  std::vector<Expr> ctors;
  if (accept(Tok::LBrace)) {
    while (peek().kind != Tok::RBrace) {
      const Token &ctor_name = expect(Tok::Ident, "a constructor name");
      std::vector<Type> inputs;
      if (accept(Tok::LParen)) inputs = parse_type_list(Tok::RParen);
      if (auto it = constructors_.find(ctor_name.text); it != constructors_.end())
        error(ctor_name, msg::kDuplicateConstructor, ctor_name.text, it->second->span.line);
      Expr ctor = Constructor::make(std::string(ctor_name.text), std::move(inputs), adt.header,
                                    static_cast<int>(ctors.size()), span_of(ctor_name));
      constructors_.emplace(ctor_name.text, ctor);
      ctors.push_back(std::move(ctor));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RBrace, "',' or '}' after the constructor");
  }
  type_vars_.pop();
  type_def_end_[at] = pos_;
  type_data_.push_back(TypeData{adt.header, std::move(type_vars), std::move(ctors), span_of(kw)});
}

// `def @name [A](%x: T, attr=value) -> R { body }`; graph bindings do not cross definitions.
void Parser::parse_def() {
  const Token &kw = next();
  const Token &name = expect(Tok::Global, "a global name @name after 'def'");
  if (peek().kind == Tok::Assign) error(name, msg::kUnsupportedGlobalMeta, name.text, name.text);
  graph_.clear();
  Expr function = parse_function(kw);
  module_.add_function(std::string(name.text), std::move(function));
}

// A single-expression program: `free_var` declarations and bindings, then the result.
Expr Parser::parse_main_expression() {
  const Token &start = peek();
  Expr body = parse_sequence();
  expect(Tok::End, "the end of the program after its expression");
  return Function::make(free_var_order_, std::move(body), {}, {}, {}, span_of(start));
}

void Parser::parse_free_var() {
  next();
  const Token &name = expect(Tok::Local, "a variable %name after 'free_var'");
  Type annotation;
  if (accept(Tok::Colon)) annotation = parse_type();
  if (free_vars_.count(name.text)) error(name, msg::kDuplicateFreeVar, name.text);
  Expr var = Var::make(std::string(name.text), annotation, span_of(name));
  free_vars_.emplace(name.text, var);
  free_var_order_.push_back(std::move(var));
  expect(Tok::Semi, "';' after the free_var declaration");
}

Expr Parser::parse_standalone_expr(const Module *module) {
  if (module) {
    for (const TypeData &data : module->types()) {
      const auto *header = data.header.as<GlobalTypeVar>();
      adts_.emplace(header->name, AdtInfo{data.header, data.type_vars.size(), data.span.line});
      for (const Expr &c : data.constructors) constructors_.emplace(c.as<Constructor>()->name, c);
    }
  }
  Expr e = parse_sequence();
  expect(Tok::End, "the end of the expression");
  return e;
}

// The constants meta[relay.Constant][index] may use: the caller's, or the sidecar's (read once).
const std::vector<NDArray> &Parser::meta_constants(const Token &at, size_t index) {
  if (meta_.sidecar.empty()) {
    const size_t n = meta_.given ? meta_.given->size() : 0;
    if (index >= n) error(at, msg::kMetaOutOfRange, index, n);
    return *meta_.given;
  }
  if (!meta_.tried) {
    meta_.tried = true;
    std::error_code ec;
    if (!std::filesystem::exists(meta_.sidecar, ec))
      error(at, msg::kMetaSidecarMissing, index, meta_.sidecar);
    meta_.loaded = read_meta_constants(meta_.sidecar);
  }
  if (index >= meta_.loaded.size())
    error(at, msg::kMetaSidecarShort, index, meta_.sidecar, meta_.loaded.size());
  return meta_.loaded;
}

}  // namespace parser

Module parse_module(std::string_view text, const std::string &file_name, const std::vector<NDArray> &meta) {
  parser::MetaSource source;
  source.given = &meta;
  parser::Parser p(text, file_name, std::move(source));
  return p.parse_program();
}

Expr parse_expr(std::string_view text, const std::string &file_name, const Module *module,
                const std::vector<NDArray> &meta) {
  parser::MetaSource source;
  source.given = &meta;
  parser::Parser p(text, file_name, std::move(source));
  return p.parse_standalone_expr(module);
}

Module parse_relay_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) user_error(msg::kCannotRead, path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) user_error(msg::kCannotRead, path);
  parser::MetaSource source;
  source.sidecar = meta_path(path);
  parser::Parser p(text.str(), path, std::move(source));
  return p.parse_program();
}

std::string meta_path(const std::string &relay_path) {
  std::filesystem::path p(relay_path);
  p.replace_extension(".meta.safetensors");
  return p.string();
}

}  // namespace grove::relay
