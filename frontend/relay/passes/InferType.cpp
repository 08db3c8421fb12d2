#include "frontend/relay/passes/InferType.h"

#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"

namespace grove::relay {

namespace {

// Rebuilds each unannotated Var once (the mutator's memo maps every use of a variable to its one
// new node) and each Function without a return type, from the types inference left on the nodes.
class Annotator : public ExprMutator {
 protected:
  Expr rewrite(const Expr &pre, const Expr &post) override {
    if (const auto *v = pre.as<Var>()) {
      if (v->type_annotation.defined() || !pre->checked_type.defined()) return post;
      return Var::make(v->name_hint, pre->checked_type, v->span);
    }
    if (const auto *f = post.as<Function>()) {
      const auto *type = pre->checked_type.defined() ? pre->checked_type.as<FuncType>() : nullptr;
      if (f->ret_type.defined() || !type) return post;
      return Function::make(f->params, f->body, type->ret_type, f->type_params, f->attrs, f->span);
    }
    return post;
  }
};

}  // namespace

Module infer_type_annotations(const Module &module) {
  Module m = module;
  infer_types(m);
  return map_functions(m, [](const std::string &, const Expr &fn) { return Annotator().mutate(fn); });
}

}  // namespace grove::relay
