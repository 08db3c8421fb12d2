// Constant folding: before/expected programs (after TVM's test_pass_fold_constant.py), what must not
// be folded, and deep chains.
#include <gtest/gtest.h>

#include "frontend/relay/passes/FoldConstant.h"
#include "tests/relay/PassTest.h"

namespace grove::relay {
namespace {

using testing::check_pass;

TEST(FoldConstant, FoldsOpCallsOnConstants) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3), float32]) {
  add(%x, multiply(add(1f, 1f), 2f))
})",
                         R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3), float32]) {
  add(%x, 4f)
})"));
}

TEST(FoldConstant, PropagatesLetBoundConstants) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %a = 1f;
  let %b = add(%a, %a);
  let %y = multiply(%x, %b);
  %y
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %y = multiply(%x, 2f);
  %y
})"));
}

TEST(FoldConstant, ProjectionsOfTupleLiterals) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  %0 = (%x, 1f);
  add(add(%0.1, 1f), %0.0)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  add(2f, %x)
})"));
}

TEST(FoldConstant, LetBoundConstantTuples) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %t = (1f, 2f);
  add(%x, multiply(%t.0, %t.1))
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  add(%x, 2f)
})"));
}

TEST(FoldConstant, ConstantTupleArguments) {
  std::vector<NDArray> meta;
  NDArray expected(DType::Float32, {2});
  expected.data<float>()[0] = 1.0f;
  expected.data<float>()[1] = 2.0f;
  meta.push_back(expected);
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main() {
  concatenate((expand_dims(1f, axis=0), expand_dims(2f, axis=0)), axis=0)
})",
                         R"(#[version = "0.0.5"]
def @main() {
  meta[relay.Constant][0]
})",
                         meta));
}

TEST(FoldConstant, TupleResults) {
  std::vector<NDArray> meta;
  for (float v : {1.0f, 2.0f}) {
    NDArray a(DType::Float32, {1});
    a.data<float>()[0] = v;
    meta.push_back(a);
  }
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1), float32]) {
  %0 = split(concatenate((expand_dims(1f, axis=0), expand_dims(2f, axis=0)), axis=0), indices_or_sections=2);
  add(%x, %0.1)
})",
                         R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1), float32]) {
  add(%x, meta[relay.Constant][1])
})",
                         meta));
}

TEST(FoldConstant, IfOnAConstant) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %c = less(1f, 2f);
  let %y = if (%c) {
    add(%x, 1f)
  } else {
    negative(%x)
  };
  if (False) { %x } else { %y }
})",
                         R"(#[version = "0.0.5"]
def @main(%x: float32) {
  let %y = add(%x, 1f);
  %y
})"));
}

TEST(FoldConstant, KeepsDTypeAndShape) {
  EXPECT_TRUE(check_pass(fold_constant, R"(#[version = "0.0.5"]
def @main() {
  (add(1i64, 2i64), multiply(3, 2), add(1f64, 1f64))
})",
                         R"(#[version = "0.0.5"]
def @main() {
  (3i64, 6, 2f64)
})"));
  Module out = fold_constant(parse_module(R"(#[version = "0.0.5"]
def @main() { add(1i64, 2i64) })",
                                          "t"));
  const auto *c = testing::main_body(out).as<Constant>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data.dtype(), DType::Int64);
  EXPECT_EQ(c->data.ndim(), 0);
  EXPECT_EQ(c->data.element_as_int(0), 3);
}

TEST(FoldConstant, NeverReassociates) {
  const char *program = R"(#[version = "0.0.5"]
def @main(%x: float32) {
  add(add(%x, 1f), 2f)
})";
  EXPECT_TRUE(check_pass(fold_constant, program, program));
}

TEST(FoldConstant, NeverFoldsCallsOfFunctions) {
  const char *program = R"(#[version = "0.0.5"]
def @inc(%a: float32) {
  add(%a, 1f)
}
def @main() {
  (@inc(1f), (fn (%b: float32) { multiply(%b, 2f) })(3f))
})";
  EXPECT_TRUE(check_pass(fold_constant, program, program));
}

TEST(FoldConstant, NeverFoldsReferences) {
  const char *program = R"(#[version = "0.0.5"]
def @main() {
  let %r = ref(1f);
  let %u = ref_write(%r, 2f);
  add(ref_read(%r), 1f)
})";
  EXPECT_TRUE(check_pass(fold_constant, program, program));
}

TEST(FoldConstant, LeavesIllTypedCallsForTypeInference) {
  const char *program = R"(#[version = "0.0.5"]
def @main() {
  add(1f, 1i64)
})";
  EXPECT_TRUE(check_pass(fold_constant, program, program));
}

TEST(FoldConstant, DoesNotMaterializeFullTensors) {
  const char *program = R"(#[version = "0.0.5"]
def @main() {
  full(1f, shape=[1000, 1000], dtype="float32")
})";
  EXPECT_TRUE(check_pass(fold_constant, program, program));
}

constexpr int kDeep = 100000;

// let %x0 = 1f; let %x1 = add(%x0, 1f); ... : everything folds to the constant kDeep.
TEST(FoldConstant, HundredThousandLetChain) {
  using namespace testing;
  std::vector<Expr> xs;
  for (int i = 0; i < kDeep; ++i) xs.push_back(numbered_var("x", i));
  Expr body = xs.back();
  for (int i = kDeep - 1; i >= 1; --i) body = Let::make(xs[i], call("add", {xs[i - 1], f32(1)}), body);
  body = Let::make(xs[0], f32(1), body);
  Module out = fold_constant(main_module({}, body));
  const auto *c = main_body(out).as<Constant>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data.dtype(), DType::Float32);
  EXPECT_EQ(c->data.element_as_double(0), static_cast<double>(kDeep));  // exact below 2^24
}

// add(add(...add(1f, 1f)..., 1f), 1f), 100,000 deep in graph form.
TEST(FoldConstant, HundredThousandDeepCallNest) {
  using namespace testing;
  Expr e = f32(1);
  for (int i = 0; i < kDeep; ++i) e = call("add", {e, f32(1)});
  Module out = fold_constant(main_module({}, e));
  const auto *c = main_body(out).as<Constant>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data.element_as_double(0), static_cast<double>(kDeep + 1));
}

}  // namespace
}  // namespace grove::relay
