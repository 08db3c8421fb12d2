#include "ilir/IRPrinter.h"

#include <fmt/format.h>

#include "ilir/IRVisitor.h"

namespace grove::ilir {
namespace {

// Binding strength, loosest first; an operand binding looser than its parent is parenthesized.
int precedence(const Expr &e) {
  const Binary *b = e.as<Binary>();
  if (!b) return 10;
  switch (b->op) {
    case BinOp::And:
      return 1;
    case BinOp::LT:
    case BinOp::LE:
    case BinOp::EQ:
      return 2;
    case BinOp::Add:
    case BinOp::Sub:
      return 3;
    case BinOp::Mul:
    case BinOp::Div:
    case BinOp::Mod:
      return 4;
    case BinOp::Min:
    case BinOp::Max:
      return 10;
  }
  return 10;
}

class Printer : public ExprFunctor<std::string> {
 protected:
  std::string visit_FloatImm(const FloatImm *op, const Expr &) override {
    std::string s = fmt::format("{}", op->value);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  std::string visit_IntImm(const IntImm *op, const Expr &) override { return fmt::format("{}", op->value); }
  std::string visit_Var(const Var *op, const Expr &) override { return op->name; }

  std::string visit_Binary(const Binary *op, const Expr &e) override {
    if (op->op == BinOp::Min || op->op == BinOp::Max)
      return fmt::format("{}({}, {})", to_string(op->op), visit(op->a), visit(op->b));
    // Size products print as the model language writes them: 3H.
    const IntImm *c = op->a.as<IntImm>();
    const Var *v = op->b.as<Var>();
    if (op->op == BinOp::Mul && c && v && v->var_kind == VarKind::Size)
      return fmt::format("{}{}", c->value, v->name);
    int p = precedence(e);
    std::string a = visit(op->a), b = visit(op->b);
    if (precedence(op->a) < p) a = "(" + a + ")";
    // Left-associative: a right operand of equal strength needs parentheses too (a - (b - c)).
    if (precedence(op->b) <= p) b = "(" + b + ")";
    return fmt::format("{} {} {}", a, to_string(op->op), b);
  }

  std::string visit_Unary(const Unary *op, const Expr &) override {
    if (op->op == UnaryOp::Neg) {
      std::string a = visit(op->a);
      return precedence(op->a) < 10 ? "-(" + a + ")" : "-" + a;
    }
    return fmt::format("{}({})", to_string(op->op), visit(op->a));
  }

  std::string visit_Select(const Select *op, const Expr &) override {
    return fmt::format("select({}, {}, {})", visit(op->cond), visit(op->t), visit(op->f));
  }

  std::string visit_Load(const Load *op, const Expr &) override {
    std::string s = op->tensor + "[";
    bool first = true;
    if (op->node.defined()) s += visit(op->node), first = false;
    for (const Expr &i : op->indices) {
      if (!first) s += ", ";
      s += visit(i);
      first = false;
    }
    return s + "]";
  }

  std::string visit_StructCall(const StructCall *op, const Expr &) override {
    if (op->arg.defined())
      return fmt::format("{}({}, {})", to_string(op->fn), visit(op->node), visit(op->arg));
    return fmt::format("{}({})", to_string(op->fn), visit(op->node));
  }

  std::string visit_Sum(const Sum *op, const Expr &) override {
    return fmt::format("sum({} < {}, {})", op->var, visit(op->extent), visit(op->body));
  }
};

std::string shape_string(const std::vector<Expr> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + to_string(shape[i]);
  return s + "]";
}

std::string case_string(const Program &p, const Case &c) {
  std::string s = c.kind == CaseKind::Leaf       ? "leaf:\n"
                  : c.kind == CaseKind::Internal ? "internal:\n"
                                                 : "hoisted:\n";
  for (const Compute &op : c.body) {
    std::string lhs = op.tensor + "[n";
    for (const std::string &i : op.indices) lhs += ", " + i;
    s += fmt::format("  {}] = {}\n", lhs, to_string(op.value));
  }
  return s;
}

}  // namespace

std::string to_string(const Expr &e) { return e.defined() ? Printer().visit(e) : "<undefined>"; }

std::string to_string(const Program &p) {
  std::string s = fmt::format("program {} over {}{}\n", p.name, to_string(p.structure),
                              p.direction == Direction::TopDown ? ", top down" : "");
  if (!p.size_vars.empty()) s += fmt::format("  sizes {}\n", fmt::join(p.size_vars, ", "));
  for (const TensorDecl &t : p.tensors)
    s += fmt::format("  {} {}{}\n", to_string(t.kind), t.name, shape_string(t.shape));
  s += fmt::format("  output {}\n", p.output);
  if (!p.schedule.empty()) {
    std::vector<std::string> items;
    for (const auto &[key, value] : p.schedule) items.push_back(key + "=" + value);
    s += fmt::format("  schedule {}\n", fmt::join(items, ","));
  }
  if (!p.hoisted.body.empty()) s += case_string(p, p.hoisted);
  s += case_string(p, p.leaf) + case_string(p, p.internal);
  if (!p.reductions.empty()) s += "reductions:\n";
  for (const Reduction &r : p.reductions) {
    std::string lhs = r.tensor + "[" + fmt::format("{}", fmt::join(r.indices, ", "));
    s += fmt::format("  {}] += sum(n in {}, {})\n", lhs, to_string(r.over), to_string(r.value));
  }
  return s;
}

}  // namespace grove::ilir
