#pragma once
// What the tests of merge_compiler_regions and partition_graph share: running a module before and
// after a pass on the same random arguments (the interpreter runs the same kernels on the same
// values, and annotations are identities, so results must be bit for bit equal), and counting what
// a pass leaves behind.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/RandomValues.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay::testing {

// Random arguments for @main's parameters (seeded, so reproducible).
inline std::vector<Value> random_main_args(const Module &m, uint64_t seed = 7) {
  const auto *main = m.find_function("main")->as<Function>();
  std::mt19937_64 rng(seed);
  std::vector<Value> args;
  for (const Expr &p : main->params) {
    std::string why;
    auto v = random_value(m, p.as<Var>()->type_annotation, rng, &why);
    EXPECT_TRUE(v.has_value()) << why;
    args.push_back(*v);
  }
  return args;
}

// `after` (a pass's output) computes what `before` computes on `args`, bit for bit.
inline ::testing::AssertionResult same_results_on(const Module &before, const Module &after,
                                                  const std::vector<Value> &args) {
  infer_types(before);
  infer_types(after);
  Value want = run_main(before, args);
  Value got = run_main(after, args);
  std::string why;
  if (same_value(want, got, &why)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "results differ: " << why << "\n--- after:\n"
                                       << print_module(after).text;
}

// The same on random arguments.
inline ::testing::AssertionResult same_results(const Module &before, const Module &after, uint64_t seed = 7) {
  return same_results_on(before, after, random_main_args(before, seed));
}

// Calls of `op_name` anywhere in the module.
inline int count_calls(const Module &m, const std::string &op_name) {
  int n = 0;
  for (const auto &[name, fn] : m.functions())
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *c = e.as<Call>())
        if (const auto *op = c->op.as<Op>(); op && op->name == op_name) ++n;
    });
  return n;
}

inline int count_annotations(const Module &m) {
  return count_calls(m, "annotation.compiler_begin") + count_calls(m, "annotation.compiler_end");
}

}  // namespace grove::relay::testing
