// ilir::verify: a well-formed program passes; each malformed program it documents is rejected with an
// InternalError that says what is wrong, in which case and compute.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "ilir/Verifier.h"
#include "support/Error.h"

namespace grove::ilir {
namespace {

using ::testing::HasSubstr;

Expr index(const std::string &name) { return Var::make(name, VarKind::Index); }
Expr size(const std::string &name) { return Var::make(name, VarKind::Size); }
Expr n() { return Var::node(); }
Expr i0() { return index("i0"); }
Expr child(int k) { return StructCall::child(n(), k); }

// A binary TreeLSTM-like cell, small but with every kind of tensor:
//   leaf:     h[n, i0] = emb[token(n), i0]
//             c[n, i0] = 0.0
//   internal: t[n, i0] = h[child(n, 0), i0] + h[child(n, 1), i0]
//             c[n, i0] = sum(k0 < H, W[i0, k0] * t[n, k0]) + c[child(n, 0), i0]
//             h[n, i0] = tanh(c[n, i0])
Program valid() {
  Expr H = size("H");
  Program p;
  p.name = "M";
  p.structure = StructureKind::BinaryTree;
  p.size_vars = {"V", "H"};
  p.tensors = {{"emb", TensorKind::Param, {size("V"), H}},
               {"W", TensorKind::Param, {H, H}},
               {"h", TensorKind::State, {H}},
               {"c", TensorKind::State, {H}},
               {"t", TensorKind::Temp, {H}}};
  p.output = "h";
  p.leaf.body = {{"h", {"i0"}, Load::make("emb", Expr(), {StructCall::token(n()), i0()})},
                 {"c", {"i0"}, Expr(0.0f)}};
  Expr k = index("k0");
  p.internal.body = {
      {"t", {"i0"}, Load::make("h", child(0), {i0()}) + Load::make("h", child(1), {i0()})},
      {"c",
       {"i0"},
       Sum::make("k0", H, Load::make("W", Expr(), {i0(), k}) * Load::make("t", n(), {k})) +
           Load::make("c", child(0), {i0()})},
      {"h", {"i0"}, Unary::make(UnaryOp::Tanh, Load::make("c", n(), {i0()}))},
  };
  return p;
}

std::string verify_error(const Program &p) {
  try {
    verify(p);
  } catch (const InternalError &e) {
    return e.what();
  }
  return "no error";
}

// The error of `valid()` after `edit`.
std::string error_after(const std::function<void(Program &)> &edit) {
  Program p = valid();
  edit(p);
  return verify_error(p);
}

Compute &internal(Program &p, const std::string &tensor) {
  for (Compute &c : p.internal.body)
    if (c.tensor == tensor) return c;
  throw std::logic_error("no compute of " + tensor);
}

TEST(Verifier, AcceptsAWellFormedProgram) { EXPECT_EQ(verify_error(valid()), "no error"); }

TEST(Verifier, AcceptsAChildSumProgram) {
  Program p = valid();
  p.structure = StructureKind::Tree;
  internal(p, "t").value = Sum::make("k0", StructCall::num_children(n()),
                                     Load::make("h", StructCall::child(n(), index("k0")), {i0()}));
  internal(p, "c").value = Load::make("t", n(), {i0()});
  EXPECT_EQ(verify_error(p), "no error");
}

TEST(Verifier, UnboundIndexVariable) {
  EXPECT_THAT(error_after([](Program &p) { internal(p, "h").value = Load::make("c", n(), {index("i1")}); }),
              HasSubstr("internal case, compute of h: unbound index variable: i1"));
  // A Sum's variable is bound only inside its body.
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Sum::make("k0", size("H"), Load::make("c", n(), {i0()})) +
                                         Load::make("c", n(), {index("k0")});
              }),
              HasSubstr("unbound index variable: k0"));
}

TEST(Verifier, WrongLoadRank) {
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Load::make("c", n(), {i0(), i0()});
              }),
              HasSubstr("compute of h: load with the wrong number of indices: c[n, i0, i0]"));
  EXPECT_THAT(error_after([](Program &p) { p.leaf.body[0].value = Load::make("W", Expr(), {i0()}); }),
              HasSubstr("leaf case, compute of h: load with the wrong number of indices: W[i0]"));
}

TEST(Verifier, StateReadAtANodeThatIsNotAChild) {
  EXPECT_THAT(
      error_after([](Program &p) {
        internal(p, "h").value = Load::make("c", StructCall::child(child(0), 1), {i0()});
      }),
      HasSubstr("compute of h: tensor read at a node other than n or a child: c[child(child(n, 0), 1), i0]"));
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Load::make("c", StructCall::num_children(n()), {i0()});
              }),
              HasSubstr("tensor read at a node other than n or a child: c[num_children(n), i0]"));
}

TEST(Verifier, TempReadAtAChild) {
  EXPECT_THAT(error_after([](Program &p) { internal(p, "h").value = Load::make("t", child(1), {i0()}); }),
              HasSubstr("compute of h: tensor read at a node other than n or a child: t[child(n, 1), i0]"));
}

TEST(Verifier, TokenInTheInternalCase) {
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Load::make("emb", Expr(), {StructCall::token(n()), i0()});
              }),
              HasSubstr("internal case, compute of h: token() outside the leaf case: token(n)"));
}

TEST(Verifier, ChildInTheLeafCase) {
  EXPECT_THAT(error_after([](Program &p) { p.leaf.body[1].value = Load::make("h", child(0), {i0()}); }),
              HasSubstr("leaf case, compute of c: child() outside the internal case: child(n, 0)"));
}

TEST(Verifier, BinaryTreeChildSlotIsZeroOrOne) {
  EXPECT_THAT(error_after([](Program &p) { internal(p, "h").value = Load::make("c", child(2), {i0()}); }),
              HasSubstr("a binary tree's child slot must be 0 or 1: child(n, 2)"));
}

TEST(Verifier, StateMissingFromACase) {
  EXPECT_THAT(error_after([](Program &p) { p.internal.body.pop_back(); }),
              HasSubstr("state h not defined by the internal case"));
  EXPECT_THAT(error_after([](Program &p) { p.leaf.body.pop_back(); }),
              HasSubstr("state c not defined by the leaf case"));
}

TEST(Verifier, ComputeOfAParam) {
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body.push_back({"W", {"i0", "i1"}, Expr(1.0f)});
              }),
              HasSubstr("compute of param W"));
}

TEST(Verifier, DuplicateCompute) {
  EXPECT_THAT(error_after([](Program &p) { p.internal.body.push_back(p.internal.body.back()); }),
              HasSubstr("h defined twice in one case"));
}

TEST(Verifier, ComputeOfAnUndeclaredTensor) {
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body.push_back({"z", {"i0"}, Expr(1.0f)});
              }),
              HasSubstr("compute of undeclared tensor z"));
}

TEST(Verifier, ComputeWithTheWrongNumberOfIndices) {
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body[1].indices = {"i0", "i1"};
              }),
              HasSubstr("compute of c with 2 indices for rank 1"));
}

TEST(Verifier, ComputeValueIsNotFloat) {
  EXPECT_THAT(error_after([](Program &p) { p.leaf.body[1].value = i0(); }),
              HasSubstr("compute of c is not Float"));
}

TEST(Verifier, ReadOfATensorBeforeItsCaseDefinesIt) {
  EXPECT_THAT(error_after([](Program &p) { std::swap(p.internal.body[1], p.internal.body[2]); }),
              HasSubstr("compute of h: read of a tensor before this case defines it: c[n, i0]"));
}

TEST(Verifier, NodeTensorLoadedWithoutANodeAndParamAtANode) {
  EXPECT_THAT(error_after([](Program &p) { internal(p, "h").value = Load::make("c", Expr(), {i0()}); }),
              HasSubstr("node tensor loaded without a node: c[i0]"));
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body[1].value = Load::make("W", n(), {i0(), i0()});
              }),
              HasSubstr("param loaded at a node: W[n, i0, i0]"));
}

TEST(Verifier, LoadOfAnUndeclaredTensor) {
  EXPECT_THAT(error_after([](Program &p) { p.leaf.body[1].value = Load::make("q", n(), {i0()}); }),
              HasSubstr("load of an undeclared tensor: q[n, i0]"));
}

TEST(Verifier, Variables) {
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body[1].value = Load::make("h", Var::make("m", VarKind::Node), {i0()});
              }),
              HasSubstr("unknown node variable: m"));
  EXPECT_THAT(error_after([](Program &p) {
                p.leaf.body[1].value = Load::make("W", Expr(), {i0(), Expr(0) * size("D")});
              }),
              HasSubstr("undeclared size variable: D"));
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Sum::make("i0", size("H"), Load::make("c", n(), {i0()}));
              }),
              HasSubstr("Sum rebinds a variable in scope: sum(i0 < H, c[n, i0])"));
}

TEST(Verifier, Declarations) {
  EXPECT_THAT(error_after([](Program &p) { p.tensors.push_back(p.tensors[0]); }),
              HasSubstr("tensor emb declared twice"));
  EXPECT_THAT(error_after([](Program &p) { p.tensors[4].shape = {size("D")}; }), HasSubstr("t: bad size D"));
  EXPECT_THAT(error_after([](Program &p) { p.tensors[4].shape = {i0()}; }), HasSubstr("t: bad size i0"));
  EXPECT_THAT(error_after([](Program &p) { p.tensors[4].shape = {size("H") / 2}; }),
              HasSubstr("t: bad size H / 2"));
  EXPECT_THAT(error_after([](Program &p) { p.output = "t"; }), HasSubstr("output t is not a state"));
  EXPECT_THAT(error_after([](Program &p) { p.output = "nothing"; }),
              HasSubstr("output nothing is not a state"));
}

// A top-down (backward) program, small: the parent's share of d_h at the child's slot, a saved
// forward state, and a weight gradient as a reduction over the internal nodes.
//   internal: d_h[n, i0]    = seed[n, i0] + select(child_slot(n) == 0, d_at0[parent(n), i0], 0.0)
//             d_at0[n, i0]  = d_h[n, i0] * h[child(n, 0), i0]
//   leaf:     d_h[n, i0]    = seed[n, i0] + select(child_slot(n) == 0, d_at0[parent(n), i0], 0.0)
//   reductions: grad_W[i0, i1] += sum(n in internal, d_h[n, i0] * h[n, i1])
Program top_down() {
  Expr H = size("H");
  Program p;
  p.name = "B";
  p.structure = StructureKind::BinaryTree;
  p.direction = Direction::TopDown;
  p.size_vars = {"H"};
  p.tensors = {{"W", TensorKind::Param, {H, H}},  {"seed", TensorKind::Saved, {H}},
               {"h", TensorKind::Saved, {H}},     {"d_h", TensorKind::State, {H}},
               {"d_at0", TensorKind::State, {H}}, {"grad_W", TensorKind::Gradient, {H, H}}};
  p.output = "d_h";
  Expr from_parent = Select::make(Binary::make(BinOp::EQ, StructCall::child_slot(n()), Expr(0)),
                                  Load::make("d_at0", StructCall::parent(n()), {i0()}), Expr(0.0f));
  Expr d_h = Load::make("seed", n(), {i0()}) + from_parent;
  p.internal.body = {{"d_h", {"i0"}, d_h},
                     {"d_at0", {"i0"}, Load::make("d_h", n(), {i0()}) * Load::make("h", child(0), {i0()})}};
  p.leaf.body = {{"d_h", {"i0"}, d_h}};
  p.reductions = {{"grad_W",
                   CaseKind::Internal,
                   {"i0", "i1"},
                   Load::make("d_h", n(), {i0()}) * Load::make("h", n(), {index("i1")})}};
  return p;
}

std::string top_down_error(const std::function<void(Program &)> &edit) {
  Program p = top_down();
  edit(p);
  return verify_error(p);
}

TEST(Verifier, AcceptsATopDownProgram) { EXPECT_EQ(verify_error(top_down()), "no error"); }

TEST(Verifier, ParentOnlyTopDown) {
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Load::make("W", Expr(), {StructCall::child_slot(n()), i0()});
              }),
              HasSubstr("parent() or child_slot() in a bottom-up program: child_slot(n)"));
  EXPECT_THAT(error_after([](Program &p) {
                internal(p, "h").value = Load::make("c", StructCall::parent(n()), {i0()});
              }),
              HasSubstr("tensor read at a node other than n or a child: c[parent(n), i0]"));
  EXPECT_THAT(error_after([](Program &p) {
                p.tensors.push_back({"g", TensorKind::Gradient, {size("H")}});
              }),
              HasSubstr("gradient tensor g in a bottom-up program"));
}

TEST(Verifier, TopDownReadsStatesAtTheParentOnly) {
  EXPECT_THAT(
      top_down_error([](Program &p) { p.internal.body[1].value = Load::make("d_h", child(0), {i0()}); }),
      HasSubstr("tensor read at a node other than n or its parent (a saved tensor: or a child): "
                "d_h[child(n, 0), i0]"));
  // A saved tensor may be read at the parent too.
  EXPECT_EQ(top_down_error([](Program &p) {
              p.internal.body[1].value = Load::make("h", StructCall::parent(n()), {i0()});
            }),
            "no error");
}

TEST(Verifier, TopDownParentReadsNeedTheInternalCase) {
  EXPECT_THAT(top_down_error([](Program &p) { p.internal.body.pop_back(); }),
              HasSubstr("state d_at0 is read at parent(n) but the internal case does not define it"));
}

TEST(Verifier, TopDownGradientsAndReductions) {
  EXPECT_THAT(top_down_error([](Program &p) {
                p.internal.body[1].value = Load::make("grad_W", Expr(), {i0(), i0()});
              }),
              HasSubstr("a gradient is read"));
  EXPECT_THAT(top_down_error([](Program &p) { p.reductions[0].tensor = "d_h"; }),
              HasSubstr("reduction into d_h, which is not a gradient"));
  EXPECT_THAT(top_down_error([](Program &p) { p.reductions[0].indices = {"i0"}; }),
              HasSubstr("reduction into grad_W with 1 indices for rank 2"));
  // A reduction over the leaves reads only what the leaf case defines.
  EXPECT_THAT(top_down_error([](Program &p) {
                p.reductions[0].over = CaseKind::Leaf;
                p.reductions[0].value = Load::make("d_at0", n(), {i0()});
              }),
              HasSubstr("read of a tensor before this case defines it: d_at0[n, i0]"));
  EXPECT_THAT(top_down_error([](Program &p) {
                p.hoisted.body = {{"d_h", {"i0"}, Expr(0.0f)}};
              }),
              HasSubstr("a top-down program with a hoisted case"));
}

TEST(Verifier, SavedTensorsAreReadOnly) {
  EXPECT_THAT(top_down_error([](Program &p) {
                p.leaf.body.push_back({"h", {"i0"}, Expr(0.0f)});
              }),
              HasSubstr("compute of saved h"));
}

}  // namespace
}  // namespace grove::ilir
