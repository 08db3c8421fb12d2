#pragma once
// What the Relay parser's tests share (test_parser.cpp, test_parser_programs.cpp): parsing with the
// nodes kept alive, the message of the UserError a text raises, and checked downcasts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "tests/UserError.h"

namespace grove::relay::parser_test {

inline constexpr const char *kList = R"(
type List[A] {
    Cons(A, List[A]),
    Nil,
}
)";

// Parsed expressions stay alive for the whole test program, so that tests may hold references to
// their nodes (`const Let &let = as<Let>(parse(...))`).
inline Expr parse(const std::string &text) {
  // Never destroyed: nodes must not be destroyed after main returns (static destruction order).
  static auto *keep_alive = new std::vector<Expr>;
  keep_alive->push_back(parse_expr(text, "test.relay"));
  return keep_alive->back();
}

// The message of the UserError that parsing `text` as a module throws (the test fails when it parses).
inline std::string module_error(const std::string &text, const std::vector<NDArray> &meta = {}) {
  return grove::testing::user_error_of([&] { parse_module(text, "test.relay", meta); });
}

// The same for `text` as an expression.
inline std::string expr_error(const std::string &text) {
  return grove::testing::user_error_of([&] { parse(text); });
}

inline const Function &main_of(const Module &m) {
  const Expr *f = m.find_function("main");
  EXPECT_NE(f, nullptr);
  return *f->as<Function>();
}

template <typename T>
const T &as(const Expr &e) {
  const T *n = e.as<T>();
  EXPECT_NE(n, nullptr) << "expected a " << to_string(T::kKind) << ", found a " << to_string(e->kind);
  if (!n) throw std::runtime_error("wrong node kind");
  return *n;
}

inline const Constant &constant(const std::string &text) { return as<Constant>(parse(text)); }

// The type annotation of `let %_: <type> = (); ()`.
inline Type let_type(const std::string &type) {
  return Expr(parse("let %_: " + type + " = (); ()").as<Let>()->var).as<Var>()->type_annotation;
}

}  // namespace grove::relay::parser_test
