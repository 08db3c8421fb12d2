#include "frontend/relay/passes/ToGraphNormalForm.h"

#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"

namespace grove::relay {

namespace {

bool refers_to(const Expr &e, const Expr &var) {
  bool found = false;
  post_order_visit(e, [&](const Expr &x) { found = found || x.same_as(var); });
  return found;
}

class ToGraph : public LetMutator {
 public:
  explicit ToGraph(const Effects &effects) : effects_(effects) {}

 protected:
  std::optional<Expr> bind(const Let *let, const Expr &value) override {
    // An effect must stay where it is, and happen once; a recursive closure needs its name.
    if (effects_.effectful(let->value)) return std::nullopt;
    if (let->value.as<Function>() && refers_to(let->value, let->var)) return std::nullopt;
    return value;
  }

 private:
  const Effects &effects_;
};

}  // namespace

Module to_graph_normal_form(const Module &module) {
  Effects effects(module);
  return map_functions(module,
                       [&](const std::string &, const Expr &fn) { return ToGraph(effects).mutate(fn); });
}

}  // namespace grove::relay
