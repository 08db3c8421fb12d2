#include "frontend/dsl/Printer.h"

#include <fmt/format.h>

#include "support/Error.h"

namespace grove::dsl {
namespace {

// Binding strength, as the parser's rules nest: expr (+ -) < mul (* / @) < unary (-) < postfix.
enum Precedence { kSum = 1, kProduct = 2, kUnary = 3, kPostfix = 4 };

int precedence(const ExprAst &e) {
  switch (e.kind) {
    case ExprAstKind::Binary:
      return e.op == BinaryOp::Add || e.op == BinaryOp::Sub ? kSum : kProduct;
    case ExprAstKind::Neg:
      return kUnary;
    case ExprAstKind::SumChildren:
      return 0;  // its body extends as far as an expression goes
    default:
      return kPostfix;
  }
}

const char *function_name(Function f) {
  switch (f) {
    case Function::Sigmoid:
      return "sigmoid";
    case Function::Tanh:
      return "tanh";
    case Function::Exp:
      return "exp";
    case Function::Relu:
      return "relu";
  }
  return "?";
}

const char *structure_name(ilir::StructureKind s) {
  switch (s) {
    case ilir::StructureKind::BinaryTree:
      return "binary_tree";
    case ilir::StructureKind::Tree:
      return "tree";
    case ilir::StructureKind::Dag:
      return "dag";
    case ilir::StructureKind::Sequence:
      return "sequence";
  }
  return "?";
}

std::string print_at(const ExprAst &e, int min_precedence);

// `e` where an operand of at least `min_precedence` is needed: in parentheses when it binds less.
std::string operand(const ExprAst &e, int min_precedence) {
  std::string text = print_at(e, min_precedence);
  return precedence(e) < min_precedence ? "(" + text + ")" : text;
}

// A strict switch: a new kind of expression does not print until it is handled here.
std::string print_at(const ExprAst &e, int min_precedence) {
  switch (e.kind) {
    case ExprAstKind::Number:
      return fmt::format("{}", e.number);
    case ExprAstKind::Name:
      return e.name;
    case ExprAstKind::Neg:
      return "-" + operand(*e.operands[0], kUnary);
    case ExprAstKind::Call:
      return fmt::format("{}({})", function_name(e.function), print_expr(*e.operands[0]));
    case ExprAstKind::Binary: {
      // Left-associative: the right operand of a - b - c binds one level tighter.
      const int p = precedence(e);
      return fmt::format("{} {} {}", operand(*e.operands[0], p), to_string(e.op),
                         operand(*e.operands[1], p + 1));
    }
    case ExprAstKind::Concat: {
      std::string text;
      for (const ExprPtr &part : e.operands) text += (text.empty() ? "" : "; ") + print_expr(*part);
      return "[" + text + "]";
    }
    case ExprAstKind::Slice:
      return fmt::format("{}[{}:{}]", operand(*e.operands[0], kPostfix), e.lo.value.to_string(),
                         e.hi.value.to_string());
    case ExprAstKind::Token:
      return e.name + "[token]";
    case ExprAstKind::Child:
      return fmt::format("{}[{}]", e.name, e.slot == ChildSlot::Var ? e.child_var : to_string(e.slot));
    case ExprAstKind::SumChildren:
      return fmt::format("sum({} in children) {}", e.name, print_expr(*e.operands[0]));
  }
  internal_error(__FILE__, __LINE__, "an expression kind the printer does not know");
}

std::string dims(const TensorDeclAst &decl) {
  std::string text;
  for (const SizeAst &d : decl.dims) text += (text.empty() ? "" : ", ") + d.value.to_string();
  return "[" + text + "]";
}

void print_case(std::string &out, const char *keyword, const CaseAst &kase) {
  out += fmt::format("\n{} {{\n", keyword);
  for (const StatementAst &s : kase.body) out += fmt::format("  {} = {}\n", s.target, print_expr(*s.value));
  out += "}\n";
}

}  // namespace

std::string print_expr(const ExprAst &e) { return print_at(e, 0); }

// The sections in the order docs/DSL.md writes them: header, tensors, cases, output, schedule.
std::string print_model(const ModelAst &model) {
  std::string out = fmt::format("model {}\n", model.name);
  if (model.structure) out += fmt::format("structure {}\n", structure_name(*model.structure));
  if (!model.tensors.empty()) out += "\n";
  for (const TensorDeclAst &t : model.tensors)
    out += fmt::format("{} {} {}\n", t.kind == ilir::TensorKind::Param ? "param" : "state", t.name, dims(t));
  if (model.leaf) print_case(out, "leaf", *model.leaf);
  if (model.internal) print_case(out, "internal", *model.internal);
  if (model.node) print_case(out, "node", *model.node);
  if (model.output) out += fmt::format("\noutput {}\n", *model.output);
  if (model.schedule) {
    out += "\nschedule {\n";
    for (const ScheduleItemAst &item : model.schedule->items)
      out += fmt::format("  {} = {}\n", item.key, item.value);
    out += "}\n";
  }
  return out;
}

}  // namespace grove::dsl
