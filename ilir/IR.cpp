#include "ilir/IR.h"

#include "support/Error.h"

namespace grove::ilir {

Expr::Expr(float v) : Expr(FloatImm::make(v)) {}
Expr::Expr(int v) : Expr(IntImm::make(v)) {}

Expr FloatImm::make(float value) { return Expr(std::make_shared<const FloatImm>(value)); }

Expr IntImm::make(int64_t value) { return Expr(std::make_shared<const IntImm>(value)); }

bool is_node_var(const Expr &e) {
  const auto *v = e.as<Var>();
  return v && v->var_kind == VarKind::Node;
}

Expr Var::make(const std::string &name, VarKind kind) {
  GROVE_CHECK(!name.empty(), "a Var needs a name");
  return Expr(std::make_shared<const Var>(name, kind));
}

Expr Binary::make(BinOp op, Expr a, Expr b) {
  GROVE_CHECK(a.defined() && b.defined(), "Binary {} with an undefined operand", to_string(op));
  GROVE_CHECK(a.type() == b.type(), "Binary {} mixes operand types", to_string(op));
  ScalarType t = a.type();
  switch (op) {
    case BinOp::LT:
    case BinOp::LE:
    case BinOp::EQ:
      t = ScalarType::Bool;
      break;
    case BinOp::And:
      GROVE_CHECK(a.type() == ScalarType::Bool, "And needs Bool operands");
      break;
    case BinOp::Mod:
      GROVE_CHECK(a.type() == ScalarType::Int, "Mod needs Int operands");
      break;
    default:
      GROVE_CHECK(a.type() != ScalarType::Bool, "arithmetic on Bool");
  }
  return Expr(std::make_shared<const Binary>(op, std::move(a), std::move(b), t));
}

Expr Unary::make(UnaryOp op, Expr a) {
  GROVE_CHECK(a.defined(), "Unary {} with an undefined operand", to_string(op));
  GROVE_CHECK(op == UnaryOp::Neg ? a.type() != ScalarType::Bool : a.type() == ScalarType::Float,
              "Unary {} on a wrong operand type", to_string(op));
  return Expr(std::make_shared<const Unary>(op, std::move(a)));
}

Expr Select::make(Expr cond, Expr t, Expr f) {
  GROVE_CHECK(cond.defined() && t.defined() && f.defined(), "Select with an undefined operand");
  GROVE_CHECK(cond.type() == ScalarType::Bool, "Select condition is not Bool");
  GROVE_CHECK(t.type() == f.type(), "Select branches differ in type");
  return Expr(std::make_shared<const Select>(std::move(cond), std::move(t), std::move(f)));
}

Expr Load::make(const std::string &tensor, Expr node, std::vector<Expr> indices) {
  GROVE_CHECK(!tensor.empty(), "Load of an unnamed tensor");
  GROVE_CHECK(!node.defined() || node.type() == ScalarType::Int, "Load of {}: node is not Int", tensor);
  for (const Expr &i : indices)
    GROVE_CHECK(i.defined() && i.type() == ScalarType::Int, "Load of {}: index is not Int", tensor);
  return Expr(std::make_shared<const Load>(tensor, std::move(node), std::move(indices)));
}

Expr StructCall::make(StructFn fn, Expr node, Expr arg) {
  GROVE_CHECK(node.defined() && node.type() == ScalarType::Int, "{} needs an Int node", to_string(fn));
  const bool optional = fn == StructFn::Parent || fn == StructFn::ChildSlot;
  GROVE_CHECK(optional || (fn == StructFn::Child) == arg.defined(), "{}: argument mismatch", to_string(fn));
  GROVE_CHECK(!arg.defined() || arg.type() == ScalarType::Int, "{}: argument is not Int", to_string(fn));
  ScalarType t = fn == StructFn::IsLeaf ? ScalarType::Bool : ScalarType::Int;
  return Expr(std::make_shared<const StructCall>(fn, std::move(node), std::move(arg), t));
}

Expr Sum::make(const std::string &var, Expr extent, Expr body) {
  GROVE_CHECK(!var.empty(), "Sum without a variable");
  GROVE_CHECK(extent.defined() && extent.type() == ScalarType::Int, "Sum over {}: extent is not Int", var);
  GROVE_CHECK(body.defined() && body.type() != ScalarType::Bool, "Sum over {}: bad body", var);
  return Expr(std::make_shared<const Sum>(var, std::move(extent), std::move(body)));
}

Expr operator+(Expr a, Expr b) { return Binary::make(BinOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary::make(BinOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary::make(BinOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary::make(BinOp::Div, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Binary::make(BinOp::LT, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return Unary::make(UnaryOp::Neg, std::move(a)); }

const TensorDecl *Program::find(const std::string &tensor) const {
  for (const TensorDecl &t : tensors)
    if (t.name == tensor) return &t;
  return nullptr;
}

const TensorDecl &Program::get(const std::string &tensor) const {
  const TensorDecl *t = find(tensor);
  GROVE_CHECK(t != nullptr, "no tensor named '{}' in program {}", tensor, name);
  return *t;
}

int64_t eval_size(const Expr &size, const std::map<std::string, int64_t> &sizes) {
  // Size expressions are a few nodes deep (3H, 2H + 1): recursion is bounded by the model file.
  if (const auto *i = size.as<IntImm>()) return i->value;
  if (const auto *v = size.as<Var>()) {
    auto it = sizes.find(v->name);
    GROVE_CHECK(it != sizes.end(), "size variable {} is not bound", v->name);
    return it->second;
  }
  const auto *b = size.as<Binary>();
  GROVE_CHECK(b != nullptr && (b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul),
              "not a size expression");
  int64_t x = eval_size(b->a, sizes), y = eval_size(b->b, sizes);
  return b->op == BinOp::Add ? x + y : b->op == BinOp::Sub ? x - y : x * y;
}

const char *to_string(BinOp op) {
  switch (op) {
    case BinOp::Add:
      return "+";
    case BinOp::Sub:
      return "-";
    case BinOp::Mul:
      return "*";
    case BinOp::Div:
      return "/";
    case BinOp::Min:
      return "min";
    case BinOp::Max:
      return "max";
    case BinOp::Mod:
      return "%";
    case BinOp::LT:
      return "<";
    case BinOp::LE:
      return "<=";
    case BinOp::EQ:
      return "==";
    case BinOp::And:
      return "&&";
  }
  return "?";
}

const char *to_string(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "-";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Relu:
      return "relu";
  }
  return "?";
}

const char *to_string(StructFn fn) {
  switch (fn) {
    case StructFn::Child:
      return "child";
    case StructFn::NumChildren:
      return "num_children";
    case StructFn::IsLeaf:
      return "is_leaf";
    case StructFn::Token:
      return "token";
    case StructFn::Parent:
      return "parent";
    case StructFn::ChildSlot:
      return "child_slot";
    case StructFn::NumParents:
      return "num_parents";
  }
  return "?";
}

const char *to_string(TensorKind kind) {
  switch (kind) {
    case TensorKind::Param:
      return "param";
    case TensorKind::State:
      return "state";
    case TensorKind::Temp:
      return "temp";
    case TensorKind::Saved:
      return "saved";
    case TensorKind::Gradient:
      return "gradient";
  }
  return "?";
}

const char *to_string(StructureKind kind) {
  switch (kind) {
    case StructureKind::BinaryTree:
      return "binary_tree";
    case StructureKind::Tree:
      return "tree";
    case StructureKind::Dag:
      return "dag";
    case StructureKind::Sequence:
      return "sequence";
  }
  return "?";
}

const char *to_string(CaseKind kind) {
  switch (kind) {
    case CaseKind::Leaf:
      return "leaf";
    case CaseKind::Internal:
      return "internal";
    case CaseKind::Hoisted:
      return "hoisted";
  }
  return "?";
}

bool has_predecessor_slots(StructureKind kind) { return predecessor_slots(kind) > 0; }

int predecessor_slots(StructureKind kind) {
  switch (kind) {
    case StructureKind::Dag:
      return 2;
    case StructureKind::Sequence:
      return 1;
    case StructureKind::BinaryTree:
    case StructureKind::Tree:
      break;
  }
  return 0;
}

}  // namespace grove::ilir
