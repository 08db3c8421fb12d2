// ONNX models exported by PyTorch (tests/frontend/onnx/fixtures/make_onnx_fixtures.py), imported and run on
// the interpreter and on the VM, against PyTorch's outputs (computed in float64, rounded to float32).
// Tolerance, every test: max |grove - torch| <= 1e-5 * max(1, max |torch|) — 1e-5 relative to the
// output's scale, the bar (the outputs are of order 1; measured errors are about 1e-7).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/relay/VMRunner.h"
#include "backends/relay/vm/VM.h"
#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"

namespace grove::onnx_frontend {
namespace {

using namespace relay;

const std::string kFixtures = std::string(GROVE_SOURCE_DIR) + "/tests/frontend/onnx/fixtures/";

constexpr double kRelativeTolerance = 1e-5;

void expect_close(const NDArray &got, const NDArray &want, const std::string &what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape())
      << what << ": " << shape_to_string(got.shape()) << " vs " << shape_to_string(want.shape());
  double scale = 1, worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::abs(want.element_as_double(i)));
  for (int64_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(got.element_as_double(i) - want.element_as_double(i)));
  EXPECT_LE(worst, kRelativeTolerance * scale) << what << ": max abs error " << worst;
}

Module import(const std::string &name) { return import_onnx_file(kFixtures + name + ".onnx"); }

// Runs @main of `name` on `input` with the interpreter and the VM and checks both against `output`.
void check_model(const std::string &name, const std::string &input, const std::string &output) {
  Module m = import(name);
  std::vector<Value> args{tensor_value(read_npy_array(kFixtures + input))};
  const NDArray want = read_npy_array(kFixtures + output);
  expect_close(tensor_of(run_main(m, args)), want, name + " on the interpreter");
  expect_close(tensor_of(make_vm(m)->run_main(args)), want, name + " on the VM");
}

TEST(OnnxModels, MlpGemmReluTanhLogSoftmax) { check_model("mlp", "mlp.input.npy", "mlp.output.npy"); }

TEST(OnnxModels, MlpDynamicBatchIsAnyDim) {
  Module m = import("mlp");
  const auto *main = m.find_function("main")->as<Function>();
  EXPECT_EQ(to_string(main->params[0].as<Var>()->type_annotation), "Tensor[(?, 16), float32]");
  check_model("mlp", "mlp.b1.input.npy", "mlp.b1.output.npy");  // batch 1 through the same module
}

TEST(OnnxModels, CnnConvBatchNormPoolsFlattenGemm) { check_model("cnn", "cnn.input.npy", "cnn.output.npy"); }

// Conv1d, MaxPool1d and AvgPool1d (read as 2-D windows of height 1), LeakyReLU, torch.maximum/minimum.
TEST(OnnxModels, Cnn1dLeakyReluMaxMin) { check_model("cnn1d", "cnn1d.input.npy", "cnn1d.output.npy"); }

TEST(OnnxModels, LstmIsGrovesCompiledFold) {
  Module m = import("lstm");
  ASSERT_NE(m.find_function("lstm"), nullptr);
  std::vector<Value> args{tensor_value(read_npy_array(kFixtures + "lstm.input.npy"))};
  const NDArray want = read_npy_array(kFixtures + "lstm.output.npy");
  expect_close(tensor_of(run_main(m, args)), want, "lstm on the interpreter");
  auto vm = make_vm(m);
  expect_close(tensor_of(vm->run_main(args)), want, "lstm on the VM");
  // The whole sequence is one batched call of grove's compiled sequence model.
  EXPECT_EQ(vm->stats().recursive_calls, 1u);
  EXPECT_EQ(vm->stats().recursive_compiles, 1u);
  EXPECT_EQ(vm->stats().recursive_fallbacks, 0u);
}

// Exported with a dynamic batch axis, PyTorch's zero initial state is a ConstantOfShape of the
// input's run-time batch: broadcast at run time, still zero, so the fold is still grove's.
TEST(OnnxModels, LstmDynamicBatch) {
  Module m = import("lstm_batch");
  const auto *main = m.find_function("main")->as<Function>();
  EXPECT_EQ(to_string(main->params[0].as<Var>()->type_annotation), "Tensor[(4, ?, 8), float32]");
  auto vm = make_vm(m);
  for (const char *name : {"lstm_batch", "lstm_batch.b1"}) {  // batch 2 (exported) and 5
    std::vector<Value> args{tensor_value(read_npy_array(kFixtures + name + ".input.npy"))};
    const NDArray want = read_npy_array(kFixtures + name + ".output.npy");
    expect_close(tensor_of(run_main(m, args)), want, std::string(name) + " on the interpreter");
    expect_close(tensor_of(vm->run_main(args)), want, std::string(name) + " on the VM");
  }
  EXPECT_EQ(vm->stats().recursive_calls, 2u);
  EXPECT_EQ(vm->stats().recursive_fallbacks, 0u);
}

TEST(OnnxModels, GruIsGrovesCompiledFold) {
  Module m = import("gru");
  ASSERT_NE(m.find_function("gru"), nullptr);
  std::vector<Value> args{tensor_value(read_npy_array(kFixtures + "gru.input.npy"))};
  const NDArray want = read_npy_array(kFixtures + "gru.output.npy");
  expect_close(tensor_of(run_main(m, args)), want, "gru on the interpreter");
  auto vm = make_vm(m);
  expect_close(tensor_of(vm->run_main(args)), want, "gru on the VM");
  EXPECT_EQ(vm->stats().recursive_calls, 1u);
  EXPECT_EQ(vm->stats().recursive_fallbacks, 0u);
}

// nn.LSTM(num_layers=2, bidirectional=True): the first layer's Y feeds the second, so it is unrolled
// in @main; the second's two directions are grove's compiled folds, the reverse one over the
// reversed list.
TEST(OnnxModels, LstmStackedBidirectional) {
  Module m = import("lstm_stack");
  std::vector<Value> args{tensor_value(read_npy_array(kFixtures + "lstm_stack.input.npy"))};
  const NDArray want = read_npy_array(kFixtures + "lstm_stack.output.npy");
  expect_close(tensor_of(run_main(m, args)), want, "lstm_stack on the interpreter");
  auto vm = make_vm(m);
  expect_close(tensor_of(vm->run_main(args)), want, "lstm_stack on the VM");
  EXPECT_EQ(vm->stats().recursive_calls, 2u);
  EXPECT_EQ(vm->stats().recursive_fallbacks, 0u);
}

// A bidirectional GRU whose Y (every step's output, both directions) is the result.
TEST(OnnxModels, GruBidirectionalSequenceOutput) {
  check_model("gru_bidirectional", "gru_bidirectional.input.npy", "gru_bidirectional.output.npy");
}

TEST(OnnxModels, TransformerEncoderLayer) {
  check_model("encoder", "encoder.input.npy", "encoder.output.npy");
}

TEST(OnnxModels, TransformerEncoderLayerDynamicBatch) {
  Module m = import("encoder");
  const auto *main = m.find_function("main")->as<Function>();
  EXPECT_EQ(to_string(main->params[0].as<Var>()->type_annotation), "Tensor[(?, 6, 16), float32]");
  check_model("encoder", "encoder.b1.input.npy", "encoder.b1.output.npy");  // batch 3, exported at 2
}

// Opset 14: the exporter writes LayerNormalization as ReduceMean, Sub, Pow, Sqrt and Div.
TEST(OnnxModels, TransformerEncoderLayerLayerNormDecomposed) {
  check_model("encoder_opset14", "encoder_opset14.input.npy", "encoder_opset14.output.npy");
  check_model("encoder_opset14", "encoder_opset14.b1.input.npy", "encoder_opset14.b1.output.npy");  // batch 1
}

// ops.onnx (onnx.helper, NumPy's output): a rank-4 MatMul, Clip, Abs, Pow 0.5, Neg, Exp, Equal,
// Where, ReduceSum (axes as an input), Squeeze, Slice with a negative step, Unsqueeze, Expand, Log,
// GlobalMaxPool, Flatten at axis 2 and 0, ConstantOfShape, ReduceMax, Transpose.
TEST(OnnxModels, OperatorsBeyondTorchsExports) {
  Module m = import("ops");
  std::vector<Value> args{tensor_value(read_npy_array(kFixtures + "ops.input.0.npy")),
                          tensor_value(read_npy_array(kFixtures + "ops.input.1.npy"))};
  const NDArray want = read_npy_array(kFixtures + "ops.output.npy");
  expect_close(tensor_of(run_main(m, args)), want, "ops on the interpreter");
  expect_close(tensor_of(make_vm(m)->run_main(args)), want, "ops on the VM");
}

// The imported module printed as Relay text with its sidecar reads back as the same program.
TEST(OnnxModels, ImportedTextRoundTrips) {
  for (const char *name : {"mlp", "cnn", "cnn1d", "lstm", "lstm_batch", "lstm_stack", "gru",
                           "gru_bidirectional", "encoder", "encoder_opset14"}) {
    Module m = import(name);
    const std::string path = ::testing::TempDir() + "/grove_onnx_" + name + ".relay";
    write_relay_file(path, m);
    Module back = parse_relay_file(path);
    infer_types(back);
    std::vector<Value> args{tensor_value(read_npy_array(kFixtures + name + ".input.npy"))};
    expect_close(tensor_of(run_main(back, args)), read_npy_array(kFixtures + name + ".output.npy"),
                 std::string(name) + " read back from Relay text");
  }
}

TEST(OnnxModels, ReadProgramFileDispatchesOnTheFile) {
  EXPECT_TRUE(is_onnx_file(kFixtures + "mlp.onnx"));
  EXPECT_FALSE(is_onnx_file(std::string(GROVE_SOURCE_DIR) + "/models/relay/mlp.relay"));
  // An ONNX model under another extension is still recognised by its first byte.
  const std::string copy = ::testing::TempDir() + "/grove_onnx_mlp.model";
  std::filesystem::copy_file(kFixtures + "mlp.onnx", copy, std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(is_onnx_file(copy));
  EXPECT_NE(read_program_file(copy).find_function("main"), nullptr);
  EXPECT_NE(
      read_program_file(std::string(GROVE_SOURCE_DIR) + "/models/relay/mlp.relay").find_function("main"),
      nullptr);
}

}  // namespace
}  // namespace grove::onnx_frontend
