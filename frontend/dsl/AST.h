#pragma once
// The model language's syntax tree. The parser builds it; the checker resolves names and fills in
// every expression's shape; ToILIR reads it. Model files are small and the parser bounds nesting
// depth, so walks of this tree may recurse.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/dsl/Shapes.h"
#include "ilir/IR.h"
#include "support/Diagnostics.h"

namespace grove::dsl {

// A size expression as written (`3H`, `H+1`) with the place of each variable use.
struct SizeAst {
  Loc loc;
  Size value;
  std::vector<std::pair<std::string, Loc>> vars;
};

enum class ExprAstKind {
  Number,       // 0.5
  Name,         // a param, a state or temp of the current node
  Neg,          // -a                        operands: a
  Call,         // sigmoid(a)                operands: a
  Binary,       // a + b, a @ b              operands: a, b
  Concat,       // [a; b; ...]               operands: the parts
  Slice,        // a[lo:hi]                  operands: a
  Token,        // E[token]                  name: E
  Child,        // h[left], h[right], h[k], h[pred0], h[pred1], h[prev]   name: h
  SumChildren,  // sum(k in children) body   name: k; operands: body
};

enum class BinaryOp { Add, Sub, Mul, Div, MatMul };
enum class Function { Sigmoid, Tanh, Exp, Relu };
// left/right: a binary tree's children; Var: h[k] in sum(k in children); pred0/pred1: a DAG node's
// predecessor slots; prev: a sequence token's predecessor.
enum class ChildSlot { Left, Right, Var, Pred0, Pred1, Prev };

inline const char *to_string(ChildSlot slot) {
  switch (slot) {
    case ChildSlot::Left:
      return "left";
    case ChildSlot::Right:
      return "right";
    case ChildSlot::Var:
      return "k";
    case ChildSlot::Pred0:
      return "pred0";
    case ChildSlot::Pred1:
      return "pred1";
    case ChildSlot::Prev:
      return "prev";
  }
  return "?";
}

inline const char *to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::MatMul:
      return "@";
  }
  return "?";
}

// What a Name, Token or Child refers to, set by the checker.
enum class NameKind { Unresolved, Param, State, Temp };

struct ExprAst;
using ExprPtr = std::unique_ptr<ExprAst>;

struct ExprAst {
  ExprAstKind kind;
  Loc loc;  // the operator for Binary, the first character otherwise
  double number = 0;
  std::string name;
  BinaryOp op = BinaryOp::Add;
  Function function = Function::Sigmoid;
  ChildSlot slot = ChildSlot::Left;
  std::string child_var;  // Child with ChildSlot::Var
  std::vector<ExprPtr> operands;
  SizeAst lo, hi;  // Slice

  // Filled in by the checker.
  Shape shape;
  NameKind resolved = NameKind::Unresolved;

  ExprAst(ExprAstKind k, Loc l) : kind(k), loc(l) {}
};

// Whether `e` only reads tensor elements, without arithmetic: a name, E[token], h[left], or a
// slice or concatenation of such. An operand of '@' that is not one is computed once into a temp
// first, so that no arithmetic is repeated inside the product's reduction.
inline bool is_index_expression(const ExprAst &e) {
  switch (e.kind) {
    case ExprAstKind::Name:
    case ExprAstKind::Token:
    case ExprAstKind::Child:
      return true;
    case ExprAstKind::Slice:
    case ExprAstKind::Concat:
      for (const ExprPtr &operand : e.operands) {
        if (!is_index_expression(*operand)) return false;
      }
      return true;
    default:
      return false;
  }
}

struct StatementAst {
  std::string target;
  Loc loc;
  ExprPtr value;
  // Filled in by the checker: what the target is.
  NameKind resolved = NameKind::Unresolved;
};

struct CaseAst {
  ilir::CaseKind kind;  // Leaf for the `node` case of a dag or sequence model
  Loc loc;
  std::vector<StatementAst> body;
  bool node = false;  // the single `node` case of a dag or sequence model
};

// One `key = value` of the schedule block. The value is kept as written (`on`, `16`, `-1`); the
// scheduling layer checks keys and values (scheduling/Schedule.h).
struct ScheduleItemAst {
  std::string key;
  Loc loc;  // the key
  std::string value;
};

struct ScheduleAst {
  Loc loc;
  std::vector<ScheduleItemAst> items;  // in file order, each key once
};

struct TensorDeclAst {
  std::string name;
  Loc loc;
  ilir::TensorKind kind;  // Param or State
  std::vector<SizeAst> dims;
  Shape shape;  // filled in by the checker
};

struct ModelAst {
  std::string name;
  Loc loc;
  std::optional<ilir::StructureKind> structure;
  Loc structure_loc;
  std::vector<TensorDeclAst> tensors;  // params and states, in file order
  std::optional<CaseAst> leaf, internal;
  std::optional<CaseAst> node;  // dag and sequence models: the one case, instead of leaf and internal
  std::optional<std::string> output;
  Loc output_loc;
  std::optional<ScheduleAst> schedule;
  Loc end_loc;                         // where a missing declaration is reported
  std::vector<std::string> size_vars;  // filled in by the checker, in order of first appearance
};

}  // namespace grove::dsl
