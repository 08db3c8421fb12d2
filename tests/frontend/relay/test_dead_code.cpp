// Dead code elimination: before/expected programs (TVM's test_pass_dead_code_elimination.py and
// more), effects that must be kept, and 100,000-let chains.
#include <gtest/gtest.h>

#include "frontend/relay/passes/DeadCode.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

TEST(DeadCode, RemovesAnUnusedLet) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%z: int32) {
  let %x = 1;
  %z
})",
                         R"(#[version = "0.0.5"]
def @main(%z: int32) {
  %z
})"));
}

TEST(DeadCode, KeepsTheUsedLetOfTwo) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%z: int32) {
  let %x = 1;
  let %y = 2;
  %x + %x
})",
                         R"(#[version = "0.0.5"]
def @main(%z: int32) {
  let %x = 1;
  %x + %x
})"));
}

TEST(DeadCode, NestedLets) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%d: int32, %b: int32) {
  let %a = %b;
  let %c = %d;
  %c
})",
                         R"(#[version = "0.0.5"]
def @main(%d: int32, %b: int32) {
  let %c = %d;
  %c
})"));
}

TEST(DeadCode, BindingsUsedOnlyByDeadBindingsDieToo) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %a = add(%x, 1f);
  let %b = multiply(%a, 2f);
  let %c = (%a, %b);
  %x
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  %x
})"));
}

TEST(DeadCode, KeepsALiveRecursiveFunction) {
  const char *program = R"(#[version = "0.0.5"]
def @main() -> float32 {
  let %f = fn (%n: int32, %data: float32) -> float32 {
    if (%n == 0) {
      %data
    } else {
      %f(%n - 1, log(%data))
    }
  };
  %f(2, 10000f)
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, RemovesADeadRecursiveFunction) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main() {
  let %f = fn (%n: int32, %data: float32) -> float32 {
    if (%n == 0) {
      %data
    } else {
      %f(%n - 1, log(%data))
    }
  };
  ()
})",
                         R"(#[version = "0.0.5"]
def @main() {
  ()
})"));
}

TEST(DeadCode, LetInsideAnOperand) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main() {
  add({ let %a = 1; 3 }, 2)
})",
                         R"(#[version = "0.0.5"]
def @main() {
  add(3, 2)
})"));
}

TEST(DeadCode, TupleGetItem) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main() {
  let %a = 100;
  (1, 2, 3, 4).0
})",
                         R"(#[version = "0.0.5"]
def @main() {
  (1, 2, 3, 4).0
})"));
}

TEST(DeadCode, InsideFunctionBodiesAndBranches) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32) {
  let %f = fn (%y: float32) -> float32 {
    let %unused = multiply(%y, %y);
    add(%x, %y)
  };
  if (%c) {
    let %t = negative(%x);
    %f(%x)
  } else {
    %x
  }
})",
                         R"(#[version = "0.0.5"]
def @main(%c: bool, %x: float32) {
  let %f = fn (%y: float32) -> float32 {
    add(%x, %y)
  };
  if (%c) {
    %f(%x)
  } else {
    %x
  }
})"));
}

// Reference reads and writes are effects: unused bindings of them stay (TVM's test_refs).
TEST(DeadCode, KeepsReferenceEffects) {
  const char *program = R"(#[version = "0.0.5"]
def @f(%r) -> int32 {
  let %v = ref_read(%r);
  let %u = ref_write(%r, %v + 1);
  %v
}
def @main() -> int32 {
  let %r = ref(0);
  let %y = @f(%r);
  let %z = @f(%r);
  %z
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, KeepsCallsOfGlobalsThatWriteReferencesTransitively) {
  const char *program = R"(#[version = "0.0.5"]
def @write(%r) {
  ref_write(%r, 1f)
}
def @outer(%r) {
  @write(%r)
}
def @main(%r, %x: float32) {
  let %u = @outer(%r);
  %x
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, KeepsCallsOfMutuallyRecursiveEffectfulGlobals) {
  const char *program = R"(#[version = "0.0.5"]
def @ping(%r, %n: int32) -> () {
  if (%n == 0) {
    ()
  } else {
    @pong(%r, %n - 1)
  }
}
def @pong(%r, %n: int32) -> () {
  let %w = ref_write(%r, %n);
  @ping(%r, %n)
}
def @main(%r) -> int32 {
  let %u = @ping(%r, 3);
  1
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, KeepsCallsOfUnknownClosures) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%g: fn (float32) -> float32, %x: float32) {
  let %u = %g(%x);
  %x
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, RemovesUnusedCallsOfPureFunctions) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @inc(%x: float32) {
  add(%x, 1f)
}
def @main(%x: float32) {
  let %u = @inc(%x);
  let %g = fn (%y: float32) { multiply(%y, 2f) };
  let %v = %g(%x);
  %x
})",
                         R"(#[version = "0.0.5"]
def @inc(%x: float32) {
  add(%x, 1f)
}
def @main(%x: float32) {
  %x
})"));
}

TEST(DeadCode, KeepsAnUnusedCallOfALocalClosureThatWrites) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%r, %x: float32) {
  let %g = fn (%y: float32) { ref_write(%r, %y) };
  let %v = %g(%x);
  %x
})";
  EXPECT_TRUE(check_pass(dead_code_elimination, program, program));
}

TEST(DeadCode, SeesThroughAliasesOfClosures) {
  EXPECT_TRUE(check_pass(dead_code_elimination, R"(#[version = "0.0.5"]
def @main(%r, %x: float32) {
  let %write = fn (%y: float32) { ref_write(%r, %y) };
  let %pure = fn (%y: float32) { negative(%y) };
  let %w = %write;
  let %p = %pure;
  let %u = %w(%x);
  let %v = %p(%x);
  %x
})",
                         R"(#[version = "0.0.5"]
def @main(%r, %x: float32) {
  let %write = fn (%y: float32) { ref_write(%r, %y) };
  let %w = %write;
  let %u = %w(%x);
  %x
})"));
}

constexpr int kDeep = 100000;

// let %x0 = add(%p, 1f); let %d0 = multiply(%x0, 2f); let %x1 = add(%x0, 1f); ... %x{n-1}, 100,000
// lets: every %d is dead, every %x live.
TEST(DeadCode, HundredThousandLetChain) {
  using namespace testing;
  constexpr int n = kDeep / 2;  // pairs of lets
  Expr p = Var::make("p", f32_type());
  std::vector<Expr> xs, ds;
  for (int i = 0; i < n; ++i) {
    xs.push_back(numbered_var("x", i));
    ds.push_back(numbered_var("d", i));
  }
  Expr body = xs.back();
  for (int i = n - 1; i >= 0; --i) {
    body = Let::make(ds[i], call("multiply", {xs[i], f32(2)}), body);
    body = Let::make(xs[i], call("add", {i == 0 ? p : xs[i - 1], f32(1)}), body);
  }
  Module out = dead_code_elimination(main_module({p}, body));
  Expr e = main_body(out);
  ASSERT_EQ(let_chain_length(e), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto *l = e.as<Let>();
    ASSERT_TRUE(l->var.same_as(xs[i])) << "let " << i;
    e = l->body;
  }
  EXPECT_TRUE(e.same_as(xs.back()));
}

// A chain where each binding is used only by the next and the body uses none: all of it dies.
TEST(DeadCode, HundredThousandDeadLetsDieInOnePass) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  std::vector<Expr> xs;
  for (int i = 0; i < kDeep; ++i) xs.push_back(numbered_var("x", i));
  Expr body = p;
  for (int i = kDeep - 1; i >= 0; --i)
    body = Let::make(xs[i], call("add", {i == 0 ? p : xs[i - 1], f32(1)}), body);
  Module out = dead_code_elimination(main_module({p}, body));
  EXPECT_TRUE(main_body(out).same_as(p));
}

// let %d = %p; negative(negative(...negative(%p)...)), 100,000 deep in graph form.
TEST(DeadCode, HundredThousandDeepCallNest) {
  using namespace testing;
  Expr p = Var::make("p", f32_type());
  Expr chain = p;
  for (int i = 0; i < kDeep; ++i) chain = call("negative", {chain});
  Module out = dead_code_elimination(main_module({p}, Let::make(Var::make("d", Type()), p, chain)));
  EXPECT_TRUE(main_body(out).same_as(chain));
}

}  // namespace
}  // namespace grove::relay
