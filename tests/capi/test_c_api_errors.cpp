// The C API's errors: every misuse is GROVE_ERROR_INVALID_ARGUMENT naming the function, the argument
// and the index; bad trees, DAGs, weights and model files are GROVE_ERROR_USER with grove's message
// placed in the caller's arrays; no failing call writes to its output.

#include <gmock/gmock.h>

#include <cstring>

#include "tests/capi/CApiTestUtil.h"

namespace grove::capi_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kH = 4;  // the models here have H = 4 and V = 10

// Stores a value no enumerator has, as a C caller may (in C++ it would be undefined behaviour).
template <typename Enum>
void set_enum(Enum &field, int value) {
  static_assert(sizeof(Enum) == sizeof(int));
  std::memcpy(&field, &value, sizeof value);
}

// Two small trees: tree 0 is ((0 1) 2) as nodes 0..4, tree 1 a single leaf, node 5.
//   parent: 0 -> 2, 1 -> 2, 2 -> 4, 3 -> 4, 4 root; 5 root.
struct SmallTrees {
  std::vector<int64_t> node_begin{0, 5, 6};
  std::vector<int32_t> parent{2, 2, 4, 4, -1, -1};
  std::vector<int64_t> child_begin{0, 0, 0, 2, 2, 4, 4};
  std::vector<int32_t> children{0, 1, 2, 3};
  std::vector<int32_t> token{1, 2, -1, 3, -1, 4};
  grove_trees parents() { return {2, node_begin.data(), parent.data(), nullptr, nullptr, token.data()}; }
  grove_trees csr() {
    return {2, node_begin.data(), nullptr, child_begin.data(), children.data(), token.data()};
  }
};

class CApiErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    tree_files_ = new ModelFiles(model_files(*dir_, "treelstm", "H=4,D=3,V=10"));
    dag_files_ = new ModelFiles(model_files(*dir_, "dagrnn", "H=4,D=3,V=10"));
    tree_model_ = compile_c(tree_files_->model_file, tree_files_->weights_file.c_str()).release();
    dag_model_ = compile_c(dag_files_->model_file, dag_files_->weights_file.c_str()).release();
  }
  static void TearDownTestSuite() {
    grove_model_free(tree_model_);
    grove_model_free(dag_model_);
    delete tree_files_;
    delete dag_files_;
    delete dir_;
  }

  // Runs `trees` on the tree model into a sentinel-filled buffer; expects `status` and an untouched
  // buffer, and returns the message.
  std::string run_trees_fails(const grove_trees &trees, grove_status status, int64_t capacity = 2 * kH,
                              const grove_run_options *options = nullptr) {
    std::vector<float> out(2 * kH, -9.0f);
    int64_t rows = -5;
    EXPECT_EQ(grove_model_run_trees(tree_model_, &trees, options, out.data(), capacity, &rows), status)
        << grove_last_error();
    EXPECT_EQ(out, std::vector<float>(2 * kH, -9.0f));
    EXPECT_EQ(rows, -5);
    return grove_last_error();
  }

  static inline testing::TempDir *dir_;
  static inline ModelFiles *tree_files_, *dag_files_;
  static inline grove_model *tree_model_, *dag_model_;
};

TEST_F(CApiErrors, TheSmallTreesRun) {
  SmallTrees t;
  EXPECT_EQ(run_c(tree_model_, t.parents()), run_c(tree_model_, t.csr()));
}

TEST_F(CApiErrors, NullPointers) {
  SmallTrees t;
  grove_trees trees = t.parents();
  float out[8];
  int64_t rows;
  EXPECT_EQ(grove_model_run_trees(nullptr, &trees, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_run_trees: model is a null pointer");
  EXPECT_EQ(grove_model_run_trees(tree_model_, nullptr, nullptr, out, 8, &rows),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_run_trees: trees is a null pointer");
  EXPECT_EQ(grove_model_run_trees(tree_model_, &trees, nullptr, nullptr, 0, nullptr),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_model_run_trees: out and rows are both null pointers: nothing to return");
  trees.node_begin = nullptr;
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->node_begin is a null pointer");
  trees = t.parents();
  trees.token = nullptr;
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->token is a null pointer");
  trees = t.csr();
  trees.children = nullptr;
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->children is a null pointer");
  grove_model_info info;
  EXPECT_EQ(grove_model_get_info(tree_model_, nullptr), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_get_info: info is a null pointer");
  EXPECT_EQ(grove_model_get_info(nullptr, &info), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(grove_model_bind_weights_file(tree_model_, nullptr), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_bind_weights_file: path is a null pointer");
  EXPECT_EQ(grove_model_bind_weights(tree_model_, nullptr, 2, 1), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_bind_weights: tensors is a null pointer");
  EXPECT_EQ(grove_model_open_compiled(nullptr, nullptr), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_open_compiled: compiled is a null pointer");
}

TEST_F(CApiErrors, WrittenOnlyOnSuccess) {
  // The check in run_trees_fails holds for a success too, with a buffer too small to hold anything:
  // here the positive control that the sentinel does change when a run succeeds.
  SmallTrees t;
  grove_trees trees = t.parents();
  std::vector<float> out(2 * kH, -9.0f);
  int64_t rows = 0;
  ASSERT_EQ(grove_model_run_trees(tree_model_, &trees, nullptr, out.data(), 2 * kH, &rows), GROVE_OK);
  EXPECT_NE(out, std::vector<float>(2 * kH, -9.0f));
}

TEST_F(CApiErrors, Counts) {
  SmallTrees t;
  grove_trees trees = t.parents();
  trees.num_trees = -1;
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->num_trees is -1; it must be at least 0");
  trees = t.parents();
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT, -2),
            "grove_model_run_trees: capacity is -2; it must be at least 0");
  grove_run_options options{-3};
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT, 8, &options),
            "grove_model_run_trees: options->batch is -3; it must be at least 0");
}

TEST_F(CApiErrors, CapacityTooSmall) {
  SmallTrees t;
  EXPECT_EQ(run_trees_fails(t.parents(), GROVE_ERROR_INVALID_ARGUMENT, 7),
            "grove_model_run_trees: out needs 8 floats (2 rows of 4), got capacity 7");
}

TEST_F(CApiErrors, Offsets) {
  SmallTrees t;
  t.node_begin = {1, 5, 6};
  EXPECT_EQ(run_trees_fails(t.parents(), GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->node_begin[0] is 1; it must be 0");
  t.node_begin = {0, 5, 4};
  EXPECT_EQ(run_trees_fails(t.parents(), GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->node_begin[2] = 4 is less than trees->node_begin[1] = 5; the "
            "offsets must "
            "not decrease");
  SmallTrees c;
  c.child_begin = {0, 0, 0, 2, 1, 4, 4};
  EXPECT_EQ(
      run_trees_fails(c.csr(), GROVE_ERROR_INVALID_ARGUMENT),
      "grove_model_run_trees: trees->child_begin[4] = 1 is less than trees->child_begin[3] = 2; the offsets "
      "must not decrease");
  c.child_begin = {1, 1, 1, 2, 2, 4, 4};
  EXPECT_EQ(run_trees_fails(c.csr(), GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: trees->child_begin[0] is 1; it must be 0");
}

TEST_F(CApiErrors, OneTreeFormExactly) {
  SmallTrees t;
  grove_trees trees = t.parents();
  trees.child_begin = t.child_begin.data();
  trees.children = t.children.data();
  EXPECT_EQ(run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_model_run_trees: give trees->parent, or trees->child_begin and trees->children, not both");
  trees = t.csr();
  trees.child_begin = nullptr;
  trees.children = nullptr;
  EXPECT_EQ(
      run_trees_fails(trees, GROVE_ERROR_INVALID_ARGUMENT),
      "grove_model_run_trees: give trees->parent, or trees->child_begin and trees->children, not neither");
}

TEST_F(CApiErrors, IdsOutsideTheirTree) {
  SmallTrees t;
  t.parent[3] = 5;  // node 3 of tree 0 names tree 1's node
  EXPECT_EQ(
      run_trees_fails(t.parents(), GROVE_ERROR_INVALID_ARGUMENT),
      "grove_model_run_trees: trees->parent[3] = 5: node 3 belongs to tree 0, whose nodes are 0 to 4; an "
      "index must name a node of the same tree or -1 for the root");
  t = SmallTrees();
  t.parent[5] = -2;
  EXPECT_THAT(run_trees_fails(t.parents(), GROVE_ERROR_INVALID_ARGUMENT),
              HasSubstr("trees->parent[5] = -2: node 5 belongs to tree 1, whose nodes are 5 to 5"));
  SmallTrees c;
  c.children[3] = 17;
  EXPECT_EQ(
      run_trees_fails(c.csr(), GROVE_ERROR_INVALID_ARGUMENT),
      "grove_model_run_trees: trees->children[3] = 17: node 4 belongs to tree 0, whose nodes are 0 to 4; an "
      "index must name a node of the same tree");
}

TEST_F(CApiErrors, BadTreesAreUserErrorsNamingTheTree) {
  SmallTrees t;
  t.token[5] = 12;  // tree 1's leaf: the vocabulary has 10 tokens
  EXPECT_EQ(
      run_trees_fails(t.parents(), GROVE_ERROR_USER),
      "tree 2, node 0: token 12 is out of range: the vocabulary has 10 entries [input 1 of the C API batch, "
      "counting from 0; its node j is element 5 + j of the batch's nodes]");
  t = SmallTrees();
  t.parent = {2, 2, 3, 2, -1, -1};  // 2 and 3 are each other's parents: 4 is left alone
  EXPECT_THAT(run_trees_fails(t.parents(), GROVE_ERROR_USER), HasSubstr("tree 1"));
  t.parent = {2, 2, 3, 2, 3, -1};  // no root in tree 0
  EXPECT_THAT(
      run_trees_fails(t.parents(), GROVE_ERROR_USER),
      HasSubstr("tree 1: no node has parent -1, so the tree has no root (its parent links form a cycle)"));
  t = SmallTrees();
  t.parent = {4, 4, 4, -1, -1, -1};  // node 4 has 3 children; node 3 is a second root
  EXPECT_THAT(run_trees_fails(t.parents(), GROVE_ERROR_USER), HasSubstr("tree 1: node 0 is not reachable"));
  SmallTrees c;
  c.children = {0, 1, 2, 4};  // node 4 its own child: 3, a leaf, is the one root, the others unreachable
  EXPECT_THAT(run_trees_fails(c.csr(), GROVE_ERROR_USER), HasSubstr("tree 1: node 0 is not reachable"));
  c.child_begin = {0, 0, 0, 2, 3, 5, 5};
  c.children = {0, 1, 4, 2, 3};  // 2 -> 0 1, 3 -> 4, 4 -> 2 3: a cycle through every non-leaf
  EXPECT_EQ(
      run_trees_fails(c.csr(), GROVE_ERROR_USER),
      "tree 1: every node is some node's child, so the tree has no root (its child links form a cycle)");
  t = SmallTrees();
  t.token[0] = -1;  // a leaf without a token
  EXPECT_THAT(run_trees_fails(t.parents(), GROVE_ERROR_USER), HasSubstr("tree 1, node 0: "));
}

TEST_F(CApiErrors, WrongRunFunctionForTheModel) {
  SmallTrees t;
  grove_trees trees = t.parents();
  float out[8];
  int64_t rows;
  EXPECT_EQ(grove_model_run_trees(dag_model_, &trees, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_trees: model 'DAGRNN' has structure dag: call grove_model_run_dags, _grids or "
      "_sequences instead");
  std::vector<int64_t> begin{0, 1};
  std::vector<int32_t> tokens{1};
  grove_sequences sequences{1, begin.data(), tokens.data()};
  EXPECT_EQ(grove_model_run_sequences(tree_model_, &sequences, nullptr, out, 8, &rows),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_sequences: model 'TreeLSTM' has structure binary tree: call grove_model_run_trees "
      "instead");
}

TEST_F(CApiErrors, Dags) {
  // DAG 0: 0 -> 1; DAG 1: node 2 alone.
  std::vector<int64_t> node_begin{0, 2, 3}, pred_begin{0, 2, 4, 6};
  std::vector<int32_t> preds{-1, -1, 0, -1, -1, -1}, token{1, 2, 3};
  grove_dags dags{2, node_begin.data(), pred_begin.data(), preds.data(), token.data(), GROVE_OUTPUTS_SINKS};
  float out[8];
  int64_t rows = 0;
  ASSERT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_OK) << grove_last_error();
  EXPECT_EQ(rows, 2);
  preds[3] = 2;
  EXPECT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_dags: dags->preds[3] = 2: node 1 belongs to DAG 0, whose nodes are 0 to 1; an index "
      "must name a node of the same DAG or -1 for an empty slot");
  preds[3] = 1;  // a self loop
  EXPECT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(),
              AllOf(HasSubstr("DAG 1, node 1"), HasSubstr("[input 0 of the C API batch")));
  preds[3] = -1;
  pred_begin[2] = 1;
  EXPECT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_dags: dags->pred_begin[2] = 1 is less than dags->pred_begin[1] = 2; the offsets must "
      "not decrease");
  pred_begin[2] = 4;
  set_enum(dags.outputs, 7);
  EXPECT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_dags: dags->outputs is 7, not one of GROVE_OUTPUTS_SINKS, GROVE_OUTPUTS_ALL_NODES");
  dags.outputs = GROVE_OUTPUTS_ALL_NODES;
  EXPECT_EQ(grove_model_run_dags(dag_model_, &dags, nullptr, out, 8, &rows), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_run_dags: out needs 12 floats (3 rows of 4), got capacity 8");
}

TEST_F(CApiErrors, Grids) {
  std::vector<int32_t> rows{2, 1}, cols{2, 3}, tokens{1, 2, 3, 4, 5, 6, 7};
  std::vector<int64_t> token_begin{0, 4, 7};
  grove_grids grids{2, rows.data(), cols.data(), token_begin.data(), tokens.data(), GROVE_SWEEP_SOUTHEAST};
  float out[8];
  int64_t n = 0;
  ASSERT_EQ(grove_model_run_grids(dag_model_, &grids, nullptr, out, 8, &n), GROVE_OK) << grove_last_error();
  cols[1] = 2;
  EXPECT_EQ(grove_model_run_grids(dag_model_, &grids, nullptr, out, 8, &n), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_model_run_grids: grid 1 is 1 x 2 = 2 cells but grids->token_begin gives it 3 tokens");
  cols[1] = 3;
  rows[0] = 0;
  EXPECT_EQ(grove_model_run_grids(dag_model_, &grids, nullptr, out, 8, &n), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_run_grids: grids->rows[0] is 0; a grid has at least one row");
  rows[0] = 2;
  set_enum(grids.sweep, 4);
  EXPECT_EQ(grove_model_run_grids(dag_model_, &grids, nullptr, out, 8, &n), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(grove_last_error(),
              HasSubstr("grove_model_run_grids: grids->sweep is 4, not one of GROVE_SWEEP_SOUTHEAST"));
  grids.sweep = GROVE_SWEEP_NORTHWEST;
  tokens[6] = 10;  // outside the vocabulary
  EXPECT_EQ(grove_model_run_grids(dag_model_, &grids, nullptr, out, 8, &n), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(),
              AllOf(HasSubstr("grid 2, node 2"), HasSubstr("element 4 + j of the batch's tokens")));
}

TEST_F(CApiErrors, Sequences) {
  testing::TempDir dir;
  ModelFiles f = model_files(dir, "lstm", "H=4,D=3,V=10");
  ModelPtr model = compile_c(f.model_file, f.weights_file.c_str());
  ASSERT_TRUE(model);
  std::vector<int64_t> begin{0, 2, 2};
  std::vector<int32_t> tokens{1, 2};
  grove_sequences sequences{2, begin.data(), tokens.data()};
  float out[8];
  int64_t rows = 0;
  EXPECT_EQ(grove_model_run_sequences(model.get(), &sequences, nullptr, out, 8, &rows), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("sequence 2"));  // empty
  begin = {0, 2, 1};
  EXPECT_EQ(grove_model_run_sequences(model.get(), &sequences, nullptr, out, 8, &rows),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_model_run_sequences: sequences->token_begin[2] = 1 is less than sequences->token_begin[1] = 2; "
      "the offsets must not decrease");
}

TEST_F(CApiErrors, ParamIndex) {
  const char *name;
  const int64_t *shape;
  int32_t rank;
  EXPECT_EQ(grove_model_param(tree_model_, 6, &name, &shape, &rank), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_model_param: index 6 is out of range: model 'TreeLSTM' has 6 parameters (0 to 5)");
  EXPECT_EQ(grove_model_param(tree_model_, -1, &name, &shape, &rank), GROVE_ERROR_INVALID_ARGUMENT);
}

// ---- Weights ---------------------------------------------------------------------------------------

class CApiWeightErrors : public CApiErrors {
 protected:
  void TearDown() override {
    ASSERT_EQ(grove_model_bind_weights_file(tree_model_, tree_files_->weights_file.c_str()), GROVE_OK);
  }
  std::vector<grove_tensor_view> views() {
    std::vector<grove_tensor_view> v;
    for (auto &[name, t] : tree_files_->weights)
      v.push_back({name.c_str(), t.data.data(), t.shape.data(), int32_t(t.shape.size())});
    return v;
  }
  grove_tensor_view &view(std::vector<grove_tensor_view> &v, const std::string &name) {
    for (grove_tensor_view &t : v)
      if (name == t.name) return t;
    throw std::runtime_error("no tensor " + name);
  }
};

TEST_F(CApiWeightErrors, MissingFile) {
  std::string path = dir_->file("absent.safetensors");
  EXPECT_EQ(grove_model_bind_weights_file(tree_model_, path.c_str()), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("cannot open " + path));
}

TEST_F(CApiWeightErrors, WrongShape) {
  std::vector<grove_tensor_view> v = views();
  int64_t small[2] = {2, 2};
  view(v, "W_iou").shape = small;
  for (int copy : {0, 1}) {
    EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), copy), GROVE_ERROR_USER);
    EXPECT_STREQ(
        grove_last_error(),
        "grove_model_bind_weights: tensor 'W_iou' has shape [2, 2] but the model expects shape [12, 3]");
  }
}

TEST_F(CApiWeightErrors, MissingAndExtraTensors) {
  std::vector<grove_tensor_view> v = views();
  v.erase(v.begin());  // U_f, the first in name order
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 1), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("grove_model_bind_weights: missing tensor 'U_f'"));
  v = views();
  float x = 0;
  v.push_back({"extra", &x, nullptr, 0});
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 0), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("tensor 'extra' is not a parameter of model 'TreeLSTM'"));
}

TEST_F(CApiWeightErrors, MalformedViews) {
  SmallTrees t;
  std::vector<float> before = run_c(tree_model_, t.parents());
  std::vector<grove_tensor_view> v = views();
  v[2].data = nullptr;
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 0), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_bind_weights: tensors[2].data is a null pointer");
  v = views();
  v[1].name = nullptr;
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 1), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_bind_weights: tensors[1].name is a null pointer");
  v = views();
  v[3].name = v[0].name;
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 1), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(grove_last_error(), HasSubstr("tensors[0] and tensors[3] are both named"));
  v = views();
  int64_t negative[2] = {-12, 3};
  view(v, "W_iou").shape = negative;
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 1), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(grove_last_error(), HasSubstr("('W_iou'): shape[0] = -12 is negative"));
  v = views();
  view(v, "W_iou").rank = -1;
  EXPECT_EQ(grove_model_bind_weights(tree_model_, v.data(), v.size(), 1), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(grove_last_error(), HasSubstr("('W_iou'): rank -1 is negative"));
  // None of these replaced the bound weights.
  EXPECT_EQ(run_c(tree_model_, t.parents()), before);
}

// ---- Compiling ---------------------------------------------------------------------------------------

TEST(CApiCompileErrors, Arguments) {
  grove_model *model = nullptr;
  std::string file = model_path("treelstm");
  grove_compile_options options{};
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, &options, &model), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_model_compile: give weights_file or options->sizes (exactly one of them), not neither");
  options.sizes = "H=4,D=4,V=4";
  EXPECT_EQ(grove_model_compile(file.c_str(), "w.safetensors", &options, &model),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(grove_last_error(), HasSubstr("not both"));
  options.threads = -1;
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, &options, &model), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_compile: options->threads is -1; it must be at least 0");
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, nullptr, nullptr), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_model_compile: model is a null pointer");
  EXPECT_EQ(model, nullptr);
}

TEST(CApiCompileErrors, BadInputsAreUserErrors) {
  testing::TempDir dir;
  grove_model *model = nullptr;
  std::string file = model_path("treelstm");
  grove_compile_options options{};
  options.sizes = "H=4,D=oops,V=4";
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, &options, &model), GROVE_ERROR_USER);
  EXPECT_STREQ(grove_last_error(), "grove_compile_options.sizes: D must be a positive integer, got 'oops'");
  options.sizes = "H=4,D=4";
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, &options, &model), GROVE_ERROR_USER);
  EXPECT_STREQ(grove_last_error(),
               "grove_compile_options.sizes: model TreeLSTM needs a value for size variable 'V'");
  std::string absent = dir.file("absent.safetensors");
  EXPECT_EQ(grove_model_compile(file.c_str(), absent.c_str(), nullptr, &model), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("cannot open " + absent));
  std::string no_model = dir.file("absent.grove");
  options.sizes = "H=4,D=4,V=4";
  EXPECT_EQ(grove_model_compile(no_model.c_str(), nullptr, &options, &model), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr(no_model));
  options.schedule = "nonsense=1";
  EXPECT_EQ(grove_model_compile(file.c_str(), nullptr, &options, &model), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("nonsense"));
  EXPECT_EQ(model, nullptr);
}

}  // namespace
}  // namespace grove::capi_test
