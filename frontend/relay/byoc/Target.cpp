#include "frontend/relay/byoc/Target.h"

namespace grove::relay {

bool ExternalTarget::supports(const Call &call) const {
  if (const auto *o = call.op.as<Op>()) {
    auto it = ops.find(o->name);
    return it != ops.end() && (!it->second || it->second(call));
  }
  if (const auto *f = call.op.as<Function>()) {
    const AttrValue *composite = f->attrs.find(attr::kComposite);
    return composite && composite->kind == AttrValue::Kind::String && composite->s.rfind(name + ".", 0) == 0;
  }
  return false;
}

}  // namespace grove::relay
