#include "lowering/HalideIR.h"

namespace grove::lowering::internal {

HExpr var(const std::string &name) { return HI::Variable::make(Halide::Int(32), name); }

std::optional<int64_t> constant(const HExpr &e) {
  HExpr s = HI::simplify(e);
  if (const auto *i = s.as<HI::IntImm>()) return i->value;
  return std::nullopt;
}

// A buffer argument is known to Halide through a Parameter; a local allocation is not.
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument) {
  HI::Parameter param = is_argument ? HI::Parameter(t.element_of(), true, 1, buffer) : HI::Parameter();
  return HI::Load::make(t, buffer, std::move(index), Halide::Buffer<>(), param, HI::const_true(t.lanes()),
                        HI::ModulusRemainder());
}

Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument) {
  HI::Parameter param =
      is_argument ? HI::Parameter(value.type().element_of(), true, 1, buffer) : HI::Parameter();
  int lanes = value.type().lanes();
  return HI::Store::make(buffer, std::move(value), std::move(index), param, HI::const_true(lanes),
                         HI::ModulusRemainder());
}

HExpr int_load(const char *array, HExpr index) {
  return load(Halide::Int(32), array, std::move(index), true);
}

}  // namespace grove::lowering::internal
