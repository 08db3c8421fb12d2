// Folds over sequences compiled by grove's recursive compiler (backends/relay/recursive/SequenceFunctions.h,
// SequenceToDsl.h): lstm.relay's @lstm on the VM as one batched run of a `structure sequence` model
// against the reference interpreter (1e-5: grove's kernels sum in another order), steps of several
// rows as side-by-side sequences, the calls the VM keeps (a nonzero initial state, an empty list,
// a state of other rows), the compile cache and its room for rows, the translation, and the functions
// that do not qualify, with their reasons.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/relay/recursive/RecursiveFunctions.h"
#include "backends/relay/recursive/SequenceFunctions.h"
#include "backends/relay/vm/Bytecode.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "frontend/relay/Interpreter.h"
#include "support/Error.h"
#include "tests/UserError.h"
#include "tests/relay/ModelFixtures.h"
#include "tests/relay/TranslationTestUtil.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;
using testing::load_model;
using testing::LoadedModel;
using testing::main_args;

VirtualMachine make_vm(const Module &m) {
  vm::Executable exe = vm::compile(m);
  auto kernels = make_interpreter_kernel_compiler(exe.module);
  return VirtualMachine(std::move(exe), std::move(kernels));
}

void expect_near(const Value &actual, const Value &expected, float tol) {
  const NDArray &x = tensor_of(actual);
  const NDArray &y = tensor_of(expected);
  ASSERT_EQ(x.shape(), y.shape());
  float worst = 0;
  for (int64_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(x.data<float>()[i] - y.data<float>()[i]));
  EXPECT_LE(worst, tol);
}

NDArray random_array(Shape shape, std::mt19937 &rng, float scale = 1.0f) {
  NDArray a(DType::Float32, std::move(shape));
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

Value steps_value(const Module &m, int64_t count, const Shape &step, std::mt19937 &rng) {
  std::vector<Value> steps;
  for (int64_t t = 0; t < count; ++t) steps.push_back(tensor_value(random_array(step, rng)));
  return testing::list_value(m, steps);
}

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// lstm.relay with its steps and state typed `rows` ([rows, ?] instead of [1, ?]).
Module lstm_with_rows(const std::string &rows) {
  std::string text = read_text(testing::kModels + "lstm.relay");
  for (size_t at; (at = text.find("(1, ?)")) != std::string::npos;) text.replace(at, 6, "(" + rows + ", ?)");
  Module m = parse_module(text, "lstm_rows.relay");
  infer_types(m);
  return m;
}

// @main's arguments for lstm.relay-like modules: the list, h0, c0, then the fixture's weights.
std::vector<Value> lstm_args(const LoadedModel &l, Value xs, NDArray h0, NDArray c0) {
  return main_args(
      l, {{"xs", std::move(xs)}, {"h0", tensor_value(std::move(h0))}, {"c0", tensor_value(std::move(c0))}});
}

TEST(RelaySequenceFunctions, LstmIsOneBatchedRunEqualToTheInterpreter) {
  auto l = load_model("lstm");
  const int64_t h = l.fixture.at("h0").shape()[1];
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_lstm: @lstm (grove recursive compiler; a fold over a sequence, "
                              "else @grove_lstm's body)"));
  VirtualMachine machine = make_vm(l.module);
  std::vector<Value> args = lstm_args(l, testing::lstm_sequence(l), NDArray(DType::Float32, {1, h}),
                                      NDArray(DType::Float32, {1, h}));
  Value want = run_main(l.module, args);
  expect_near(machine.run_main(args), want, 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().recursive_compiles, 1u);
  EXPECT_EQ(machine.stats().recursive_fallbacks, 0u);
  // Again, and with other steps of the same count: the compiled function (and its table) is reused.
  expect_near(machine.run_main(args), want, 1e-5f);
  std::mt19937 rng(7);
  const Shape step{1, l.fixture.at("xs").shape()[2]};
  args[0] = steps_value(l.module, 6, step, rng);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 3u);
  EXPECT_EQ(machine.stats().recursive_compiles, 1u);
  // A longer list outgrows the table's rows: compiled again, with room to spare; a shorter one fits.
  args[0] = steps_value(l.module, 9, step, rng);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_compiles, 2u);
  args[0] = steps_value(l.module, 2, step, rng);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  args[0] = steps_value(l.module, 12, step, rng);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_compiles, 2u);
  EXPECT_EQ(machine.stats().recursive_calls, 6u);
}

// lstm.relay with @main mapping a sequence encoder with a classifier head over a List of sequences.
Module lstm_mapped_with_head() {
  std::string text = read_text(testing::kModels + "lstm.relay");
  text = text.substr(0, text.find("def @main")) +
         R"(def @map(%f: fn (List[Tensor[(1, ?), float32]]) -> Tensor[(1, ?), float32],
          %xs: List[List[Tensor[(1, ?), float32]]]) -> List[Tensor[(1, ?), float32]] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}

def @main(%seqs: List[List[Tensor[(1, ?), float32]]], %h0: Tensor[(1, ?), float32], %c0: Tensor[(1, ?), float32],
          %w_ih: Tensor[(?, ?), float32], %w_hh: Tensor[(?, ?), float32], %b_ih: Tensor[(?), float32],
          %b_hh: Tensor[(?), float32], %Wc: Tensor[(?, ?), float32]) -> List[Tensor[(1, ?), float32]] {
  %0 = fn (%s: List[Tensor[(1, ?), float32]]) -> Tensor[(1, ?), float32] {
    %1 = @lstm(%s, (%h0, %c0), %w_ih, %w_hh, %b_ih, %b_hh);
    nn.softmax(nn.dense(%1.0, %Wc))
  };
  @map(%0, %seqs)
})";
  Module m = parse_module(text, "lstm_mapped.relay");
  infer_types(m);
  return m;
}

// @map of the fold over sequences of different lengths is one batched run of every sequence (grove's
// sequence model takes them as they are), and the classifier runs once over the stacked states; a
// nonzero initial state declines the batch and runs @map in the VM, with the interpreter's result.
TEST(RelaySequenceFunctions, MappedFoldWithAHeadIsOneBatchedRun) {
  auto base = load_model("lstm");
  LoadedModel l{lstm_mapped_with_head(), base.fixture};
  const int64_t h = l.fixture.at("h0").shape()[1], d = l.fixture.at("xs").shape()[2];
  std::mt19937 rng(11);
  std::vector<Value> seqs;
  for (int64_t len : {3, 1, 7, 3, 5}) seqs.push_back(steps_value(l.module, len, {1, d}, rng));
  Value list = testing::list_value(l.module, seqs);
  std::vector<Value> args = main_args(l, {{"seqs", list},
                                          {"h0", tensor_value(NDArray(DType::Float32, {1, h}))},
                                          {"c0", tensor_value(NDArray(DType::Float32, {1, h}))},
                                          {"Wc", tensor_value(random_array({4, h}, rng))}});
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(
      dump,
      HasSubstr(
          "ext0: @grove_map_lstm: @lstm over a List (grove recursive compiler; a fold over a sequence, else "
          "@grove_map_lstm's body)"));
  EXPECT_THAT(dump, HasSubstr("StackList $"));
  VirtualMachine machine = make_vm(l.module);
  Value got = machine.run_main(args);
  Value want = run_main(l.module, args);
  const auto *g = got->as<ADTValue>();
  const auto *w = want->as<ADTValue>();
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(g->fields.size(), 2u);
    expect_near(g->fields[0], w->fields[0], 1e-5f);
    g = g->fields[1]->as<ADTValue>();
    w = w->fields[1]->as<ADTValue>();
  }
  EXPECT_TRUE(g->fields.empty());
  EXPECT_EQ(machine.stats().recursive_calls, 1u) << "every sequence in one run";
  EXPECT_EQ(machine.stats().recursive_fallbacks, 0u);
  // The fixture's own initial state is not zero: @map runs each fold in the VM.
  std::vector<Value> nonzero =
      main_args(l, {{"seqs", list}, {"Wc", tensor_value(random_array({4, h}, rng))}});
  VirtualMachine again = make_vm(l.module);
  Value got2 = again.run_main(nonzero);
  Value want2 = run_main(l.module, nonzero);
  g = got2->as<ADTValue>();
  w = want2->as<ADTValue>();
  for (size_t i = 0; i < seqs.size(); ++i) {
    expect_near(g->fields[0], w->fields[0], 0.0f);
    g = g->fields[1]->as<ADTValue>();
    w = w->fields[1]->as<ADTValue>();
  }
  EXPECT_GE(again.stats().recursive_fallbacks, 1u);
  EXPECT_EQ(again.stats().recursive_calls, 0u);
}

// The fixture's own initial state is not zero: the VM runs the fold itself, with the interpreter's
// result (bit for bit: the same kernels); so does an empty list.
TEST(RelaySequenceFunctions, NonzeroInitialStateAndEmptyListRunInTheVM) {
  auto l = load_model("lstm");
  VirtualMachine machine = make_vm(l.module);
  std::vector<Value> args = main_args(l, {{"xs", testing::lstm_sequence(l)}});
  expect_near(machine.run_main(args), run_main(l.module, args), 0.0f);
  args[0] = testing::list_value(l.module, {});
  expect_near(machine.run_main(args), run_main(l.module, args), 0.0f);
  EXPECT_EQ(machine.stats().recursive_fallbacks, 2u);
  EXPECT_EQ(machine.stats().recursive_calls, 0u);
  EXPECT_EQ(machine.stats().recursive_compiles, 0u);
}

// Steps [R, D] are R sequences side by side, one batched run; the result is [R, H].
TEST(RelaySequenceFunctions, RowsOfAStepAreSequences) {
  auto l = load_model("lstm");
  const int64_t h = l.fixture.at("h0").shape()[1], d = l.fixture.at("xs").shape()[2];
  std::mt19937 rng(11);
  for (const char *rows : {"3", "?"}) {
    LoadedModel variant{lstm_with_rows(rows), l.fixture};
    std::vector<Value> args = lstm_args(variant, steps_value(variant.module, 5, {3, d}, rng),
                                        NDArray(DType::Float32, {3, h}), NDArray(DType::Float32, {3, h}));
    VirtualMachine machine = make_vm(variant.module);
    Value got = machine.run_main(args);
    EXPECT_EQ(tensor_of(got).shape(), (Shape{3, h}));
    expect_near(got, run_main(variant.module, args), 1e-5f);
    EXPECT_EQ(machine.stats().recursive_calls, 1u) << rows;
  }
}

// A state of one row against steps of three (typed `?`, broadcast by add) is not R sequences: the VM
// runs it, as the interpreter does.
TEST(RelaySequenceFunctions, StateOfOtherRowsRunsInTheVM) {
  auto l = load_model("lstm");
  const int64_t h = l.fixture.at("h0").shape()[1], d = l.fixture.at("xs").shape()[2];
  LoadedModel variant{lstm_with_rows("?"), l.fixture};
  std::mt19937 rng(5);
  std::vector<Value> args = lstm_args(variant, steps_value(variant.module, 4, {3, d}, rng),
                                      NDArray(DType::Float32, {1, h}), NDArray(DType::Float32, {1, h}));
  VirtualMachine machine = make_vm(variant.module);
  expect_near(machine.run_main(args), run_main(variant.module, args), 0.0f);
  EXPECT_EQ(machine.stats().recursive_fallbacks, 1u);
}

// The model built from @lstm (tests/golden/relay_lstm.model.test has it line by line) prints as text
// that reads back as the same ILIR.
TEST(RelaySequenceFunctions, TranslatesToASequenceModel) {
  auto l = load_model("lstm");
  std::vector<NDArray> weights;
  for (const char *w : {"w_ih", "w_hh", "b_ih", "b_hh"}) weights.push_back(l.fixture.at(w));
  RecursiveForm form = recursive_form_or_throw(l.module, "lstm");
  testing::LoweredTwice ilir =
      testing::lower_twice(l.module, "lstm", sequence_function_model(l.module, "lstm", form, weights, 8));
  EXPECT_THAT(ilir.text, HasSubstr("param g_x [g_rows, 8]\n"));
  EXPECT_EQ(ilir.from_text, ilir.from_tree) << ilir.text;
  EXPECT_THAT(
      explain_recursive_functions(l.module),
      HasSubstr("@lstm: compiled by grove's recursive compiler as a sequence model (a fold over its list "
                "parameter %xs, state %state, 4 weights passed through"));
}

// A weight of the wrong shape or dtype is a user error naming the parameter.
TEST(RelaySequenceFunctions, BadWeightsAreUserErrors) {
  auto l = load_model("lstm");
  std::vector<Value> weights;
  for (const char *w : {"w_ih", "w_hh", "b_ih", "b_hh"}) weights.push_back(tensor_value(l.fixture.at(w)));
  weights[2] = tensor_value(NDArray(DType::Float32, {4, 8}));
  EXPECT_THAT(user_error_of([&] { CompiledSequenceFunction::compile(l.module, "lstm", weights, 8, 16); }),
              HasSubstr("@lstm's parameter %b_ih has type Tensor[(?), float32]"));
  weights.pop_back();
  EXPECT_THROW(CompiledSequenceFunction::compile(l.module, "lstm", weights, 8, 16), UserError);
}

constexpr char kList[] = R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
)";

std::string explain(const std::string &defs) {
  Module m = parse_module(std::string(kList) + defs, "t.relay");
  infer_types(m);
  return explain_recursive_functions(m);
}

TEST(RelaySequenceFunctions, ExplainsWhyFoldsDoNotQualify) {
  const std::string head =
      "def @f(%xs: List[Tensor[(1, 4), float32]], %s: Tensor[(1, 4), float32], %w: "
      "Tensor[(4, 4), float32]) -> Tensor[(1, 4), float32] {\n  match (%xs) {\n";
  // A plain fold qualifies.
  EXPECT_THAT(explain(head + "Cons(%x, %r) => @f(%r, tanh(add(nn.dense(%x, %w), %s)), %w), Nil => %s, } }"),
              HasSubstr("@f: compiled by grove's recursive compiler as a sequence model"));
  // The result of the recursive call is used: not a tail call.
  EXPECT_THAT(explain(head + "Cons(%x, %r) => add(@f(%r, %s, %w), %x), Nil => %s, } }"),
              HasSubstr("takes the recursive call's result; the step must end with the call itself"));
  // The weight changes on the way.
  EXPECT_THAT(
      explain("def @f(%xs: List[Tensor[(4), float32]], %s: Tensor[(4), float32], %b: Tensor[(4), float32]) "
              "-> Tensor[(4), float32] {\n  match (%xs) {\n"
              "Cons(%x, %r) => @f(%r, add(%x, %b), multiply(%b, 2f)), Nil => %s, } }"),
      HasSubstr("the recursive call passes a changed argument for %b"));
  // Nil returns something computed.
  EXPECT_THAT(explain(head + "Cons(%x, %r) => @f(%r, %x, %w), Nil => tanh(%s), } }"),
              HasSubstr("its Nil clause does not return one of its parameters (the state) as it is"));
  // The list is used other than as the recursive call's.
  EXPECT_THAT(
      explain(head + "Cons(%x, %r) => @f(%xs, %x, %w), Nil => %s, } }"),
      HasSubstr("the Cons clause uses the whole list %xs; only its rest %r may go to the recursive call"));
  EXPECT_THAT(explain(head + "Cons(%x, %r) => @f(Cons(%x, %r), %x, %w), Nil => %s, } }"),
              HasSubstr("a clause builds an ADT value (Cons)"));
  // Steps of several rows with a reshape, which would mix the rows.
  EXPECT_THAT(
      explain("def @f(%xs: List[Tensor[(2, 4), float32]], %s: Tensor[(2, 4), float32]) -> "
              "Tensor[(2, 4), float32] {\n  match (%xs) {\n"
              "Cons(%x, %r) => @f(%r, reshape(reshape(%x, newshape=[-1]), newshape=[2, 4])), Nil => %s, } }"),
      HasSubstr("a step of several rows (sequences) uses reshape"));
  // A list of token ids, not of float32 vectors.
  EXPECT_THAT(explain(R"(def @f(%xs: List[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%xs) { Cons(_, %r) => @f(%r, %w), Nil => %w, } })"),
              HasSubstr("its list holds int32, not float32 tensors [D] or [R, D]"));
}

}  // namespace
}  // namespace grove::relay
