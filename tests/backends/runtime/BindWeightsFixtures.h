#pragma once
// The program both bind-weights suites check weight files against: the parameters of docs/MODELS.md's
// binary TreeLSTM in size variables, and one state that takes no part in binding.

#include <string>

#include "ilir/IR.h"

namespace grove::bind_weights_fixtures {

inline ilir::Expr size(const std::string &name) { return ilir::Var::make(name, ilir::VarKind::Size); }

inline ilir::Program treelstm() {
  using ilir::TensorKind;
  ilir::Expr H = size("H"), D = size("D"), V = size("V");
  ilir::Program p;
  p.name = "treelstm";
  p.size_vars = {"V", "D", "H"};
  p.tensors = {{"emb", TensorKind::Param, {V, D}},
               {"W_iou", TensorKind::Param, {3 * H, D}},
               {"U_iou", TensorKind::Param, {3 * H, 2 * H}},
               {"b_iou", TensorKind::Param, {3 * H}},
               {"U_f", TensorKind::Param, {2 * H, 2 * H}},
               {"b_f", TensorKind::Param, {H}},
               {"h", TensorKind::State, {H}}};
  return p;
}

}  // namespace grove::bind_weights_fixtures
