// The C API's Relay programs (grove_relay_*, include/grove/grove.h) on models/relay: the MLP and the
// binary TreeLSTM and the LSTM (its steps a List, given as one tensor) against their fixtures' expected
// outputs (models/relay/fixtures/make_fixtures.py, an independent NumPy reference), on the VM and the
// interpreter, from a file and from text; then every misuse and bad input, each with the message it must
// carry and no output written.

#include <gmock/gmock.h>
#include <grove/grove.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/relay/NDArrayIO.h"

namespace grove::capi_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kModels = std::string(GROVE_SOURCE_DIR) + "/models/relay/";

struct Close {
  void operator()(grove_relay *p) const { grove_relay_close(p); }
  void operator()(grove_relay_result *r) const { grove_relay_result_free(r); }
};
using ProgramPtr = std::unique_ptr<grove_relay, Close>;
using ResultPtr = std::unique_ptr<grove_relay_result, Close>;

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ProgramPtr open_program(const std::string &path, const grove_relay_options *options = nullptr) {
  grove_relay *p = nullptr;
  EXPECT_EQ(grove_relay_open(path.c_str(), options, &p), GROVE_OK) << grove_last_error();
  return ProgramPtr(p);
}

std::map<std::string, relay::NDArray> fixture(const std::string &name) {
  return relay::read_safetensors_arrays(kModels + "fixtures/" + name + ".safetensors");
}

grove_tensor view(const relay::NDArray &a) {
  return {GROVE_DTYPE_FLOAT32, a.raw(), a.shape().data(), int32_t(a.ndim())};
}

// The tensor inputs of @main, by parameter name from the fixture, in parameter order.
std::vector<grove_tensor> inputs_of(const grove_relay *program,
                                    const std::map<std::string, relay::NDArray> &f) {
  int32_t count = 0;
  EXPECT_EQ(grove_relay_num_params(program, &count), GROVE_OK);
  std::vector<grove_tensor> inputs;
  for (int32_t i = 0; i < count; ++i) {
    grove_relay_param p;
    EXPECT_EQ(grove_relay_param_info(program, i, &p), GROVE_OK);
    if (p.kind != GROVE_RELAY_PARAM_TENSOR && p.kind != GROVE_RELAY_PARAM_TENSOR_LIST) continue;
    inputs.push_back(view(f.at(p.name)));
  }
  return inputs;
}

ResultPtr run(const grove_relay *program, const std::vector<grove_tensor> &inputs,
              const char *trees = nullptr) {
  grove_relay_result *r = nullptr;
  EXPECT_EQ(grove_relay_run(program, inputs.data(), inputs.size(), trees, &r), GROVE_OK)
      << grove_last_error();
  return ResultPtr(r);
}

// The result's tensors, all float32, each compared row after row with `expected`'s elements.
void expect_result(const grove_relay_result *result, const relay::NDArray &expected, int32_t tensors) {
  ASSERT_NE(result, nullptr);
  int32_t count = 0;
  ASSERT_EQ(grove_relay_result_count(result, &count), GROVE_OK);
  ASSERT_EQ(count, tensors);
  const float *want = expected.data<float>();
  int64_t at = 0;
  for (int32_t i = 0; i < count; ++i) {
    grove_tensor t;
    ASSERT_EQ(grove_relay_result_tensor(result, i, &t), GROVE_OK);
    ASSERT_EQ(t.dtype, GROVE_DTYPE_FLOAT32);
    int64_t n = 1;
    for (int32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
    ASSERT_LE(at + n, expected.size());
    for (int64_t k = 0; k < n; ++k, ++at)
      ASSERT_NEAR(static_cast<const float *>(t.data)[k], want[at], 1e-5)
          << "tensor " << i << " element " << k;
  }
  EXPECT_EQ(at, expected.size());
}

TEST(CApiRelay, MlpDescribesMain) {
  ProgramPtr p = open_program(kModels + "mlp.relay");
  int32_t count = 0;
  ASSERT_EQ(grove_relay_num_params(p.get(), &count), GROVE_OK);
  ASSERT_EQ(count, 5);
  grove_relay_param x;
  ASSERT_EQ(grove_relay_param_info(p.get(), 0, &x), GROVE_OK);
  EXPECT_STREQ(x.name, "x");
  EXPECT_STREQ(x.type, "Tensor[(?, 16), float32]");
  EXPECT_EQ(x.kind, GROVE_RELAY_PARAM_TENSOR);
  EXPECT_EQ(x.dtype, GROVE_DTYPE_FLOAT32);
  ASSERT_EQ(x.rank, 2);
  EXPECT_EQ(x.shape[0], -1);
  EXPECT_EQ(x.shape[1], 16);
  const char *type = nullptr;
  ASSERT_EQ(grove_relay_result_type(p.get(), &type), GROVE_OK);
  EXPECT_STREQ(type, "Tensor[(?, 10), float32]");
}

TEST(CApiRelay, MlpMatchesReferenceOnVmAndInterpreter) {
  auto f = fixture("mlp");
  for (grove_relay_executor executor : {GROVE_RELAY_VM, GROVE_RELAY_INTERPRETER}) {
    grove_relay_options options{};
    options.threads = 2;
    options.executor = executor;
    ProgramPtr p = open_program(kModels + "mlp.relay", &options);
    ResultPtr r = run(p.get(), inputs_of(p.get(), f));
    expect_result(r.get(), f.at("expected"), 1);
    grove_tensor t;
    ASSERT_EQ(grove_relay_result_tensor(r.get(), 0, &t), GROVE_OK);
    ASSERT_EQ(t.rank, 2);
    EXPECT_EQ(t.shape[0], 4);
    EXPECT_EQ(t.shape[1], 10);
  }
}

TEST(CApiRelay, TextOpensAsTheFileDoes) {
  auto f = fixture("mlp");
  grove_relay *p = nullptr;
  ASSERT_EQ(grove_relay_open_text(read_file(kModels + "mlp.relay").c_str(), nullptr, &p), GROVE_OK)
      << grove_last_error();
  ProgramPtr program(p);
  ResultPtr r = run(p, inputs_of(p, f));
  // A result is the caller's: it outlives its program.
  program.reset();
  expect_result(r.get(), f.at("expected"), 1);
}

TEST(CApiRelay, TreeLstmRunsTreesThroughGrovesRecursiveCompiler) {
  auto f = fixture("treelstm");
  const std::string trees = read_file(kModels + "fixtures/treelstm_trees.txt");
  for (grove_relay_executor executor : {GROVE_RELAY_VM, GROVE_RELAY_INTERPRETER}) {
    grove_relay_options options{};
    options.threads = 1;
    options.executor = executor;
    ProgramPtr p = open_program(kModels + "treelstm.relay", &options);
    grove_relay_param t;
    ASSERT_EQ(grove_relay_param_info(p.get(), 0, &t), GROVE_OK);
    EXPECT_STREQ(t.name, "trees");
    EXPECT_EQ(t.kind, GROVE_RELAY_PARAM_TREES);
    EXPECT_STREQ(t.type, "List[Tree[int32]]");
    ResultPtr r = run(p.get(), inputs_of(p.get(), f), trees.c_str());
    expect_result(r.get(), f.at("expected"), 6);  // a List of 6 root states [1, H]
  }
}

TEST(CApiRelay, LstmTakesItsStepsAsOneStackedTensor) {
  auto f = fixture("lstm");
  for (grove_relay_executor executor : {GROVE_RELAY_VM, GROVE_RELAY_INTERPRETER}) {
    grove_relay_options options{};
    options.executor = executor;
    ProgramPtr p = open_program(kModels + "lstm.relay", &options);
    grove_relay_param xs;
    ASSERT_EQ(grove_relay_param_info(p.get(), 0, &xs), GROVE_OK);
    EXPECT_STREQ(xs.type, "List[Tensor[(1, ?), float32]]");
    EXPECT_EQ(xs.kind, GROVE_RELAY_PARAM_TENSOR_LIST);
    ASSERT_EQ(xs.rank, 3);
    EXPECT_EQ(xs.shape[0], -1);
    EXPECT_EQ(xs.shape[1], 1);
    EXPECT_EQ(xs.shape[2], -1);
    std::vector<grove_tensor> inputs = inputs_of(p.get(), f);  // xs is [6, 1, 8]: six steps
    ResultPtr r = run(p.get(), inputs);
    expect_result(r.get(), f.at("expected"), 1);
    // A stacked tensor of another rank names the parameter, the list type and the tensor it expects.
    const int64_t flat[] = {6, 8};
    inputs[0].shape = flat;
    inputs[0].rank = 2;
    grove_relay_result *bad = nullptr;
    EXPECT_EQ(grove_relay_run(p.get(), inputs.data(), inputs.size(), nullptr, &bad), GROVE_ERROR_USER);
    EXPECT_THAT(
        grove_last_error(),
        HasSubstr("argument %xs of @main: expected List[Tensor[(1, ?), float32]], given as one tensor of "
                  "dtype float32 and shape (?, 1, ?)"));
  }
}

// ---- Errors --------------------------------------------------------------------------------------

class CApiRelayErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    mlp_ = open_program(kModels + "mlp.relay");
    f_ = fixture("mlp");
    inputs_ = inputs_of(mlp_.get(), f_);
  }
  // Runs the MLP with `inputs`; expects `status` and returns the message; nothing is written.
  std::string run_fails(const std::vector<grove_tensor> &inputs, grove_status status,
                        const char *trees = nullptr) {
    grove_relay_result *sentinel = reinterpret_cast<grove_relay_result *>(0x1);
    grove_relay_result *r = sentinel;
    EXPECT_EQ(grove_relay_run(mlp_.get(), inputs.data(), inputs.size(), trees, &r), status);
    EXPECT_EQ(r, sentinel);
    return grove_last_error();
  }
  template <typename Enum>
  static void set_enum(Enum &field, int value) {
    static_assert(sizeof(Enum) == sizeof(int));
    std::memcpy(&field, &value, sizeof value);
  }

  ProgramPtr mlp_;
  std::map<std::string, relay::NDArray> f_;
  std::vector<grove_tensor> inputs_;
};

TEST_F(CApiRelayErrors, NullPointersNameTheArgument) {
  grove_relay *p = nullptr;
  EXPECT_EQ(grove_relay_open(nullptr, nullptr, &p), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open: path is a null pointer");
  EXPECT_EQ(grove_relay_open((kModels + "mlp.relay").c_str(), nullptr, nullptr),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open: program is a null pointer");
  EXPECT_EQ(grove_relay_open_text(nullptr, nullptr, &p), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open_text: text is a null pointer");
  int32_t count;
  EXPECT_EQ(grove_relay_num_params(nullptr, &count), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_num_params: program is a null pointer");
  grove_relay_param param;
  EXPECT_EQ(grove_relay_param_info(nullptr, 0, &param), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(grove_relay_param_info(mlp_.get(), 0, nullptr), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_param_info: param is a null pointer");
  grove_relay_result *r = nullptr;
  EXPECT_EQ(grove_relay_run(nullptr, inputs_.data(), inputs_.size(), nullptr, &r),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_run: program is a null pointer");
  EXPECT_EQ(grove_relay_run(mlp_.get(), inputs_.data(), inputs_.size(), nullptr, nullptr),
            GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_run: result is a null pointer");
  EXPECT_EQ(grove_relay_run(mlp_.get(), nullptr, 5, nullptr, &r), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_run: inputs is a null pointer");
  EXPECT_EQ(grove_relay_result_count(nullptr, &count), GROVE_ERROR_INVALID_ARGUMENT);
  grove_tensor t;
  EXPECT_EQ(grove_relay_result_tensor(nullptr, 0, &t), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_result_tensor: result is a null pointer");
  grove_relay_close(nullptr);
  grove_relay_result_free(nullptr);
}

TEST_F(CApiRelayErrors, IndicesOutOfRange) {
  grove_relay_param param;
  EXPECT_EQ(grove_relay_param_info(mlp_.get(), 5, &param), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_relay_param_info: index 5 is out of range: @main has 5 parameters (0 to 4)");
  EXPECT_EQ(grove_relay_param_info(mlp_.get(), -1, &param), GROVE_ERROR_INVALID_ARGUMENT);
  ResultPtr r = run(mlp_.get(), inputs_);
  grove_tensor t;
  EXPECT_EQ(grove_relay_result_tensor(r.get(), 1, &t), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(),
               "grove_relay_result_tensor: index 1 is out of range: the result has 1 tensors (0 to 0)");
}

TEST_F(CApiRelayErrors, MissingFileAndMalformedModule) {
  grove_relay *p = reinterpret_cast<grove_relay *>(0x1);
  EXPECT_EQ(grove_relay_open("/nonexistent/model.relay", nullptr, &p), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("/nonexistent/model.relay"));
  EXPECT_EQ(p, reinterpret_cast<grove_relay *>(0x1));
  EXPECT_EQ(grove_relay_open_text(
                "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2), float32]) {\n  add(%x,\n}\n", nullptr, &p),
            GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("grove_relay_open_text:4:1: error: expected an expression"));
  EXPECT_EQ(p, reinterpret_cast<grove_relay *>(0x1));
  // Well formed, ill typed.
  EXPECT_EQ(grove_relay_open_text("#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2), float32], %y: "
                                  "Tensor[(3), float32]) {\n  add(%x, %y)\n}\n",
                                  nullptr, &p),
            GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("grove_relay_open_text:"));
  EXPECT_EQ(grove_relay_open_text("#[version = \"0.0.5\"]\ndef @f(%x: Tensor[(2), float32]) {\n  %x\n}\n",
                                  nullptr, &p),
            GROVE_ERROR_USER);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open_text: the program has no @main to run");
}

TEST_F(CApiRelayErrors, BadOptions) {
  grove_relay *p = nullptr;
  grove_relay_options options{};
  options.threads = -1;
  EXPECT_EQ(grove_relay_open((kModels + "mlp.relay").c_str(), &options, &p), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open: options->threads is -1; it must be at least 0");
  options.threads = 0;
  set_enum(options.executor, 7);
  EXPECT_EQ(grove_relay_open((kModels + "mlp.relay").c_str(), &options, &p), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(
      grove_last_error(),
      "grove_relay_open: options->executor is 7, not one of GROVE_RELAY_VM (0), GROVE_RELAY_INTERPRETER (1)");
  options.executor = GROVE_RELAY_VM;
  const char *targets[] = {"dnnl", nullptr};
  options.targets = targets;
  options.num_targets = 2;
  EXPECT_EQ(grove_relay_open((kModels + "mlp.relay").c_str(), &options, &p), GROVE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(grove_last_error(), "grove_relay_open: options->targets[1] is a null pointer");
  targets[1] = "no-such-target";
  EXPECT_EQ(grove_relay_open((kModels + "mlp.relay").c_str(), &options, &p), GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("no-such-target"));
}

TEST_F(CApiRelayErrors, WrongCountNamesTheParameters) {
  std::vector<grove_tensor> four(inputs_.begin(), inputs_.begin() + 4);
  EXPECT_EQ(run_fails(four, GROVE_ERROR_USER),
            kModels + "mlp.relay: @main takes 5 tensors (%x, %w1, %b1, %w2, %b2); got 4");
}

TEST_F(CApiRelayErrors, WrongShapeOrDtypeNamesTheParameterAndItsType) {
  std::vector<grove_tensor> inputs = inputs_;
  const int64_t bad_shape[] = {4, 15};
  inputs[0].shape = bad_shape;
  EXPECT_THAT(run_fails(inputs, GROVE_ERROR_USER),
              AllOf(HasSubstr("argument %x of @main: expected Tensor[(?, 16), float32]"),
                    HasSubstr("shape (4, 15)")));
  inputs = inputs_;
  // b1's 32 floats read as 16 doubles.
  const int64_t half[] = {16};
  inputs[2].dtype = GROVE_DTYPE_FLOAT64;
  inputs[2].shape = half;
  EXPECT_THAT(
      run_fails(inputs, GROVE_ERROR_USER),
      AllOf(HasSubstr("argument %b1 of @main: expected Tensor[(32), float32]"), HasSubstr("float64")));
}

TEST_F(CApiRelayErrors, MalformedTensorDescriptors) {
  std::vector<grove_tensor> inputs = inputs_;
  inputs[1].rank = -2;
  EXPECT_EQ(run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_relay_run: inputs[1]: rank -2 is negative");
  inputs = inputs_;
  inputs[1].shape = nullptr;
  EXPECT_EQ(run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_relay_run: inputs[1].shape is a null pointer");
  inputs = inputs_;
  inputs[1].data = nullptr;
  EXPECT_EQ(run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_relay_run: inputs[1].data is a null pointer");
  inputs = inputs_;
  const int64_t negative[] = {-3, 16};
  inputs[0].shape = negative;
  EXPECT_EQ(run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
            "grove_relay_run: inputs[0]: shape[0] = -3 is negative");
  const int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  inputs[0].shape = huge;
  EXPECT_THAT(run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
              HasSubstr("more elements than memory can hold"));
  inputs = inputs_;
  set_enum(inputs[3].dtype, 12);
  EXPECT_EQ(
      run_fails(inputs, GROVE_ERROR_INVALID_ARGUMENT),
      "grove_relay_run: inputs[3].dtype is 12, not one of GROVE_DTYPE_BOOL (0) to GROVE_DTYPE_FLOAT64 (11)");
}

TEST_F(CApiRelayErrors, TreesWhereNoneAreTakenAndNoneWhereTheyAre) {
  EXPECT_EQ(run_fails(inputs_, GROVE_ERROR_USER, "(0 1)"),
            kModels +
                "mlp.relay: trees were given, but @main has no parameter of type List[Tree[int32]] or "
                "List[Rose[int32]] that takes them (its parameters: %x, %w1, %b1, %w2, %b2)");
  ProgramPtr tree = open_program(kModels + "treelstm.relay");
  auto f = fixture("treelstm");
  std::vector<grove_tensor> inputs = inputs_of(tree.get(), f);
  grove_relay_result *r = nullptr;
  EXPECT_EQ(grove_relay_run(tree.get(), inputs.data(), inputs.size(), nullptr, &r), GROVE_ERROR_USER);
  EXPECT_EQ(
      std::string(grove_last_error()),
      kModels +
          "treelstm.relay: @main's parameter %trees: List[Tree[int32]] takes trees, and none were given");
  EXPECT_EQ(grove_relay_run(tree.get(), inputs.data(), inputs.size(), "(0 (0 1) (0 2)", &r),
            GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("trees:1:"));
  // A ternary node in a binary tree.
  EXPECT_EQ(grove_relay_run(tree.get(), inputs.data(), inputs.size(), "(0 (0 1) (0 2) (0 3))", &r),
            GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("trees:1"));
}

}  // namespace
}  // namespace grove::capi_test
