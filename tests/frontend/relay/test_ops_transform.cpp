// The transform ops (concatenate, split, strided_slice, take, reshape, transpose, squeeze,
// expand_dims, zeros, ones, full, tile, one_hot, layout_transform, nn.batch_flatten, zeros_like,
// ones_like): type relations and kernels against NumPy
// (tests/relay/fixtures/ops_transform.json, made by make_op_fixtures.py), unknown dims `?`, the
// run-time checks a `?` postpones, and the error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/ops/Op.h"
#include "tests/UserError.h"
#include "tests/relay/OpFixtures.h"

namespace grove::relay {
namespace {

using testing::arrays_close;
using testing::attrs_of;
using ::testing::HasSubstr;
using testing::i;
using testing::input_types;
using testing::ints;
using testing::less_precise;
using testing::load_op_cases;
using testing::op;
using testing::op_error;
using testing::OpCase;
using testing::result_shapes;
using testing::s;
using testing::shape_of;
using testing::tensor;
using testing::type_of;

constexpr int64_t Q = kAnyDim;

// concatenate takes its fields as one tuple argument; every other op one type per input.
std::vector<Type> arg_types(const std::string &name, const std::vector<Type> &inputs) {
  if (name == "concatenate") return {TupleType::make(inputs)};
  return inputs;
}

// Data movement is exact: every fixture output must match bit for bit.
TEST(TransformOps, RelationsAndKernelsMatchNumPy) {
  const std::vector<OpCase> cases = load_op_cases("ops_transform.json");
  ASSERT_GE(cases.size(), 40u);
  for (const OpCase &c : cases) {
    SCOPED_TRACE(c.name);
    const OpDef &def = op(c.op);
    const Type result = def.relation(arg_types(c.op, input_types(c)), c.attrs);
    ASSERT_TRUE(result.defined());
    if (c.op == "split") {
      const auto *tup = result.as<TupleType>();
      ASSERT_NE(tup, nullptr) << to_string(result);
      ASSERT_EQ(tup->fields.size(), c.outputs.size());
      for (size_t k = 0; k < c.outputs.size(); ++k)
        EXPECT_EQ(to_string(tup->fields[k]), to_string(type_of(c.outputs[k])));
    } else {
      EXPECT_EQ(to_string(result), to_string(type_of(c.outputs[0])));
    }
    const std::vector<NDArray> got = def.kernel(c.inputs, c.attrs);
    ASSERT_EQ(got.size(), c.outputs.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(arrays_close(got[k], c.outputs[k], 0.0, 0.0)) << "output " << k;
  }
}

// Replacing any one input dimension by `?` gives a result that is `?` or the concrete size in every
// dimension (squeeze with axis=None is the exception: it needs every dimension, tested below).
TEST(TransformOps, UnknownDimsGiveLessPreciseResults) {
  for (const OpCase &c : load_op_cases("ops_transform.json")) {
    const AttrValue *axis = c.attrs.find("axis");
    if (c.op == "squeeze" && (!axis || axis->kind == AttrValue::Kind::None)) continue;
    const OpDef &def = op(c.op);
    const std::vector<Type> concrete = input_types(c);
    const std::vector<Shape> want = result_shapes(def.relation(arg_types(c.op, concrete), c.attrs));
    for (size_t a = 0; a < concrete.size(); ++a)
      for (size_t d = 0; d < c.inputs[a].shape().size(); ++d) {
        SCOPED_TRACE(c.name + ", input " + std::to_string(a) + " dim " + std::to_string(d) + " = ?");
        std::vector<Type> types = concrete;
        Shape shape = c.inputs[a].shape();
        shape[d] = Q;
        types[a] = tensor(shape, c.inputs[a].dtype());
        const std::vector<Shape> got = result_shapes(def.relation(arg_types(c.op, types), c.attrs));
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(less_precise(got[k], want[k]));
      }
  }
}

TEST(TransformOps, UnknownDimsPropagateAsTvm) {
  const auto reshape = [](Shape in, std::vector<int64_t> newshape) {
    return shape_of(op("reshape").relation({tensor(in)}, attrs_of({{"newshape", ints(newshape)}})));
  };
  EXPECT_EQ(reshape({Q, 3, 4}, {-1, 12}), (Shape{Q, 12}));
  EXPECT_EQ(reshape({2, Q, 4}, {0, -1}), (Shape{2, Q}));
  EXPECT_EQ(reshape({2, 3, Q}, {6, -1}), (Shape{6, Q}));
  EXPECT_EQ(reshape({Q, 3, 4}, {-3, -2}), (Shape{Q, 4}));
  EXPECT_EQ(reshape({Q, 6}, {0, -4, 2, -1}), (Shape{Q, 2, 3}));

  // concatenate: the axis sums (`?` if a part is `?`); other dims take the known size.
  const Attrs axis1 = attrs_of({{"axis", i(1)}});
  EXPECT_EQ(shape_of(op("concatenate").relation({TupleType::make({tensor({Q, 3}), tensor({2, 4})})}, axis1)),
            (Shape{2, 7}));
  EXPECT_EQ(shape_of(op("concatenate").relation({TupleType::make({tensor({2, Q}), tensor({2, 5})})}, axis1)),
            (Shape{2, Q}));

  const Type halves = op("split").relation({tensor({Q, 4})}, attrs_of({{"indices_or_sections", i(2)}}));
  EXPECT_EQ(to_string(halves), "(Tensor[(?, 4), float32], Tensor[(?, 4), float32])");
  const Type pieces = op("split").relation({tensor({Q})}, attrs_of({{"indices_or_sections", ints({1})}}));
  EXPECT_EQ(to_string(pieces), "(Tensor[(1), float32], Tensor[(?), float32])");

  EXPECT_EQ(shape_of(op("strided_slice")
                         .relation({tensor({Q, 5})}, attrs_of({{"begin", ints({1, 0})},
                                                               {"end", ints({3, 4})},
                                                               {"strides", ints({1, 2})}}))),
            (Shape{Q, 2}));
  EXPECT_EQ(shape_of(op("take").relation({tensor({Q, 4}), tensor({2, 2}, DType::Int32)}, axis1)),
            (Shape{Q, 2, 2}));
  EXPECT_EQ(shape_of(op("squeeze").relation({tensor({Q, 1, 3})}, attrs_of({{"axis", ints({1})}}))),
            (Shape{Q, 3}));
  EXPECT_EQ(shape_of(op("transpose").relation({tensor({Q, 3, 4})}, attrs_of({{"axes", ints({2, 0, 1})}}))),
            (Shape{4, Q, 3}));
}

TEST(TransformOps, IncompleteArgumentsGiveNoTypeYet) {
  const Type hole = IncompleteType::make();
  EXPECT_FALSE(op("reshape").relation({hole}, attrs_of({{"newshape", ints({-1})}})).defined());
  EXPECT_FALSE(op("concatenate").relation({hole}, {}).defined());
  EXPECT_FALSE(op("concatenate").relation({TupleType::make({tensor({2}), hole})}, {}).defined());
  EXPECT_FALSE(op("take").relation({tensor({3}), hole}, {}).defined());
  EXPECT_FALSE(op("full").relation({hole}, attrs_of({{"shape", ints({2})}})).defined());
  EXPECT_FALSE(op("split").relation({hole}, attrs_of({{"indices_or_sections", i(2)}})).defined());
}

TEST(TransformOps, TablePatternsFollowTvm) {
  EXPECT_EQ(op("concatenate").pattern, OpPattern::Injective);
  EXPECT_EQ(op("reshape").pattern, OpPattern::Injective);
  EXPECT_EQ(op("expand_dims").pattern, OpPattern::Broadcast);
  EXPECT_EQ(op("full").pattern, OpPattern::ElemWise);
  EXPECT_EQ(op("zeros").num_args, 0);
  EXPECT_EQ(op("take").num_args, 2);
}

// What a `?` hid in the type is checked by the kernel, with the shapes in the message.
TEST(TransformOps, KernelsCheckWhatUnknownDimsHid) {
  NDArray a(DType::Float32, {2, 3}), b(DType::Float32, {3, 3});
  EXPECT_THAT(op_error([&] {
                op("concatenate").kernel({a, b}, attrs_of({{"axis", i(1)}}));
              }),
              HasSubstr("field 1 is (3, 3) but an earlier field has 2 in dimension 0"));
  EXPECT_THAT(op_error([&] {
                op("squeeze").kernel({a}, attrs_of({{"axis", ints({1})}}));
              }),
              HasSubstr("cannot squeeze axis 1 of (2, 3): its size is 3, not 1"));
  EXPECT_THAT(op_error([&] {
                op("reshape").kernel({a}, attrs_of({{"newshape", ints({4, -1})}}));
              }),
              HasSubstr("the -1 entry cannot be inferred: 6 elements do not divide by 4"));
  EXPECT_THAT(op_error([&] {
                op("split").kernel({b}, attrs_of({{"indices_or_sections", i(2)}}));
              }),
              HasSubstr("cannot split a dimension of size 3 into 2 equal sections"));
}

TEST(TransformOps, ErrorsSayWhatWasExpectedAndFound) {
  const Type t234 = tensor({2, 3, 4});
  auto rel_error = [](const std::string &name, std::vector<Type> args, Attrs attrs) {
    return op_error([&] { op(name).relation(args, attrs); });
  };
  EXPECT_THAT(rel_error("reshape", {t234}, attrs_of({{"newshape", ints({4, 7})}})),
              HasSubstr("the result (4, 7) has 28 elements but the data has 24"));
  EXPECT_THAT(rel_error("reshape", {t234}, attrs_of({{"newshape", ints({-1, -1})}})),
              HasSubstr("at most one entry may be -1"));
  EXPECT_THAT(rel_error("reshape", {t234}, attrs_of({{"newshape", ints({-5})}})),
              HasSubstr("-5 is not a size or one of the special values"));
  EXPECT_THAT(rel_error("reshape", {t234}, {}), HasSubstr("attribute 'newshape' is required"));
  EXPECT_THAT(rel_error("squeeze", {tensor({Q, 1})}, {}),
              HasSubstr("squeeze with axis=None needs every dimension known, found (?, 1)"));
  EXPECT_THAT(rel_error("transpose", {t234}, attrs_of({{"axes", ints({0, 0, 1})}})),
              HasSubstr("names axis 0 twice"));
  EXPECT_THAT(rel_error("transpose", {t234}, attrs_of({{"axes", ints({1, 0})}})),
              HasSubstr("axes [1, 0] has 2 entries but the data has rank 3"));
  EXPECT_THAT(rel_error("concatenate", {TupleType::make({tensor({2}), tensor({2}, DType::Int32)})}, {}),
              HasSubstr("field 0 is float32 and field 1 is int32"));
  EXPECT_THAT(rel_error("concatenate", {TupleType::make({tensor({2}), tensor({2, 1})})}, {}),
              HasSubstr("all tensors must have the same rank"));
  EXPECT_THAT(rel_error("concatenate", {tensor({2})}, {}),
              HasSubstr("expected a tuple of tensors, found Tensor[(2), float32]"));
  EXPECT_THAT(rel_error("concatenate", {TupleType::make({tensor({2, 2})})}, attrs_of({{"axis", i(2)}})),
              HasSubstr("axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)"));
  EXPECT_THAT(rel_error("split", {tensor({6})}, attrs_of({{"indices_or_sections", ints({3, 2})}})),
              HasSubstr("strictly ascending list of positive indices, found [3, 2]"));
  EXPECT_THAT(rel_error("split", {tensor({6})}, attrs_of({{"indices_or_sections", ints({6})}})),
              HasSubstr("must be less than the dimension's size 6"));
  EXPECT_THAT(rel_error("strided_slice", {tensor({5})},
                        attrs_of({{"begin", ints({0})}, {"end", ints({5})}, {"strides", ints({0})}})),
              HasSubstr("strides may not be 0"));
  EXPECT_THAT(rel_error("strided_slice", {tensor({5})}, attrs_of({{"begin", ints({3})}, {"end", ints({1})}})),
              HasSubstr("begin 3 and end 1 select nothing with stride 1 on axis 0 of size 5"));
  EXPECT_THAT(rel_error("strided_slice", {tensor({5})},
                        attrs_of({{"begin", ints({0})}, {"end", ints({2})}, {"slice_mode", s("step")}})),
              HasSubstr("slice_mode must be \"end\" or \"size\""));
  EXPECT_THAT(rel_error("take", {tensor({3}), tensor({2})}, {}),
              HasSubstr("the indices must be integers, found float32"));
  EXPECT_THAT(rel_error("take", {tensor({3}), tensor({2}, DType::Int32)}, attrs_of({{"mode", s("raise")}})),
              HasSubstr("mode must be \"clip\", \"wrap\" or \"fast\""));
  EXPECT_THAT(rel_error("expand_dims", {tensor({2})}, attrs_of({{"axis", i(3)}})),
              HasSubstr("axis 3 is out of range for a tensor of rank 1 (expected -2 <= axis < 2)"));
  EXPECT_THAT(rel_error("full", {tensor({2})}, attrs_of({{"shape", ints({2})}})),
              HasSubstr("the fill value must be a scalar, found shape (2,)"));
  EXPECT_THAT(rel_error("zeros", {}, attrs_of({{"dtype", s("float32")}})),
              HasSubstr("attribute 'shape' is required"));
  EXPECT_THAT(rel_error("ones", {}, attrs_of({{"shape", ints({2})}, {"dtype", s("float31")}})),
              HasSubstr("dtype \"float31\" is not a dtype grove knows"));
  EXPECT_THAT(rel_error("reshape", {TupleType::make({})}, attrs_of({{"newshape", ints({1})}})),
              HasSubstr("expected the data to be a tensor, found ()"));

  // take's "fast" mode leaves out-of-range indices undefined in TVM; grove reports them.
  NDArray data(DType::Float32, {3}), idx = NDArray::scalar(DType::Int64, 5);
  EXPECT_THAT(op_error([&] {
                op("take").kernel({data, idx}, attrs_of({{"axis", i(0)}, {"mode", s("fast")}}));
              }),
              HasSubstr("index 5 is out of range for a dimension of size 3 (mode \"fast\")"));
}

// tile (TVM's TileRel) and one_hot (OneHotRel): shapes with `?`, dtypes, and the errors.
TEST(TransformOps, TileAndOneHotRelations) {
  auto type = [](const std::string &name, std::vector<Type> args, Attrs attrs) {
    return to_string(op(name).relation(args, attrs));
  };
  auto rel_error = [](const std::string &name, std::vector<Type> args, Attrs attrs) {
    return op_error([&] { op(name).relation(args, attrs); });
  };
  EXPECT_EQ(op("tile").pattern, OpPattern::Injective);
  EXPECT_EQ(op("one_hot").pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(op("one_hot").num_args, 3);
  EXPECT_EQ(op("one_hot").attr_names, (std::vector<std::string>{"depth", "axis", "dtype"}));
  EXPECT_EQ(type("tile", {tensor({2, Q}, DType::Int32)}, attrs_of({{"reps", ints({2, 3})}})),
            "Tensor[(4, ?), int32]");
  EXPECT_EQ(type("tile", {tensor({2, 3})}, attrs_of({{"reps", ints({2})}})), "Tensor[(2, 6), float32]");
  EXPECT_EQ(type("tile", {tensor({3})}, attrs_of({{"reps", ints({2, 1, 2})}})), "Tensor[(2, 1, 6), float32]");
  EXPECT_THAT(rel_error("tile", {tensor({3})}, attrs_of({{"reps", ints({2, -1})}})),
              HasSubstr("reps [2, -1] has a negative entry"));
  EXPECT_THAT(rel_error("tile", {tensor({3})}, {}), HasSubstr("attribute 'reps' is required"));

  const Type on = tensor({}), off = tensor({});
  const Attrs hot = attrs_of({{"depth", i(4)}, {"axis", i(1)}, {"dtype", s("float32")}});
  EXPECT_EQ(type("one_hot", {tensor({Q, 3}, DType::Int32), on, off}, hot), "Tensor[(?, 4, 3), float32]");
  EXPECT_EQ(type("one_hot", {tensor({5}, DType::Int64), tensor({}, DType::Int32), tensor({}, DType::Int32)},
                 attrs_of({{"depth", i(3)}})),
            "Tensor[(5, 3), int32]");
  EXPECT_FALSE(op("one_hot").relation({IncompleteType::make(), on, off}, hot).defined());
  EXPECT_THAT(rel_error("one_hot", {tensor({2}), on, off}, hot),
              HasSubstr("the indices must be integers, found float32"));
  EXPECT_THAT(rel_error("one_hot", {tensor({2}, DType::Int32), tensor({1}), off}, hot),
              HasSubstr("on_value and off_value must be scalars, found shapes (1,) and ()"));
  EXPECT_THAT(
      rel_error("one_hot", {tensor({2}, DType::Int32), on, off}, attrs_of({{"depth", i(2)}, {"axis", i(2)}})),
      HasSubstr("axis 2 is out of range for indices of rank 1 (expected -1 <= axis <= 1)"));
  EXPECT_THAT(rel_error("one_hot", {tensor({2}, DType::Int32), on, off}, attrs_of({{"dtype", s("complex")}})),
              HasSubstr("dtype \"complex\" is not a dtype grove knows"));
}

// Hand-computed: one_hot of indices outside [0, depth) is all off_value; int on/off values convert
// exactly.
TEST(TransformOps, OneHotHandComputed) {
  NDArray idx(DType::Int32, {3});
  idx.data<int32_t>()[0] = 1;
  idx.data<int32_t>()[1] = -1;
  idx.data<int32_t>()[2] = 2;
  const NDArray out =
      op("one_hot").kernel({idx, NDArray::scalar(DType::Int64, 9), NDArray::scalar(DType::Int64, 0)},
                           attrs_of({{"depth", i(2)}, {"dtype", s("int64")}}))[0];
  ASSERT_EQ(out.shape(), (Shape{3, 2}));
  const int64_t want[] = {0, 9, 0, 0, 0, 0};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out.data<int64_t>()[k], want[k]) << k;
}

// layout_transform permutes the dimensions the layouts name; `?` moves with its dimension.
TEST(TransformOps, LayoutTransformPermutesUnknownDims) {
  const auto layout = [](const std::string &src, const std::string &dst) {
    return attrs_of({{"src_layout", s(src)}, {"dst_layout", s(dst)}});
  };
  EXPECT_EQ(shape_of(op("layout_transform").relation({tensor({Q, 3, 8, 9})}, layout("NCHW", "NHWC"))),
            (Shape{Q, 8, 9, 3}));
  EXPECT_EQ(shape_of(op("layout_transform").relation({tensor({Q, 7, 5})}, layout("NWC", "NCW"))),
            (Shape{Q, 5, 7}));
  EXPECT_EQ(shape_of(op("layout_transform").relation({tensor({8, 4, 3, 3})}, layout("OIHW", "HWIO"))),
            (Shape{3, 3, 4, 8}));
  EXPECT_FALSE(op("layout_transform").relation({IncompleteType::make()}, layout("NCHW", "NHWC")).defined());
  EXPECT_EQ(op("layout_transform").pattern, OpPattern::Injective);
  EXPECT_EQ(op("layout_transform").attr_names, (std::vector<std::string>{"src_layout", "dst_layout"}));
}

TEST(TransformOps, LayoutTransformErrors) {
  auto rel_error = [](Shape shape, Attrs attrs) {
    return op_error([&] { op("layout_transform").relation({tensor(shape)}, attrs); });
  };
  const auto layout = [](const std::string &src, const std::string &dst) {
    return attrs_of({{"src_layout", s(src)}, {"dst_layout", s(dst)}});
  };
  EXPECT_EQ(rel_error({1, 8, 4, 4}, layout("NCHW", "NCHW4c")),
            "dst_layout \"NCHW4c\" is a packed layout; grove supports layouts that permute the dimensions "
            "only (e.g. NCHW, NHWC)");
  EXPECT_EQ(rel_error({1, 2, 4, 4, 4}, layout("NCHW4c", "NCHW")),
            "src_layout \"NCHW4c\" is a packed layout; grove supports layouts that permute the dimensions "
            "only (e.g. NCHW, NHWC)");
  EXPECT_EQ(rel_error({1, 2, 3}, layout("NCHW", "NHWC")),
            "src_layout \"NCHW\" has 4 dimensions but the data has rank 3");
  EXPECT_EQ(rel_error({1, 2, 3, 4}, layout("NCHW", "NHW")),
            "src_layout \"NCHW\" and dst_layout \"NHW\" have different ranks");
  EXPECT_EQ(rel_error({1, 2, 3, 4}, layout("NCHW", "NHWD")),
            "dst_layout \"NHWD\" has dimension D, which src_layout \"NCHW\" lacks");
  EXPECT_EQ(rel_error({1, 2, 3, 4}, layout("NCHH", "NHWC")), "src_layout \"NCHH\" names dimension H twice");
  EXPECT_EQ(rel_error({1, 2}, layout("N-", "NC")),
            "src_layout \"N-\" is not a layout: '-' is not a dimension letter");
  EXPECT_EQ(rel_error({1, 2}, attrs_of({{"src_layout", s("NC")}})), "attribute 'dst_layout' is required");
  EXPECT_EQ(rel_error({1, 2}, layout("", "NC")), "src_layout is empty");
}

// The type checker names the call: a packed layout in a program is a type error at its location.
TEST(TransformOps, PackedLayoutIsATypeErrorAtTheCall) {
  const Module m = parse_module(
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(1, 8, 4, 4), float32]) {\n"
      "  layout_transform(%x, src_layout=\"NCHW\", dst_layout=\"NCHW4c\")\n"
      "}\n",
      "t.relay");
  EXPECT_EQ(grove::testing::user_error_of([&] { infer_types(m); }),
            "t.relay:3:3: type error in layout_transform: dst_layout \"NCHW4c\" is a packed layout; grove "
            "supports layouts that permute the dimensions only (e.g. NCHW, NHWC)");
}

// nn.batch_flatten keeps the batch dimension, `?` included, and multiplies the rest (`?` if any is).
TEST(TransformOps, BatchFlattenWithUnknownDims) {
  const auto flat = [](Shape in) { return shape_of(op("nn.batch_flatten").relation({tensor(in)}, {})); };
  EXPECT_EQ(flat({Q, 3, 4}), (Shape{Q, 12}));
  EXPECT_EQ(flat({2, Q, 4}), (Shape{2, Q}));
  EXPECT_EQ(flat({5}), (Shape{5, 1}));
  EXPECT_EQ(flat({Q}), (Shape{Q, 1}));
  EXPECT_EQ(op_error([] { op("nn.batch_flatten").relation({tensor({})}, {}); }),
            "expected the data to have rank 1 or more, found a scalar");
  EXPECT_EQ(op("nn.batch_flatten").pattern, OpPattern::Injective);
}

// zeros_like and ones_like keep the type (float16 too: 0x0000 and 0x3c00).
TEST(TransformOps, ZerosLikeAndOnesLike) {
  EXPECT_EQ(to_string(op("zeros_like").relation({tensor({Q, 3}, DType::Int64)}, {})),
            "Tensor[(?, 3), int64]");
  EXPECT_EQ(op("ones_like").pattern, OpPattern::ElemWise);
  const NDArray h(DType::Float16, {3});
  const NDArray ones = op("ones_like").kernel({h}, {})[0];
  ASSERT_EQ(ones.dtype(), DType::Float16);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(ones.data<uint16_t>()[k], 0x3c00) << k;
  EXPECT_EQ(op("zeros_like").kernel({ones}, {})[0].data<uint16_t>()[1], 0);
}

// The new ops print and parse back as written (string layouts, alpha as a float attribute), in
// the text TVM prints for them, float16 types and literals included.
TEST(TransformOps, NewOpsRoundTripThroughThePrinter) {
  const std::string text =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(?, 3, 4, 5), float16]) -> Tensor[(?, 60), float16] {\n"
      "  %0 = nn.leaky_relu(%x, alpha=0.01f);\n"
      "  %1 = layout_transform(%0, src_layout=\"NCHW\", dst_layout=\"NHWC\");\n"
      "  %2 = add(zeros_like(%1), ones_like(%1));\n"
      "  nn.batch_flatten(multiply(%2, 0.5f16))\n"
      "}\n";
  const Module m = parse_module(text, "t.relay");
  infer_types(m);
  const std::string printed = print_module(m).text;
  EXPECT_THAT(printed, HasSubstr("layout_transform(%0, src_layout=\"NCHW\", dst_layout=\"NHWC\")"));
  EXPECT_THAT(printed, HasSubstr("alpha=0.01f"));
  const Module again = parse_module(printed, "printed.relay");
  infer_types(again);
  const EqualResult eq = structural_equal(m, again);
  EXPECT_TRUE(eq.equal) << eq.path << ": " << eq.lhs << " vs " << eq.rhs << "\n" << printed;
}

}  // namespace
}  // namespace grove::relay
