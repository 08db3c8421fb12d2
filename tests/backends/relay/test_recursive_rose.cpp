// Recursive Relay functions over rose trees (`type Rose[A] { Rose(A, List[Rose[A]]) }`, any arity)
// compiled by grove's recursive compiler as `structure tree` models: the Child-Sum TreeLSTM of
// models/relay/childsum_treelstm.relay against the interpreter, PyTorch
// (models/relay/fixtures/make_fixtures.py) and models/childsum_treelstm.grove; trees 100,000 nodes
// deep and wide; and why other rose functions do not qualify.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/relay/recursive/RecursiveFunctions.h"
#include "frontend/dsl/Frontend.h"
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
using testing::LoadedModel;

const std::string kTreesFile = testing::kModels + "fixtures/childsum_trees.txt";
const char *const kWeightNames[] = {"emb", "W_iou", "U_iou", "b_iou", "W_f", "U_f", "b_f"};

// The weights of @childsum (every parameter but the tree) from the fixture, in parameter order.
std::vector<Value> childsum_weights(const LoadedModel &l) {
  std::vector<Value> out;
  for (const Expr &p : l.module.find_function("childsum")->as<Function>()->params) {
    const std::string &name = p.as<Var>()->name_hint;
    if (name != "t") out.push_back(tensor_value(l.fixture.at(name)));
  }
  return out;
}

// fixtures/childsum_trees.txt as a List[Rose[int32]] (@main's parameter).
Value childsum_tree_list(const LoadedModel &l) {
  std::vector<Tree> trees = read_ptb_trees(kTreesFile, nullptr);
  const Expr &param = l.module.find_function("main")->as<Function>()->params[0];
  return trees_to_value(l.module, param.type(), trees, kTreesFile);
}

std::vector<Value> items(Value list) {
  std::vector<Value> out;
  for (; !list->as<ADTValue>()->fields.empty(); list = list->as<ADTValue>()->fields[1])
    out.push_back(list->as<ADTValue>()->fields[0]);
  return out;
}

// models/childsum_treelstm.grove compiled by grove from its own file with the fixture's weights.
cpu::CompiledModel grove_childsum_model(const LoadedModel &l) {
  ilir::Program program =
      dsl::parse_model_file(std::string(GROVE_SOURCE_DIR) + "/models/childsum_treelstm.grove");
  Weights weights;
  for (const char *name : kWeightNames) {
    const NDArray &a = l.fixture.at(name);
    Tensor t(a.shape());
    std::copy_n(a.data<float>(), t.size(), t.data.data());
    weights[name] = t;
  }
  return cpu::CompiledModel::compile(program, weights, {});
}

const Recognition &candidate(const RecursiveForms &cs, const std::string &name) {
  const Recognition *r = cs.find(name);
  if (r == nullptr) throw std::runtime_error("no candidate " + name);
  return *r;
}

TEST(RelayRecursiveRose, ChildSumQualifiesAndOthersAreExplained) {
  auto l = load_model("childsum_treelstm");
  RecursiveForms cs(l.module);
  ASSERT_TRUE(candidate(cs, "childsum").qualifies()) << candidate(cs, "childsum").rejection.reason;
  EXPECT_EQ(candidate(cs, "childsum").form->tree_param, 0);
  EXPECT_THAT(candidate(cs, "foldl").rejection.reason, HasSubstr("polymorphic"));
  EXPECT_THAT(candidate(cs, "main").rejection.reason, HasSubstr("no parameter of a tree type"));
  EXPECT_THAT(explain_recursive_functions(l.module),
              HasSubstr("@childsum: compiled by grove's recursive compiler (over its tree parameter %t, 7 "
                        "weights passed through)"));
}

// The model built from @childsum (tests/golden/relay_childsum_treelstm.model.test has it line by
// line) prints as text that reads back as the same ILIR.
TEST(RelayRecursiveRose, ChildSumModelPrintsAsTextThatReadsBack) {
  auto l = load_model("childsum_treelstm");
  std::vector<NDArray> weights;
  for (const Value &w : childsum_weights(l)) weights.push_back(tensor_of(w));
  RecursiveForm form = recursive_form_or_throw(l.module, "childsum");
  testing::LoweredTwice ilir = testing::lower_twice(
      l.module, "childsum", recursive_function_model(l.module, "childsum", form, weights));
  EXPECT_THAT(ilir.text, HasSubstr("structure tree\n"));
  EXPECT_EQ(ilir.from_text, ilir.from_tree) << ilir.text;
}

// The reference interpreter runs @main (the map of @childsum over the list) to PyTorch's roots.
TEST(RelayRecursiveRose, InterpreterMainEqualsPyTorch) {
  auto l = load_model("childsum_treelstm");
  std::vector<Value> roots =
      items(run_main(l.module, testing::main_args(l, {{"trees", childsum_tree_list(l)}})));
  const NDArray &expected = l.fixture.at("expected");
  const int64_t h = expected.shape()[1];
  ASSERT_EQ(static_cast<int64_t>(roots.size()), expected.shape()[0]);
  for (size_t i = 0; i < roots.size(); ++i) {
    const NDArray &root = tensor_of(roots[i]);
    ASSERT_EQ(root.shape(), (Shape{1, h}));
    for (int64_t j = 0; j < h; ++j)
      EXPECT_NEAR(root.data<float>()[j], expected.data<float>()[i * h + j], 1e-5) << "tree " << i << " " << j;
  }
}

// The compiled function's (h, c) at every root equals the interpreter's @childsum, and h equals
// PyTorch's per-node Child-Sum TreeLSTM (computed in float64) — both within 1e-5.
TEST(RelayRecursiveRose, CompiledChildSumEqualsInterpreterAndPyTorch) {
  auto l = load_model("childsum_treelstm");
  std::vector<Value> weights = childsum_weights(l);
  auto compiled = CompiledRecursiveFunction::compile(l.module, "childsum", weights);
  std::vector<Value> trees = items(childsum_tree_list(l));
  ASSERT_EQ(trees.size(), 8u);
  std::vector<Value> roots = compiled.run(trees);
  ASSERT_EQ(roots.size(), trees.size());
  const NDArray &expected = l.fixture.at("expected");  // [trees, H]
  const int64_t h = expected.shape()[1];
  Value childsum = global_function(l.module, "childsum");
  for (size_t i = 0; i < trees.size(); ++i) {
    std::vector<Value> args{trees[i]};
    args.insert(args.end(), weights.begin(), weights.end());
    Value reference = apply(l.module, childsum, args);
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

// The same roots as models/childsum_treelstm.grove compiled from its own file with the same weights
// (both float32 by the same compiler: 1e-6).
TEST(RelayRecursiveRose, CompiledChildSumEqualsTheGroveModel) {
  auto l = load_model("childsum_treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "childsum", childsum_weights(l));
  std::vector<Value> roots = compiled.run(items(childsum_tree_list(l)));
  Tensor expected = grove_childsum_model(l).run(read_ptb_trees(kTreesFile, nullptr), {});
  ASSERT_EQ(expected.shape[0], static_cast<int64_t>(roots.size()));
  const int64_t h = expected.shape[1];
  for (size_t i = 0; i < roots.size(); ++i) {
    const NDArray &got = tensor_of(roots[i]->as<TupleValue>()->fields[0]);
    for (int64_t j = 0; j < h; ++j)
      EXPECT_NEAR(got.data<float>()[j], expected.data[i * h + j], 1e-6) << i << " " << j;
  }
}

// @map of the compiled function over the List[Rose] in one batched run equals @main's list of root
// h (the interpreter).
TEST(RelayRecursiveRose, RunListEqualsTheInterpretersMap) {
  auto l = load_model("childsum_treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "childsum", childsum_weights(l));
  Value trees = childsum_tree_list(l);
  std::vector<Value> got =
      items(compiled.run_list(trees, *l.module.find_constructor("Cons"), *l.module.find_constructor("Nil")));
  std::vector<Value> want = items(run_main(l.module, testing::main_args(l, {{"trees", trees}})));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < got.size(); ++i) {
    const NDArray &a = tensor_of(got[i]->as<TupleValue>()->fields[0]);
    const NDArray &e = tensor_of(want[i]);
    ASSERT_EQ(a.shape(), e.shape());
    for (int64_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a.data<float>()[j], e.data<float>()[j], 1e-5) << i;
  }
}

// A chain 100,000 nodes deep (each internal node has one child) and a node with 100,000 leaf
// children: converting the Rose values recurses on nothing, and the roots equal the grove model's on
// the same trees built directly.
TEST(RelayRecursiveRose, TreesHundredThousandDeepAndWide) {
  auto l = load_model("childsum_treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "childsum", childsum_weights(l));
  const Expr &rose = *l.module.find_constructor("Rose");
  const Expr &cons = *l.module.find_constructor("Cons");
  const Expr &nil = *l.module.find_constructor("Nil");
  auto token = [](int32_t t) {
    NDArray a(DType::Int32, {});
    a.data<int32_t>()[0] = t;
    return tensor_value(a);
  };
  constexpr int kNodes = 100'000;
  const int64_t vocab = l.fixture.at("emb").shape()[0];
  // The chain: a leaf, then kNodes - 1 parents; grove's tree in post-order alongside.
  Value deep = adt_value(rose, {token(3), adt_value(nil, {})});
  Tree deep_tree;
  deep_tree.token.push_back(3);
  deep_tree.child_begin = {0, 0};
  for (int i = 1; i < kNodes; ++i) {
    deep = adt_value(rose, {token(-1), adt_value(cons, {deep, adt_value(nil, {})})});
    deep_tree.token.push_back(-1);
    deep_tree.children.push_back(i - 1);
    deep_tree.child_begin.push_back(i);
  }
  deep_tree.root = kNodes - 1;
  // The wide node: kNodes leaves with tokens i % vocab, in order.
  Value kids = adt_value(nil, {});
  for (int i = kNodes - 1; i >= 0; --i)
    kids = adt_value(cons, {adt_value(rose, {token(i % vocab), adt_value(nil, {})}), kids});
  Value wide = adt_value(rose, {token(-1), kids});
  Tree wide_tree;
  wide_tree.child_begin.push_back(0);
  for (int i = 0; i < kNodes; ++i) {
    wide_tree.token.push_back(static_cast<int32_t>(i % vocab));
    wide_tree.child_begin.push_back(0);
    wide_tree.children.push_back(i);
  }
  wide_tree.token.push_back(-1);
  wide_tree.child_begin.push_back(kNodes);
  wide_tree.root = kNodes;

  std::vector<Value> got = compiled.run({deep, wide});
  std::vector<Tree> grove_trees{deep_tree, wide_tree};
  Tensor expected = grove_childsum_model(l).run(grove_trees, {});
  const int64_t h = expected.shape[1];
  for (size_t i = 0; i < 2; ++i) {
    const NDArray &a = tensor_of(got[i]->as<TupleValue>()->fields[0]);
    for (int64_t j = 0; j < h; ++j)
      EXPECT_NEAR(a.data<float>()[j], expected.data[i * h + j], 1e-5) << i << " " << j;
  }
}

Module rose_module(const std::string &defs) {
  Module m = parse_module(std::string(testing::kRoseTypes) + defs, "rose.relay");
  infer_types(m);
  return m;
}

std::string explain(const std::string &defs) { return explain_recursive_functions(rose_module(defs)); }

// @f: a leaf is its embedding row; a node is half the sum of its children.
constexpr char kHalfSum[] = R"(def @f(%t: Rose[int32], %e: Tensor[(3, 2), float32]) -> Tensor[(2), float32] {
  match (%t) {
    Rose(%w, Nil) => take(%e, %w, axis=0),
    Rose(_, %kids) => {
      let %cs = @map(fn (%k: Rose[int32]) { @f(%k, %e) }, %kids);
      let %s = @foldl(fn (%acc: Tensor[(2), float32], %c: Tensor[(2), float32]) { add(%acc, %c) },
                      zeros(shape=[2], dtype="float32"), %cs);
      multiply(%s, 0.5f)
    },
  }
})";

TEST(RelayRecursiveRose, ExplainsWhyRoseFunctionsDoNotQualify) {
  const std::string sig = "def @f(%t: Rose[int32], %e: Tensor[(3, 2), float32]) -> Tensor[(2), float32] {\n";
  const std::string map = "let %cs = @map(fn (%k: Rose[int32]) { @f(%k, %e) }, %kids);\n";
  auto fold = [](const std::string &step) {
    return "@foldl(fn (%acc: Tensor[(2), float32], %c: Tensor[(2), float32]) { " + step +
           " }, zeros(shape=[2], dtype=\"float32\"), %cs)";
  };
  const std::string leaf = "Rose(%w, Nil) => take(%e, %w, axis=0),\n";
  // The node clause first: it would match leaves too.
  EXPECT_THAT(explain(sig + "match (%t) { Rose(_, %kids) => { " + map + fold("add(%acc, %c)") + " }, " +
                      leaf + "} }"),
              HasSubstr("@f: not compiled recursively: its first clause, Rose(_, %kids), matches every tree, "
                        "leaves too"));
  // No map of the function over the children.
  EXPECT_THAT(
      explain(sig + "match (%t) { " + leaf + "Rose(_, %kids) => zeros(shape=[2], dtype=\"float32\"), } }"),
      HasSubstr("the node clause does not map the function over its children"));
  // The accumulator is scaled, not added to.
  EXPECT_THAT(explain(sig + "match (%t) { " + leaf + "Rose(_, %kids) => { " + map +
                      fold("add(multiply(%acc, 0.5f), %c)") + " }, } }"),
              HasSubstr("a fold's function uses its accumulator other than as add(%acc, E)"));
  // A weight multiplies a computed vector of the child: not an index expression of sum(k in children).
  EXPECT_THAT(
      explain("def @f(%t: Rose[int32], %e: Tensor[(3, 2), float32], %u: Tensor[(2, 2), float32]) -> "
              "Tensor[(1, 2), float32] {\nmatch (%t) { Rose(%w, Nil) => expand_dims(take(%e, %w, axis=0), "
              "axis=0), Rose(_, %kids) => { let %cs = @map(fn (%k: Rose[int32]) { @f(%k, %e, %u) }, "
              "%kids);\n@foldl(fn (%acc: Tensor[(1, 2), float32], %c: Tensor[(1, 2), float32]) { "
              "add(%acc, nn.dense(tanh(%c), %u)) }, zeros(shape=[1, 2], dtype=\"float32\"), %cs) }, } }"),
      HasSubstr("a fold multiplies the weight u by a vector computed from the child"));
  // The map's function changes a weight.
  EXPECT_THAT(
      explain(sig + "match (%t) { " + leaf +
              "Rose(_, %kids) => { let %e2 = %e; let %cs = @map(fn (%k: Rose[int32]) { @f(%k, %e2) }, "
              "%kids);\n" +
              fold("add(%acc, %c)") + " }, } }"),
      HasSubstr("the recursive call passes a changed argument for %e"));
  // The children's results are used other than by a fold.
  EXPECT_THAT(explain(R"(def @head(%xs: List[Tensor[(2), float32]]) -> Tensor[(2), float32] {
  match (%xs) { Cons(%x, _) => %x, Nil => zeros(shape=[2], dtype="float32"), }
}
)" + sig + "match (%t) { " +
                      leaf + "Rose(_, %kids) => { " + map + "@head(%cs) }, } }"),
              HasSubstr("a clause calls @head; only the function itself (mapped over the children"));
  // Mapped twice.
  EXPECT_THAT(explain(sig + "match (%t) { " + leaf + "Rose(_, %kids) => { " + map +
                      "let %ds = @map(fn (%k: Rose[int32]) { @f(%k, %e) }, %kids);\n" +
                      fold("add(%acc, %c)") + " }, } }"),
              HasSubstr("the node clause maps the function over its children twice"));
  // The internal node's token is read.
  EXPECT_THAT(explain(sig + "match (%t) { " + leaf + "Rose(%v, %kids) => { " + map +
                      "add(take(%e, %v, axis=0), " + fold("add(%acc, %c)") + ") }, } }"),
              HasSubstr("the node clause uses %v, an internal node's token"));
  // The half sum qualifies.
  EXPECT_THAT(explain(kHalfSum), HasSubstr("@f: compiled by grove's recursive compiler"));
}

// A single-tensor result with a zeros(...) initial value, against the interpreter and by hand.
TEST(RelayRecursiveRose, HalfSumEqualsInterpreterAndHandComputation) {
  Module m = rose_module(kHalfSum);
  NDArray e(DType::Float32, {3, 2});
  for (int i = 0; i < 6; ++i) e.data<float>()[i] = static_cast<float>(i * i) - 2.0f;  // (-2,-1) (2,7) (14,23)
  auto list = [&](std::vector<Value> xs) {
    Value l = adt_value(*m.find_constructor("Nil"), {});
    for (auto it = xs.rbegin(); it != xs.rend(); ++it) l = adt_value(*m.find_constructor("Cons"), {*it, l});
    return l;
  };
  auto leaf = [&](int token) {
    NDArray t(DType::Int32, {});
    t.data<int32_t>()[0] = token;
    return adt_value(*m.find_constructor("Rose"), {tensor_value(t), list({})});
  };
  auto node = [&](std::vector<Value> kids) {
    NDArray t(DType::Int32, {});
    t.data<int32_t>()[0] = -1;
    return adt_value(*m.find_constructor("Rose"), {tensor_value(t), list(std::move(kids))});
  };
  std::vector<Value> trees{leaf(2), node({leaf(0), node({leaf(1), leaf(2), leaf(2)}), leaf(1)}),
                           node({node({leaf(0)})})};
  auto compiled = CompiledRecursiveFunction::compile(m, "f", {tensor_value(e)});
  EXPECT_THAT(compiled.model_text(), HasSubstr("structure tree"));
  std::vector<Value> got = compiled.run(trees);
  ASSERT_EQ(got.size(), trees.size());
  for (size_t i = 0; i < trees.size(); ++i) {
    Value ref = apply(m, global_function(m, "f"), {trees[i], tensor_value(e)});
    ASSERT_EQ(tensor_of(got[i]).shape(), (Shape{2}));
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(tensor_of(got[i]).data<float>()[j], tensor_of(ref).data<float>()[j], 1e-6) << i << " " << j;
  }
  // Tree 1, column 0: 0.5 * (e0 + 0.5 * (e1 + e2 + e2) + e1) = 0.5 * (-2 + 15 + 2) = 7.5.
  EXPECT_NEAR(tensor_of(got[1]).data<float>()[0], 7.5, 1e-6);
  // Tree 2, column 1: 0.25 * e0 = -0.25.
  EXPECT_NEAR(tensor_of(got[2]).data<float>()[1], -0.25, 1e-6);
}

// A fold with a weight as its initial value and add(E, %acc) with E computed from the child:
// node = tanh(b + sum_k tanh(g_k * b)), against the interpreter.
TEST(RelayRecursiveRose, FoldWithAnInitialValueEqualsInterpreter) {
  Module m = rose_module(R"(def @g(%t: Rose[int32], %e: Tensor[(3, 2), float32], %b: Tensor[(2), float32])
    -> Tensor[(2), float32] {
  match (%t) {
    Rose(%w, Nil) => take(%e, %w, axis=0),
    Rose(_, %kids) => {
      let %cs = @map(fn (%k: Rose[int32]) { @g(%k, %e, %b) }, %kids);
      let %s = @foldl(fn (%acc: Tensor[(2), float32], %c: Tensor[(2), float32]) {
        add(tanh(multiply(%c, %b)), %acc)
      }, %b, %cs);
      tanh(%s)
    },
  }
}
def @main(%trees: List[Rose[int32]]) -> List[Rose[int32]] { %trees })");
  NDArray e(DType::Float32, {3, 2}), b(DType::Float32, {2});
  for (int i = 0; i < 6; ++i) e.data<float>()[i] = 0.3f * static_cast<float>(i) - 0.7f;
  b.data<float>()[0] = 0.5f;
  b.data<float>()[1] = -1.25f;
  auto compiled = CompiledRecursiveFunction::compile(m, "g", {tensor_value(e), tensor_value(b)});
  EXPECT_THAT(compiled.model_text(), HasSubstr("= b + (sum(g_k in children) tanh(g_s0[g_k] * b))\n"));
  std::vector<Tree> shapes = read_ptb_trees(kTreesFile, nullptr);
  for (Tree &t : shapes)
    for (int32_t &token : t.token)
      if (token >= 0) token %= 3;
  const Type &list_type = m.find_function("main")->as<Function>()->params[0].type();
  std::vector<Value> trees = items(trees_to_value(m, list_type, shapes, kTreesFile));
  std::vector<Value> got = compiled.run(trees);
  ASSERT_EQ(got.size(), trees.size());
  for (size_t i = 0; i < trees.size(); ++i) {
    Value ref = apply(m, global_function(m, "g"), {trees[i], tensor_value(e), tensor_value(b)});
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(tensor_of(got[i]).data<float>()[j], tensor_of(ref).data<float>()[j], 1e-6) << i << " " << j;
  }
}

TEST(RelayRecursiveRose, TokensOutsideTheVocabularyAreUserErrors) {
  auto l = load_model("childsum_treelstm");
  auto compiled = CompiledRecursiveFunction::compile(l.module, "childsum", childsum_weights(l));
  NDArray token(DType::Int32, {});
  token.data<int32_t>()[0] = static_cast<int32_t>(l.fixture.at("emb").shape()[0]);  // one past the vocabulary
  Value leaf = adt_value(*l.module.find_constructor("Rose"),
                         {tensor_value(token), adt_value(*l.module.find_constructor("Nil"), {})});
  EXPECT_THAT(user_error_of([&] { compiled.run({leaf}); }), HasSubstr("token"));
}

}  // namespace
}  // namespace grove::relay
