#pragma once
// The Relay text parser's state, shared by Parser.cpp (programs, definitions, ADTs, entry points)
// and ParseExpr.cpp (expressions, types, patterns, attributes). Private to the parser.

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Lexer.h"
#include "frontend/relay/Messages.h"
#include "support/Diagnostics.h"

namespace grove::relay::parser {

// Nesting deeper than this (parentheses, calls, function bodies, types, patterns, lists) is a
// UserError rather than a stack overflow: each level costs a few recursive calls.
inline constexpr int kMaxNesting = 500;

// Names bound in nested scopes, with shadowing. Each binding is logged so that closing a scope
// undoes exactly its own bindings; a chain of 100,000 lets costs 100,000 log entries, not scopes.
template <typename T>
class ScopeStack {
 public:
  void push() { marks_.push_back(log_.size()); }
  void pop() {
    const size_t mark = marks_.back();
    marks_.pop_back();
    while (log_.size() > mark) {
      auto it = map_.find(log_.back());
      it->second.pop_back();
      if (it->second.empty()) map_.erase(it);
      log_.pop_back();
    }
  }
  void bind(std::string_view name, T value) {
    map_[name].push_back(std::move(value));
    log_.push_back(name);
  }
  const T *lookup(std::string_view name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : &it->second.back();
  }

 private:
  std::unordered_map<std::string_view, std::vector<T>> map_;
  std::vector<std::string_view> log_;
  std::vector<size_t> marks_;
};

// Where meta[relay.Constant][i] comes from: a vector given by the caller, or a sidecar file read on
// first use (parse_relay_file).
struct MetaSource {
  const std::vector<NDArray> *given = nullptr;
  std::string sidecar;  // non-empty: read read_meta_constants(sidecar) on first use
  std::vector<NDArray> loaded;
  bool tried = false;
};

// An ADT known to the parser: its header and its number of type parameters.
struct AdtInfo {
  Type header;
  size_t num_params = 0;
  int line = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string &file_name, MetaSource meta);

  // Parser.cpp
  Module parse_program();
  Expr parse_standalone_expr(const Module *module);

  // ParseExpr.cpp: a block body `e`, `let %x = v; e`, `%0 = v; e`, `v; e` — iterative in the
  // number of bindings.
  Expr parse_sequence();
  // One expression without top-level `;` bindings: binary operators over postfix expressions.
  Expr parse_expr();
  Type parse_type();

 private:
  friend struct DepthGuard;

  // Tokens
  const Token &peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token &next() {
    const Token &t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    next();
    return true;
  }
  const Token &expect(Tok kind, const char *what);
  Span span_of(const Token &t) const { return Span{file_, t.line, t.col}; }

  template <typename... Args>
  [[noreturn]] void error(const Token &at, fmt::format_string<Args...> format, Args &&...args) const {
    source_.error(at.loc(), format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  [[noreturn]] void error_at(const Span &at, fmt::format_string<Args...> format, Args &&...args) const {
    source_.error(Loc{at.line, at.col}, format, std::forward<Args>(args)...);
  }

  // Parser.cpp: the program's shape
  void collect_definitions();
  void parse_type_definition(size_t at);
  void parse_def();
  Expr parse_main_expression();
  void parse_free_var();

  // ParseExpr.cpp
  Expr parse_postfix();
  Expr parse_atomic();
  Expr parse_call(Expr callee, std::vector<Type> type_args, const Token &start);
  Expr parse_function(const Token &start);
  Expr parse_if();
  Expr parse_match();
  Expr parse_identifier();
  Expr parse_meta_constant();
  Expr parse_paren();
  Expr parse_ref_builtin();
  Expr lookup_op(const std::string &name, const Token &at);
  Expr literal(const Token &t);
  Pattern parse_pattern(std::unordered_set<std::string_view> &bound);
  bool attribute_ahead() const;
  void parse_attribute(Attrs &attrs);
  AttrValue parse_attr_value();
  std::string parse_dotted_name();
  std::vector<Type> parse_type_list(Tok close);
  Type parse_named_type();
  int64_t parse_dim();
  std::vector<Type> parse_type_params();
  const std::vector<NDArray> &meta_constants(const Token &at, size_t index);

  SourceFile source_;
  std::shared_ptr<const std::string> file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  MetaSource meta_;

  ScopeStack<Expr> vars_;
  std::unordered_map<std::string_view, Expr> free_vars_;
  std::vector<Expr> free_var_order_;
  std::unordered_map<uint64_t, Expr> graph_;  // `%0 = ...`, per definition
  ScopeStack<Type> type_vars_;

  std::unordered_map<std::string_view, AdtInfo> adts_;
  std::unordered_map<std::string_view, Expr> constructors_;
  // Globals: every `def @name` of the program (checked: uses of undefined names are errors), or
  // null for a standalone expression, where any @name is accepted.
  std::unordered_map<std::string_view, int> *globals_ = nullptr;
  std::unordered_map<std::string_view, int> defined_globals_;

  // collect_definitions' findings, in order of appearance: token positions of `type` and `def`.
  struct TopLevel {
    size_t pos;
    bool is_type;
  };
  std::vector<TopLevel> top_level_;
  std::unordered_map<size_t, size_t> type_def_end_;  // `type` position -> position after its body
  Module module_;
  std::vector<TypeData> type_data_;
};

// Counts one level of nesting for as long as it lives.
struct DepthGuard {
  DepthGuard(Parser &p, const Token &at) : parser(p) {
    if (++parser.depth_ > kMaxNesting) parser.error(at, msg::kNestedTooDeep, kMaxNesting);
  }
  ~DepthGuard() { --parser.depth_; }
  Parser &parser;
};

}  // namespace grove::relay::parser
