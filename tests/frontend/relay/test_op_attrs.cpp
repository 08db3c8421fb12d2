// Typed operator attributes (frontend/relay/ops/OpAttrs.h): for every struct, the defaults, good
// attributes as the text format writes them, and each malformed attribute's message — directly,
// and through type inference, which names the call's file:line:col and the op. The textual
// attributes still print exactly as written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "frontend/relay/ops/Reduce.h"
#include "frontend/relay/ops/Transform.h"
#include "tests/UserError.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kHeader = "#[version = \"0.0.5\"]\n";

// The attributes of `call`, an op call over %x and %w as the text format writes it.
Attrs attrs_in(const std::string &call) {
  Module m = parse_module(kHeader + "def @main(%x, %w) {\n  " + call + "\n}\n", "t.relay");
  const auto *c = (*m.find_function("main")).as<Function>()->body.as<Call>();
  EXPECT_NE(c, nullptr) << call;
  return c ? c->attrs : Attrs();
}

// The OpError message of `parse` on the attributes of `call`, or "" when it throws none.
template <typename Parse>
std::string error_of(Parse parse, const std::string &call) {
  const Attrs attrs = attrs_in(call);
  try {
    parse(attrs);
  } catch (const OpError &e) {
    return e.what();
  }
  return "";
}

// The type error of `main`'s one line `body` over %x and %w of the given types: line 2 of t.relay.
std::string type_error(const std::string &x, const std::string &w, const std::string &body) {
  return user_error_of([&] {
    Module m =
        parse_module(kHeader + "def @main(%x: " + x + ", %w: " + w + ") {\n  " + body + "\n}\n", "t.relay");
    infer_types(m);
  });
}

// Each call's attributes make `parse` throw its message.
struct Malformed {
  std::string call, message;
};
template <typename Parse>
void expect_errors(Parse parse, const std::vector<Malformed> &cases) {
  for (const Malformed &c : cases) EXPECT_EQ(error_of(parse, c.call), c.message) << c.call;
}

// Type inference reports `message` at the call (line 3, column 3), naming `op`.
void expect_located(const std::string &x, const std::string &w, const std::string &body,
                    const std::string &op, const std::string &message) {
  EXPECT_THAT(type_error(x, w, body), AllOf(HasSubstr("t.relay:3:3"), HasSubstr(op), HasSubstr(message)))
      << body;
}

const std::string kImage = "Tensor[(1, 4, 8, 8), float32]", kWeight = "Tensor[(4, 4, 3, 3), float32]";

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, NormalizeAxisAndAxisAttr) {
  EXPECT_EQ(normalize_axis(-1, 3), 2);
  EXPECT_EQ(normalize_axis(2, 3), 2);
  EXPECT_EQ(normalize_axis(3, 3, "axis", 1), 3);  // expand_dims's extra position
  try {
    normalize_axis(3, 2);
    ADD_FAILURE() << "no OpError";
  } catch (const OpError &e) {
    EXPECT_STREQ(e.what(), "axis 3 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  }
  EXPECT_EQ(axis_attr(attrs_in("nn.softmax(%x, axis=-2)"), -1, 3), 1);
  EXPECT_EQ(axis_attr(attrs_in("nn.softmax(%x)"), -1, 3), 2);
  expect_errors([](const Attrs &a) { axis_attr(a, 0, 2); },
                {{"nn.softmax(%x, axis=\"a\")", "attribute 'axis' must be an integer, not a string"}});
  EXPECT_TRUE(attr_none(attrs_in("squeeze(%x, axis=None)"), "axis"));
  EXPECT_TRUE(attr_none(attrs_in("squeeze(%x)"), "axis"));
  EXPECT_FALSE(attr_none(attrs_in("squeeze(%x, axis=[0])"), "axis"));
}

// ---------------------------------------------------------------------------------------------
// nn.conv2d, the pools
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, Conv2DDefaults) {
  const Conv2DAttrs a = conv2d_attrs(Attrs());
  EXPECT_EQ(a.strides, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(a.dilation, (std::array<int64_t, 2>{1, 1}));
  EXPECT_FALSE(a.padding.any());
  EXPECT_EQ(a.groups, 1);
  EXPECT_FALSE(a.channels.has_value());
  EXPECT_FALSE(a.kernel_size.has_value());
  EXPECT_EQ(a.data_layout, "NCHW");
  EXPECT_EQ(a.kernel_layout, "OIHW");
  EXPECT_EQ(a.out_layout, "");
  EXPECT_EQ(a.out_dtype, "");
}

TEST(OpAttrs, Conv2DGoodAttributes) {
  const Conv2DAttrs a =
      conv2d_attrs(attrs_in("nn.conv2d(%x, %w, strides=[2, 1], padding=[1, 2], dilation=2, groups=2, "
                            "channels=4, kernel_size=[3, 3], data_layout=\"NCHW\", out_dtype=\"float32\")"));
  EXPECT_EQ(a.strides, (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(a.dilation, (std::array<int64_t, 2>{2, 2}));  // one value stands for both
  EXPECT_EQ(a.padding.top, 1);                            // 2 values: (top/bottom, left/right)
  EXPECT_EQ(a.padding.left, 2);
  EXPECT_EQ(a.padding.bottom, 1);
  EXPECT_EQ(a.padding.right, 2);
  EXPECT_EQ(a.groups, 2);
  EXPECT_EQ(a.channels, 4);
  EXPECT_EQ(a.kernel_size, (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(a.out_dtype, "float32");
  const Pad one = conv2d_attrs(attrs_in("nn.conv2d(%x, %w, padding=3)")).padding;
  EXPECT_EQ(one.top + one.left + one.bottom + one.right, 12);
  const Pad four = conv2d_attrs(attrs_in("nn.conv2d(%x, %w, padding=[1, 2, 3, 4])")).padding;
  EXPECT_EQ(four.top * 1000 + four.left * 100 + four.bottom * 10 + four.right, 1234);
  // None is absent.
  EXPECT_FALSE(conv2d_attrs(attrs_in("nn.conv2d(%x, %w, channels=None)")).channels.has_value());
}

TEST(OpAttrs, Conv2DMalformedAttributes) {
  auto parse = [](const Attrs &a) { conv2d_attrs(a); };
  expect_errors(
      parse,
      {{"nn.conv2d(%x, %w, padding=[1, 1, 1])", "padding must have 1, 2 or 4 values, found 3"},
       {"nn.conv2d(%x, %w, padding=[1, -1])", "padding must be non-negative"},
       {"nn.conv2d(%x, %w, padding=\"same\")",
        "attribute 'padding' must be a list of integers, not a string"},
       {"nn.conv2d(%x, %w, strides=[0, 1])", "strides must be positive, found (0, 1)"},
       {"nn.conv2d(%x, %w, strides=[1, 1, 1])", "strides must have 2 values, found 3"},
       {"nn.conv2d(%x, %w, dilation=[1.5f, 1])",
        "attribute 'dilation' must be a list of integers, not a float"},
       {"nn.conv2d(%x, %w, groups=0)", "groups must be positive, found 0"},
       {"nn.conv2d(%x, %w, channels=\"4\")", "attribute 'channels' must be an integer, not a string"},
       {"nn.conv2d(%x, %w, kernel_size=[3])", ""},  // one value stands for both
       {"nn.conv2d(%x, %w, kernel_size=[3, 3, 3])", "kernel_size must have 2 values, found 3"},
       {"nn.conv2d(%x, %w, data_layout=1)", "attribute 'data_layout' must be a string, not an integer"},
       {"nn.conv2d(%x, %w, out_dtype=1)", "attribute 'out_dtype' must be a string, not an integer"}});
}

TEST(OpAttrs, Conv2DErrorsNameTheCallsLocation) {
  expect_located(kImage, kWeight, "nn.conv2d(%x, %w, padding=[1, 1, 1])", "nn.conv2d",
                 "padding must have 1, 2 or 4 values, found 3");
  expect_located(kImage, kWeight, "nn.conv2d(%x, %w, groups=-2)", "nn.conv2d",
                 "groups must be positive, found -2");
  // The layouts are read as written; the relation says which it supports.
  expect_located(kImage, kWeight, "nn.conv2d(%x, %w, data_layout=\"NHWC\")", "nn.conv2d",
                 "grove supports data_layout NCHW only, found \"NHWC\"");
}

TEST(OpAttrs, Pool2DDefaultsGoodAndMalformed) {
  const Pool2DAttrs d = pool2d_attrs(attrs_in("nn.max_pool2d(%x, pool_size=[2, 2])"));
  EXPECT_EQ(d.pool_size, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(d.strides, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(d.dilation, (std::array<int64_t, 2>{1, 1}));
  EXPECT_FALSE(d.padding.any());
  EXPECT_EQ(d.layout, "NCHW");
  EXPECT_EQ(d.out_layout, "");
  EXPECT_FALSE(d.ceil_mode);
  EXPECT_FALSE(d.count_include_pad);
  const Pool2DAttrs a = pool2d_attrs(
      attrs_in("nn.avg_pool2d(%x, pool_size=3, strides=[2, 2], padding=[1, 1, 0, 0], ceil_mode=True, "
               "count_include_pad=True)"));
  EXPECT_EQ(a.pool_size, (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(a.strides, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(a.padding.top + a.padding.left, 2);
  EXPECT_EQ(a.padding.bottom + a.padding.right, 0);
  EXPECT_TRUE(a.ceil_mode);
  EXPECT_TRUE(a.count_include_pad);
  auto parse = [](const Attrs &x) { pool2d_attrs(x); };
  expect_errors(parse, {{"nn.max_pool2d(%x)", "attribute 'pool_size' is required"},
                        {"nn.max_pool2d(%x, pool_size=[0, 2])", "pool_size must be positive, found (0, 2)"},
                        {"nn.max_pool2d(%x, pool_size=2, padding=[1, 1, 1])",
                         "padding must have 1, 2 or 4 values, found 3"},
                        {"nn.max_pool2d(%x, pool_size=2, ceil_mode=2)",
                         "attribute 'ceil_mode' must be True or False, not an integer"}});
  expect_located(kImage, kWeight, "nn.max_pool2d(%x, pool_size=[2, 2], strides=[1, 0])", "nn.max_pool2d",
                 "strides must be positive, found (1, 0)");
}

// ---------------------------------------------------------------------------------------------
// nn.batch_matmul, the norms, clip
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, BatchMatmulNormAndClip) {
  const BatchMatmulAttrs m = batch_matmul_attrs(Attrs());
  EXPECT_FALSE(m.transpose_a);
  EXPECT_TRUE(m.transpose_b);
  EXPECT_EQ(m.out_dtype, "");
  const BatchMatmulAttrs t =
      batch_matmul_attrs(attrs_in("nn.batch_matmul(%x, %w, transpose_a=True, transpose_b=False)"));
  EXPECT_TRUE(t.transpose_a);
  EXPECT_FALSE(t.transpose_b);
  expect_errors([](const Attrs &a) { batch_matmul_attrs(a); },
                {{"nn.batch_matmul(%x, %w, transpose_a=\"yes\")",
                  "attribute 'transpose_a' must be True or False, not a string"}});

  const NormAttrs bn = norm_attrs(Attrs(), 1), ln = norm_attrs(Attrs(), -1);
  EXPECT_EQ(bn.axis, 1);
  EXPECT_EQ(ln.axis, -1);
  EXPECT_DOUBLE_EQ(bn.epsilon, 1e-5);
  EXPECT_TRUE(bn.center && bn.scale);
  const NormAttrs n =
      norm_attrs(attrs_in("nn.layer_norm(%x, %w, %w, axis=0, epsilon=0.5f, center=False)"), -1);
  EXPECT_EQ(n.axis, 0);
  EXPECT_DOUBLE_EQ(n.epsilon, 0.5);
  EXPECT_FALSE(n.center);
  EXPECT_TRUE(n.scale);
  expect_errors(
      [](const Attrs &a) { norm_attrs(a, -1); },
      {{"nn.layer_norm(%x, %w, %w, epsilon=\"e\")", "attribute 'epsilon' must be a number, not a string"}});

  const ClipAttrs c = clip_attrs(attrs_in("clip(%x, a_min=-1f, a_max=2)"));
  EXPECT_DOUBLE_EQ(c.a_min, -1.0);
  EXPECT_DOUBLE_EQ(c.a_max, 2.0);
  expect_errors([](const Attrs &a) { clip_attrs(a); },
                {{"clip(%x, a_min=0f)", "attribute 'a_max' is required"}});
  expect_errors([](const Attrs &a) { clip_attrs(a); },
                {{"clip(%x, a_min=[0], a_max=1f)", "attribute 'a_min' must be a number, not a list"}});
  expect_located("Tensor[(4), float32]", "float32", "clip(%x, a_min=0f)", "clip",
                 "attribute 'a_max' is required");
}

TEST(OpAttrs, Dense) {
  const DenseAttrs d = dense_attrs(Attrs());
  EXPECT_FALSE(d.units.has_value());
  EXPECT_EQ(d.out_dtype, "");
  EXPECT_FALSE(dense_attrs(attrs_in("nn.dense(%x, %w, units=None)")).units.has_value());
  const DenseAttrs a = dense_attrs(attrs_in("nn.dense(%x, %w, units=8, out_dtype=\"float32\")"));
  EXPECT_EQ(a.units, 8);
  EXPECT_EQ(a.out_dtype, "float32");
  expect_errors(
      [](const Attrs &x) { dense_attrs(x); },
      {{"nn.dense(%x, %w, units=\"8\")", "attribute 'units' must be an integer, not a string"},
       {"nn.dense(%x, %w, out_dtype=1)", "attribute 'out_dtype' must be a string, not an integer"}});
  expect_located("Tensor[(2, 5), float32]", "Tensor[(3, 5), float32]", "nn.dense(%x, %w, units=[3])",
                 "nn.dense", "attribute 'units' must be an integer, not a list");
}

TEST(OpAttrs, BiasAdd) {
  EXPECT_EQ(bias_add_attrs(Attrs()).axis, 1);
  EXPECT_EQ(bias_add_attrs(attrs_in("nn.bias_add(%x, %w, axis=-1)")).axis, -1);  // as written
  expect_errors([](const Attrs &x) { bias_add_attrs(x); },
                {{"nn.bias_add(%x, %w, axis=\"c\")", "attribute 'axis' must be an integer, not a string"}});
  expect_located("Tensor[(2, 5), float32]", "Tensor[(5), float32]", "nn.bias_add(%x, %w, axis=2)",
                 "nn.bias_add", "axis 2 is out of range for a tensor of rank 2");
}

TEST(OpAttrs, Pad) {
  const PadAttrs p = pad_attrs(attrs_in("nn.pad(%x, %w, pad_width=[[1, 2], [0, 3]])"));
  EXPECT_EQ(p.before, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.after, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.mode, "constant");
  EXPECT_EQ(pad_attrs(attrs_in("nn.pad(%x, %w, pad_width=[[1, 1]], pad_mode=\"reflect\")")).mode, "reflect");
  const std::string pairs =
      "pad_width must be a list of [before, after] pairs of non-negative integers, one per dimension of the "
      "data";
  expect_errors([](const Attrs &x) { pad_attrs(x); },
                {{"nn.pad(%x, %w)", "attribute 'pad_width' is required"},
                 {"nn.pad(%x, %w, pad_width=1)", pairs},
                 {"nn.pad(%x, %w, pad_width=[[1, 2, 3]])", pairs},
                 {"nn.pad(%x, %w, pad_width=[[1, -1]])", pairs},
                 {"nn.pad(%x, %w, pad_width=[[1, 0.5f]])", pairs},
                 {"nn.pad(%x, %w, pad_width=[[1, 1]], pad_mode=\"wrap\")",
                  "pad_mode must be \"constant\", \"edge\" or \"reflect\", found \"wrap\""},
                 {"nn.pad(%x, %w, pad_width=[[1, 1]], pad_mode=0)",
                  "attribute 'pad_mode' must be a string, not an integer"}});
  // The count of pairs is the relation's, against the data.
  expect_located("Tensor[(2, 3), float32]", "float32", "nn.pad(%x, %w, pad_width=[[1, 1]])", "nn.pad",
                 "pad_width has 1 pair(s) but the data (2, 3) has rank 2");
  expect_located("Tensor[(2, 3), float32]", "float32", "nn.pad(%x, %w, pad_width=[[1, 1], [0, -2]])",
                 "nn.pad", pairs);
}

// ---------------------------------------------------------------------------------------------
// concatenate, expand_dims, zeros/ones/full, take, one_hot
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, ConcatenateAndExpandDims) {
  EXPECT_EQ(concatenate_attrs(Attrs()).axis, 0);
  EXPECT_EQ(concatenate_attrs(attrs_in("concatenate((%x, %w), axis=-1)")).axis, -1);
  expect_errors([](const Attrs &x) { concatenate_attrs(x); },
                {{"concatenate((%x, %w), axis=[1])", "attribute 'axis' must be an integer, not a list"}});
  expect_located("Tensor[(2, 3), float32]", "Tensor[(2, 3), float32]", "concatenate((%x, %w), axis=2)",
                 "concatenate", "out of range");

  const ExpandDimsAttrs e = expand_dims_attrs(attrs_in("expand_dims(%x, axis=-1)"));
  EXPECT_EQ(e.axis, -1);
  EXPECT_EQ(e.num_newaxis, 1);
  EXPECT_EQ(expand_dims_attrs(attrs_in("expand_dims(%x, axis=0, num_newaxis=2)")).num_newaxis, 2);
  expect_errors([](const Attrs &x) { expand_dims_attrs(x); },
                {{"expand_dims(%x)", "attribute 'axis' is required"},
                 {"expand_dims(%x, axis=0, num_newaxis=-1)", "num_newaxis must be >= 0, found -1"},
                 {"expand_dims(%x, axis=\"0\")", "attribute 'axis' must be an integer, not a string"}});
  expect_located("Tensor[(2, 3), float32]", "float32", "expand_dims(%x, axis=0, num_newaxis=-2)",
                 "expand_dims", "num_newaxis must be >= 0, found -2");
}

TEST(OpAttrs, Init) {
  const InitAttrs z = init_attrs(attrs_in("zeros(shape=[2, 3])"));
  EXPECT_EQ(z.shape, (Shape{2, 3}));
  EXPECT_EQ(z.dtype, "");
  EXPECT_EQ(init_attrs(attrs_in("ones(shape=[], dtype=\"int32\")")).dtype, "int32");
  EXPECT_EQ(init_attrs(attrs_in("zeros(shape=[1], dtype=None)")).dtype, "");
  expect_errors([](const Attrs &x) { init_attrs(x); },
                {{"zeros(dtype=\"float32\")", "attribute 'shape' is required"},
                 {"zeros(shape=[2, -1])", "shape [2, -1] has a negative dimension"},
                 {"zeros(shape=[2], dtype=1)", "attribute 'dtype' must be a string, not an integer"}});
  expect_located("float32", "float32", "zeros(shape=[-3])", "zeros", "shape [-3] has a negative dimension");
}

TEST(OpAttrs, Take) {
  const TakeAttrs d = take_attrs(Attrs());
  EXPECT_FALSE(d.axis.has_value());  // the flattened data
  EXPECT_EQ(d.batch_dims, 0);
  EXPECT_EQ(d.mode, "clip");
  EXPECT_FALSE(take_attrs(attrs_in("take(%x, %w, axis=None)")).axis.has_value());
  const TakeAttrs a = take_attrs(attrs_in("take(%x, %w, axis=-1, mode=\"wrap\")"));
  EXPECT_EQ(a.axis, -1);
  EXPECT_EQ(a.mode, "wrap");
  expect_errors(
      [](const Attrs &x) { take_attrs(x); },
      {{"take(%x, %w, batch_dims=1)", "grove supports take with batch_dims=0 only"},
       {"take(%x, %w, mode=\"nearest\")", "mode must be \"clip\", \"wrap\" or \"fast\", found \"nearest\""},
       {"take(%x, %w, axis=\"0\")", "attribute 'axis' must be an integer, not a string"}});
  expect_located("Tensor[(4, 3), float32]", "Tensor[(2), int32]", "take(%x, %w, axis=0, mode=\"x\")", "take",
                 "mode must be \"clip\", \"wrap\" or \"fast\", found \"x\"");
}

TEST(OpAttrs, OneHot) {
  const OneHotAttrs d = one_hot_attrs(Attrs());
  EXPECT_EQ(d.depth, 1);
  EXPECT_EQ(d.axis, -1);
  EXPECT_FALSE(d.dtype.has_value());  // the on value's
  EXPECT_FALSE(one_hot_attrs(attrs_in("one_hot(%x, %w, %w, dtype=None)")).dtype.has_value());
  const OneHotAttrs a = one_hot_attrs(attrs_in("one_hot(%x, %w, %w, depth=4, axis=0, dtype=\"int32\")"));
  EXPECT_EQ(a.depth, 4);
  EXPECT_EQ(a.axis, 0);
  EXPECT_EQ(a.dtype, DType::Int32);
  expect_errors([](const Attrs &x) { one_hot_attrs(x); },
                {{"one_hot(%x, %w, %w, depth=-1)", "depth must be >= 0, found -1"},
                 {"one_hot(%x, %w, %w, dtype=\"int3\")", "dtype \"int3\" is not a dtype grove knows"},
                 {"one_hot(%x, %w, %w, dtype=3)", "attribute 'dtype' must be a string, not an integer"},
                 {"one_hot(%x, %w, %w, axis=\"0\")", "attribute 'axis' must be an integer, not a string"}});
  // The axis's range is the relation's, against the indices' rank.
  expect_located("Tensor[(3), int32]", "float32", "one_hot(%x, %w, %w, depth=2, axis=2)", "one_hot",
                 "axis 2 is out of range for indices of rank 1 (expected -1 <= axis <= 1)");
}

// ---------------------------------------------------------------------------------------------
// split, reshape, squeeze, transpose, strided_slice
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, Split) {
  const SplitAttrs s = split_attrs(attrs_in("split(%x, indices_or_sections=3)"));
  EXPECT_EQ(s.sections, 3);
  EXPECT_TRUE(s.indices.empty());
  EXPECT_EQ(s.axis, 0);
  const SplitAttrs l = split_attrs(attrs_in("split(%x, indices_or_sections=[1, 4], axis=-1)"));
  EXPECT_FALSE(l.sections.has_value());
  EXPECT_EQ(l.indices, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(l.axis, -1);
  auto parse = [](const Attrs &a) { split_attrs(a); };
  expect_errors(
      parse,
      {{"split(%x)", "attribute 'indices_or_sections' is required"},
       {"split(%x, indices_or_sections=0)", "indices_or_sections must be positive, found 0"},
       {"split(%x, indices_or_sections=[2, 2])",
        "indices_or_sections must be a strictly ascending list of positive indices, found [2, 2]"},
       {"split(%x, indices_or_sections=\"2\")",
        "attribute 'indices_or_sections' must be a list of integers, not a string"},
       {"split(%x, indices_or_sections=2, axis=[0])", "attribute 'axis' must be an integer, not a list"}});
  expect_located("Tensor[(6, 2), float32]", "float32", "split(%x, indices_or_sections=[0, 3])", "split",
                 "indices_or_sections must be a strictly ascending list of positive indices");
}

TEST(OpAttrs, ReshapeSqueezeTranspose) {
  const ReshapeAttrs r = reshape_attrs(attrs_in("reshape(%x, newshape=[-1, 0, -4, 2, -1])"));
  EXPECT_EQ(r.newshape, (std::vector<int64_t>{-1, 0, -4, 2, -1}));
  EXPECT_FALSE(r.allowzero);
  EXPECT_TRUE(reshape_attrs(attrs_in("reshape(%x, newshape=[0], allowzero=True)")).allowzero);
  EXPECT_EQ(reshape_attrs(attrs_in("reshape(%x, newshape=5)")).newshape, (std::vector<int64_t>{5}));
  expect_errors([](const Attrs &a) { reshape_attrs(a); },
                {{"reshape(%x)", "attribute 'newshape' is required"}});
  expect_errors([](const Attrs &a) { reshape_attrs(a); },
                {{"reshape(%x, newshape=[2, \"a\"])",
                  "attribute 'newshape' must be a list of integers, not a string"}});
  expect_located("Tensor[(6, 2), float32]", "float32", "reshape(%x, newshape=[5, -1])", "reshape",
                 "cannot reshape (6, 2) with newshape=[5, -1]");

  EXPECT_FALSE(squeeze_attrs(Attrs()).axis.has_value());
  EXPECT_FALSE(squeeze_attrs(attrs_in("squeeze(%x, axis=None)")).axis.has_value());
  EXPECT_EQ(squeeze_attrs(attrs_in("squeeze(%x, axis=[0, -1])")).axis, (std::vector<int64_t>{0, -1}));
  expect_errors([](const Attrs &a) { squeeze_attrs(a); },
                {{"squeeze(%x, axis=[0.5f])", "attribute 'axis' must be a list of integers, not a float"}});
  expect_located("Tensor[(6, 1), float32]", "float32", "squeeze(%x, axis=[0])", "squeeze",
                 "cannot squeeze axis 0 of (6, 1): its size is 6, not 1");

  EXPECT_FALSE(transpose_attrs(Attrs()).axes.has_value());
  EXPECT_EQ(transpose_permutation(3, transpose_attrs(Attrs())), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(transpose_permutation(3, transpose_attrs(attrs_in("transpose(%x, axes=[0, -1, 1])"))),
            (std::vector<int64_t>{0, 2, 1}));
  expect_errors(
      [](const Attrs &a) { transpose_attrs(a); },
      {{"transpose(%x, axes=\"01\")", "attribute 'axes' must be a list of integers, not a string"}});
}

TEST(OpAttrs, StridedSlice) {
  const StridedSliceAttrs s = strided_slice_attrs(attrs_in("strided_slice(%x, begin=[1], end=[-1])"));
  EXPECT_EQ(s.begin, (std::vector<int64_t>{1}));
  EXPECT_EQ(s.end, (std::vector<int64_t>{-1}));
  EXPECT_TRUE(s.strides.empty());
  EXPECT_FALSE(s.axes.has_value());
  EXPECT_FALSE(s.size_mode);
  const StridedSliceAttrs t = strided_slice_attrs(
      attrs_in("strided_slice(%x, begin=[0], end=[2], strides=[1], axes=[1], slice_mode=\"size\")"));
  EXPECT_EQ(t.axes, (std::vector<int64_t>{1}));
  EXPECT_TRUE(t.size_mode);
  const std::vector<SliceAxis> axes = strided_slice_axes({4, 6}, s);  // axis 0 from 1 to 3, axis 1 whole
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].begin, 1);
  EXPECT_EQ(axes[0].size, 2);
  EXPECT_EQ(axes[1].size, 6);
  auto parse = [](const Attrs &a) { strided_slice_attrs(a); };
  expect_errors(parse, {{"strided_slice(%x, end=[1])", "attribute 'begin' is required"},
                        {"strided_slice(%x, begin=[1])", "attribute 'end' is required"},
                        {"strided_slice(%x, begin=[0], end=[1], slice_mode=\"step\")",
                         "slice_mode must be \"end\" or \"size\", found \"step\""},
                        {"strided_slice(%x, begin=[0], end=[1], strides=\"1\")",
                         "attribute 'strides' must be a list of integers, not a string"}});
  expect_located("Tensor[(4), float32]", "float32", "strided_slice(%x, begin=[0], end=[1], slice_mode=\"x\")",
                 "strided_slice", "slice_mode must be");
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

TEST(OpAttrs, Reduce) {
  const ReduceAttrs d = reduce_attrs(Attrs());
  EXPECT_TRUE(d.axis.empty());
  EXPECT_FALSE(d.keepdims || d.exclude || d.select_last_index);
  EXPECT_TRUE(reduce_attrs(attrs_in("sum(%x, axis=None)")).axis.empty());
  const ReduceAttrs a = reduce_attrs(attrs_in("sum(%x, axis=[0, -1], keepdims=True, exclude=True)"));
  EXPECT_EQ(a.axis, (std::vector<int64_t>{0, -1}));
  EXPECT_TRUE(a.keepdims && a.exclude);
  EXPECT_EQ(reduce_attrs(attrs_in("sum(%x, axis=1)")).axis, (std::vector<int64_t>{1}));
  EXPECT_TRUE(reduce_attrs(attrs_in("argmax(%x, select_last_index=True)")).select_last_index);
  const ReducePlan plan = plan_reduce({2, 3, 4}, a);  // exclude: every axis but 0 and 2
  EXPECT_EQ(plan.reduced, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(plan.out_shape, (Shape{2, 1, 4}));
  auto parse = [](const Attrs &x) { reduce_attrs(x); };
  expect_errors(parse,
                {{"sum(%x, axis=\"0\")", "attribute 'axis' must be a list of integers, not a string"},
                 {"sum(%x, keepdims=\"yes\")", "attribute 'keepdims' must be True or False, not a string"},
                 {"sum(%x, exclude=2)", "attribute 'exclude' must be True or False, not an integer"}});
  expect_located("Tensor[(2, 3), float32]", "float32", "sum(%x, axis=[0, 2])", "sum",
                 "axis 2 is out of range for a tensor of rank 2");
}

// The textual attributes are what prints: a call keeps its attributes as written, in their order,
// however the typed struct normalizes them.
TEST(OpAttrs, AttributesPrintAsWritten) {
  const std::string text =
      kHeader +
      "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) {\n"
      "  nn.conv2d(%x, %w, padding=[1, 1], strides=1, groups=1)\n"
      "}\n";
  Module m = parse_module(text, "t.relay");
  infer_types(m);
  EXPECT_THAT(print_module(m).text, HasSubstr("nn.conv2d(%x, %w, padding=[1, 1], strides=1, groups=1)"));
}

// ---------------------------------------------------------------------------------------------
// One parse per call: type inference caches the struct, every reader takes it
// ---------------------------------------------------------------------------------------------

// The body of @main after type inference: one conv2d call over an image and a weight.
const Call &typed_conv2d(Module &m) {
  m = parse_module(kHeader + "def @main(%x: " + kImage + ", %w: " + kWeight +
                       ") {\n  nn.conv2d(%x, %w, padding=[1, 2], strides=2)\n}\n",
                   "t.relay");
  infer_types(m);
  return *(*m.find_function("main")).as<Function>()->body.as<Call>();
}

TEST(OpAttrs, TypeInferenceCachesTheParsedStructOnTheCall) {
  Module m;
  const Call &call = typed_conv2d(m);
  const Conv2DAttrs *typed = call.attrs.typed<Conv2DAttrs>();
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->strides, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(typed->padding.top, 1);
  EXPECT_EQ(typed->padding.left, 2);
  EXPECT_EQ(call.attrs.typed<Pool2DAttrs>(), nullptr);  // another family's struct: none
  // An untyped call's attributes carry none; the reader parses them.
  EXPECT_EQ(attrs_in("nn.conv2d(%x, %w, strides=2)").typed<Conv2DAttrs>(), nullptr);
}

TEST(OpAttrs, ReadersTakeTheCachedStruct) {
  // A cache that differs from the text shows which one the reader returns: the cached struct.
  Module m;
  const Call &call = typed_conv2d(m);
  Conv2DAttrs changed = conv2d_attrs(call.attrs);
  changed.groups = 4;
  call.attrs.cache_typed(changed);
  EXPECT_EQ(conv2d_attrs(call.attrs).groups, 4);
  // A copy shares it; with() and without() make new attributes, parsed from their text again; the
  // cache is no part of the value.
  Attrs copy = call.attrs;
  EXPECT_EQ(conv2d_attrs(copy).groups, 4);
  EXPECT_EQ(conv2d_attrs(call.attrs.with("dilation", AttrValue::of_int(1))).groups, 1);
  EXPECT_EQ(conv2d_attrs(call.attrs.without("strides")).groups, 1);
  EXPECT_TRUE(copy == attrs_in("nn.conv2d(%x, %w, padding=[1, 2], strides=2)"));
}

TEST(OpAttrs, MalformedAttributesAreNotCachedAndStillReportedWhereWritten) {
  const Attrs bad = attrs_in("nn.conv2d(%x, %w, padding=[1, 2, 3])");
  cache_typed_attrs("nn.conv2d", bad);
  EXPECT_EQ(bad.typed<Conv2DAttrs>(), nullptr);
  expect_located(kImage, kWeight, "nn.conv2d(%x, %w, padding=[1, 2, 3])", "nn.conv2d",
                 "padding must have 1, 2 or 4 values, found 3");
  // An op without a family here caches nothing.
  const Attrs softmax = attrs_in("nn.softmax(%x, axis=1)");
  cache_typed_attrs("nn.softmax", softmax);
  EXPECT_EQ(softmax.typed<ReduceAttrs>(), nullptr);
}

}  // namespace
}  // namespace grove::relay
