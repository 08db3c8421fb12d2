#pragma once
// Before/expected tests of Relay passes in the text format.
//
//   EXPECT_TRUE(check_pass(dead_code_elimination, before, expected));
//
// parses both programs, runs the pass on `before`, and succeeds when the result is structurally equal
// to `expected` (alpha-equivalence, relay/StructuralEqual.h) and shares as many compound nodes
// (structural equality ignores sharing: a DAG equals the tree it unfolds to, but graph form means
// "evaluated once"). On failure it prints before, expected and actual, and the first difference.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/Visitor.h"

namespace grove::relay::testing {

using Pass = std::function<Module(const Module &)>;

// Distinct nodes other than leaves (Var, GlobalVar, Constant, Op, Constructor) reachable from the
// module's functions: the work graph form evaluates.
inline size_t compound_nodes(const Module &m) {
  std::unordered_set<const ExprNode *> seen;
  for (const auto &[name, fn] : m.functions())
    post_order_visit(fn, [&](const Expr &e) {
      switch (e->kind) {
        case ExprKind::Var:
        case ExprKind::GlobalVar:
        case ExprKind::Constant:
        case ExprKind::Op:
        case ExprKind::Constructor:
          return;
        default:
          seen.insert(e.get());
      }
    });
  return seen.size();
}

inline ::testing::AssertionResult check_pass(const Pass &pass, const std::string &before,
                                             const std::string &expected,
                                             const std::vector<NDArray> &meta = {}) {
  Module in = parse_module(before, "before", meta);
  Module want = parse_module(expected, "expected", meta);
  Module got = pass(in);
  EqualResult eq = structural_equal(got, want);
  size_t got_nodes = compound_nodes(got), want_nodes = compound_nodes(want);
  if (eq.equal && got_nodes == want_nodes) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << "--- before:\n"
          << print_module(in).text << "\n--- expected:\n"
          << print_module(want).text << "\n--- actual:\n"
          << print_module(got).text << "\n";
  if (!eq.equal)
    failure << "first difference at " << eq.path << ":\n  actual:   " << eq.lhs << "\n  expected: " << eq.rhs;
  else
    failure << "equal as trees, but the actual program has " << got_nodes
            << " distinct compound nodes and the "
            << "expected one " << want_nodes << " (sharing differs)";
  return failure;
}

// The body of @main.
inline Expr main_body(const Module &m) {
  const Expr *f = m.find_function("main");
  return f ? f->as<Function>()->body : Expr();
}

// Number of nested Lets along the body chain of `e` (a let's body, repeatedly).
inline size_t let_chain_length(Expr e) {
  size_t n = 0;
  while (const auto *l = e.as<Let>()) {
    ++n;
    e = l->body;
  }
  return n;
}

// A variable named prefix + i (for long generated chains).
inline Expr numbered_var(const char *prefix, int i, Type type = {}) {
  return Var::make(fmt::format("{}{}", prefix, i), std::move(type));
}

inline Expr f32(double v) { return Constant::make(NDArray::scalar(DType::Float32, v)); }
inline Type f32_type() { return TensorType::scalar(DType::Float32); }
inline Expr call(const std::string &op, std::vector<Expr> args) {
  return Call::make(Op::make(op), std::move(args));
}

// `def @main(params) { body }` as a module.
inline Module main_module(std::vector<Expr> params, Expr body) {
  Module m;
  m.add_function("main", Function::make(std::move(params), std::move(body)));
  return m;
}

}  // namespace grove::relay::testing
