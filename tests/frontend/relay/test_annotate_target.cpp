// Annotate target (passes/AnnotateTarget.h): before/expected pairs after TVM's
// tests/python/relay/test_pass_annotate_target.py (include_non_call_ops=True; smaller shapes, ops
// grove lacks replaced by ones it has), with test targets defined here. Annotated modules must
// type-check and compute exactly what the originals compute (the annotations are identities, so the
// tolerance is zero).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/byoc/Target.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/AnnotateTarget.h"
#include "tests/relay/PassTest.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay {
namespace {

using Targets = std::vector<const ExternalTarget *>;

// A target claiming `ops` unconditionally.
ExternalTarget op_target(const std::string &name, const std::vector<std::string> &ops) {
  ExternalTarget t;
  t.name = name;
  for (const std::string &op : ops) t.ops[op] = nullptr;
  return t;
}

// "test" claims add, subtract, nn.relu and concatenate, like TVM's tests' `target.test` ops.
const ExternalTarget kTest = op_target("test", {"add", "subtract", "nn.relu", "concatenate"});

// Runs the pass on a typed module (the predicates read argument types).
testing::Pass annotate_with(const Targets &targets) {
  return [targets](const Module &m) {
    infer_types(m);
    return annotate_target(m, targets);
  };
}

Module parse(const std::string &text) { return parse_module(text, "annotate_target_test.relay"); }

// The before/expected check; the annotated module must also type-check.
void check_annotate(const Targets &targets, const std::string &before, const std::string &expected) {
  EXPECT_TRUE(testing::check_pass(annotate_with(targets), before, expected));
  Module out = annotate_with(targets)(parse(before));
  EXPECT_NO_THROW(infer_types(out)) << print_module(out).text;
}

// Deterministic inputs for @main's tensor parameters: floats in [-1, 1), int32 in [-40, 40).
std::vector<Value> inputs_for(const Module &m, uint32_t seed) {
  std::vector<Value> args;
  for (const Expr &p : m.find_function("main")->as<Function>()->params) {
    const auto *tt = p.as<Var>()->type_annotation.as<TensorType>();
    NDArray a(tt->dtype, tt->shape);
    for (int64_t i = 0; i < a.size(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      const double u = static_cast<double>(seed >> 8) / static_cast<double>(1 << 24) * 2.0 - 1.0;
      if (tt->dtype == DType::Float32)
        a.data<float>()[i] = static_cast<float>(u);
      else if (tt->dtype == DType::Int32)
        a.data<int32_t>()[i] = static_cast<int32_t>(u * 40.0);
      else
        ADD_FAILURE() << "no test inputs for " << to_string(tt->dtype);
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

// The annotated module computes bit for bit what the original computes, on a few input sets.
void check_same_results(const Targets &targets, const std::string &before) {
  Module in = parse(before);
  infer_types(in);
  Module out = annotate_target(in, targets);
  infer_types(out);
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<Value> args = inputs_for(in, seed);
    EXPECT_TRUE(same_value(run_main(in, args), run_main(out, args))) << print_module(out).text;
  }
}

int count_annotations(const Module &m) {
  int n = 0;
  for (const auto &[name, fn] : m.functions())
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *c = e.as<Call>())
        if (const auto *op = c->op.as<Op>(); op && op->name.rfind("annotation.", 0) == 0) ++n;
    });
  return n;
}

// ---------------------------------------------------------------------------------------------
// Calls: one begin per argument, one end per consumer edge
// ---------------------------------------------------------------------------------------------

constexpr const char *kChain = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, %y);
  %1 = subtract(%0, %y);
  add(%0, %1)
}
)";

// TVM's test_extern_dnnl: every call supported; %0 feeds two consumers, so it is ended twice.
TEST(AnnotateTarget, SupportedChainGetsBeginsPerArgumentAndEndsPerConsumerEdge) {
  check_annotate({&kTest}, kChain, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_begin(%y, compiler="test");
  %2 = add(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="test");
  %4 = annotation.compiler_begin(%3, compiler="test");
  %5 = annotation.compiler_begin(%y, compiler="test");
  %6 = subtract(%4, %5);
  %7 = annotation.compiler_end(%2, compiler="test");
  %8 = annotation.compiler_begin(%7, compiler="test");
  %9 = annotation.compiler_end(%6, compiler="test");
  %10 = annotation.compiler_begin(%9, compiler="test");
  %11 = add(%8, %10);
  annotation.compiler_end(%11, compiler="test")
}
)");
  check_same_results({&kTest}, kChain);
}

constexpr const char *kMultipleEnds = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32]) {
  %0 = nn.relu(%x);
  %1 = abs(%0);
  %2 = abs(%0);
  multiply(%1, %2)
}
)";

// TVM's test_multiple_ends: the supported relu read by two unsupported calls gets two ends; the
// unsupported calls are annotated with "default".
TEST(AnnotateTarget, ValueReadByTwoConsumersIsEndedTwiceAndUnsupportedCallsAreDefault) {
  check_annotate({&kTest}, kMultipleEnds, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = abs(%3);
  %5 = annotation.compiler_end(%1, compiler="test");
  %6 = annotation.compiler_begin(%5, compiler="default");
  %7 = abs(%6);
  %8 = annotation.compiler_end(%4, compiler="default");
  %9 = annotation.compiler_begin(%8, compiler="default");
  %10 = annotation.compiler_end(%7, compiler="default");
  %11 = annotation.compiler_begin(%10, compiler="default");
  %12 = multiply(%9, %11);
  annotation.compiler_end(%12, compiler="default")
}
)");
  check_same_results({&kTest}, kMultipleEnds);
}

// A call reading the same value twice is two consumer edges: two ends, two begins.
TEST(AnnotateTarget, ArgumentUsedTwiceByOneCallIsEndedPerEdge) {
  check_annotate({&kTest}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  add(%0, %0)
}
)",
                 R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="test");
  %4 = annotation.compiler_end(%1, compiler="test");
  %5 = annotation.compiler_begin(%4, compiler="test");
  %6 = add(%3, %5);
  annotation.compiler_end(%6, compiler="test")
}
)");
}

constexpr const char *kUnsupportedMiddle = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, %y);
  %1 = exp(%0);
  subtract(%1, %y)
}
)";

TEST(AnnotateTarget, UnsupportedCallBetweenSupportedOnesIsADefaultRegion) {
  check_annotate({&kTest}, kUnsupportedMiddle, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_begin(%y, compiler="test");
  %2 = add(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="test");
  %4 = annotation.compiler_begin(%3, compiler="default");
  %5 = exp(%4);
  %6 = annotation.compiler_end(%5, compiler="default");
  %7 = annotation.compiler_begin(%6, compiler="test");
  %8 = annotation.compiler_begin(%y, compiler="test");
  %9 = subtract(%7, %8);
  annotation.compiler_end(%9, compiler="test")
}
)");
  check_same_results({&kTest}, kUnsupportedMiddle);
}

// ---------------------------------------------------------------------------------------------
// Several targets
// ---------------------------------------------------------------------------------------------

const ExternalTarget kA = op_target("A", {"add"});
const ExternalTarget kB = op_target("B", {"add", "nn.relu"});

constexpr const char *kReluAdd = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  add(%0, %y)
}
)";

TEST(AnnotateTarget, FirstTargetInTheListThatSupportsACallWins) {
  // add: A and B both support it, A comes first; relu: only B.
  check_annotate({&kA, &kB}, kReluAdd, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="B");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="B");
  %3 = annotation.compiler_begin(%2, compiler="A");
  %4 = annotation.compiler_begin(%y, compiler="A");
  %5 = add(%3, %4);
  annotation.compiler_end(%5, compiler="A")
}
)");
  // The other order gives B both.
  check_annotate({&kB, &kA}, kReluAdd, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="B");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="B");
  %3 = annotation.compiler_begin(%2, compiler="B");
  %4 = annotation.compiler_begin(%y, compiler="B");
  %5 = add(%3, %4);
  annotation.compiler_end(%5, compiler="B")
}
)");
  check_same_results({&kA, &kB}, kReluAdd);
}

TEST(AnnotateTarget, NoTargetsMakesEverythingDefault) {
  check_annotate({}, kReluAdd, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="default");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="default");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = annotation.compiler_begin(%y, compiler="default");
  %5 = add(%3, %4);
  annotation.compiler_end(%5, compiler="default")
}
)");
}

// ---------------------------------------------------------------------------------------------
// Predicates
// ---------------------------------------------------------------------------------------------

// Supports nn.relu on float32 only (TVM's test_type_propagation reads the argument's checked type).
ExternalTarget float_relu_target() {
  ExternalTarget t;
  t.name = "f32";
  t.ops["nn.relu"] = [](const Call &call) {
    const auto *tt = call.args[0]->checked_type.as<TensorType>();
    return tt && tt->dtype == DType::Float32;
  };
  return t;
}

// Supports clip when its lower bound is not negative (an attribute check).
ExternalTarget nonnegative_clip_target() {
  ExternalTarget t;
  t.name = "clip";
  t.ops["clip"] = [](const Call &call) { return attr_float(call.attrs, "a_min", 0.0) >= 0.0; };
  return t;
}

constexpr const char *kReluTypes = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %i: Tensor[(4), int32]) {
  (nn.relu(%x), nn.relu(%i))
}
)";

TEST(AnnotateTarget, PredicateOnArgumentTypeRejectsAnIntegerCall) {
  const ExternalTarget f32 = float_relu_target();
  // The tuple reads two regions of different targets, so it is itself "default".
  check_annotate({&f32}, kReluTypes, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %i: Tensor[(4), int32]) {
  %0 = annotation.compiler_begin(%x, compiler="f32");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="f32");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = annotation.compiler_begin(%i, compiler="default");
  %5 = nn.relu(%4);
  %6 = annotation.compiler_end(%5, compiler="default");
  %7 = annotation.compiler_begin(%6, compiler="default");
  %8 = (%3, %7);
  annotation.compiler_end(%8, compiler="default")
}
)");
  check_same_results({&f32}, kReluTypes);
}

TEST(AnnotateTarget, PredicateOnAttributeRejectsACall) {
  const ExternalTarget clip = nonnegative_clip_target();
  check_annotate({&clip}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = clip(%x, a_min=-1f, a_max=1f);
  clip(%0, a_min=0f, a_max=0.5f)
}
)",
                 R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="default");
  %1 = clip(%0, a_min=-1f, a_max=1f);
  %2 = annotation.compiler_end(%1, compiler="default");
  %3 = annotation.compiler_begin(%2, compiler="clip");
  %4 = clip(%3, a_min=0f, a_max=0.5f);
  annotation.compiler_end(%4, compiler="clip")
}
)");
}

// ---------------------------------------------------------------------------------------------
// Tuples and projections
// ---------------------------------------------------------------------------------------------

constexpr const char *kTuple = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%y);
  concatenate((%0, %1), axis=1)
}
)";

// TVM's test_tuple: a tuple whose fields all come from one target's calls takes that target.
TEST(AnnotateTarget, TupleOfOneTargetsValuesTakesThatTarget) {
  check_annotate({&kTest}, kTuple, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="test");
  %4 = annotation.compiler_begin(%y, compiler="test");
  %5 = nn.relu(%4);
  %6 = annotation.compiler_end(%5, compiler="test");
  %7 = annotation.compiler_begin(%6, compiler="test");
  %8 = (%3, %7);
  %9 = annotation.compiler_end(%8, compiler="test");
  %10 = annotation.compiler_begin(%9, compiler="test");
  %11 = concatenate(%10, axis=1);
  annotation.compiler_end(%11, compiler="test")
}
)");
  check_same_results({&kTest}, kTuple);
}

// A tuple with a field from an unsupported call, or a variable, is "default".
TEST(AnnotateTarget, TupleOfMixedTargetsIsDefault) {
  check_annotate({&kTest}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {
  %0 = nn.relu(%x);
  concatenate((%0, %y), axis=1)
}
)",
                 R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="test");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = annotation.compiler_begin(%y, compiler="default");
  %5 = (%3, %4);
  %6 = annotation.compiler_end(%5, compiler="default");
  %7 = annotation.compiler_begin(%6, compiler="test");
  %8 = concatenate(%7, axis=1);
  annotation.compiler_end(%8, compiler="test")
}
)");
}

constexpr const char *kEndsWithProjection = R"(#[version = "0.0.5"]
def @main(%a: Tensor[(1, 4), int32]) {
  %0 = clip(%a, a_min=0f, a_max=255f);
  %1 = clip(%0, a_min=0f, a_max=15f);
  %2 = clip(%0, a_min=16f, a_max=31f);
  %3 = (%2, %1);
  %3.1
}
)";

// TVM's test_ends_with_tuple (get_item=True): the tuple and the projection join the clips' target.
TEST(AnnotateTarget, ProjectionOfATargetsTupleTakesThatTarget) {
  const ExternalTarget clip = nonnegative_clip_target();
  check_annotate({&clip}, kEndsWithProjection, R"(#[version = "0.0.5"]
def @main(%a: Tensor[(1, 4), int32]) {
  %0 = annotation.compiler_begin(%a, compiler="clip");
  %1 = clip(%0, a_min=0f, a_max=255f);
  %2 = annotation.compiler_end(%1, compiler="clip");
  %3 = annotation.compiler_begin(%2, compiler="clip");
  %4 = clip(%3, a_min=0f, a_max=15f);
  %5 = annotation.compiler_end(%4, compiler="clip");
  %6 = annotation.compiler_begin(%5, compiler="clip");
  %7 = annotation.compiler_end(%1, compiler="clip");
  %8 = annotation.compiler_begin(%7, compiler="clip");
  %9 = clip(%8, a_min=16f, a_max=31f);
  %10 = annotation.compiler_end(%9, compiler="clip");
  %11 = annotation.compiler_begin(%10, compiler="clip");
  %12 = (%11, %6);
  %13 = annotation.compiler_end(%12, compiler="clip");
  %14 = annotation.compiler_begin(%13, compiler="clip");
  %15 = %14.1;
  annotation.compiler_end(%15, compiler="clip")
}
)");
  check_same_results({&clip}, kEndsWithProjection);
}

// TVM's test_empty_tuple and test_free_vars_zeros: nodes without operands get no annotations.
TEST(AnnotateTarget, EmptyTupleAndCallWithoutArgumentsAreLeftAlone) {
  const ExternalTarget zeros = op_target("z", {"zeros"});
  check_annotate({&zeros}, R"(#[version = "0.0.5"]
def @main() {
  ()
}
)",
                 R"(#[version = "0.0.5"]
def @main() {
  ()
}
)");
  check_annotate({&zeros}, R"(#[version = "0.0.5"]
def @main() {
  zeros(shape=[2], dtype="float32")
}
)",
                 R"(#[version = "0.0.5"]
def @main() {
  zeros(shape=[2], dtype="float32")
}
)");
  // Read by a call, it is begun but never ended (nothing of it lies inside a region).
  check_annotate({&zeros, &kTest}, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  add(%x, zeros(shape=[2], dtype="float32"))
}
)",
                 R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_begin(zeros(shape=[2], dtype="float32"), compiler="test");
  %2 = add(%0, %1);
  annotation.compiler_end(%2, compiler="test")
}
)");
}

// ---------------------------------------------------------------------------------------------
// if, let, references, match
// ---------------------------------------------------------------------------------------------

const ExternalTarget kIfTarget = op_target("t", {"equal", "tanh", "sigmoid", "erf", "less", "add"});

constexpr const char *kIfElse = R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32), float32], %e1: float32, %e2: float32) {
  %0 = equal(%e1, %e2);
  %1 = if (%0) {
    tanh(%data)
  } else {
    sigmoid(%data)
  };
  erf(%1)
}
)";

// TVM's test_if_else: the condition and both branches are ended; the `if` itself carries no
// annotation and its consumer begins at it.
TEST(AnnotateTarget, IfConditionAndBranchesAreEnded) {
  check_annotate({&kIfTarget}, kIfElse, R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32), float32], %e1: float32, %e2: float32) {
  %0 = annotation.compiler_begin(%e1, compiler="t");
  %1 = annotation.compiler_begin(%e2, compiler="t");
  %2 = equal(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="t");
  %4 = if (%3) {
    annotation.compiler_end(tanh(annotation.compiler_begin(%data, compiler="t")), compiler="t")
  } else {
    annotation.compiler_end(sigmoid(annotation.compiler_begin(%data, compiler="t")), compiler="t")
  };
  %5 = annotation.compiler_begin(%4, compiler="t");
  %6 = erf(%5);
  annotation.compiler_end(%6, compiler="t")
}
)");
  check_same_results({&kIfTarget}, kIfElse);
  // Equal scalars take the other branch.
  Module in = parse(kIfElse);
  infer_types(in);
  Module out = annotate_target(in, {&kIfTarget});
  infer_types(out);
  std::vector<Value> args = inputs_for(in, 7);
  args[2] = args[1];
  EXPECT_TRUE(same_value(run_main(in, args), run_main(out, args)));
}

// TVM's test_if_free_vars: a branch without operands (zeros) is not ended.
TEST(AnnotateTarget, IfBranchWithoutOperandsIsNotEnded) {
  check_annotate({&kIfTarget}, R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32), float32], %e1: float32, %e2: float32) {
  %0 = equal(%e1, %e2);
  %1 = if (%0) {
    zeros(shape=[1, 32], dtype="float32")
  } else {
    sigmoid(%data)
  };
  erf(%1)
}
)",
                 R"(#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32), float32], %e1: float32, %e2: float32) {
  %0 = annotation.compiler_begin(%e1, compiler="t");
  %1 = annotation.compiler_begin(%e2, compiler="t");
  %2 = equal(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="t");
  %4 = if (%3) {
    zeros(shape=[1, 32], dtype="float32")
  } else {
    annotation.compiler_end(sigmoid(annotation.compiler_begin(%data, compiler="t")), compiler="t")
  };
  %5 = annotation.compiler_begin(%4, compiler="t");
  %6 = erf(%5);
  annotation.compiler_end(%6, compiler="t")
}
)");
}

constexpr const char *kLets = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) {
  let %a = add(%x, %x);
  let %b = exp(%a);
  subtract(%b, %a)
}
)";

// A let-bound value is wrapped as begin(end(value)) in its own target; the body is ended; a use of
// the variable is begun like any variable.
TEST(AnnotateTarget, LetBoundValuesAreEndedAndBegunInTheirTarget) {
  check_annotate({&kTest}, kLets, R"(#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) {
  let %a = annotation.compiler_begin(annotation.compiler_end(add(annotation.compiler_begin(%x, compiler="test"), annotation.compiler_begin(%x, compiler="test")), compiler="test"), compiler="test");
  let %b = annotation.compiler_begin(annotation.compiler_end(exp(annotation.compiler_begin(%a, compiler="default")), compiler="default"), compiler="default");
  annotation.compiler_end(subtract(annotation.compiler_begin(%b, compiler="test"), annotation.compiler_begin(%a, compiler="test")), compiler="test")
}
)");
  check_same_results({&kTest}, kLets);
}

constexpr const char *kWhileLet = R"(#[version = "0.0.5"]
def @main(%var1: Tensor[(2), float32]) {
  let %while_loop = fn (%var2: int32, %var3: Tensor[(2), float32]) -> Tensor[(2), float32] {
    %0 = less(%var2, 10);
    %1 = add(%var2, 1);
    %2 = add(%var3, %var1);
    if (%0) {
      %while_loop(%1, %2)
    } else {
      %var3
    }
  };
  %while_loop(0, add(%var1, %var1))
}
)";

// TVM's test_while_let: a let-bound function literal is not wrapped, but its body is annotated; the
// call of the let-bound closure is a "default" call; the let body is ended.
TEST(AnnotateTarget, LetBoundLoopFunctionIsAnnotatedInsideOnly) {
  check_annotate({&kIfTarget}, kWhileLet, R"(#[version = "0.0.5"]
def @main(%var1: Tensor[(2), float32]) {
  let %while_loop = fn (%var2: int32, %var3: Tensor[(2), float32]) -> Tensor[(2), float32] {
    %0 = annotation.compiler_begin(%var2, compiler="t");
    %1 = annotation.compiler_begin(10, compiler="t");
    %2 = less(%0, %1);
    %3 = annotation.compiler_end(%2, compiler="t");
    %4 = annotation.compiler_begin(%var2, compiler="t");
    %5 = annotation.compiler_begin(1, compiler="t");
    %6 = add(%4, %5);
    %7 = annotation.compiler_end(%6, compiler="t");
    %8 = annotation.compiler_begin(%7, compiler="default");
    %9 = annotation.compiler_begin(%var3, compiler="t");
    %10 = annotation.compiler_begin(%var1, compiler="t");
    %11 = add(%9, %10);
    %12 = annotation.compiler_end(%11, compiler="t");
    %13 = annotation.compiler_begin(%12, compiler="default");
    if (%3) {
      annotation.compiler_end(%while_loop(%8, %13), compiler="default")
    } else {
      %var3
    }
  };
  %14 = annotation.compiler_begin(0, compiler="default");
  %15 = annotation.compiler_begin(%var1, compiler="t");
  %16 = annotation.compiler_begin(%var1, compiler="t");
  %17 = add(%15, %16);
  %18 = annotation.compiler_end(%17, compiler="t");
  %19 = annotation.compiler_begin(%18, compiler="default");
  annotation.compiler_end(%while_loop(%14, %19), compiler="default")
}
)");
  check_same_results({&kIfTarget}, kWhileLet);
}

// TVM's test_ref_create_read_write: reference nodes are annotated like one-operand calls, "default".
TEST(AnnotateTarget, ReferenceCreateReadAndWriteAreDefaultNodes) {
  check_annotate({&kTest}, R"(#[version = "0.0.5"]
def @main() {
  %0 = ref(1f);
  %1 = ref_read(%0);
  %2 = nn.relu(%1);
  ref_write(%0, %2)
}
)",
                 R"(#[version = "0.0.5"]
def @main() {
  %0 = ref(annotation.compiler_begin(1f, compiler="default"));
  %1 = annotation.compiler_end(%0, compiler="default");
  %2 = annotation.compiler_begin(%1, compiler="default");
  %3 = ref_read(%2);
  %4 = annotation.compiler_end(%3, compiler="default");
  %5 = annotation.compiler_begin(%4, compiler="test");
  %6 = nn.relu(%5);
  %7 = annotation.compiler_end(%6, compiler="test");
  %8 = annotation.compiler_begin(%7, compiler="default");
  %9 = annotation.compiler_end(%0, compiler="default");
  %10 = annotation.compiler_begin(%9, compiler="default");
  %11 = ref_write(%10, %8);
  annotation.compiler_end(%11, compiler="default")
}
)");
}

// grove, beyond TVM (whose pass leaves match alone): a match's scrutinee and clause bodies are
// ended like an if's condition and branches, so no region is left without an end. Constructor calls
// are "default" calls.
TEST(AnnotateTarget, MatchScrutineeAndClauseBodiesAreEnded) {
  check_annotate({&kTest}, R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%x: Tensor[(2), float32]) {
  %0 = Cons(add(%x, %x), Nil);
  match (%0) {
    Cons(%h, _) => subtract(%h, %x),
    Nil => %x,
  }
}
)",
                 R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%x: Tensor[(2), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_begin(%x, compiler="test");
  %2 = add(%0, %1);
  %3 = annotation.compiler_end(%2, compiler="test");
  %4 = annotation.compiler_begin(%3, compiler="default");
  %5 = annotation.compiler_begin(Nil, compiler="default");
  %6 = Cons(%4, %5);
  %7 = annotation.compiler_end(%6, compiler="default");
  match (%7) {
    Cons(%h, _) => annotation.compiler_end(subtract(annotation.compiler_begin(%h, compiler="test"), annotation.compiler_begin(%x, compiler="test")), compiler="test"),
    Nil => %x,
  }
}
)");
}

// ---------------------------------------------------------------------------------------------
// Functions: composites, whole functions, other globals
// ---------------------------------------------------------------------------------------------

constexpr const char *kComposite = R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = fn (%in_1: Tensor[(10, 10), float32], %in_2: Tensor[(10, 10), float32], Composite="test.add_relu") {
    %1 = add(%in_1, %in_2);
    nn.relu(%1)
  };
  %2 = %0(%a, %b);
  %3 = fn (%in_3: Tensor[(10, 10), float32], Composite="other.neg_add") {
    add(negative(%in_3), %in_3)
  };
  %3(%2)
}
)";

// TVM's test_composite_function: a composite's call is claimed by the target its name starts with
// and never annotated inside; a composite of a target not in the list is a "default" call.
TEST(AnnotateTarget, CompositeCallIsClaimedByItsTargetAndNotAnnotatedInside) {
  check_annotate({&kTest}, kComposite, R"(#[version = "0.0.5"]
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = fn (%in_1: Tensor[(10, 10), float32], %in_2: Tensor[(10, 10), float32], Composite="test.add_relu") {
    %1 = add(%in_1, %in_2);
    nn.relu(%1)
  };
  %2 = annotation.compiler_begin(%a, compiler="test");
  %3 = annotation.compiler_begin(%b, compiler="test");
  %4 = %0(%2, %3);
  %5 = annotation.compiler_end(%4, compiler="test");
  %6 = annotation.compiler_begin(%5, compiler="default");
  %7 = fn (%in_3: Tensor[(10, 10), float32], Composite="other.neg_add") {
    add(negative(%in_3), %in_3)
  };
  %8 = %7(%6);
  annotation.compiler_end(%8, compiler="default")
}
)");
  check_same_results({&kTest}, kComposite);
}

// Claims the global @f whole (as grove's recursive compiler claims recursive tree functions).
ExternalTarget claiming_target() {
  ExternalTarget t;
  t.name = "rec";
  t.claims_function = [](const Module &, const std::string &name) { return name == "f"; };
  return t;
}

constexpr const char *kGlobals = R"(#[version = "0.0.5"]
def @f(%x: Tensor[(3), float32]) {
  add(%x, %x)
}
def @g(%x: Tensor[(3), float32]) {
  subtract(%x, 1f)
}
def @k(%x: Tensor[(3), float32], Primitive=1) {
  add(%x, %x)
}
def @main(%y: Tensor[(3), float32]) {
  %0 = @f(%y);
  %1 = @g(%0);
  add(%1, @k(%y))
}
)";

// A claimed global gets Compiler="rec" and no annotations; its call stays a "default" call. Every
// other global is annotated, except Primitive (and Compiler) ones.
TEST(AnnotateTarget, ClaimedFunctionGetsCompilerAttributeAndOtherGlobalsAreAnnotated) {
  const ExternalTarget rec = claiming_target();
  check_annotate({&rec, &kTest}, kGlobals, R"(#[version = "0.0.5"]
def @f(%x: Tensor[(3), float32], Compiler="rec") {
  add(%x, %x)
}
def @g(%x: Tensor[(3), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="test");
  %1 = annotation.compiler_begin(1f, compiler="test");
  %2 = subtract(%0, %1);
  annotation.compiler_end(%2, compiler="test")
}
def @k(%x: Tensor[(3), float32], Primitive=1) {
  add(%x, %x)
}
def @main(%y: Tensor[(3), float32]) {
  %0 = annotation.compiler_begin(%y, compiler="default");
  %1 = @f(%0);
  %2 = annotation.compiler_end(%1, compiler="default");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = @g(%3);
  %5 = annotation.compiler_end(%4, compiler="default");
  %6 = annotation.compiler_begin(%5, compiler="test");
  %7 = annotation.compiler_begin(%y, compiler="default");
  %8 = @k(%7);
  %9 = annotation.compiler_end(%8, compiler="default");
  %10 = annotation.compiler_begin(%9, compiler="test");
  %11 = add(%6, %10);
  annotation.compiler_end(%11, compiler="test")
}
)");
  check_same_results({&rec, &kTest}, kGlobals);
}

// A function that already has a Compiler attribute (a partitioned region) is left alone, even when
// a target would claim it.
TEST(AnnotateTarget, FunctionWithCompilerAttributeIsSkipped) {
  const ExternalTarget rec = claiming_target();
  const char *text = R"(#[version = "0.0.5"]
def @f(%x: Tensor[(3), float32], Compiler="dnnl") {
  add(%x, %x)
}
)";
  check_annotate({&rec, &kTest}, text, text);
}

// ---------------------------------------------------------------------------------------------
// Running again on annotated code (TVM's test_double_target, test_different_targets,
// test_multiple_runs)
// ---------------------------------------------------------------------------------------------

::testing::AssertionResult same_module(const Module &got, const Module &want) {
  EqualResult eq = structural_equal(got, want);
  if (eq.equal && testing::compound_nodes(got) == testing::compound_nodes(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got:\n"
                                       << print_module(got).text << "\nwant:\n"
                                       << print_module(want).text << "\nfirst difference at " << eq.path;
}

TEST(AnnotateTarget, RunningTwiceWithTheSameTargetChangesNothing) {
  const ExternalTarget a = op_target("A", {"nn.relu"});
  Module once = annotate_with({&a})(parse(kMultipleEnds));
  Module twice = annotate_with({&a})(once);
  EXPECT_TRUE(same_module(twice, once));
}

TEST(AnnotateTarget, RunningTargetsOneAfterTheOtherEqualsRunningThemTogether) {
  const ExternalTarget a = op_target("A", {"nn.relu"});
  const ExternalTarget b = op_target("B", {"add"});
  // test_different_targets
  const char *relu_add = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32]) {
  %0 = nn.relu(%x);
  add(%0, %0)
}
)";
  EXPECT_TRUE(same_module(annotate_with({&b})(annotate_with({&a})(parse(relu_add))),
                          annotate_with({&a, &b})(parse(relu_add))));
  // test_multiple_runs
  const char *runs = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(10, 5), float32]) {
  %0 = nn.relu(%x);
  %1 = abs(%0);
  %2 = nn.relu(%0);
  add(%1, %2)
}
)";
  EXPECT_TRUE(same_module(annotate_with({&b})(annotate_with({&a})(parse(runs))),
                          annotate_with({&a, &b})(parse(runs))));
}

// ---------------------------------------------------------------------------------------------
// Deep programs
// ---------------------------------------------------------------------------------------------

// A chain of 100,000 lets is annotated without recursion on the C stack, and still computes the
// same value.
TEST(AnnotateTarget, HundredThousandLetChain) {
  constexpr int kLength = 100000;
  std::vector<Expr> vars;
  for (int i = 0; i <= kLength; ++i) vars.push_back(testing::numbered_var("x", i, testing::f32_type()));
  Expr body = vars[kLength];
  for (int i = kLength; i >= 1; --i)
    body = Let::make(vars[i], testing::call("add", {vars[i - 1], testing::f32(1.0)}), body);
  Module in = testing::main_module({vars[0]}, body);
  infer_types(in);
  Module out = annotate_target(in, {&kTest});
  Expr out_body = testing::main_body(out);
  EXPECT_EQ(testing::let_chain_length(out_body), static_cast<size_t>(kLength));
  // Each value is begin(end(add(begin(x), begin(1f)))): 4 annotations per let.
  EXPECT_EQ(count_annotations(out), 4 * kLength);
  const auto *first = out_body.as<Let>()->value.as<Call>();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->op.as<Op>()->name, "annotation.compiler_begin");
  // What annotated lets compute is checked on small modules above; here, that nothing recursed.
}

// Graph form: a 100,000-deep nest of calls (no lets) is annotated without recursion either.
TEST(AnnotateTarget, HundredThousandDeepCallNest) {
  constexpr int kDepth = 100000;
  Expr x = Var::make("x", testing::f32_type());
  Expr e = x;
  for (int i = 0; i < kDepth; ++i) e = testing::call("add", {e, testing::f32(1.0)});
  Module in = testing::main_module({x}, e);
  Module out = annotate_target(in, {&kTest});
  // Each add: a begin per argument and one end (its consumer's, or the function body's).
  EXPECT_EQ(count_annotations(out), 3 * kDepth);
  const auto *root = testing::main_body(out).as<Call>();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->op.as<Op>()->name, "annotation.compiler_end");
}

}  // namespace
}  // namespace grove::relay
