// The generic walks of ilir/IRVisitor.h: IRMutator keeps unchanged nodes and rebuilds only the
// changed path; substitute (with Sum shadowing), contains and for_each_node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"

namespace grove::ilir {
namespace {

Expr index(const std::string &name) { return Var::make(name, VarKind::Index); }
Expr size(const std::string &name) { return Var::make(name, VarKind::Size); }

// One expression with every node kind:
//   select(i0 < H, sum(k0 < num_children(n), -W[i0, k0] * h[child(n, k0), i0]), tanh(x[token(n)]) + 1.5)
Expr every_kind() {
  Expr n = Var::node(), i = index("i0"), k = index("k0");
  Expr term = -Load::make("W", Expr(), {i, k}) * Load::make("h", StructCall::child(n, k), {i});
  Expr sum = Sum::make("k0", StructCall::num_children(n), term);
  Expr other = Unary::make(UnaryOp::Tanh, Load::make("x", StructCall::token(n), {})) + Expr(1.5f);
  return Select::make(i < size("H"), sum, other);
}

// Renames one variable, by name, wherever it occurs.
class Rename : public IRMutator {
 public:
  Rename(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}

 protected:
  Expr visit_Var(const Var *op, const Expr &e) override {
    return op->name == from_ ? Var::make(to_, op->var_kind) : e;
  }

 private:
  std::string from_, to_;
};

TEST(IRMutator, ReturnsTheSameNodeWhenNothingChanged) {
  Expr e = every_kind();
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(e).same_as(e));
  EXPECT_TRUE(Rename("absent", "x").mutate(e).same_as(e));
  EXPECT_FALSE(identity.mutate(Expr()).defined());
}

TEST(IRMutator, RebuildsOnlyTheChangedPath) {
  // (a[i0] * b[] + c[]) with i0 renamed: the Add, the Mul and a's load are new; b and c are kept.
  Expr load_a = Load::make("a", Expr(), {index("i0")});
  Expr load_b = Load::make("b", Expr(), {});
  Expr load_c = Load::make("c", Expr(), {});
  Expr product = load_a * load_b;
  Expr e = product + load_c;
  Expr r = Rename("i0", "j").mutate(e);
  EXPECT_EQ(to_string(r), "a[j] * b[] + c[]");
  ASSERT_FALSE(r.same_as(e));
  const Binary *add = r.as<Binary>();
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->b.same_as(load_c));
  const Binary *mul = add->a.as<Binary>();
  ASSERT_NE(mul, nullptr);
  EXPECT_FALSE(add->a.same_as(product));
  EXPECT_FALSE(mul->a.same_as(load_a));
  EXPECT_TRUE(mul->b.same_as(load_b));
}

TEST(IRMutator, RebuildsEveryNodeKindItDescendsInto) {
  Expr e = every_kind();
  Expr r = Rename("n", "m").mutate(e);
  EXPECT_EQ(to_string(r),
            "select(i0 < H, sum(k0 < num_children(m), -W[i0, k0] * h[child(m, k0), i0]), tanh(x[token(m)]) + "
            "1.5)");
  // The condition does not mention n, so it is kept.
  EXPECT_TRUE(r.as<Select>()->cond.same_as(e.as<Select>()->cond));
  // Inside the Sum, W's load does not mention n either.
  const Sum *sum = r.as<Select>()->t.as<Sum>();
  const Sum *old_sum = e.as<Select>()->t.as<Sum>();
  ASSERT_NE(sum, nullptr);
  EXPECT_TRUE(sum->body.as<Binary>()->a.same_as(old_sum->body.as<Binary>()->a));
}

TEST(Substitute, ReplacesEveryUseOfTheName) {
  Expr i = index("i0");
  Expr e = Load::make("h", Var::node(), {i}) * Load::make("W", Expr(), {i, i + 1});
  EXPECT_EQ(to_string(substitute(e, "i0", index("k0") + size("H"))), "h[n, k0 + H] * W[k0 + H, k0 + H + 1]");
  EXPECT_EQ(to_string(substitute(e, "n", StructCall::child(Var::node(), 1))),
            "h[child(n, 1), i0] * W[i0, i0 + 1]");
}

TEST(Substitute, KeepsTheNodeWhenTheNameIsAbsent) {
  Expr e = every_kind();
  EXPECT_TRUE(substitute(e, "i9", Expr(0)).same_as(e));
}

TEST(Substitute, ASumShadowsItsVariableInItsBodyOnly) {
  // sum(k < k + H, x[k]): the extent's k is free, the body's k is the Sum's own.
  Expr k = index("k");
  Expr e = Sum::make("k", k + size("H"), Load::make("x", Expr(), {k}));
  EXPECT_EQ(to_string(substitute(e, "k", Expr(7))), "sum(k < 7 + H, x[k])");
  // Nothing free to replace: the same node comes back.
  Expr bound = Sum::make("k", size("H"), Load::make("x", Expr(), {k}));
  EXPECT_TRUE(substitute(bound, "k", Expr(7)).same_as(bound));
  // Other names are replaced inside the body as usual.
  Expr body = Sum::make("k", size("H"), Load::make("W", Expr(), {index("i0"), k}));
  EXPECT_EQ(to_string(substitute(body, "i0", index("i1"))), "sum(k < H, W[i1, k])");
}

TEST(Contains, FindsANodeAnywhere) {
  Expr e = every_kind();
  EXPECT_TRUE(contains(e, [](const Expr &x) { return x.as<Sum>() != nullptr; }));
  EXPECT_TRUE(contains(e, [](const Expr &x) {
    const StructCall *c = x.as<StructCall>();
    return c && c->fn == StructFn::Token;
  }));
  EXPECT_TRUE(contains(e, [](const Expr &x) {
    const FloatImm *f = x.as<FloatImm>();
    return f && f->value == 1.5f;
  }));
  EXPECT_FALSE(contains(e, [](const Expr &x) {
    const Unary *u = x.as<Unary>();
    return u && u->op == UnaryOp::Exp;
  }));
  EXPECT_FALSE(contains(Expr(), [](const Expr &) { return true; }));
}

TEST(ForEachNode, VisitsParentsBeforeChildrenInOperandOrder) {
  Expr e = Load::make("a", Var::node(), {index("i0")}) + Expr(2.0f) * Load::make("b", Expr(), {});
  std::vector<std::string> seen;
  for_each_node(e, [&](const Expr &x) { seen.push_back(to_string(x)); });
  EXPECT_EQ(seen, (std::vector<std::string>{"a[n, i0] + 2.0 * b[]", "a[n, i0]", "n", "i0", "2.0 * b[]", "2.0",
                                            "b[]"}));
}

TEST(ForEachNode, VisitsEveryNodeOfEveryKind) {
  // select, <, i0, H, sum, num_children, n, *, -, W, i0, k0, h, child, n, k0, i0, +, tanh, x, token, n, 1.5
  int count = 0;
  for_each_node(every_kind(), [&](const Expr &) { count++; });
  EXPECT_EQ(count, 23);
  for_each_node(Expr(), [&](const Expr &) { count++; });
  EXPECT_EQ(count, 23);
}

}  // namespace
}  // namespace grove::ilir
