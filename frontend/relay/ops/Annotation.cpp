// Annotation ops: markers that passes place and later passes remove. They compute nothing: the type
// is the argument's type and the kernel returns its argument, so an annotated module still type-checks
// and runs under the interpreter (the BYOC passes' tests rely on that).
//
//   annotation.compiler_begin(%x, compiler="dnnl")  — %x enters a region of code generator "dnnl"
//   annotation.compiler_end(%y, compiler="dnnl")    — %y leaves it (one end per consumer edge)
//
// `compiler` names the target ("default" for what no target claims); partition_graph removes both.

#include <fmt/format.h>

#include "frontend/relay/ops/Op.h"

namespace grove::relay {
namespace {

Type identity_rel(const std::vector<Type> &args, const Attrs &attrs) {
  if (attr_string(attrs, "compiler", "").empty())
    throw OpError("the attribute 'compiler' must name a code generator, e.g. compiler=\"dnnl\"");
  if (args[0].as<IncompleteType>()) return Type();
  return args[0];
}

std::vector<NDArray> identity_kernel(const std::vector<NDArray> &args, const Attrs &) { return args; }

}  // namespace

std::vector<OpDef> annotation_ops() {
  using P = OpPattern;
  return {
      {"annotation.compiler_begin", 1, P::Opaque, {"compiler"}, identity_rel, identity_kernel},
      {"annotation.compiler_end", 1, P::Opaque, {"compiler"}, identity_rel, identity_kernel},
  };
}

}  // namespace grove::relay
