// The ILIR printer (the text of `grove dump --stage ilir`): every node kind, precedence and
// parenthesization, size juxtaposition (3H), and the whole-program layout.
#include <gtest/gtest.h>

#include "ilir/IR.h"
#include "ilir/IRPrinter.h"

namespace grove::ilir {
namespace {

Expr index(const std::string &name) { return Var::make(name, VarKind::Index); }
Expr size(const std::string &name) { return Var::make(name, VarKind::Size); }
Expr a() { return Load::make("a", Expr(), {}); }
Expr b() { return Load::make("b", Expr(), {}); }
Expr c() { return Load::make("c", Expr(), {}); }

TEST(Printer, Immediates) {
  EXPECT_EQ(to_string(Expr(42)), "42");
  EXPECT_EQ(to_string(IntImm::make(-3)), "-3");
  EXPECT_EQ(to_string(Expr(0.5f)), "0.5");
  // A whole float keeps a decimal point, so it never reads as an integer.
  EXPECT_EQ(to_string(Expr(2.0f)), "2.0");
  EXPECT_EQ(to_string(Expr(-1.0f)), "-1.0");
  EXPECT_EQ(to_string(Expr(1e-10f)), "1e-10");
}

TEST(Printer, Vars) {
  EXPECT_EQ(to_string(index("i0")), "i0");
  EXPECT_EQ(to_string(size("H")), "H");
  EXPECT_EQ(to_string(Var::node()), "n");
}

TEST(Printer, UndefinedExpr) { EXPECT_EQ(to_string(Expr()), "<undefined>"); }

TEST(Printer, EveryBinaryOperator) {
  Expr i = index("i0"), j = index("i1");
  EXPECT_EQ(to_string(a() + b()), "a[] + b[]");
  EXPECT_EQ(to_string(a() - b()), "a[] - b[]");
  EXPECT_EQ(to_string(a() * b()), "a[] * b[]");
  EXPECT_EQ(to_string(a() / b()), "a[] / b[]");
  EXPECT_EQ(to_string(Binary::make(BinOp::Mod, i, j)), "i0 % i1");
  EXPECT_EQ(to_string(i < j), "i0 < i1");
  EXPECT_EQ(to_string(Binary::make(BinOp::LE, i, j)), "i0 <= i1");
  EXPECT_EQ(to_string(Binary::make(BinOp::EQ, i, j)), "i0 == i1");
  EXPECT_EQ(to_string(Binary::make(BinOp::And, i < j, j < i)), "i0 < i1 && i1 < i0");
  EXPECT_EQ(to_string(Binary::make(BinOp::Min, i, j)), "min(i0, i1)");
  EXPECT_EQ(to_string(Binary::make(BinOp::Max, a() + b(), c())), "max(a[] + b[], c[])");
}

TEST(Printer, LeftAssociativeChainsNeedNoParentheses) {
  EXPECT_EQ(to_string((a() - b()) - c()), "a[] - b[] - c[]");
  EXPECT_EQ(to_string((a() / b()) / c()), "a[] / b[] / c[]");
  EXPECT_EQ(to_string((a() + b()) - c()), "a[] + b[] - c[]");
}

TEST(Printer, RightOperandOfEqualStrengthIsParenthesized) {
  EXPECT_EQ(to_string(a() - (b() - c())), "a[] - (b[] - c[])");
  EXPECT_EQ(to_string(a() + (b() + c())), "a[] + (b[] + c[])");
  EXPECT_EQ(to_string(a() / (b() * c())), "a[] / (b[] * c[])");
}

TEST(Printer, LooserOperandIsParenthesized) {
  EXPECT_EQ(to_string((a() + b()) * c()), "(a[] + b[]) * c[]");
  EXPECT_EQ(to_string(a() * (b() - c())), "a[] * (b[] - c[])");
  EXPECT_EQ(to_string(a() + b() * c()), "a[] + b[] * c[]");
  EXPECT_EQ(to_string(a() * b() + c()), "a[] * b[] + c[]");
  EXPECT_EQ(to_string(index("i0") < size("H") + 1), "i0 < H + 1");
  EXPECT_EQ(to_string(Binary::make(BinOp::And, index("i0") < 1, index("i1") < 2)), "i0 < 1 && i1 < 2");
}

TEST(Printer, SizeProductsReadLikeTheModelLanguage) {
  EXPECT_EQ(to_string(Expr(3) * size("H")), "3H");
  EXPECT_EQ(to_string(index("i0") + Expr(2) * size("H")), "i0 + 2H");
  EXPECT_EQ(to_string(Expr(2) * size("H") + 1), "2H + 1");
  // Only a constant times a size variable is juxtaposed.
  EXPECT_EQ(to_string(size("H") * 3), "H * 3");
  EXPECT_EQ(to_string(Expr(3) * index("i0")), "3 * i0");
  EXPECT_EQ(to_string(Expr(3) * (size("H") + 1)), "3 * (H + 1)");
}

TEST(Printer, Unary) {
  EXPECT_EQ(to_string(-index("i0")), "-i0");
  EXPECT_EQ(to_string(-(a() + b())), "-(a[] + b[])");
  EXPECT_EQ(to_string(-(a() * b())), "-(a[] * b[])");
  EXPECT_EQ(to_string(-Unary::make(UnaryOp::Tanh, a())), "-tanh(a[])");
  EXPECT_EQ(to_string(Unary::make(UnaryOp::Tanh, a())), "tanh(a[])");
  EXPECT_EQ(to_string(Unary::make(UnaryOp::Sigmoid, a() + b())), "sigmoid(a[] + b[])");
  EXPECT_EQ(to_string(Unary::make(UnaryOp::Exp, a())), "exp(a[])");
  EXPECT_EQ(to_string(Unary::make(UnaryOp::Relu, a())), "relu(a[])");
  EXPECT_EQ(to_string(Unary::make(UnaryOp::Tanh, a()) * b()), "tanh(a[]) * b[]");
}

TEST(Printer, Select) {
  Expr i = index("i0"), H = size("H");
  Expr left = Load::make("h", StructCall::child(Var::node(), 0), {i});
  Expr right = Load::make("h", StructCall::child(Var::node(), 1), {i - H});
  EXPECT_EQ(to_string(Select::make(i < H, left, right)),
            "select(i0 < H, h[child(n, 0), i0], h[child(n, 1), i0 - H])");
  EXPECT_EQ(to_string(Select::make(i < H, a(), b()) * c()), "select(i0 < H, a[], b[]) * c[]");
}

TEST(Printer, Sum) {
  Expr i = index("i0"), k = index("k0");
  Expr product = Load::make("W", Expr(), {i, k}) * Load::make("x", Var::node(), {k});
  EXPECT_EQ(to_string(Sum::make("k0", Expr(2) * size("H"), product)), "sum(k0 < 2H, W[i0, k0] * x[n, k0])");
  EXPECT_EQ(to_string(Sum::make("k0", size("D"), product) + Load::make("b", Expr(), {i})),
            "sum(k0 < D, W[i0, k0] * x[n, k0]) + b[i0]");
  EXPECT_EQ(to_string(Sum::make("k0", StructCall::num_children(Var::node()),
                                Load::make("h", StructCall::child(Var::node(), k), {i}))),
            "sum(k0 < num_children(n), h[child(n, k0), i0])");
}

TEST(Printer, StructureCalls) {
  Expr n = Var::node();
  EXPECT_EQ(to_string(StructCall::child(n, 1)), "child(n, 1)");
  EXPECT_EQ(to_string(StructCall::child(StructCall::child(n, 0), index("k0"))), "child(child(n, 0), k0)");
  EXPECT_EQ(to_string(StructCall::token(n)), "token(n)");
  EXPECT_EQ(to_string(StructCall::num_children(n)), "num_children(n)");
  EXPECT_EQ(to_string(StructCall::make(StructFn::IsLeaf, n)), "is_leaf(n)");
}

TEST(Printer, Loads) {
  Expr i = index("i0"), j = index("i1"), n = Var::node();
  EXPECT_EQ(to_string(Load::make("W", Expr(), {i, j})), "W[i0, i1]");
  EXPECT_EQ(to_string(Load::make("h", n, {i})), "h[n, i0]");
  EXPECT_EQ(to_string(Load::make("P", n, {i, j})), "P[n, i0, i1]");
  EXPECT_EQ(to_string(Load::make("emb", Expr(), {StructCall::token(n), i})), "emb[token(n), i0]");
  EXPECT_EQ(to_string(Load::make("iou", n, {i + Expr(2) * size("H")})), "iou[n, i0 + 2H]");
  EXPECT_EQ(to_string(Load::make("s", n, {})), "s[n]");
  EXPECT_EQ(to_string(Load::make("x", Expr(), {})), "x[]");
}

Program tree_fc() {
  Expr n = Var::node(), i = index("i0"), k = index("k0"), H = size("H"), V = size("V");
  Program p;
  p.name = "TreeFC";
  p.structure = StructureKind::BinaryTree;
  p.size_vars = {"V", "H"};
  p.tensors = {{"emb", TensorKind::Param, {V, H}},
               {"W", TensorKind::Param, {H, Expr(2) * H}},
               {"b", TensorKind::Param, {H}},
               {"h", TensorKind::State, {H}},
               {"s", TensorKind::Temp, {Expr(2) * H}}};
  p.output = "h";
  p.leaf.body = {{"h", {"i0"}, Load::make("emb", Expr(), {StructCall::token(n), i})}};
  Expr s = Select::make(i < H, Load::make("h", StructCall::child(n, 0), {i}),
                        Load::make("h", StructCall::child(n, 1), {i - H}));
  Expr product = Sum::make("k0", Expr(2) * H, Load::make("W", Expr(), {i, k}) * Load::make("s", n, {k}));
  p.internal.body = {{"s", {"i0"}, s},
                     {"h", {"i0"}, Unary::make(UnaryOp::Tanh, product + Load::make("b", Expr(), {i}))}};
  return p;
}

TEST(Printer, Program) {
  EXPECT_EQ(to_string(tree_fc()),
            "program TreeFC over binary_tree\n"
            "  sizes V, H\n"
            "  param emb[V, H]\n"
            "  param W[H, 2H]\n"
            "  param b[H]\n"
            "  state h[H]\n"
            "  temp s[2H]\n"
            "  output h\n"
            "leaf:\n"
            "  h[n, i0] = emb[token(n), i0]\n"
            "internal:\n"
            "  s[n, i0] = select(i0 < H, h[child(n, 0), i0], h[child(n, 1), i0 - H])\n"
            "  h[n, i0] = tanh(sum(k0 < 2H, W[i0, k0] * s[n, k0]) + b[i0])\n");
}

TEST(Printer, ProgramOverTreesWithMatricesAndNoSizes) {
  Program p;
  p.name = "M";
  p.structure = StructureKind::Tree;
  p.tensors = {{"P", TensorKind::State, {Expr(4), Expr(4)}}};
  p.output = "P";
  p.leaf.body = {{"P", {"i0", "i1"}, Expr(1.0f)}};
  p.internal.body = {
      {"P",
       {"i0", "i1"},
       Sum::make("k0", StructCall::num_children(Var::node()),
                 Load::make("P", StructCall::child(Var::node(), index("k0")), {index("i1"), index("i0")}))}};
  EXPECT_EQ(to_string(p),
            "program M over tree\n"
            "  state P[4, 4]\n"
            "  output P\n"
            "leaf:\n"
            "  P[n, i0, i1] = 1.0\n"
            "internal:\n"
            "  P[n, i0, i1] = sum(k0 < num_children(n), P[child(n, k0), i1, i0])\n");
}

TEST(Printer, EnumNames) {
  EXPECT_STREQ(to_string(TensorKind::Param), "param");
  EXPECT_STREQ(to_string(TensorKind::State), "state");
  EXPECT_STREQ(to_string(TensorKind::Temp), "temp");
  EXPECT_STREQ(to_string(StructureKind::BinaryTree), "binary_tree");
  EXPECT_STREQ(to_string(StructureKind::Tree), "tree");
  EXPECT_STREQ(to_string(UnaryOp::Neg), "-");
  EXPECT_STREQ(to_string(StructFn::NumChildren), "num_children");
}

}  // namespace
}  // namespace grove::ilir
