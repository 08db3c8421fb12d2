// Operator fusion (passes/FuseOps.h) and the post-dominator analysis it runs on
// (passes/DominatorTree.h). The before/expected programs follow TVM's
// tests/python/relay/test_pass_fuse_ops.py (smaller shapes; ops grove lacks replaced by ones of the
// same pattern). Fused modules must type-check and compute exactly what the unfused ones compute
// (the interpreter runs the same kernels on the same values, so the tolerance is zero).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/DominatorTree.h"
#include "frontend/relay/passes/FuseOps.h"
#include "tests/relay/PassTest.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay {
namespace {

Module parse(const std::string &text, const std::vector<NDArray> &meta = {}) {
  return parse_module(text, "fuse_ops_test.relay", meta);
}

// Fuses `before` and compares with `expected` (tests/relay/PassTest.h: alpha-equivalence and the
// same sharing); the fused module must type-check.
void check_fuse(const std::string &before, const std::string &expected, int max_depth = 256,
                const std::vector<NDArray> &meta = {}) {
  auto pass = [&](const Module &m) { return fuse_ops(m, max_depth); };
  EXPECT_TRUE(testing::check_pass(pass, before, expected, meta));
  Module out = fuse_ops(parse(before, meta), max_depth);
  EXPECT_NO_THROW(infer_types(out)) << print_module(out).text;
}

// Deterministic inputs in [-1, 1) for @main's parameters.
std::vector<Value> inputs_for(const Module &m) {
  const auto *main = m.find_function("main")->as<Function>();
  std::vector<Value> args;
  uint32_t state = 12345;
  for (const Expr &p : main->params) {
    const auto *tt = p.as<Var>()->type_annotation.as<TensorType>();
    NDArray a(tt->dtype, tt->shape);
    for (int64_t i = 0; i < a.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      a.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
    }
    args.push_back(tensor_value(a));
  }
  return args;
}

// Bit for bit (tests/relay/ValueCompare.h).
bool same_value(const Value &a, const Value &b) {
  std::string why;
  return testing::same_value(a, b, &why);
}

// The fused module computes what the original computes, on the same float32 inputs.
void check_same_values(const std::string &before) {
  Module in = parse(before);
  infer_types(in);
  Module out = fuse_ops(in);
  infer_types(out);
  std::vector<Value> args = inputs_for(in);
  EXPECT_TRUE(same_value(run_main(in, args), run_main(out, args))) << print_module(out).text;
}

// The Primitive functions of a module, outermost first.
std::vector<const Function *> primitive_functions(const Module &m) {
  std::vector<const Function *> out;
  for (const auto &[name, fn] : m.functions())
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *f = e.as<Function>(); f && f->has_attr(attr::kPrimitive)) out.push_back(f);
    });
  return out;
}

int count_op_calls(const Expr &e) {
  int n = 0;
  post_order_visit(e, [&](const Expr &x) {
    if (const auto *c = x.as<Call>(); c && c->op.as<Op>()) ++n;
  });
  return n;
}

// ---------------------------------------------------------------------------------------------
// Elementwise, broadcast and injective ops
// ---------------------------------------------------------------------------------------------

constexpr const char *kSimple = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = add(%x, 1f);
  %1 = exp(%0);
  squeeze(%1)
}
)";

TEST(FuseOps, ElementwiseAndInjectiveChainBecomesOnePrimitiveFunction) {
  check_fuse(kSimple, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %2 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    %0 = add(%p0, 1f);
    %1 = exp(%0);
    squeeze(%1)
  };
  %2(%x)
}
)");
  check_same_values(kSimple);
}

TEST(FuseOps, InputModuleIsLeftUnchanged) {
  Module in = parse(kSimple);
  infer_types(in);
  Module copy = parse(kSimple);
  infer_types(copy);
  fuse_ops(in);
  EXPECT_TRUE(structural_equal(in, copy).equal);
}

TEST(FuseOps, InfersTypesWhenTheyAreMissing) {
  Module in = parse(kSimple);  // no infer_types
  Module out = fuse_ops(in);
  ASSERT_EQ(primitive_functions(out).size(), 1u);
  const Function *f = primitive_functions(out)[0];
  ASSERT_EQ(f->params.size(), 1u);
  EXPECT_EQ(to_string(f->params[0].as<Var>()->type_annotation), "Tensor[(10, 20), float32]");
}

constexpr const char *kDiamond = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = add(%x, 1f);
  %1 = exp(%0);
  %2 = negative(%0);
  %3 = tanh(%2);
  multiply(%1, %3)
}
)";

TEST(FuseOps, DiamondOfElementwiseBranchesFusesIntoOneGroup) {
  check_fuse(kDiamond, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %5 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    %0 = add(%p0, 1f);
    %1 = exp(%0);
    %2 = negative(%0);
    %3 = tanh(%2);
    multiply(%1, %3)
  };
  %5(%x)
}
)");
  check_same_values(kDiamond);
}

constexpr const char *kParallelInjective = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = add(%x, 1f);
  %1 = squeeze(%0);
  %2 = transpose(%0, axes=[0, 1]);
  add(%1, %2)
}
)";

TEST(FuseOps, ParallelInjectiveBranchesFuseIntoTheirElementwiseJoin) {
  check_fuse(kParallelInjective, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %4 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    %0 = add(%p0, 1f);
    %1 = squeeze(%0);
    %2 = transpose(%0, axes=[0, 1]);
    add(%1, %2)
  };
  %4(%x)
}
)");
  check_same_values(kParallelInjective);
}

constexpr const char *kInjectiveChain = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 4), float32]) -> Tensor[(40), float32] {
  %0 = transpose(%x, axes=[1, 0]);
  %1 = reshape(%0, newshape=[40, 1]);
  %2 = squeeze(%1, axis=[1]);
  exp(%2)
}
)";

TEST(FuseOps, InjectiveChainFusesWithTheElementwiseOpAfterIt) {
  check_fuse(kInjectiveChain, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 4), float32]) -> Tensor[(40), float32] {
  %4 = fn (%p0: Tensor[(10, 4), float32], Primitive=1) -> Tensor[(40), float32] {
    %0 = transpose(%p0, axes=[1, 0]);
    %1 = reshape(%0, newshape=[40, 1]);
    %2 = squeeze(%1, axis=[1]);
    exp(%2)
  };
  %4(%x)
}
)");
  check_same_values(kInjectiveChain);
}

// ---------------------------------------------------------------------------------------------
// Reductions and OutEWiseFusable ops
// ---------------------------------------------------------------------------------------------

constexpr const char *kReduce = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10), float32] {
  %0 = exp(%x);
  %1 = sum(%0, axis=[1]);
  sqrt(%1)
}
)";

// A reduction absorbs the elementwise ops before it but not the ones after it (TVM: a CommReduce
// group never joins its consumer).
TEST(FuseOps, ElementwiseFusesIntoTheReductionAfterIt) {
  check_fuse(kReduce, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10), float32] {
  %2 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10), float32] {
    %0 = exp(%p0);
    sum(%0, axis=[1])
  };
  %3 = %2(%x);
  %4 = fn (%p01: Tensor[(10), float32], Primitive=1) -> Tensor[(10), float32] {
    sqrt(%p01)
  };
  %4(%3)
}
)");
  check_same_values(kReduce);
}

constexpr const char *kReduceInDiamond = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = add(%x, 1f);
  %1 = sum(%0, axis=[1], keepdims=True);
  %2 = exp(%0);
  add(%1, %2)
}
)";

// %0's post-dominator is the final add, but one path goes through a reduction: %0 stays alone.
TEST(FuseOps, ReductionOnOneBranchKeepsTheDiamondApart) {
  check_fuse(kReduceInDiamond, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    add(%p0, 1f)
  };
  %1 = %0(%x);
  %2 = fn (%p01: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 1), float32] {
    sum(%p01, axis=[1], keepdims=True)
  };
  %3 = %2(%1);
  %6 = fn (%p02: Tensor[(10, 20), float32], %p1: Tensor[(10, 1), float32], Primitive=1)
       -> Tensor[(10, 20), float32] {
    %4 = exp(%p02);
    add(%p1, %4)
  };
  %6(%1, %3)
}
)");
  check_same_values(kReduceInDiamond);
}

constexpr const char *kConvAddRelu = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4, 1, 1), float32])
    -> Tensor[(1, 4, 8, 8), float32] {
  %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3]);
  %1 = add(%0, %b);
  nn.relu(%1)
}
)";

TEST(FuseOps, Conv2dFusesWithItsBiasAndActivation) {
  check_fuse(kConvAddRelu, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4, 1, 1), float32])
    -> Tensor[(1, 4, 8, 8), float32] {
  %3 = fn (%p0: Tensor[(1, 3, 8, 8), float32], %p1: Tensor[(4, 3, 3, 3), float32], %p2: Tensor[(4, 1, 1), float32],
           Primitive=1) -> Tensor[(1, 4, 8, 8), float32] {
    %0 = nn.conv2d(%p0, %p1, padding=[1, 1], channels=4, kernel_size=[3, 3]);
    %1 = add(%0, %p2);
    nn.relu(%1)
  };
  %3(%x, %w, %b)
}
)");
  check_same_values(kConvAddRelu);
}

constexpr const char *kConv2dFuse = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(4, 4, 3, 3), float32],
          %w2: Tensor[(4, 4, 1, 1), float32], %w3: Tensor[(4, 4, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %0 = add(%x, 1f);
  %1 = nn.conv2d(%0, %w1, padding=[1, 1], channels=4, kernel_size=[3, 3]);
  %2 = add(1f, %1);
  %3 = add(%1, %2);
  %4 = nn.conv2d(%3, %w2, padding=[0, 0], channels=4, kernel_size=[1, 1]);
  %5 = nn.conv2d(%3, %w3, padding=[1, 1], channels=4, kernel_size=[3, 3]);
  add(%4, %5)
}
)";

// TVM's test_conv2d_fuse: the first conv2d fuses through the diamond after it; of the two conv2ds
// meeting at the last add, only the first can take the add (a group has one anchor).
TEST(FuseOps, Conv2dFusesUpToItsPostDominatorAndOnlyOneAnchorPerGroup) {
  check_fuse(kConv2dFuse, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(4, 4, 3, 3), float32],
          %w2: Tensor[(4, 4, 1, 1), float32], %w3: Tensor[(4, 4, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], Primitive=1) -> Tensor[(1, 4, 8, 8), float32] {
    add(%p0, 1f)
  };
  %1 = %0(%x);
  %5 = fn (%p01: Tensor[(1, 4, 8, 8), float32], %p1: Tensor[(4, 4, 3, 3), float32], Primitive=1)
       -> Tensor[(1, 4, 8, 8), float32] {
    %2 = nn.conv2d(%p01, %p1, padding=[1, 1], channels=4, kernel_size=[3, 3]);
    %3 = add(1f, %2);
    add(%2, %3)
  };
  %6 = %5(%1, %w1);
  %7 = fn (%p02: Tensor[(1, 4, 8, 8), float32], %p11: Tensor[(4, 4, 3, 3), float32], Primitive=1)
       -> Tensor[(1, 4, 8, 8), float32] {
    nn.conv2d(%p02, %p11, padding=[1, 1], channels=4, kernel_size=[3, 3])
  };
  %8 = %7(%6, %w3);
  %10 = fn (%p03: Tensor[(1, 4, 8, 8), float32], %p12: Tensor[(4, 4, 1, 1), float32],
            %p2: Tensor[(1, 4, 8, 8), float32], Primitive=1) -> Tensor[(1, 4, 8, 8), float32] {
    %9 = nn.conv2d(%p03, %p12, padding=[0, 0], channels=4, kernel_size=[1, 1]);
    add(%9, %p2)
  };
  %10(%6, %w2, %8)
}
)");
  check_same_values(kConv2dFuse);
}

constexpr const char *kSoftmaxCast = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(16, 16), float32]) -> Tensor[(16, 16), float32] {
  %0 = nn.softmax(%x);
  multiply(%0, 2f)
}
)";

TEST(FuseOps, SoftmaxFusesWithTheElementwiseOpAfterIt) {
  check_fuse(kSoftmaxCast, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(16, 16), float32]) -> Tensor[(16, 16), float32] {
  %1 = fn (%p0: Tensor[(16, 16), float32], Primitive=1) -> Tensor[(16, 16), float32] {
    %0 = nn.softmax(%p0);
    multiply(%0, 2f)
  };
  %1(%x)
}
)");
  check_same_values(kSoftmaxCast);
}

// ---------------------------------------------------------------------------------------------
// Tuples and projections
// ---------------------------------------------------------------------------------------------

constexpr const char *kConcatenate = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32]) -> Tensor[(1, 4, 8, 10), float32] {
  %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
  %1 = reshape(%0, newshape=[1, 4, 8, 2]);
  %2 = (%1, %x);
  %3 = concatenate(%2, axis=3);
  add(%3, 1f)
}
)";

// TVM's test_concatenate (upsampling replaced by reshape, also injective): the tuple joins the
// concatenate in phase 1, and the reshape joins the tuple's group in phase 2.
TEST(FuseOps, TupleFieldsFuseIntoTheConcatenateThatReadsThem) {
  check_fuse(kConcatenate, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32]) -> Tensor[(1, 4, 8, 10), float32] {
  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], Primitive=1) -> Tensor[(1, 4, 4, 4), float32] {
    nn.max_pool2d(%p0, pool_size=[2, 2], strides=[2, 2])
  };
  %1 = %0(%x);
  %6 = fn (%p01: Tensor[(1, 4, 4, 4), float32], %p1: Tensor[(1, 4, 8, 8), float32], Primitive=1)
       -> Tensor[(1, 4, 8, 10), float32] {
    %2 = reshape(%p01, newshape=[1, 4, 8, 2]);
    %3 = (%2, %p1);
    %4 = concatenate(%3, axis=3);
    add(%4, 1f)
  };
  %6(%1, %x)
}
)");
  check_same_values(kConcatenate);
}

constexpr const char *kTupleRoot = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32]) -> (Tensor[(1, 4, 8, 2), float32], Tensor[(1, 4, 8, 8), float32]) {
  %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
  %1 = reshape(%0, newshape=[1, 4, 8, 2]);
  (%1, %x)
}
)";

TEST(FuseOps, TupleAtTheRootStaysATuple) {
  check_fuse(kTupleRoot, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32]) -> (Tensor[(1, 4, 8, 2), float32], Tensor[(1, 4, 8, 8), float32]) {
  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], Primitive=1) -> Tensor[(1, 4, 4, 4), float32] {
    nn.max_pool2d(%p0, pool_size=[2, 2], strides=[2, 2])
  };
  %1 = %0(%x);
  %2 = fn (%p01: Tensor[(1, 4, 4, 4), float32], Primitive=1) -> Tensor[(1, 4, 8, 2), float32] {
    reshape(%p01, newshape=[1, 4, 8, 2])
  };
  %3 = %2(%1);
  (%3, %x)
}
)");
  check_same_values(kTupleRoot);
}

constexpr const char *kTupleIntermediate = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3, 4), float32]) -> Tensor[(2, 9, 4), float32] {
  %0 = squeeze(%x);
  %1 = add(%0, 1f);
  %2 = squeeze(%0);
  %3 = add(%2, 1f);
  %4 = add(%3, 1f);
  %5 = add(%0, 1f);
  %6 = (%1, %4, %5);
  %7 = concatenate(%6, axis=1);
  %8 = squeeze(%7);
  add(%8, 1f)
}
)";

TEST(FuseOps, IntermediateTupleFusesWithEverythingAroundIt) {
  check_fuse(kTupleIntermediate, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3, 4), float32]) -> Tensor[(2, 9, 4), float32] {
  %10 = fn (%p0: Tensor[(1, 2, 3, 4), float32], Primitive=1) -> Tensor[(2, 9, 4), float32] {
    %0 = squeeze(%p0);
    %1 = add(%0, 1f);
    %2 = squeeze(%0);
    %3 = add(%2, 1f);
    %4 = add(%3, 1f);
    %5 = add(%0, 1f);
    %6 = (%1, %4, %5);
    %7 = concatenate(%6, axis=1);
    %8 = squeeze(%7);
    add(%8, 1f)
  };
  %10(%x)
}
)");
  check_same_values(kTupleIntermediate);
}

constexpr const char *kSplitElemwise = R"(#[version = "0.0.5"]
def @main(%X: Tensor[(1, 10), float32], %W: Tensor[(30, 10), float32]) -> Tensor[(1, 10), float32] {
  %0 = nn.dense(%X, %W);
  %1 = split(%0, indices_or_sections=3, axis=1);
  %2 = sigmoid(%1.0);
  %3 = tanh(%1.1);
  %4 = exp(%1.2);
  %5 = multiply(%3, %4);
  add(%2, %5)
}
)";

TEST(FuseOps, ProjectionsOfASplitFuseWithTheirElementwiseUsers) {
  check_fuse(kSplitElemwise, R"(#[version = "0.0.5"]
def @main(%X: Tensor[(1, 10), float32], %W: Tensor[(30, 10), float32]) -> Tensor[(1, 10), float32] {
  %0 = fn (%p0: Tensor[(1, 10), float32], %p1: Tensor[(30, 10), float32], Primitive=1) -> Tensor[(1, 30), float32] {
    nn.dense(%p0, %p1)
  };
  %1 = %0(%X, %W);
  %8 = fn (%p01: Tensor[(1, 30), float32], Primitive=1) -> Tensor[(1, 10), float32] {
    %2 = split(%p01, indices_or_sections=3, axis=1);
    %3 = sigmoid(%2.0);
    %4 = tanh(%2.1);
    %5 = exp(%2.2);
    %6 = multiply(%4, %5);
    add(%3, %6)
  };
  %8(%1)
}
)");
  check_same_values(kSplitElemwise);
}

constexpr const char *kProjectionRoot = R"(#[version = "0.0.5"]
def @main(%X: Tensor[(1, 30), float32], %W: Tensor[(10, 10), float32]) -> Tensor[(1, 10), float32] {
  %0 = split(%X, indices_or_sections=3, axis=1);
  nn.dense(%0.0, %W)
}
)";

TEST(FuseOps, ProjectionCanBeTheRootOfItsGroup) {
  check_fuse(kProjectionRoot, R"(#[version = "0.0.5"]
def @main(%X: Tensor[(1, 30), float32], %W: Tensor[(10, 10), float32]) -> Tensor[(1, 10), float32] {
  %1 = fn (%p0: Tensor[(1, 30), float32], Primitive=1) -> Tensor[(1, 10), float32] {
    %0 = split(%p0, indices_or_sections=3, axis=1);
    %0.0
  };
  %2 = %1(%X);
  %3 = fn (%p01: Tensor[(1, 10), float32], %p1: Tensor[(10, 10), float32], Primitive=1) -> Tensor[(1, 10), float32] {
    nn.dense(%p01, %p1)
  };
  %3(%2, %W)
}
)");
  check_same_values(kProjectionRoot);
}

constexpr const char *kSplitThroughRef = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(6, 9), float32]) -> Tensor[(2, 9), float32] {
  %0 = split(%x, indices_or_sections=3);
  %1 = ref(%0.1);
  %2 = add(%0.0, ref_read(%1));
  add(%2, %0.2)
}
)";

// TVM's test_split: one field escapes into a reference, so the split has no post-dominator and
// stays alone; the other projections join their users, which take the whole tuple as an input.
TEST(FuseOps, ProjectionsOfATupleThatEscapesJoinTheirUsers) {
  check_fuse(kSplitThroughRef, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(6, 9), float32]) -> Tensor[(2, 9), float32] {
  %0 = fn (%p0: Tensor[(6, 9), float32], Primitive=1)
       -> (Tensor[(2, 9), float32], Tensor[(2, 9), float32], Tensor[(2, 9), float32]) {
    split(%p0, indices_or_sections=3)
  };
  %1 = %0(%x);
  %2 = ref(%1.1);
  %3 = ref_read(%2);
  %4 = fn (%p01: (Tensor[(2, 9), float32], Tensor[(2, 9), float32], Tensor[(2, 9), float32]),
           %p1: Tensor[(2, 9), float32], Primitive=1) -> Tensor[(2, 9), float32] {
    %5 = add(%p01.0, %p1);
    add(%5, %p01.2)
  };
  %4(%1, %3)
}
)");
  check_same_values(kSplitThroughRef);
}

// As TVM: a group that calls no op (a projection of a tuple of inputs) is marked Primitive=0.
TEST(FuseOps, GroupWithoutOpCallsIsMarkedPrimitiveZero) {
  check_fuse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = (%x, %y);
  %0.1
}
)",
             R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %1 = fn (%p0: Tensor[(4), float32], %p1: Tensor[(4), float32], Primitive=0) -> Tensor[(4), float32] {
    %0 = (%p0, %p1);
    %0.1
  };
  %1(%x, %y)
}
)");
}

// ---------------------------------------------------------------------------------------------
// max_depth
// ---------------------------------------------------------------------------------------------

// Graph bindings are numbered (`%0 = ...`); `next` hands out the numbers.
std::string binding(int &next) { return "%" + std::to_string(next++); }

const char *kChainHeader =
    "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {\n";
const char *kChainType = "Tensor[(10, 20), float32]";

// `n` exps of `input`, bound to numbered names except the last, which is returned as an expression.
std::pair<std::string, std::string> exps(const std::string &input, int n, int &next,
                                         const std::string &indent) {
  std::string text, prev = input;
  for (int i = 0; i + 1 < n; ++i) {
    std::string name = binding(next);
    text += indent + name + " = exp(" + prev + ");\n";
    prev = name;
  }
  return {text, "exp(" + prev + ")"};
}

// exp applied n times to %x.
std::string exp_chain(int n) {
  int next = 0;
  auto [text, result] = exps("%x", n, next, "  ");
  return kChainHeader + text + "  " + result + "\n}\n";
}

// The expected result of fusing an exp chain: groups of `sizes` exps, in order.
std::string fused_exp_chain(const std::vector<int> &sizes) {
  std::string text = kChainHeader, input = "%x";
  int next = 0;
  for (size_t g = 0; g < sizes.size(); ++g) {
    std::string param = "%p" + std::to_string(g);
    auto [body, result] = exps(param, sizes[g], next, "    ");
    std::string fn = binding(next);
    text += "  " + fn + " = fn (" + param + ": " + kChainType + ", Primitive=1) -> " + kChainType + " {\n" +
            body + "    " + result + "\n  };\n";
    std::string call = fn + "(" + input + ")";
    if (g + 1 == sizes.size()) return text + "  " + call + "\n}\n";
    input = binding(next);
    text += "  " + input + " = " + call + ";\n";
  }
  return text + "}\n";
}

TEST(FuseOps, MaxDepthSplitsAChain) {
  check_fuse(exp_chain(4), fused_exp_chain({2, 2}), /*max_depth=*/2);
  check_fuse(exp_chain(5), fused_exp_chain({2, 2, 1}), /*max_depth=*/2);
  check_fuse(exp_chain(20), fused_exp_chain({10, 10}), /*max_depth=*/10);  // TVM's test_fuse_max
  check_fuse(exp_chain(300), fused_exp_chain({256, 44}));                  // the default, kMaxFusedOps
}

TEST(FuseOps, MaxDepthOfOneFusesNothing) { check_fuse(exp_chain(3), fused_exp_chain({1, 1, 1}), 1); }

// Two branches of 5 exps from `input`, joined by an add (returned as an expression).
std::pair<std::string, std::string> diamond(const std::string &input, int &next, const std::string &indent) {
  std::string text, a = input, b = input;
  for (int i = 0; i < 5; ++i) {
    std::string x = binding(next), y = binding(next);
    text += indent + x + " = exp(" + a + ");\n" + indent + y + " = exp(" + b + ");\n";
    a = x;
    b = y;
  }
  return {text, "add(" + a + ", " + b + ")"};
}

// TVM's test_fuse_max_diamond: diamonds of 2 x 5 exps and an add, max_depth 11: one group each.
TEST(FuseOps, MaxDepthKeepsWholeDiamondsTogether) {
  std::string before = kChainHeader, expected = kChainHeader;
  int next = 0, fused_next = 0;
  std::string input = "%x", fused_input = "%x";
  for (int d = 0; d < 3; ++d) {
    auto [body, result] = diamond(input, next, "  ");
    before += body;
    if (d < 2) {
      input = binding(next);
      before += "  " + input + " = " + result + ";\n";
    } else {
      before += "  " + result + "\n}\n";
    }
    std::string param = "%p" + std::to_string(d);
    auto [fbody, fresult] = diamond(param, fused_next, "    ");
    std::string fn = binding(fused_next);
    expected += "  " + fn + " = fn (" + param + ": " + kChainType + ", Primitive=1) -> " + kChainType +
                " {\n" + fbody + "    " + fresult + "\n  };\n";
    std::string call = fn + "(" + fused_input + ")";
    if (d < 2) {
      fused_input = binding(fused_next);
      expected += "  " + fused_input + " = " + call + ";\n";
    } else {
      expected += "  " + call + "\n}\n";
    }
  }
  check_fuse(before, expected, /*max_depth=*/11);
}

TEST(FuseOps, GroupsNeverExceedMaxDepth) {
  for (int max_depth : {2, 3, 5, 7}) {
    Module in = parse(kConv2dFuse);
    Module out = fuse_ops(in, max_depth);
    for (const Function *f : primitive_functions(out)) EXPECT_LE(count_op_calls(f->body), max_depth);
  }
}

// ---------------------------------------------------------------------------------------------
// Boundaries: calls of non-ops, lets, ifs, nested functions, constants
// ---------------------------------------------------------------------------------------------

// A call of a global function is opaque: nothing fuses across it, and it is not wrapped itself.
TEST(FuseOps, CallsOfFunctionsAreOpaque) {
  check_fuse(R"(#[version = "0.0.5"]
def @f(%a: Tensor[(4), float32]) -> Tensor[(4), float32] {
  negative(%a)
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = exp(%x);
  %1 = @f(%0);
  exp(%1)
}
)",
             R"(#[version = "0.0.5"]
def @f(%a: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = fn (%p0: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
    negative(%p0)
  };
  %0(%a)
}
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %1 = fn (%p0: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
    exp(%p0)
  };
  %2 = %1(%x);
  %3 = @f(%2);
  %4 = fn (%p01: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
    exp(%p01)
  };
  %4(%3)
}
)");
}

// TVM's test_fuse_myia_regression: the condition of an if is fused on its own.
TEST(FuseOps, IfConditionIsFusedWithinItsDataflowRegion) {
  check_fuse(R"(#[version = "0.0.5"]
def @main(%x: int64, %y: int64) -> int64 {
  %0 = if (greater(%x, %y)) {
    fn () -> int64 { %x }
  } else {
    fn () -> int64 { %y }
  };
  %0()
}
)",
             R"(#[version = "0.0.5"]
def @main(%x: int64, %y: int64) -> int64 {
  %0 = fn (%p0: int64, %p1: int64, Primitive=1) -> bool {
    greater(%p0, %p1)
  };
  %1 = if (%0(%x, %y)) {
    fn () -> int64 { %x }
  } else {
    fn () -> int64 { %y }
  };
  %1()
}
)");
}

constexpr const char *kLets = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  let %a = exp(add(%x, 1f));
  let %b = negative(%a);
  multiply(%b, %a)
}
)";

// As TVM: fusion stops at let bindings; each bound value is fused on its own.
TEST(FuseOps, LetBoundValuesAreFusedSeparately) {
  check_fuse(kLets, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %1 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    %0 = add(%p0, 1f);
    exp(%0)
  };
  let %a = %1(%x);
  %2 = fn (%p01: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    negative(%p01)
  };
  let %b = %2(%a);
  %3 = fn (%p02: Tensor[(10, 20), float32], %p1: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    multiply(%p02, %p1)
  };
  %3(%b, %a)
}
)");
  check_same_values(kLets);
}

// Each match clause is a dataflow region of its own; a zero-input group is a call with no arguments.
TEST(FuseOps, MatchClausesAreFusedSeparately) {
  check_fuse(R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%l: List[Tensor[(4), float32]]) -> Tensor[(4), float32] {
  match (%l) {
    Cons(%h, _) => exp(add(%h, 1f)),
    Nil => zeros(shape=[4], dtype="float32"),
  }
}
)",
             R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%l: List[Tensor[(4), float32]]) -> Tensor[(4), float32] {
  match (%l) {
    Cons(%h, _) => {
      %0 = fn (%p0: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
        exp(add(%p0, 1f))
      };
      %0(%h)
    },
    Nil => {
      %1 = fn (Primitive=1) -> Tensor[(4), float32] {
        zeros(shape=[4], dtype="float32")
      };
      %1()
    },
  }
}
)");
}

TEST(FuseOps, NestedFunctionsAreFusedInside) {
  check_fuse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = fn (%y: Tensor[(4), float32]) -> Tensor[(4), float32] {
    exp(add(%y, 1f))
  };
  %0(%x)
}
)",
             R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = fn (%y: Tensor[(4), float32]) -> Tensor[(4), float32] {
    %1 = fn (%p0: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
      exp(add(%p0, 1f))
    };
    %1(%y)
  };
  %0(%x)
}
)");
}

// Scalar constants are inlined into their group; other constants are inputs (TVM's default,
// link_params off), as in TVM's test_fuse_take.
TEST(FuseOps, NonScalarConstantsBecomeParameters) {
  NDArray c(DType::Float32, {10, 20});
  for (int64_t i = 0; i < c.size(); ++i) c.data<float>()[i] = static_cast<float>(i);
  check_fuse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %0 = add(%x, meta[relay.Constant][0]);
  multiply(%0, 2f)
}
)",
             R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32]) -> Tensor[(10, 20), float32] {
  %1 = fn (%p0: Tensor[(10, 20), float32], %p1: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
    %0 = add(%p0, %p1);
    multiply(%0, 2f)
  };
  %1(%x, meta[relay.Constant][0])
}
)",
             256, {c});
}

TEST(FuseOps, AnInputUsedTwiceIsOneParameter) {
  check_fuse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 1), float32]) -> Tensor[(10, 2), float32] {
  %0 = (%x, %x);
  concatenate(%0, axis=1)
}
)",
             R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 1), float32]) -> Tensor[(10, 2), float32] {
  %1 = fn (%p0: Tensor[(10, 1), float32], Primitive=1) -> Tensor[(10, 2), float32] {
    %0 = (%p0, %p0);
    concatenate(%0, axis=1)
  };
  %1(%x)
}
)");
}

TEST(FuseOps, FusingAFusedModuleChangesNothing) {
  for (const char *text : {kConv2dFuse, kSplitElemwise, kConcatenate, kLets}) {
    Module once = fuse_ops(parse(text));
    Module twice = fuse_ops(once);
    EXPECT_TRUE(structural_equal(once, twice).equal) << print_module(twice).text;
  }
}

// ---------------------------------------------------------------------------------------------
// Sharing and deep programs
// ---------------------------------------------------------------------------------------------

TEST(FuseOps, SharedNodesStaySharedAfterFusion) {
  Module out = fuse_ops(parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w1: Tensor[(4, 8), float32], %w2: Tensor[(4, 8), float32])
    -> (Tensor[(2, 4), float32], Tensor[(2, 4), float32]) {
  %0 = exp(%x);
  %1 = nn.dense(%0, %w1);
  %2 = nn.dense(%0, %w2);
  (%1, %2)
}
)"));
  const auto *main = out.find_function("main")->as<Function>();
  const auto *tuple = main->body.as<Tuple>();
  ASSERT_NE(tuple, nullptr) << print_module(out).text;
  const auto *dense1 = tuple->fields[0].as<Call>();
  const auto *dense2 = tuple->fields[1].as<Call>();
  ASSERT_TRUE(dense1 && dense2);
  // Both dense groups read the one call of the exp group: the node, not a copy.
  EXPECT_TRUE(dense1->args[0].same_as(dense2->args[0]));
  EXPECT_EQ(primitive_functions(out).size(), 3u);
}

Module deep_exp_chain(int n) {
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Expr exp_op = Op::make("exp");
  Expr y = x;
  for (int i = 0; i < n; ++i) y = Call::make(exp_op, {y});
  Module m;
  m.add_function("main", Function::make({x}, y));
  return m;
}

TEST(FuseOps, DeepChainIsSplitByMaxDepthWithoutRecursion) {
  const int n = 100000;
  Module out = fuse_ops(deep_exp_chain(n));
  std::vector<const Function *> fns = primitive_functions(out);
  ASSERT_EQ(fns.size(), static_cast<size_t>((n + 255) / 256));
  int total = 0;
  for (const Function *f : fns) {
    int ops = count_op_calls(f->body);
    EXPECT_LE(ops, 256);
    total += ops;
  }
  EXPECT_EQ(total, n);
  EXPECT_NO_THROW(infer_types(out));
}

TEST(FuseOps, DeepLetChainFusesEachBoundValue) {
  const int n = 100000;
  Expr x = Var::make("x", TensorType::make({4}, DType::Float32));
  Expr exp_op = Op::make("exp");
  std::vector<Expr> vars{x};
  for (int i = 0; i < n; ++i) vars.push_back(Var::make("v" + std::to_string(i)));
  Expr body = vars.back();
  for (int i = n; i-- > 0;) body = Let::make(vars[i + 1], Call::make(exp_op, {vars[i]}), body);
  Module m;
  m.add_function("main", Function::make({x}, body));
  Module out = fuse_ops(m);
  EXPECT_EQ(primitive_functions(out).size(), static_cast<size_t>(n));
  EXPECT_NO_THROW(infer_types(out));
}

// ---------------------------------------------------------------------------------------------
// The post-dominator tree
// ---------------------------------------------------------------------------------------------

TEST(PostDominatorTree, DiamondSourceIsPostDominatedByTheJoin) {
  Module m = parse(kDiamond);
  infer_types(m);
  const Expr &fn = *m.find_function("main");
  IndexedForwardGraph graph = build_forward_graph(fn);
  PostDominatorTree tree = post_dominator_tree(graph);
  const auto *body = fn.as<Function>()->body.as<Call>();   // multiply(%1, %3)
  const Expr &source = body->args[0].as<Call>()->args[0];  // %0 = add(%x, 1f)
  int join = graph.find(fn.as<Function>()->body);
  int src = graph.find(source);
  ASSERT_GE(join, 0);
  ASSERT_GE(src, 0);
  EXPECT_EQ(tree.nodes[src].parent, join);
  EXPECT_EQ(tree.nodes[src].pattern, OpPattern::ElemWise);
  // The body's value leaves the function: it is extern and has no post-dominator.
  EXPECT_TRUE(graph.nodes[join].extern_ref);
  EXPECT_EQ(tree.nodes[join].parent, -1);
  // Producers come before consumers.
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto &e : graph.nodes[i].outputs) EXPECT_GT(e.node, static_cast<int>(i));
}

TEST(PostDominatorTree, BroadcastEdgeOfSameShapeIsElementwise) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 20), float32], %b: Tensor[(20), float32]) -> Tensor[(10, 20), float32] {
  add(%x, %b)
}
)");
  infer_types(m);
  const Expr &fn = *m.find_function("main");
  IndexedForwardGraph graph = build_forward_graph(fn);
  const auto *add = fn.as<Function>()->body.as<Call>();
  const auto &x_out = graph.nodes[graph.find(add->args[0])].outputs;
  const auto &b_out = graph.nodes[graph.find(add->args[1])].outputs;
  ASSERT_EQ(x_out.size(), 1u);
  ASSERT_EQ(b_out.size(), 1u);
  EXPECT_EQ(x_out[0].pattern, OpPattern::ElemWise);
  EXPECT_EQ(b_out[0].pattern, OpPattern::Broadcast);
}

}  // namespace
}  // namespace grove::relay
