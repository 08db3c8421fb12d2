#include "plan/WeightTerms.h"

#include <utility>

#include "ilir/Affine.h"
#include "ilir/IRVisitor.h"

namespace grove::plan {

namespace {

bool mentions(const ilir::Expr &e, const std::string &name) {
  return ilir::contains(e, [&](const ilir::Expr &x) {
    const auto *v = x.as<ilir::Var>();
    return v && v->name == name;
  });
}

// Σ_k W[row + c, k] · x (either factor order), or nothing.
std::optional<WeightTerm> match_weight_term(const ilir::Program &program, const ilir::Sum *sum,
                                            const std::string &row,
                                            const std::map<std::string, int64_t> &sizes) {
  const auto *mul = sum->body.as<ilir::Binary>();
  if (!mul || mul->op != ilir::BinOp::Mul) return std::nullopt;
  for (auto [w, x] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
    const auto *load = w.as<ilir::Load>();
    if (!load || load->node.defined() || load->indices.size() != 2) continue;  // a param, rank 2
    const auto *k = load->indices[1].as<ilir::Var>();
    if (!k || k->name != sum->var || mentions(load->indices[0], sum->var)) continue;
    // The row index must be row + c for a constant c.
    std::optional<int64_t> offset = ilir::offset_from(load->indices[0], row, sizes);
    std::optional<int64_t> cols = ilir::constant_value(program.get(load->tensor).shape[1], sizes);
    std::optional<int64_t> extent = ilir::constant_value(sum->extent, sizes);
    if (!offset || !cols || !extent || *cols != *extent || mentions(x, row)) continue;
    if (ilir::contains(x, [](const ilir::Expr &e) { return e.as<ilir::Sum>() != nullptr; })) continue;
    return WeightTerm{sum, load->tensor, *offset, *cols, x};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<WeightTerm>> match_weight_terms(const ilir::Program &program,
                                                          const ilir::Expr &value, const std::string &row,
                                                          const std::map<std::string, int64_t> &sizes,
                                                          bool selects_allowed) {
  // The outermost Sums, found through arithmetic and selects (not through loads' indices). The
  // order (right operand first) numbers the terms, and so the packed weights and accumulators.
  std::vector<WeightTerm> terms;
  std::vector<ilir::Expr> stack{value};
  while (!stack.empty()) {
    ilir::Expr e = stack.back();
    stack.pop_back();
    if (const auto *s = e.as<ilir::Sum>()) {
      std::optional<WeightTerm> term = match_weight_term(program, s, row, sizes);
      if (!term) return std::nullopt;
      terms.push_back(*term);
    } else if (const auto *b = e.as<ilir::Binary>()) {
      stack.insert(stack.end(), {b->a, b->b});
    } else if (const auto *u = e.as<ilir::Unary>()) {
      stack.push_back(u->a);
    } else if (const auto *sel = e.as<ilir::Select>()) {
      if (!selects_allowed) return std::nullopt;
      stack.insert(stack.end(), {sel->cond, sel->t, sel->f});
    }
  }
  if (terms.empty()) return std::nullopt;
  return terms;
}

}  // namespace grove::plan
