// Recursive Relay functions over trees compiled by grove's recursive compiler: which globals qualify
// and why the others do not, the translated model, and the compiled @treelstm against the reference
// interpreter and the PyTorch fixture (models/relay/fixtures/make_fixtures.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/cpu/CompiledModel.h"
#include "backends/relay/recursive/RecursiveFunctions.h"
#include "frontend/dsl/Frontend.h"
#include "frontend/dsl/Parser.h"
#include "frontend/dsl/Printer.h"
#include "frontend/relay/Interpreter.h"
#include "tests/UserError.h"
#include "tests/relay/ModelFixtures.h"
#include "tests/relay/RecursiveTypes.h"
#include "tests/relay/TranslationTestUtil.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;
using testing::load_model;
using ::testing::Not;

// The weights of @treelstm (every parameter but the tree) from the fixture, in parameter order.
std::vector<Value> treelstm_weights(const testing::LoadedModel &l) {
  std::vector<Value> out;
  for (const Expr &p : l.module.find_function("treelstm")->as<Function>()->params) {
    const std::string &name = p.as<Var>()->name_hint;
    if (name != "t") out.push_back(tensor_value(l.fixture.at(name)));
  }
  return out;
}

std::vector<Value> fixture_trees(const testing::LoadedModel &l) {
  std::vector<Value> out;
  for (Value list = testing::treelstm_trees(l); !list->as<ADTValue>()->fields.empty();
       list = list->as<ADTValue>()->fields[1])
    out.push_back(list->as<ADTValue>()->fields[0]);
  return out;
}

const Recognition &candidate(const RecursiveForms &cs, const std::string &name) {
  const Recognition *r = cs.find(name);
  if (r == nullptr) throw std::runtime_error("no candidate " + name);
  return *r;
}

TEST(RelayRecursiveFunctions, TreeLstmQualifiesAndOthersAreExplained) {
  auto l = load_model("treelstm");
  RecursiveForms cs(l.module);
  ASSERT_TRUE(candidate(cs, "treelstm").qualifies()) << candidate(cs, "treelstm").rejection.reason;
  EXPECT_EQ(candidate(cs, "treelstm").form->tree_param, 0);
  EXPECT_FALSE(candidate(cs, "map").qualifies());
  EXPECT_THAT(candidate(cs, "map").rejection.reason, HasSubstr("polymorphic"));
  EXPECT_FALSE(candidate(cs, "main").qualifies());
  EXPECT_THAT(candidate(cs, "main").rejection.reason, HasSubstr("no parameter of a tree type"));
  std::string text = explain_recursive_functions(l.module);
  EXPECT_THAT(text,
              HasSubstr("@treelstm: compiled by grove's recursive compiler (over its tree parameter %t, "
                        "6 weights passed through)"));
  EXPECT_THAT(text, HasSubstr("@map: not compiled recursively: it is polymorphic"));
}

// The compiled function's (h, c) at every root equals the interpreter's @treelstm, and h equals
// PyTorch's per-node TreeLSTM (computed in float64) — both within 1e-5.
TEST(RelayRecursiveFunctions, CompiledTreeLstmEqualsInterpreterAndPyTorch) {
  auto l = load_model("treelstm");
  std::vector<Value> weights = treelstm_weights(l);
  auto compiled = CompiledRecursiveFunction::compile(l.module, "treelstm", weights);
  std::vector<Value> trees = fixture_trees(l);
  ASSERT_GE(trees.size(), 5u);
  std::vector<Value> roots = compiled.run(trees);
  ASSERT_EQ(roots.size(), trees.size());
  const NDArray &expected = l.fixture.at("expected");  // [trees, H]
  const int64_t h = expected.shape()[1];
  Value treelstm = global_function(l.module, "treelstm");
  for (size_t i = 0; i < trees.size(); ++i) {
    std::vector<Value> args{trees[i]};
    args.insert(args.end(), weights.begin(), weights.end());
    Value reference = apply(l.module, treelstm, args);
    const auto *got = roots[i]->as<TupleValue>();
    ASSERT_TRUE(got != nullptr && got->fields.size() == 2) << "tree " << i;
    for (int k = 0; k < 2; ++k) {
      const NDArray &a = tensor_of(got->fields[k]);
      const NDArray &e = tensor_of(reference->as<TupleValue>()->fields[k]);
      ASSERT_EQ(a.shape(), (Shape{1, h})) << "tree " << i << " field " << k;
      ASSERT_EQ(e.shape(), a.shape());
      for (int64_t j = 0; j < h; ++j) {
        EXPECT_NEAR(a.data<float>()[j], e.data<float>()[j], 1e-5)
            << "tree " << i << " field " << k << " " << j;
        if (k == 0) {
          EXPECT_NEAR(a.data<float>()[j], expected.data<float>()[i * h + j], 1e-5)
              << "tree " << i << " h " << j;
        }
      }
    }
  }
}

// The same roots as models/treelstm.grove compiled by grove from its own model file, with the same
// weights (both float32 by the same compiler: 1e-6).
TEST(RelayRecursiveFunctions, CompiledTreeLstmEqualsTheGroveModel) {
  auto l = load_model("treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "treelstm", treelstm_weights(l));
  std::vector<Value> roots = compiled.run(fixture_trees(l));
  ilir::Program program = dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/treelstm.grove");
  Weights weights;
  for (const char *name : {"emb", "W_iou", "U_iou", "b_iou", "U_f", "b_f"}) {
    const NDArray &a = l.fixture.at(name);
    Tensor t(a.shape());
    std::copy_n(a.data<float>(), t.size(), t.data.data());
    weights[name] = t;
  }
  auto model = cpu::CompiledModel::compile(program, weights, {});
  std::vector<Tree> trees = read_ptb_trees(testing::kModels + "fixtures/treelstm_trees.txt", nullptr);
  Tensor expected = model.run(trees, {});
  ASSERT_EQ(expected.shape[0], static_cast<int64_t>(roots.size()));
  const int64_t h = expected.shape[1];
  for (size_t i = 0; i < roots.size(); ++i) {
    const NDArray &got = tensor_of(roots[i]->as<TupleValue>()->fields[0]);
    for (int64_t j = 0; j < h; ++j)
      EXPECT_NEAR(got.data<float>()[j], expected.data[i * h + j], 1e-6) << i << " " << j;
  }
}

// @map of the compiled function over the fixture's List[Tree] in one batched run equals @main's
// list of root h (the interpreter).
TEST(RelayRecursiveFunctions, RunListEqualsTheInterpretersMap) {
  auto l = load_model("treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "treelstm", treelstm_weights(l));
  Value trees = testing::treelstm_trees(l);
  Value got = compiled.run_list(trees, *l.module.find_constructor("Cons"), *l.module.find_constructor("Nil"));
  Value want = run_main(l.module, testing::main_args(l, {{"trees", trees}}));
  size_t n = 0;
  for (; !want->as<ADTValue>()->fields.empty(); ++n) {
    ASSERT_FALSE(got->as<ADTValue>()->fields.empty()) << "the compiled list ends after " << n;
    const NDArray &a = tensor_of(got->as<ADTValue>()->fields[0]->as<TupleValue>()->fields[0]);
    const NDArray &e = tensor_of(want->as<ADTValue>()->fields[0]);
    ASSERT_EQ(a.shape(), e.shape());
    for (int64_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a.data<float>()[j], e.data<float>()[j], 1e-5) << n;
    got = got->as<ADTValue>()->fields[1];
    want = want->as<ADTValue>()->fields[1];
  }
  EXPECT_TRUE(got->as<ADTValue>()->fields.empty()) << "more results than trees";
  EXPECT_GE(n, 5u);
}

// The model built from @treelstm (tests/golden/relay_treelstm.model.test has it line by line)
// prints as text that reads back as the same ILIR.
TEST(RelayRecursiveFunctions, TreeLstmModelPrintsAsTextThatReadsBack) {
  auto l = load_model("treelstm");
  std::vector<NDArray> weights;
  for (const Value &w : treelstm_weights(l)) weights.push_back(tensor_of(w));
  RecursiveForm form = recursive_form_or_throw(l.module, "treelstm");
  testing::LoweredTwice ilir = testing::lower_twice(
      l.module, "treelstm", recursive_function_model(l.module, "treelstm", form, weights));
  EXPECT_THAT(ilir.text, HasSubstr("structure binary_tree\n"));
  EXPECT_EQ(ilir.from_text, ilir.from_tree) << ilir.text;
}

std::string explain(const std::string &defs) {
  Module m = parse_module(std::string(testing::kTreeTypes) + defs, "t.relay");
  infer_types(m);
  return explain_recursive_functions(m);
}

TEST(RelayRecursiveFunctions, ExplainsWhyFunctionsDoNotQualify) {
  // Neither a tree nor a list of tensors (a fold over a list:
  // tests/backends/relay/test_sequence_functions.cpp).
  EXPECT_THAT(explain(R"(def @f(%n: int32, %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      if (equal(%n, 0)) { %w } else { add(@f(subtract(%n, 1), %w), %w) } })"),
              HasSubstr("@f: not compiled recursively: it has no parameter of a tree type"));
  // The weight changes in the recursive call.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(_) => %w, Node(%l, %r) => add(@f(%l, multiply(%w, 2f)), @f(%r, %w)), } })"),
              HasSubstr("the recursive call passes a changed argument for %w"));
  // An effect.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(_) => { let %c = ref(%w); ref_read(%c) }, Node(%l, %r) => add(@f(%l, %w), @f(%r, %w)), } })"),
              HasSubstr("a clause has an effect (ref)"));
  // An operator the translation does not have.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(_) => nn.softmax(%w), Node(%l, %r) => add(@f(%l, %w), @f(%r, %w)), } })"),
              HasSubstr("uses the operator nn.softmax, which the translation to grove does not support"));
  // Only one child is recursed on.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[int32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(_) => %w, Node(%l, %r) => add(@f(%l, %w), %w), } })"),
              HasSubstr("does not call the function on both children"));
  // A tree of floats.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[float32], %w: Tensor[(4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(_) => %w, Node(%l, %r) => add(@f(%l, %w), @f(%r, %w)), } })"),
              HasSubstr("its tree holds float32, not int32 token ids"));
  // A qualifying one: the sum of leaf embeddings, and a scalar constant.
  EXPECT_THAT(explain(R"(def @f(%t: Tree[int32], %e: Tensor[(10, 4), float32]) -> Tensor[(4), float32] {
      match (%t) { Leaf(%w) => take(%e, %w, axis=0), Node(%l, %r) => multiply(add(@f(%l, %e), @f(%r, %e)), 0.5f), } })"),
              HasSubstr("@f: compiled by grove's recursive compiler"));
}

// A single-tensor result, a constant and a tree given as nested Relay values, against the interpreter.
TEST(RelayRecursiveFunctions, SingleTensorResultEqualsInterpreter) {
  Module m =
      parse_module(std::string(testing::kTreeTypes) +
                       R"(def @f(%t: Tree[int32], %e: Tensor[(3, 2), float32]) -> Tensor[(2), float32] {
      match (%t) { Leaf(%w) => take(%e, %w, axis=0), Node(%l, %r) => multiply(add(@f(%l, %e), @f(%r, %e)), 0.5f), } })",
                   "t.relay");
  infer_types(m);
  NDArray e(DType::Float32, {3, 2});
  for (int i = 0; i < 6; ++i) e.data<float>()[i] = static_cast<float>(i * i) - 2.0f;
  auto leaf = [&](int token) {
    NDArray t(DType::Int32, {});
    t.data<int32_t>()[0] = token;
    return adt_value(*m.find_constructor("Leaf"), {tensor_value(t)});
  };
  auto node = [&](Value a, Value b) { return adt_value(*m.find_constructor("Node"), {a, b}); };
  std::vector<Value> trees{leaf(2), node(leaf(0), node(leaf(1), leaf(2))),
                           node(node(leaf(2), leaf(2)), leaf(0))};
  auto compiled = CompiledRecursiveFunction::compile(m, "f", {tensor_value(e)});
  std::vector<Value> got = compiled.run(trees);
  ASSERT_EQ(got.size(), trees.size());
  for (size_t i = 0; i < trees.size(); ++i) {
    Value ref = apply(m, global_function(m, "f"), {trees[i], tensor_value(e)});
    ASSERT_EQ(tensor_of(got[i]).shape(), (Shape{2}));
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(tensor_of(got[i]).data<float>()[j], tensor_of(ref).data<float>()[j], 1e-6) << i << " " << j;
  }
  // (0.5 * (e[0] + 0.5 * (e[1] + e[2])))[0] by hand: e rows (-2, -1), (2, 7), (14, 23).
  EXPECT_NEAR(tensor_of(got[1]).data<float>()[0], 0.5 * (-2 + 0.5 * (2 + 14)), 1e-6);
}

// The printer that --stage model uses writes every model file's tree (dag and sequence structures,
// every operator the models use, and a schedule block added to each) as text that reads back as the
// same ILIR.
TEST(RelayRecursiveFunctions, ModelPrinterReadsBackEveryModelFile) {
  for (const char *name :
       {"childsum_treelstm", "dagrnn", "gru", "lstm", "mvrnn", "treefc", "treegru", "treelstm"}) {
    const std::string path = std::string(GROVE_SOURCE_DIR) + "/models/" + name + ".grove";
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf() << "\nschedule {\n  threads = 2\n  tile = -1\n}\n";
    SourceFile source(path, text.str());
    std::string printed = dsl::print_model(dsl::parse(source, dsl::lex(source)));
    EXPECT_EQ(ilir::to_string(dsl::parse_model(printed, "printed")),
              ilir::to_string(dsl::parse_model(text.str(), path)))
        << printed;
  }
}

TEST(RelayRecursiveFunctions, BadWeightsAndTokensAreUserErrors) {
  auto l = load_model("treelstm");
  std::vector<Value> weights = treelstm_weights(l);
  std::vector<Value> wrong = weights;
  wrong[2] = weights[1];  // W_iou where U_iou belongs
  EXPECT_THAT(user_error_of([&] { CompiledRecursiveFunction::compile(l.module, "treelstm", wrong); }),
              HasSubstr("nn.dense multiplies"));
  auto compiled = CompiledRecursiveFunction::compile(l.module, "treelstm", weights);
  NDArray token(DType::Int32, {});
  token.data<int32_t>()[0] = static_cast<int32_t>(l.fixture.at("emb").shape()[0]);  // one past the vocabulary
  Value leaf = adt_value(*l.module.find_constructor("Leaf"), {tensor_value(token)});
  EXPECT_THAT(user_error_of([&] { compiled.run({leaf}); }), HasSubstr("token"));
}

TEST(RelayRecursiveFunctions, CompilingANonQualifyingFunctionIsAUserError) {
  auto l = load_model("treelstm");
  EXPECT_THAT(user_error_of([&] { CompiledRecursiveFunction::compile(l.module, "main", {}); }),
              HasSubstr("@main cannot be compiled by grove's recursive compiler: it has no parameter"));
}

}  // namespace
}  // namespace grove::relay
