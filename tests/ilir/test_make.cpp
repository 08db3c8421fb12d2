// The invariants each node's make() checks: a bad node is a grove bug, so it throws InternalError
// naming the node and what is wrong, and a good node gets the documented type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "ilir/IR.h"
#include "support/Error.h"

namespace grove::ilir {
namespace {

using ::testing::HasSubstr;

std::string internal_error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const InternalError &e) {
    return e.what();
  }
  return "no error";
}

Expr index(const std::string &name) { return Var::make(name, VarKind::Index); }
Expr size(const std::string &name) { return Var::make(name, VarKind::Size); }
Expr boolean() { return index("i0") < size("H"); }
Expr real() { return FloatImm::make(0.5f); }

TEST(Make, ImmediatesAndVarsHaveTheirTypes) {
  EXPECT_EQ(Expr(1.5f).type(), ScalarType::Float);
  EXPECT_EQ(Expr(2).type(), ScalarType::Int);
  EXPECT_EQ(Expr(2).as<IntImm>()->value, 2);
  EXPECT_EQ(Expr(1.5f).as<FloatImm>()->value, 1.5f);
  EXPECT_EQ(Expr(2).as<FloatImm>(), nullptr);
  EXPECT_EQ(Expr().as<IntImm>(), nullptr);
  EXPECT_EQ(index("i0").type(), ScalarType::Int);
  EXPECT_EQ(Var::node().as<Var>()->var_kind, VarKind::Node);
  EXPECT_EQ(Var::node().as<Var>()->name, "n");
}

TEST(Make, VarNeedsAName) {
  EXPECT_THAT(internal_error_of([] { Var::make("", VarKind::Index); }), HasSubstr("a Var needs a name"));
}

TEST(Make, BinaryTypes) {
  EXPECT_EQ((index("i0") + 1).type(), ScalarType::Int);
  EXPECT_EQ((real() * real()).type(), ScalarType::Float);
  EXPECT_EQ(boolean().type(), ScalarType::Bool);
  EXPECT_EQ(Binary::make(BinOp::EQ, real(), real()).type(), ScalarType::Bool);
  EXPECT_EQ(Binary::make(BinOp::LE, index("i0"), 3).type(), ScalarType::Bool);
  EXPECT_EQ(Binary::make(BinOp::And, boolean(), boolean()).type(), ScalarType::Bool);
  EXPECT_EQ(Binary::make(BinOp::Mod, index("i0"), 2).type(), ScalarType::Int);
  EXPECT_EQ(Binary::make(BinOp::Max, real(), real()).type(), ScalarType::Float);
}

TEST(Make, BinaryRejectsAnUndefinedOperand) {
  EXPECT_THAT(internal_error_of([] { Binary::make(BinOp::Add, Expr(), Expr(1)); }),
              HasSubstr("Binary + with an undefined operand"));
  EXPECT_THAT(internal_error_of([] { Binary::make(BinOp::Mul, Expr(1), Expr()); }),
              HasSubstr("Binary * with an undefined operand"));
}

TEST(Make, BinaryRejectsMixedTypes) {
  EXPECT_THAT(internal_error_of([] { index("i0") + real(); }), HasSubstr("Binary + mixes operand types"));
  EXPECT_THAT(internal_error_of([] { Binary::make(BinOp::LT, real(), Expr(1)); }),
              HasSubstr("Binary < mixes operand types"));
}

TEST(Make, BinaryRejectsWrongOperandTypes) {
  EXPECT_THAT(internal_error_of([] { Binary::make(BinOp::And, Expr(1), Expr(2)); }),
              HasSubstr("And needs Bool operands"));
  EXPECT_THAT(internal_error_of([] { Binary::make(BinOp::Mod, real(), real()); }),
              HasSubstr("Mod needs Int operands"));
  EXPECT_THAT(internal_error_of([] { boolean() + boolean(); }), HasSubstr("arithmetic on Bool"));
}

TEST(Make, Unary) {
  EXPECT_EQ((-index("i0")).type(), ScalarType::Int);
  EXPECT_EQ(Unary::make(UnaryOp::Tanh, real()).type(), ScalarType::Float);
  EXPECT_THAT(internal_error_of([] { Unary::make(UnaryOp::Exp, Expr()); }),
              HasSubstr("Unary exp with an undefined operand"));
  EXPECT_THAT(internal_error_of([] { Unary::make(UnaryOp::Sigmoid, index("i0")); }),
              HasSubstr("Unary sigmoid on a wrong operand type"));
  EXPECT_THAT(internal_error_of([] { -boolean(); }), HasSubstr("Unary - on a wrong operand type"));
}

TEST(Make, Select) {
  EXPECT_EQ(Select::make(boolean(), real(), real()).type(), ScalarType::Float);
  EXPECT_EQ(Select::make(boolean(), Expr(1), Expr(2)).type(), ScalarType::Int);
  EXPECT_THAT(internal_error_of([] { Select::make(boolean(), Expr(), real()); }),
              HasSubstr("Select with an undefined operand"));
  EXPECT_THAT(internal_error_of([] { Select::make(Expr(1), real(), real()); }),
              HasSubstr("Select condition is not Bool"));
  EXPECT_THAT(internal_error_of([] { Select::make(boolean(), real(), Expr(1)); }),
              HasSubstr("Select branches differ in type"));
}

TEST(Make, Load) {
  EXPECT_EQ(Load::make("W", Expr(), {index("i0")}).type(), ScalarType::Float);
  EXPECT_THAT(internal_error_of([] { Load::make("", Var::node(), {}); }),
              HasSubstr("Load of an unnamed tensor"));
  EXPECT_THAT(internal_error_of([] { Load::make("h", real(), {index("i0")}); }),
              HasSubstr("Load of h: node is not Int"));
  EXPECT_THAT(internal_error_of([] { Load::make("h", Var::node(), {real()}); }),
              HasSubstr("Load of h: index is not Int"));
  EXPECT_THAT(internal_error_of([] {
                Load::make("h", Var::node(), {index("i0"), Expr()});
              }),
              HasSubstr("Load of h: index is not Int"));
}

TEST(Make, StructCallTypes) {
  EXPECT_EQ(StructCall::child(Var::node(), 0).type(), ScalarType::Int);
  EXPECT_EQ(StructCall::token(Var::node()).type(), ScalarType::Int);
  EXPECT_EQ(StructCall::num_children(Var::node()).type(), ScalarType::Int);
  EXPECT_EQ(StructCall::make(StructFn::IsLeaf, Var::node()).type(), ScalarType::Bool);
}

TEST(Make, ChildNeedsASlotAndOthersTakeNone) {
  EXPECT_THAT(internal_error_of([] { StructCall::make(StructFn::Child, Var::node()); }),
              HasSubstr("child: argument mismatch"));
  EXPECT_THAT(internal_error_of([] { StructCall::make(StructFn::Token, Var::node(), Expr(0)); }),
              HasSubstr("token: argument mismatch"));
  EXPECT_THAT(internal_error_of([] { StructCall::child(Var::node(), real()); }),
              HasSubstr("child: argument is not Int"));
}

TEST(Make, StructCallNeedsAnIntNode) {
  EXPECT_THAT(internal_error_of([] { StructCall::token(Expr()); }), HasSubstr("token needs an Int node"));
  EXPECT_THAT(internal_error_of([] { StructCall::num_children(real()); }),
              HasSubstr("num_children needs an Int node"));
}

TEST(Make, Sum) {
  EXPECT_EQ(Sum::make("k0", size("H"), real()).type(), ScalarType::Float);
  EXPECT_THAT(internal_error_of([] { Sum::make("", size("H"), real()); }),
              HasSubstr("Sum without a variable"));
  EXPECT_THAT(internal_error_of([] { Sum::make("k0", real(), real()); }),
              HasSubstr("Sum over k0: extent is not Int"));
  EXPECT_THAT(internal_error_of([] { Sum::make("k0", Expr(), real()); }),
              HasSubstr("Sum over k0: extent is not Int"));
  EXPECT_THAT(internal_error_of([] { Sum::make("k0", size("H"), boolean()); }),
              HasSubstr("Sum over k0: bad body"));
  EXPECT_THAT(internal_error_of([] { Sum::make("k0", size("H"), Expr()); }),
              HasSubstr("Sum over k0: bad body"));
}

TEST(Make, ProgramFindAndGet) {
  Program p;
  p.name = "M";
  p.tensors.push_back(TensorDecl{"h", TensorKind::State, {size("H")}});
  ASSERT_NE(p.find("h"), nullptr);
  EXPECT_EQ(p.get("h").kind, TensorKind::State);
  EXPECT_EQ(p.find("c"), nullptr);
  EXPECT_THAT(internal_error_of([&] { p.get("c"); }), HasSubstr("no tensor named 'c' in program M"));
}

TEST(Make, FailedCheckNamesItsSourceLocation) {
  EXPECT_THAT(internal_error_of([] { Var::make("", VarKind::Size); }), HasSubstr("internal error at "));
  EXPECT_THAT(internal_error_of([] { Var::make("", VarKind::Size); }), HasSubstr("IR.cpp:"));
}

}  // namespace
}  // namespace grove::ilir
