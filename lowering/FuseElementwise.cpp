#include "lowering/FuseElementwise.h"

#include <fmt/format.h>

#include <set>

#include "ilir/IRVisitor.h"

namespace grove::lowering {

namespace {

bool has_sum(const ilir::Expr &e) {
  return ilir::contains(e, [](const ilir::Expr &x) { return x.as<ilir::Sum>() != nullptr; });
}

// Only loads, selects and integer index arithmetic: reading it again costs a load, nothing more.
bool is_index_expression(const ilir::Expr &e) {
  return !ilir::contains(e, [](const ilir::Expr &x) {
    if (x.as<ilir::Unary>()) return true;
    const auto *b = x.as<ilir::Binary>();
    return b && b->type == ilir::ScalarType::Float;
  });
}

// Replaces every load of `def.tensor` by def's value at the load's indices.
class Inliner : public ilir::IRMutator {
 public:
  explicit Inliner(const ilir::Compute &def) : def_(def) {}

 protected:
  ilir::Expr visit_Load(const ilir::Load *op, const ilir::Expr &e) override {
    if (op->tensor != def_.tensor) return IRMutator::visit_Load(op, e);
    // Rename the definition's indices apart first, so the substitution is simultaneous.
    ilir::Expr value = def_.value;
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = ilir::substitute(value, def_.indices[d],
                               ilir::Var::make(fmt::format("__fuse{}", d), ilir::VarKind::Index));
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = ilir::substitute(value, fmt::format("__fuse{}", d), mutate(op->indices[d]));
    return value;
  }

 private:
  const ilir::Compute &def_;
};

void fuse_case(const ilir::Program &p, ilir::Case &c) {
  for (size_t i = 0; i < c.body.size();) {
    const ilir::Compute &def = c.body[i];
    bool fusable = p.get(def.tensor).kind == ilir::TensorKind::Temp && !has_sum(def.value);
    if (fusable && !is_index_expression(def.value))
      for (size_t u = i + 1; u < c.body.size(); u++)
        fusable = fusable && !ilir::read_inside_sum(c.body[u].value, def.tensor);
    if (!fusable) {
      i++;
      continue;
    }
    ilir::Compute removed = def;
    c.body.erase(c.body.begin() + i);
    Inliner inliner(removed);
    for (size_t u = i; u < c.body.size(); u++) c.body[u].value = inliner.mutate(c.body[u].value);
  }
}

}  // namespace

ilir::Program fuse_elementwise(const ilir::Program &program) {
  ilir::Program p = program;
  fuse_case(p, p.leaf);
  fuse_case(p, p.internal);
  // Drop the declarations of temps no case computes any more.
  std::set<std::string> computed;
  for (const ilir::Case *c : {&p.leaf, &p.internal})
    for (const ilir::Compute &op : c->body) computed.insert(op.tensor);
  std::erase_if(p.tensors, [&](const ilir::TensorDecl &t) {
    return t.kind == ilir::TensorKind::Temp && !computed.count(t.name);
  });
  return p;
}

}  // namespace grove::lowering
