// The symbolic size algebra: canonical linear forms, printing, proofs over sizes >= 1, ILIR form.
#include <gtest/gtest.h>

#include "frontend/dsl/Shapes.h"
#include "ilir/IRPrinter.h"

namespace grove::dsl {
namespace {

Size H = Size::variable("H");
Size D = Size::variable("D");
Size c(int64_t v) { return Size::constant(v); }

TEST(Shapes, EqualFormsCompareEqualWhateverTheirConstruction) {
  EXPECT_EQ(H * 3, H + H + H);
  EXPECT_EQ(Size::variable("H", 3), H + H * 2);
  EXPECT_EQ(H + D - H, D);
  EXPECT_EQ(H - H, c(0));
  EXPECT_NE(H * 2, H + D);
  EXPECT_NE(H + c(1), H);
}

TEST(Shapes, PrintsLikeTheModelLanguage) {
  EXPECT_EQ((H * 3).to_string(), "3H");
  EXPECT_EQ(H.to_string(), "H");
  EXPECT_EQ((H * 2 + c(1)).to_string(), "2H+1");
  EXPECT_EQ((H - D).to_string(), "H-D");
  EXPECT_EQ((c(1) - H).to_string(), "-H+1");
  EXPECT_EQ(c(0).to_string(), "0");
  EXPECT_EQ(c(7).to_string(), "7");
  EXPECT_EQ(to_string(Shape{H * 3, H * 2}), "[3H, 2H]");
  EXPECT_EQ(to_string(Shape{}), "a scalar");
}

TEST(Shapes, ProofsAssumeEverySizeIsAtLeastOne) {
  EXPECT_TRUE(H.provably_positive());
  EXPECT_TRUE((H - c(1)).provably_nonnegative());
  EXPECT_FALSE((H - c(1)).provably_positive());
  EXPECT_TRUE((H * 2 - H).provably_positive());
  EXPECT_FALSE((H - D).provably_nonnegative());  // D may exceed H
  EXPECT_FALSE((c(0) - H).provably_nonnegative());
  EXPECT_TRUE(c(0).provably_nonnegative());
  EXPECT_FALSE(c(0).provably_positive());
  EXPECT_TRUE((H + D - c(2)).provably_nonnegative());
  EXPECT_FALSE((H + D - c(3)).provably_nonnegative());
}

TEST(Shapes, LowersToIlirSizeExpressions) {
  EXPECT_EQ(ilir::to_string((H * 3).to_ilir()), "3H");
  EXPECT_EQ(ilir::to_string(H.to_ilir()), "H");
  EXPECT_EQ(ilir::to_string((H * 2 + D + c(1)).to_ilir()), "D + 2H + 1");
  EXPECT_EQ(ilir::to_string(c(0).to_ilir()), "0");
  ilir::Expr three_h = (H * 3).to_ilir();
  const ilir::Binary *mul = three_h.as<ilir::Binary>();
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op, ilir::BinOp::Mul);
  ASSERT_NE(mul->a.as<ilir::IntImm>(), nullptr);
  EXPECT_EQ(mul->a.as<ilir::IntImm>()->value, 3);
  ASSERT_NE(mul->b.as<ilir::Var>(), nullptr);
  EXPECT_EQ(mul->b.as<ilir::Var>()->var_kind, ilir::VarKind::Size);
}

}  // namespace
}  // namespace grove::dsl
