#include "frontend/dsl/ToILIR.h"

#include <map>
#include <set>
#include <unordered_map>

namespace grove::dsl {
namespace {

using ilir::Expr;

ilir::UnaryOp unary_op(Function function) {
  switch (function) {
    case Function::Sigmoid:
      return ilir::UnaryOp::Sigmoid;
    case Function::Tanh:
      return ilir::UnaryOp::Tanh;
    case Function::Exp:
      return ilir::UnaryOp::Exp;
    case Function::Relu:
      return ilir::UnaryOp::Relu;
  }
  internal_error(__FILE__, __LINE__, "unknown function");
}

ilir::BinOp binary_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return ilir::BinOp::Add;
    case BinaryOp::Sub:
      return ilir::BinOp::Sub;
    case BinaryOp::Mul:
      return ilir::BinOp::Mul;
    case BinaryOp::Div:
      return ilir::BinOp::Div;
    case BinaryOp::MatMul:
      break;
  }
  internal_error(__FILE__, __LINE__, "'@' is not elementwise");
}

Expr index_var(const std::string &name) { return ilir::Var::make(name, ilir::VarKind::Index); }

// `index + offset`, leaving out a zero offset.
Expr offset_index(const Expr &index, const Size &offset) {
  if (offset == Size()) return index;
  return ilir::Binary::make(ilir::BinOp::Add, index, offset.to_ilir());
}

// Lowers the model, in these steps:
//   1. program header: name, structure, size variables, output, the schedule block's settings in
//      file order; params then states as declared;
//      a dag or sequence model's one `node` case becomes both the leaf and the internal case;
//   2. temp names: leaf temps keep their names; an internal temp reuses a leaf temp's declaration
//      when name and shape agree, and is renamed `name_internal` when only the name does; compiler
//      temps are `_t0`, `_t1`, ... avoiding every user name;
//   3. each statement becomes `target[n, i0, ...] = value`, the value built by lowering the
//      expression at index expressions (i0, ...): a slice shifts index 0, a concatenation selects
//      a part by index 0, `A @ x` sums over a fresh k of A(i, k) * x(k). A '@' operand that is not
//      an index expression is first computed into a compiler temp (concatenation and slice parts
//      separately), so the reduction only loads.
class Lowering {
 public:
  explicit Lowering(const ModelAst &model) : model_(model) {}

  ilir::Program run() {
    program_.name = model_.name;
    program_.structure = *model_.structure;
    program_.size_vars = model_.size_vars;
    program_.output = *model_.output;
    if (model_.schedule) {
      for (const ScheduleItemAst &item : model_.schedule->items) {
        program_.schedule.emplace_back(item.key, item.value);
      }
    }
    for (ilir::TensorKind kind : {ilir::TensorKind::Param, ilir::TensorKind::State}) {
      for (const TensorDeclAst &decl : model_.tensors) {
        if (decl.kind == kind) add_tensor(decl.name, kind, decl.shape);
      }
    }
    if (model_.node) {
      // A DAG or sequence node has one case; both of the Program's cases are that case, so that
      // every level of the batch, the sources' included, runs the same code.
      for (const StatementAst &statement : model_.node->body) used_names_.insert(statement.target);
      lower_case(*model_.node, program_.leaf);
      program_.internal.body = program_.leaf.body;
      return std::move(program_);
    }
    for (const CaseAst *kase : {&*model_.leaf, &*model_.internal}) {
      for (const StatementAst &statement : kase->body) used_names_.insert(statement.target);
    }
    lower_case(*model_.leaf, program_.leaf);
    lower_case(*model_.internal, program_.internal);
    return std::move(program_);
  }

 private:
  // What lowering one Compute needs: its reduction-variable counter, and the ILIR names of the
  // enclosing sum(k in children)'s variable.
  struct ComputeContext {
    int next_reduction = 0;
    std::map<std::string, std::string> child_vars;  // user's k → ILIR's k-name
    std::string fresh_reduction() { return fmt::format("k{}", next_reduction++); }
  };

  void add_tensor(const std::string &name, ilir::TensorKind kind, const Shape &shape) {
    program_.tensors.push_back(ilir::TensorDecl{name, kind, to_ilir(shape)});
    declared_[name] = shape;
    used_names_.insert(name);
  }

  std::string fresh_name(const std::string &base) {
    std::string name = base;
    for (int i = 1; used_names_.count(name); ++i) name = base + std::to_string(i);
    used_names_.insert(name);
    return name;
  }

  // The declaration name of the case's temp `name` with `shape`, declaring it if needed.
  std::string declare_temp(const std::string &name, const Shape &shape, bool leaf) {
    auto existing = declared_.find(name);
    if (existing == declared_.end()) {
      add_tensor(name, ilir::TensorKind::Temp, shape);
      return name;
    }
    GROVE_CHECK(!leaf, "leaf temp '{}' declared twice", name);
    if (existing->second == shape) return name;
    std::string renamed = fresh_name(name + "_internal");
    add_tensor(renamed, ilir::TensorKind::Temp, shape);
    return renamed;
  }

  void lower_case(const CaseAst &kase, ilir::Case &out) {
    body_ = &out.body;
    temp_names_.clear();
    materialized_.clear();
    bool leaf = kase.kind == ilir::CaseKind::Leaf;
    for (const StatementAst &statement : kase.body) {
      // Lowering the value first appends the compiler temps it needs, so that declarations follow
      // the order of computation.
      ilir::Compute compute = compute_of(*statement.value);
      compute.tensor = statement.target;
      if (statement.resolved == NameKind::Temp) {
        compute.tensor = declare_temp(statement.target, statement.value->shape, leaf);
        temp_names_[statement.target] = compute.tensor;
      }
      body_->push_back(std::move(compute));
    }
  }

  // `tensor[n, i0, ...] = e`, with the tensor left for the caller to name.
  ilir::Compute compute_of(const ExprAst &e) {
    ComputeContext context;
    ilir::Compute compute;
    std::vector<Expr> indices;
    for (size_t d = 0; d < e.shape.size(); ++d) {
      compute.indices.push_back(fmt::format("i{}", d));
      indices.push_back(index_var(compute.indices.back()));
    }
    compute.value = lower(e, indices, context);
    return compute;
  }

  // Computes every non-index part of a '@' operand into a compiler temp (see step 3).
  void materialize(const ExprAst &e) {
    if (is_index_expression(e) || materialized_.count(&e)) return;
    if (e.kind == ExprAstKind::Concat || e.kind == ExprAstKind::Slice) {
      for (const ExprPtr &operand : e.operands) materialize(*operand);
      return;
    }
    ilir::Compute compute = compute_of(e);
    do {
      compute.tensor = fmt::format("_t{}", next_temp_++);
    } while (used_names_.count(compute.tensor));
    add_tensor(compute.tensor, ilir::TensorKind::Temp, e.shape);
    materialized_[&e] = compute.tensor;
    body_->push_back(std::move(compute));
  }

  Expr load(const std::string &tensor, Expr node, std::vector<Expr> indices) {
    return ilir::Load::make(tensor, std::move(node), std::move(indices));
  }

  // The scalar value of `e` at `indices` (one per dimension of e's shape).
  Expr lower(const ExprAst &e, const std::vector<Expr> &indices, ComputeContext &context) {
    GROVE_CHECK(indices.size() == e.shape.size(), "{} indices for a rank-{} value", indices.size(),
                e.shape.size());
    auto temp = materialized_.find(&e);
    if (temp != materialized_.end()) return load(temp->second, ilir::Var::node(), indices);
    switch (e.kind) {
      case ExprAstKind::Number:
        return ilir::FloatImm::make(static_cast<float>(e.number));
      case ExprAstKind::Name:
        return lower_name(e, indices);
      case ExprAstKind::Neg:
        return ilir::Unary::make(ilir::UnaryOp::Neg, lower(*e.operands[0], indices, context));
      case ExprAstKind::Call:
        return ilir::Unary::make(unary_op(e.function), lower(*e.operands[0], indices, context));
      case ExprAstKind::Binary: {
        if (e.op == BinaryOp::MatMul) return lower_matmul(e, indices, context);
        // Sequenced so that fresh names are handed out left to right.
        Expr a = lower_broadcast(*e.operands[0], indices, context);
        Expr b = lower_broadcast(*e.operands[1], indices, context);
        return ilir::Binary::make(binary_op(e.op), a, b);
      }
      case ExprAstKind::Concat:
        return lower_concat(e, indices, context);
      case ExprAstKind::Slice: {
        std::vector<Expr> shifted = indices;
        shifted[0] = offset_index(indices[0], e.lo.value);
        return lower(*e.operands[0], shifted, context);
      }
      case ExprAstKind::Token: {
        std::vector<Expr> row = {ilir::StructCall::token(ilir::Var::node())};
        row.insert(row.end(), indices.begin(), indices.end());
        return load(e.name, Expr(), row);
      }
      case ExprAstKind::Child:
        return load(e.name, child_node(e, context), indices);
      case ExprAstKind::SumChildren: {
        std::string var = context.fresh_reduction();
        context.child_vars[e.name] = var;
        Expr body = lower(*e.operands[0], indices, context);
        context.child_vars.erase(e.name);
        return ilir::Sum::make(var, ilir::StructCall::num_children(ilir::Var::node()), body);
      }
    }
    internal_error(__FILE__, __LINE__, "unknown expression kind");
  }

  Expr lower_name(const ExprAst &e, const std::vector<Expr> &indices) {
    switch (e.resolved) {
      case NameKind::Param:
        return load(e.name, Expr(), indices);
      case NameKind::State:
        return load(e.name, ilir::Var::node(), indices);
      case NameKind::Temp:
        return load(temp_names_.at(e.name), ilir::Var::node(), indices);
      case NameKind::Unresolved:
        break;
    }
    internal_error(__FILE__, __LINE__, fmt::format("name '{}' was not resolved by the checker", e.name));
  }

  Expr child_node(const ExprAst &e, const ComputeContext &context) {
    Expr slot;
    switch (e.slot) {
      case ChildSlot::Left:
      case ChildSlot::Pred0:
      case ChildSlot::Prev:
        slot = ilir::IntImm::make(0);
        break;
      case ChildSlot::Right:
      case ChildSlot::Pred1:
        slot = ilir::IntImm::make(1);
        break;
      case ChildSlot::Var:
        slot = index_var(context.child_vars.at(e.child_var));
        break;
    }
    return ilir::StructCall::child(ilir::Var::node(), slot);
  }

  // A scalar operand of an elementwise operator broadcasts: it takes no indices.
  Expr lower_broadcast(const ExprAst &e, const std::vector<Expr> &indices, ComputeContext &context) {
    return lower(e, e.shape.empty() ? std::vector<Expr>{} : indices, context);
  }

  // A @ x → Σ_k A(i, k) x(k);  A @ B → Σ_k A(i, k) B(k, j).
  Expr lower_matmul(const ExprAst &e, const std::vector<Expr> &indices, ComputeContext &context) {
    const ExprAst &a = *e.operands[0];
    const ExprAst &b = *e.operands[1];
    materialize(a);
    materialize(b);
    std::string k = context.fresh_reduction();
    Expr kvar = index_var(k);
    std::vector<Expr> b_indices = {kvar};
    if (indices.size() == 2) b_indices.push_back(indices[1]);
    Expr product = ilir::Binary::make(ilir::BinOp::Mul, lower(a, {indices[0], kvar}, context),
                                      lower(b, b_indices, context));
    return ilir::Sum::make(k, a.shape[1].to_ilir(), product);
  }

  // [a; b; c] at row i → select(i < |a|, a(i), select(i < |a|+|b|, b(i - |a|), c(i - |a| - |b|))).
  Expr lower_concat(const ExprAst &e, const std::vector<Expr> &indices, ComputeContext &context) {
    std::vector<Expr> parts;
    std::vector<Size> ends;
    Size begin;
    for (const ExprPtr &part : e.operands) {
      std::vector<Expr> shifted = indices;
      shifted[0] =
          begin == Size() ? indices[0] : ilir::Binary::make(ilir::BinOp::Sub, indices[0], begin.to_ilir());
      parts.push_back(lower(*part, shifted, context));
      begin = begin + part->shape[0];
      ends.push_back(begin);
    }
    Expr result = parts.back();
    for (size_t p = parts.size() - 1; p-- > 0;) {
      result = ilir::Select::make(ilir::Binary::make(ilir::BinOp::LT, indices[0], ends[p].to_ilir()),
                                  parts[p], result);
    }
    return result;
  }

  const ModelAst &model_;
  ilir::Program program_;
  std::map<std::string, Shape> declared_;  // every declared tensor's shape
  std::set<std::string> used_names_;       // every user name and declared tensor
  int next_temp_ = 0;
  std::vector<ilir::Compute> *body_ = nullptr;
  std::map<std::string, std::string> temp_names_;                  // this case: user temp → decl
  std::unordered_map<const ExprAst *, std::string> materialized_;  // this case: operand → temp
};

}  // namespace

ilir::Program to_ilir(const ModelAst &model) { return Lowering(model).run(); }

}  // namespace grove::dsl
