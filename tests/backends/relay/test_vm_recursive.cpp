// The VM calling grove's compiled recursive functions (the claimed calls, InvokeExternal:
// backends/relay/vm/VMCompiler.h): treelstm.relay's @main as one batched call of the compiled @treelstm
// against the reference interpreter (1e-5: grove's kernels sum in another order), the bytecode, the VM's
// counters, the compile cache, and the programs that fall back (weights computed inside the map's closure, a
// function that is not a map).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/relay/halide/HalideKernels.h"
#include "backends/relay/vm/Bytecode.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "frontend/relay/Interpreter.h"
#include "tests/relay/ModelFixtures.h"

namespace grove::relay {
namespace {

using ::testing::HasSubstr;
using testing::load_model;
using testing::LoadedModel;
using testing::main_args;
using ::testing::Not;

VirtualMachine make_vm(const Module &m, const vm::CompileOptions &options = {}) {
  vm::Executable exe = vm::compile(m, options);
  auto kernels = make_interpreter_kernel_compiler(exe.module);
  return VirtualMachine(std::move(exe), std::move(kernels));
}

// Equal values, tensors within `tol`; lists walked iteratively. Adds a failure naming where not.
void expect_near(const Value &actual, const Value &expected, float tol) {
  std::vector<std::pair<Value, Value>> todo{{actual, expected}};
  while (!todo.empty()) {
    auto [a, e] = todo.back();
    todo.pop_back();
    ASSERT_EQ(a->kind, e->kind) << value_to_string(a) << " vs " << value_to_string(e);
    if (a->kind == ValueKind::Tensor) {
      const NDArray &x = tensor_of(a);
      const NDArray &y = tensor_of(e);
      ASSERT_EQ(x.shape(), y.shape());
      for (int64_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x.data<float>()[i], y.data<float>()[i], tol) << i;
      continue;
    }
    const std::vector<Value> *xs = nullptr, *ys = nullptr;
    if (a->kind == ValueKind::Tuple) {
      xs = &a->as<TupleValue>()->fields;
      ys = &e->as<TupleValue>()->fields;
    } else {
      ASSERT_EQ(a->kind, ValueKind::ADT);
      ASSERT_EQ(a->as<ADTValue>()->tag, e->as<ADTValue>()->tag);
      xs = &a->as<ADTValue>()->fields;
      ys = &e->as<ADTValue>()->fields;
    }
    ASSERT_EQ(xs->size(), ys->size());
    for (size_t i = 0; i < xs->size(); ++i) todo.emplace_back((*xs)[i], (*ys)[i]);
  }
}

size_t list_length(Value list) {
  size_t n = 0;
  for (; !list->as<ADTValue>()->fields.empty(); list = list->as<ADTValue>()->fields[1]) ++n;
  return n;
}

// treelstm.relay with its @main replaced by `main` (the types and the other globals as written).
LoadedModel treelstm_with_main(const std::string &main) {
  std::ifstream in(testing::kModels + "treelstm.relay");
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  source = source.substr(0, source.find("def @main")) + main;
  LoadedModel l = load_model("treelstm");
  l.module = parse_module(source, "treelstm_variant.relay");
  infer_types(l.module);
  return l;
}

constexpr char kWeights[] =
    "%emb: Tensor[(?, ?), float32], %W_iou: Tensor[(?, ?), float32], %U_iou: Tensor[(?, ?), float32], "
    "%b_iou: Tensor[(?), float32], %U_f: Tensor[(?, ?), float32], %b_f: Tensor[(?), float32]";

TEST(RelayVMRecursive, TreeLstmMainIsOneBatchedCallEqualToTheInterpreter) {
  auto l = load_model("treelstm");
  size_t count = 0;
  std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l, &count)}});
  ASSERT_EQ(count, 6u);
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("InvokeExternal $"));
  EXPECT_THAT(dump, HasSubstr("<- ext0($"));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_map_treelstm: @treelstm over a List (grove recursive compiler)"));
  VirtualMachine machine = make_vm(l.module);
  Value got = machine.run_main(args);
  Value want = run_main(l.module, args);
  EXPECT_EQ(list_length(got), count);
  expect_near(got, want, 1e-5f);
  // The trees are one call; the remainder (`.0`) is a projection: no kernel ran.
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().recursive_compiles, 1u);
  EXPECT_EQ(machine.stats().kernel_calls, 0u);
  // Same weights again: the compiled function is reused.
  expect_near(machine.run_main(args), want, 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 2u);
  EXPECT_EQ(machine.stats().recursive_compiles, 1u);
}

// New weights (other values, same shapes) compile again and give the new result.
TEST(RelayVMRecursive, ChangedWeightsAreCompiledAgain) {
  auto l = load_model("treelstm");
  Value trees = testing::treelstm_trees(l);
  VirtualMachine machine = make_vm(l.module);
  machine.run_main(main_args(l, {{"trees", trees}}));
  const NDArray &old = l.fixture.at("emb");
  NDArray emb(DType::Float32, old.shape());
  for (int64_t i = 0; i < emb.size(); ++i) emb.data<float>()[i] = -0.5f * old.data<float>()[i];
  std::vector<Value> args = main_args(l, {{"trees", trees}, {"emb", tensor_value(emb)}});
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_compiles, 2u);
}

// With recursive_functions off, the same program runs node by node, bit for bit the interpreter's.
TEST(RelayVMRecursive, TurnedOffRunsNodeByNode) {
  auto l = load_model("treelstm");
  std::string dump = vm::to_string(vm::compile(l.module, {.recursive_functions = false}));
  EXPECT_THAT(dump, Not(HasSubstr("InvokeExternal")));
  VirtualMachine machine = make_vm(l.module, {.recursive_functions = false});
  std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l)}});
  expect_near(machine.run_main(args), run_main(l.module, args), 0.0f);
  EXPECT_EQ(machine.stats().recursive_calls, 0u);
  EXPECT_GT(machine.stats().kernel_calls, 0u);
}

// A classifier's weight [5, H] with values that differ per element.
NDArray classifier_weight(const LoadedModel &l, int64_t classes = 5) {
  const int64_t hidden = l.fixture.at("b_f").shape()[0];
  NDArray wc(DType::Float32, {classes, hidden});
  for (int64_t i = 0; i < wc.size(); ++i) wc.data<float>()[i] = 0.05f * float((i * 7) % 11) - 0.25f;
  return wc;
}

// The trees of the fixture as a List of pairs (tree i, tree i + 1 mod count), for @main's first
// parameter List[(Tree[int32], Tree[int32])].
Value tree_pairs(const LoadedModel &l, size_t *count) {
  const std::string path = testing::kModels + "fixtures/treelstm_trees.txt";
  std::vector<Tree> read = read_ptb_trees(path, nullptr);
  *count = read.size();
  const auto *pairs = l.module.find_function("main")->as<Function>()->params[0].type().as<TypeCall>();
  const Type tree = pairs->args[0].as<TupleType>()->fields[0];
  Value trees = trees_to_value(l.module, TypeCall::make(pairs->func, {tree}), read, path);
  std::vector<Value> items;
  for (Value cur = trees; !cur->as<ADTValue>()->fields.empty(); cur = cur->as<ADTValue>()->fields[1])
    items.push_back(cur->as<ADTValue>()->fields[0]);
  const Expr &cons = *l.module.find_constructor("Cons");
  Value list = adt_value(*l.module.find_constructor("Nil"), {});
  for (size_t i = items.size(); i-- > 0;)
    list = adt_value(cons, {tuple_value({items[i], items[(i + 1) % items.size()]}), list});
  return list;
}

// An encoder feeding a classifier, written the natural way: the closure's fused kernels are bound
// before the call (fusion's let-bound Primitive functions), and the classifier runs on each result.
// The trees stay one batched call, and the classifier, which computes each tree's row apart, runs
// once over the stacked results: its kernels run once, not once per tree.
TEST(RelayVMRecursive, EncoderFeedingAClassifierIsOneBatchedCallAndOneBatchedHead) {
  auto l = treelstm_with_main(std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
                              R"(, %Wc: Tensor[(5, ?), float32]) -> List[Tensor[(1, 5), float32]] {
  %0 = fn (%t: Tree[int32]) -> Tensor[(1, 5), float32] {
    %1 = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    nn.softmax(nn.dense(%1.0, %Wc))
  };
  @map(%0, %trees)
})");
  size_t count = 0;
  Value trees = testing::treelstm_trees(l, &count);
  std::vector<Value> args = main_args(l, {{"trees", trees}, {"Wc", tensor_value(classifier_weight(l))}});
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("@treelstm over a List (grove recursive compiler)"));
  EXPECT_THAT(dump, HasSubstr("StackList $"));
  EXPECT_THAT(dump, HasSubstr("UnstackList $"));
  VirtualMachine machine = make_vm(l.module);
  Value got = machine.run_main(args);
  EXPECT_EQ(list_length(got), count);
  expect_near(got, run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u) << "one batched call for the whole list";
  EXPECT_LE(machine.stats().kernel_calls, 2u) << "dense and softmax once, over every tree's row";
  EXPECT_GE(machine.stats().kernel_calls, 1u);
  // A list of another length below the same power of two (6 and 5 trees: 8 rows) runs the kernels
  // compiled for the first; the result has the list's own length.
  const auto *first = trees->as<ADTValue>();
  std::vector<Value> fewer =
      main_args(l, {{"trees", first->fields[1]}, {"Wc", tensor_value(classifier_weight(l))}});
  const size_t compiles = machine.stats().kernel_compiles;
  Value got5 = machine.run_main(fewer);
  EXPECT_EQ(list_length(got5), count - 1);
  expect_near(got5, run_main(l.module, fewer), 1e-5f);
  EXPECT_EQ(machine.stats().kernel_compiles, compiles);
  // An empty list maps to Nil without running the classifier.
  std::vector<Value> none = main_args(l, {{"trees", adt_value(*l.module.find_constructor("Nil"), {})},
                                          {"Wc", tensor_value(classifier_weight(l))}});
  EXPECT_EQ(list_length(make_vm(l.module).run_main(none)), 0u);
}

// The same program on the command line's kernels (Halide, else the interpreter's): the classifier's
// kernels compile for the list's row count, and equal the interpreter.
TEST(RelayVMRecursive, BatchedHeadOnHalideKernels) {
  auto l = treelstm_with_main(
      std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
      R"(, %Wc: Tensor[(?, ?), float32]) -> List[(Tensor[(1, ?), float32], Tensor[(1, ?), float32])] {
  %0 = fn (%t: Tree[int32]) -> (Tensor[(1, ?), float32], Tensor[(1, ?), float32]) {
    %1 = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    (log(nn.softmax(nn.bias_add(nn.dense(tanh(%1.0), %Wc), %b_f))), add(%1.1, %b_f))
  };
  @map(%0, %trees)
})");
  size_t count = 0;
  Value trees = testing::treelstm_trees(l, &count);
  // The classifier has H classes, so that b_f serves as its bias.
  const int64_t hidden = l.fixture.at("b_f").shape()[0];
  std::vector<Value> args =
      main_args(l, {{"trees", trees}, {"Wc", tensor_value(classifier_weight(l, hidden))}});
  vm::Executable exe = vm::compile(l.module);
  EXPECT_THAT(vm::to_string(exe), HasSubstr("StackList $"));
  VirtualMachine machine(std::move(exe),
                         make_fallback_kernel_compiler(make_halide_kernel_compiler(),
                                                       make_interpreter_kernel_compiler(l.module)));
  Value got = machine.run_main(args);
  EXPECT_EQ(list_length(got), count);
  expect_near(got, run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_LE(machine.stats().kernel_calls, 4u) << "each of the head's kernels once";
}

// A head that does not compute each tree's row apart — sum over all of a row's elements gives a
// scalar, not a row — runs per tree over the batched results, as before.
TEST(RelayVMRecursive, HeadThatMixesRowsRunsPerTree) {
  auto l = treelstm_with_main(std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
                              R"() -> List[float32] {
  %0 = fn (%t: Tree[int32]) -> float32 {
    %1 = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    sum(tanh(%1.0))
  };
  @map(%0, %trees)
})");
  size_t count = 0;
  std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l, &count)}});
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, Not(HasSubstr("StackList")));
  VirtualMachine machine = make_vm(l.module);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().kernel_calls, count) << "the head per tree";
}

// A pair of encoders over a list of pairs of trees (a sentence-pair model): each encoder is one
// batched call over the projected trees, and the head combining them runs once over the rows.
TEST(RelayVMRecursive, PairOfEncodersOverPairsOfTreesIsTwoBatchedCalls) {
  auto l = treelstm_with_main(std::string("def @main(%pairs: List[(Tree[int32], Tree[int32])], ") + kWeights +
                              R"(, %Wc: Tensor[(5, ?), float32]) -> List[Tensor[(1, 5), float32]] {
  %0 = fn (%p: (Tree[int32], Tree[int32])) -> Tensor[(1, 5), float32] {
    let %a = %p.0;
    let %b = %p.1;
    let %ha = @treelstm(%a, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    let %hb = @treelstm(%b, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    let %d = multiply(%ha.0, %hb.0);
    let %s = subtract(%ha.0, %hb.0);
    nn.softmax(add(nn.dense(%d, %Wc), nn.dense(abs(%s), %Wc)))
  };
  @map(%0, %pairs)
})");
  size_t count = 0;
  Value pairs = tree_pairs(l, &count);
  std::vector<Value> args = main_args(l, {{"pairs", pairs}, {"Wc", tensor_value(classifier_weight(l))}});
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("StackList $"));
  VirtualMachine machine = make_vm(l.module);
  Value got = machine.run_main(args);
  EXPECT_EQ(list_length(got), count);
  expect_near(got, run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 2u) << "one batched call per encoder";
  // The head runs once over the rows: as many kernel calls as for a list of one pair.
  const auto *first = pairs->as<ADTValue>();
  Value one =
      adt_value(first->constructor, {first->fields[0], adt_value(*l.module.find_constructor("Nil"), {})});
  VirtualMachine single = make_vm(l.module);
  single.run_main(main_args(l, {{"pairs", one}, {"Wc", tensor_value(classifier_weight(l))}}));
  EXPECT_EQ(machine.stats().kernel_calls, single.stats().kernel_calls);
}

// A weight computed inside the closure from values bound outside it is the same for every element:
// it is computed once, before the one batched call.
TEST(RelayVMRecursive, WeightComputedInsideTheClosureIsComputedOnce) {
  auto l = treelstm_with_main(std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
                              R"() -> List[Tensor[(1, ?), float32]] {
  %0 = fn (%t: Tree[int32]) -> Tensor[(1, ?), float32] {
    let %w = multiply(%b_f, 1.5f);
    let %s = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %w);
    %s.0
  };
  @map(%0, %trees)
})");
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_map_treelstm: @treelstm over a List (grove recursive compiler)"));
  size_t count = 0;
  std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l, &count)}});
  VirtualMachine machine = make_vm(l.module);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().kernel_calls, 1u) << "the weight, once";
}

// A weight that depends on the element (here on the tree's own encoding) is not loop-invariant: no
// batched map; each element's direct calls still run compiled, on its one tree.
TEST(RelayVMRecursive, WeightThatDependsOnTheElementFallsBack) {
  auto l = treelstm_with_main(std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
                              R"() -> List[Tensor[(1, ?), float32]] {
  %0 = fn (%t: Tree[int32]) -> Tensor[(1, ?), float32] {
    let %a = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
    let %w = reshape(%a.1, newshape=[-1]);
    let %s = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %w);
    %s.0
  };
  @map(%0, %trees)
})");
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, Not(HasSubstr("over a List")));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_treelstm: @treelstm (grove recursive compiler)"));
}

// @map is recognised by its shape, not its name; a look-alike that drops the rest of the list is
// not a map and runs as written.
TEST(RelayVMRecursive, MapIsRecognisedStructurally) {
  const std::string map_of = R"(def @each[A, B](%g: fn (A) -> B, %l: List[A]) -> List[B] {
  match (%l) {
    Nil => Nil,
    Cons(%y, %ys) => Cons(%g(%y), @each(%g, %ys)),
  }
}
def @first[A, B](%g: fn (A) -> B, %l: List[A]) -> List[B] {
  match (%l) {
    Cons(%y, %ys) => Cons(%g(%y), Nil),
    Nil => Nil,
  }
}
)";
  for (const char *mapper : {"each", "first"}) {
    auto l = treelstm_with_main(map_of + "def @main(%trees: List[Tree[int32]], " + kWeights +
                                ") -> List[(Tensor[(1, ?), float32], Tensor[(1, ?), float32])] {\n  @" +
                                mapper + "(fn (%t: Tree[int32]) { @treelstm(%t, %emb, %W_iou, %U_iou, " +
                                "%b_iou, %U_f, %b_f) }, %trees)\n}\n");
    std::string dump = vm::to_string(vm::compile(l.module));
    std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l)}});
    VirtualMachine machine = make_vm(l.module);
    Value got = machine.run_main(args);
    expect_near(got, run_main(l.module, args), 1e-5f);
    if (std::string(mapper) == "each") {
      EXPECT_THAT(dump, HasSubstr("ext0: @grove_map_treelstm: @treelstm over a List"));
      EXPECT_EQ(machine.stats().recursive_calls, 1u);
      EXPECT_EQ(list_length(got), 6u);
    } else {
      EXPECT_THAT(dump, Not(HasSubstr("over a List")));
      EXPECT_EQ(list_length(got), 1u);
    }
  }
}

// A direct call on one tree is one InvokeExternal (the first tree of the list here).
TEST(RelayVMRecursive, DirectCallOnOneTree) {
  auto l = treelstm_with_main(std::string("def @main(%trees: List[Tree[int32]], ") + kWeights +
                              R"() -> Tensor[(1, ?), float32] {
  match (%trees) {
    Cons(%t, _) => {
      %0 = @treelstm(%t, %emb, %W_iou, %U_iou, %b_iou, %U_f, %b_f);
      %0.1
    },
    Nil => expand_dims(%b_f, axis=0),
  }
})");
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_treelstm: @treelstm (grove recursive compiler)"));
  std::vector<Value> args = main_args(l, {{"trees", testing::treelstm_trees(l)}});
  VirtualMachine machine = make_vm(l.module);
  expect_near(machine.run_main(args), run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().kernel_calls, 0u);
}

// The Child-Sum TreeLSTM over rose trees (models/relay/childsum_treelstm.relay): @main is one
// batched call of the compiled @childsum, equal to the interpreter (1e-5).
TEST(RelayVMRecursive, ChildSumMainOverRoseTreesIsOneBatchedCall) {
  auto l = load_model("childsum_treelstm");
  const std::string path = testing::kModels + "fixtures/childsum_trees.txt";
  std::vector<Tree> trees = read_ptb_trees(path, nullptr);
  const Expr &param = l.module.find_function("main")->as<Function>()->params[0];
  std::vector<Value> args = main_args(l, {{"trees", trees_to_value(l.module, param.type(), trees, path)}});
  std::string dump = vm::to_string(vm::compile(l.module));
  EXPECT_THAT(dump, HasSubstr("ext0: @grove_map_childsum: @childsum over a List (grove recursive compiler)"));
  VirtualMachine machine = make_vm(l.module);
  Value got = machine.run_main(args);
  EXPECT_EQ(list_length(got), trees.size());
  expect_near(got, run_main(l.module, args), 1e-5f);
  EXPECT_EQ(machine.stats().recursive_calls, 1u);
  EXPECT_EQ(machine.stats().recursive_compiles, 1u);
  EXPECT_EQ(machine.stats().kernel_calls, 0u);
}

}  // namespace
}  // namespace grove::relay
