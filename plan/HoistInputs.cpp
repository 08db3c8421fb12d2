#include "plan/HoistInputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"

namespace grove::plan {

namespace {

// Whether `e` reads nothing computed by the recursion: only params, indices, sizes and token(n).
bool input_only(const ilir::Program &p, const ilir::Expr &e) {
  return !ilir::contains(e, [&](const ilir::Expr &x) {
    if (const auto *l = x.as<ilir::Load>()) return p.get(l->tensor).kind != ilir::TensorKind::Param;
    const auto *c = x.as<ilir::StructCall>();
    return c && c->fn != ilir::StructFn::Token;
  });
}

// Replaces the outermost Sums of one Compute that only read the node's input by loads of hoisted
// states, adding their definitions to the hoisted case (once per distinct Sum and shape).
class Hoister : public ilir::IRMutator {
 public:
  // With `create` off, only Sums already hoisted are replaced.
  Hoister(ilir::Program &p, const ilir::Compute &op, std::map<std::string, std::string> &hoisted, bool create)
      : p_(p), op_(op), hoisted_(hoisted), create_(create) {}

 protected:
  ilir::Expr visit_Sum(const ilir::Sum *op, const ilir::Expr &e) override {
    if (!input_only(p_, e)) return e;  // a Sum over children: nothing inside is worth hoisting alone
    const ilir::TensorDecl &t = p_.get(op_.tensor);
    std::string key = fmt::format("{}|{}", ilir::to_string(e), fmt::join(op_.indices, ","));
    for (const ilir::Expr &d : t.shape) key += "|" + ilir::to_string(d);
    auto it = hoisted_.find(key);
    if (it == hoisted_.end() && !create_) return e;
    if (it == hoisted_.end()) {
      std::string name = fmt::format("_in{}", hoisted_.size());
      ilir::TensorDecl decl{name, ilir::TensorKind::State, t.shape};
      auto temps = std::find_if(p_.tensors.begin(), p_.tensors.end(),
                                [](const ilir::TensorDecl &d) { return d.kind == ilir::TensorKind::Temp; });
      p_.tensors.insert(temps, std::move(decl));
      p_.hoisted.body.push_back({name, op_.indices, e});
      it = hoisted_.emplace(key, name).first;
    }
    std::vector<ilir::Expr> indices;
    for (const std::string &i : op_.indices) indices.push_back(ilir::Var::make(i, ilir::VarKind::Index));
    return ilir::Load::make(it->second, ilir::Var::node(), indices);
  }

 private:
  ilir::Program &p_;
  const ilir::Compute &op_;
  std::map<std::string, std::string> &hoisted_;
  bool create_;
};

}  // namespace

ilir::Program hoist_inputs(const ilir::Program &program) {
  ilir::Program p = program;
  std::map<std::string, std::string> hoisted;  // printed Sum and shape → hoisted state
  // Only the internal case: the leaf case already runs as one batch of all leaves. A product the
  // leaf case shares with the internal one (a DAG's or sequence's single node case) uses the same
  // hoisted state in both.
  for (ilir::Compute &op : p.internal.body) op.value = Hoister(p, op, hoisted, true).mutate(op.value);
  if (hoisted.empty()) return program;
  for (ilir::Compute &op : p.leaf.body) op.value = Hoister(p, op, hoisted, false).mutate(op.value);
  return p;
}

}  // namespace grove::plan
