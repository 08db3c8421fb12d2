#include "plan/FuseElementwise.h"

#include <set>

#include "ilir/IRVisitor.h"

namespace grove::plan {

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
    for (size_t u = i; u < c.body.size(); u++)
      c.body[u].value = ilir::inline_definition(c.body[u].value, removed);
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

}  // namespace grove::plan
