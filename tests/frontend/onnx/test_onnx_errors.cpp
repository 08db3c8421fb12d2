// The ONNX importer's rejections: each unsupported operator, opset, attribute value and data type, a
// missing input, and truncated or hostile bytes end in a UserError whose message is matched here.
// Small models are built with ONNX's own protobuf classes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/OnnxImporter.h"
#include "onnx/onnx_pb.h"
#include "tests/relay/CodegenTestUtil.h"

namespace grove::onnx_frontend {
namespace {

using relay::testing::user_error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kFixtures = std::string(GROVE_SOURCE_DIR) + "/tests/frontend/onnx/fixtures/";

// A model of one graph, built node by node.
struct ModelBuilder {
  ::onnx::ModelProto model;

  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    auto *o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  ::onnx::GraphProto &graph() { return *model.mutable_graph(); }
  // A graph input; a dimension of -1 is a dim_param.
  void input(const std::string &name, std::vector<int64_t> dims, int elem = ::onnx::TensorProto::FLOAT) {
    auto *in = graph().add_input();
    in->set_name(name);
    auto *t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto *shape = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0)
        shape->add_dim()->set_dim_param("batch");
      else
        shape->add_dim()->set_dim_value(d);
    }
  }
  void output(const std::string &name) { graph().add_output()->set_name(name); }
  ::onnx::NodeProto &node(const std::string &op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs, const std::string &name = "n") {
    auto *n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto &i : inputs) n->add_input(i);
    for (const auto &o : outputs) n->add_output(o);
    return *n;
  }
  ::onnx::TensorProto &initializer(const std::string &name, std::vector<int64_t> dims,
                                   std::vector<float> data) {
    auto *t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : data) t->add_float_data(v);
    return *t;
  }
  std::string import_error() {
    return grove::testing::user_error_or_empty([&] { import_onnx(model.SerializeAsString(), "m.onnx"); });
  }
};

void set_string(::onnx::NodeProto &n, const std::string &name, const std::string &value) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
}

void set_int(::onnx::NodeProto &n, const std::string &name, int64_t value) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

std::string file_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OnnxErrors, ValidModelImports) {
  ModelBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_EQ(b.import_error(), "");
}

TEST(OnnxErrors, UnsupportedOperatorNamesTheNode) {
  ModelBuilder b;
  b.input("x", {2, 4});
  b.node("Relu", {"x"}, {"h"}, "first");
  b.node("Einsum", {"h"}, {"y"}, "act");
  b.output("y");
  EXPECT_THAT(b.import_error(),
              StartsWith("m.onnx: node #1 'act' (Einsum): grove does not support the ONNX operator Einsum; "
                         "supported operators: Abs, Add, AveragePool"));
}

TEST(OnnxErrors, UnsupportedDomain) {
  ModelBuilder b;
  b.input("x", {2, 4});
  b.node("Gelu", {"x"}, {"y"}, "g").set_domain("com.microsoft");
  b.output("y");
  EXPECT_THAT(b.import_error(),
              HasSubstr("node #0 'g' (Gelu): grove does not support the ONNX operator Gelu of the domain "
                        "'com.microsoft'"));
}

TEST(OnnxErrors, OpsetOutOfRange) {
  for (int64_t opset : {10, 18}) {
    ModelBuilder b(opset);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    EXPECT_EQ(b.import_error(),
              fmt::format("'m.onnx' imports opset {} of the default ONNX domain: grove reads "
                          "opsets 11 to 17",
                          opset));
  }
  ModelBuilder none;
  none.model.clear_opset_import();
  none.input("x", {2});
  none.output("x");
  EXPECT_EQ(none.import_error(),
            "'m.onnx' imports no opset of the default ONNX domain: expected opset 11 to 17");
}

TEST(OnnxErrors, EveryOpsetFrom11To17Imports) {
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(file_bytes(kFixtures + "mlp.onnx")));
  for (int64_t opset = 11; opset <= 17; ++opset) {
    model.mutable_opset_import(0)->set_version(opset);
    EXPECT_NO_THROW(import_onnx(model.SerializeAsString(), "m.onnx")) << opset;
  }
}

TEST(OnnxErrors, OperatorNewerThanTheOpset) {
  ModelBuilder b(13);
  b.input("x", {2, 4});
  b.initializer("s", {4}, {1, 1, 1, 1});
  b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
  b.output("y");
  EXPECT_EQ(b.import_error(),
            "m.onnx: node #0 'ln' (LayerNormalization): grove does not support the ONNX operator "
            "LayerNormalization in opset 13 (it reads LayerNormalization from opset 17)");
}

TEST(OnnxErrors, UnsupportedDataTypes) {
  ModelBuilder input;
  input.input("text", {2}, ::onnx::TensorProto::STRING);
  input.output("text");
  EXPECT_THAT(input.import_error(),
              HasSubstr("grove does not support the ONNX data type string (8) of 'text'"));

  ModelBuilder init;
  init.input("x", {2});
  auto &t = init.initializer("w", {2}, {});
  t.set_data_type(::onnx::TensorProto::BFLOAT16);
  init.node("Add", {"x", "w"}, {"y"});
  init.output("y");
  EXPECT_THAT(init.import_error(),
              HasSubstr("grove does not support the ONNX data type bfloat16 (16) of 'w'"));

  ModelBuilder cast;
  cast.input("x", {2});
  set_int(cast.node("Cast", {"x"}, {"y"}, "c"), "to", ::onnx::TensorProto::INT32);
  cast.output("y");
  EXPECT_EQ(cast.import_error(),
            "m.onnx: node #0 'c' (Cast): grove does not support to=int32: grove casts only tensors known at "
            "import time, and this one is a computed float32");
}

TEST(OnnxErrors, MissingInputs) {
  ModelBuilder undefined;
  undefined.input("x", {2});
  undefined.node("Add", {"x", "nowhere"}, {"y"}, "sum");
  undefined.output("y");
  EXPECT_EQ(
      undefined.import_error(),
      "m.onnx: node #0 'sum' (Add): input 1 'nowhere' is not defined by a graph input, an initializer or "
      "an earlier node");

  ModelBuilder absent;
  absent.input("x", {2, 3});
  absent.node("Gemm", {"x"}, {"y"}, "fc");
  absent.output("y");
  EXPECT_EQ(absent.import_error(), "m.onnx: node #0 'fc' (Gemm): the required input 1 (B) is missing");

  ModelBuilder output;
  output.input("x", {2});
  output.output("z");
  EXPECT_EQ(output.import_error(), "'m.onnx': graph output 'z' is not computed by the graph");
}

TEST(OnnxErrors, UnsupportedAttributes) {
  ModelBuilder pad;
  pad.input("x", {1, 1, 4, 4});
  pad.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1));
  set_string(pad.node("Conv", {"x", "w"}, {"y"}, "conv"), "auto_pad", "SAME_UPPER");
  pad.output("y");
  EXPECT_EQ(
      pad.import_error(),
      "m.onnx: node #0 'conv' (Conv): grove does not support auto_pad=SAME_UPPER: grove reads explicit pads "
      "(NOTSET) or VALID");

  ModelBuilder unknown;
  unknown.input("x", {2});
  set_int(unknown.node("Relu", {"x"}, {"y"}, "r"), "alpha", 1);
  unknown.output("y");
  EXPECT_EQ(
      unknown.import_error(),
      "m.onnx: node #0 'r' (Relu): grove does not support the attribute alpha: the operator takes none");

  ModelBuilder lstm;
  lstm.input("x", {3, 1, 2});
  lstm.initializer("W", {1, 8, 2}, std::vector<float>(16, 0.1f));
  lstm.initializer("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
  auto &node = lstm.node("LSTM", {"x", "W", "R"}, {"", "h"}, "rnn");
  set_int(node, "hidden_size", 2);
  auto *acts = node.add_attribute();
  acts->set_name("activations");
  acts->set_type(::onnx::AttributeProto::STRINGS);
  for (const char *a : {"Relu", "Tanh", "Tanh"}) acts->add_strings(a);
  lstm.output("h");
  EXPECT_EQ(
      lstm.import_error(),
      "m.onnx: node #0 'rnn' (LSTM): grove does not support activations=[Relu, Tanh, Tanh]: grove reads the "
      "default activations [Sigmoid, Tanh, Tanh]");

  ModelBuilder direction;
  direction.input("x", {3, 1, 2});
  direction.initializer("W", {1, 8, 2}, std::vector<float>(16, 0.1f));
  direction.initializer("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
  auto &sideways = direction.node("LSTM", {"x", "W", "R"}, {"", "h"}, "rnn");
  set_int(sideways, "hidden_size", 2);
  set_string(sideways, "direction", "sideways");
  direction.output("h");
  EXPECT_EQ(
      direction.import_error(),
      "m.onnx: node #0 'rnn' (LSTM): grove does not support direction=sideways: expected forward, reverse or "
      "bidirectional");
}

TEST(OnnxErrors, LstmDynamicLengthAndPeepholes) {
  ModelBuilder peep;
  peep.input("x", {3, 1, 2});
  peep.initializer("W", {1, 8, 2}, std::vector<float>(16, 0.1f));
  peep.initializer("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
  peep.initializer("P", {1, 6}, std::vector<float>(6, 0.1f));
  set_int(peep.node("LSTM", {"x", "W", "R", "", "", "", "", "P"}, {"", "h"}, "rnn"), "hidden_size", 2);
  peep.output("h");
  EXPECT_EQ(peep.import_error(),
            "m.onnx: node #0 'rnn' (LSTM): grove does not support P=given: grove's LSTM has no peepholes");

  ModelBuilder dynamic;
  dynamic.input("x", {-1, 1, 2});
  dynamic.initializer("W", {1, 8, 2}, std::vector<float>(16, 0.1f));
  dynamic.initializer("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
  set_int(dynamic.node("LSTM", {"x", "W", "R"}, {"", "h"}, "rnn"), "hidden_size", 2);
  dynamic.output("h");
  EXPECT_THAT(
      dynamic.import_error(),
      StartsWith("m.onnx: node #0 'rnn' (LSTM): the sequence length (dimension 0 of 'x') is not known"));
}

TEST(OnnxErrors, ReshapeWithTwoRunTimeDimensions) {
  // Reshaping x to its own run-time shape copies its dimensions (newshape [0, 0]) ...
  ModelBuilder own;
  own.input("x", {-1, -1});
  own.node("Shape", {"x"}, {"s"});
  own.node("Reshape", {"x", "s"}, {"y"}, "r");
  own.output("y");
  EXPECT_EQ(own.import_error(), "");
  // ... but another tensor's two run-time dimensions cannot both be left to the run time.
  ModelBuilder b;
  b.input("x", {-1, -1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Neg", {"x"}, {"t"});
  b.node("Reshape", {"t", "s"}, {"y"}, "r");
  b.output("y");
  EXPECT_EQ(b.import_error(),
            "m.onnx: node #2 'r' (Reshape): input 1 ('s') is a shape with dimensions known only at run time "
            "([?, ?]): grove reshapes with at most one dimension left to the run time");
}

TEST(OnnxErrors, ExpandToAComputedRunTimeDimension) {
  ModelBuilder b;
  b.input("x", {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Add", {"s", "s"}, {"twice"});
  b.node("Expand", {"x", "twice"}, {"y"}, "e");
  b.output("y");
  EXPECT_EQ(
      b.import_error(),
      "m.onnx: node #2 'e' (Expand): input 1 ('twice') is a shape with dimensions known only at run time "
      "([?]): grove expands to a run-time dimension only when it is a tensor's own (read by Shape)");
}

TEST(OnnxErrors, TypeErrorsNameTheNode) {
  ModelBuilder b;
  b.input("a", {2, 3});
  b.input("c", {4, 5});
  b.node("Add", {"a", "c"}, {"y"}, "bad");
  b.output("y");
  EXPECT_THAT(b.import_error(), StartsWith("m.onnx: node #0 'bad' (Add): add: "));
}

TEST(OnnxErrors, TruncatedFile) {
  const std::string bytes = file_bytes(kFixtures + "mlp.onnx");
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(user_error_of([&] { import_onnx(bytes.substr(0, bytes.size() / 2), "half.onnx"); }),
            "'half.onnx' is not an ONNX model: its bytes do not parse as an ONNX ModelProto (a truncated or "
            "corrupt file?)");
  // Every prefix is a result or a UserError.
  for (size_t len = 0; len < bytes.size(); len += 97)
    EXPECT_NO_THROW(user_error_of([&] { import_onnx(bytes.substr(0, len), "prefix.onnx"); })) << len;
  EXPECT_EQ(user_error_of([&] { import_onnx("", "empty.onnx"); }),
            "'empty.onnx' is an ONNX ModelProto without a graph: expected a model with a graph");
  EXPECT_THAT(user_error_of([&] { import_onnx_file(kFixtures + "no_such.onnx"); }),
              StartsWith("cannot read ONNX file '"));
}

TEST(OnnxErrors, HostileTensors) {
  ModelBuilder huge;
  huge.input("x", {2});
  huge.initializer("w", {int64_t(1) << 40, int64_t(1) << 40}, {});
  huge.node("Add", {"x", "w"}, {"y"});
  huge.output("y");
  EXPECT_EQ(huge.import_error(),
            "'m.onnx': tensor 'w' would hold more than 2^28 elements: grove imports tensors "
            "of at most 2^28 elements");

  ModelBuilder negative;
  negative.input("x", {2});
  negative.initializer("w", {-3}, {});
  negative.node("Add", {"x", "w"}, {"y"});
  negative.output("y");
  EXPECT_EQ(negative.import_error(), "'m.onnx': tensor 'w' has dimension -3: expected non-negative sizes");

  ModelBuilder short_raw;
  short_raw.input("x", {4});
  auto &t = short_raw.initializer("w", {4}, {});
  t.set_raw_data(std::string(3, '\0'));
  short_raw.node("Add", {"x", "w"}, {"y"});
  short_raw.output("y");
  EXPECT_EQ(
      short_raw.import_error(),
      "'m.onnx': tensor 'w' of shape (4,) and type float holds 0 value(s) (3 bytes of raw data): expected 4 "
      "value(s)");

  ModelBuilder external;
  external.input("x", {1});
  auto &e = external.initializer("w", {1}, {1});
  e.set_data_location(::onnx::TensorProto::EXTERNAL);
  external.node("Add", {"x", "w"}, {"y"});
  external.output("y");
  EXPECT_EQ(external.import_error(),
            "'m.onnx': tensor 'w' keeps its data outside the model file: grove reads models with the weights "
            "inside");

  ModelBuilder expand;
  expand.input("x", {1});
  auto &shape = *expand.graph().add_initializer();
  shape.set_name("s");
  shape.set_data_type(::onnx::TensorProto::INT64);
  shape.add_dims(2);
  shape.add_int64_data(int64_t(1) << 30);
  shape.add_int64_data(int64_t(1) << 30);
  expand.node("ConstantOfShape", {"s"}, {"y"}, "big");
  expand.output("y");
  EXPECT_THAT(expand.import_error(), HasSubstr("node #0 'big' (ConstantOfShape): tensor 'y' would hold"));
}

// Random byte edits of a real model: each import ends in a module or a UserError (fuzz/fuzz_onnx.cpp
// does this at scale).
TEST(OnnxErrors, MutatedBytesAreErrorsNotCrashes) {
  const std::string bytes = file_bytes(kFixtures + "cnn.onnx");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string m = bytes;
    for (int k = 0; k < 1 + trial % 4; ++k) m[rng() % m.size()] = char(rng());
    try {
      import_onnx(m, "mutated.onnx");
    } catch (const UserError &) {
    }
  }
}

}  // namespace
}  // namespace grove::onnx_frontend
