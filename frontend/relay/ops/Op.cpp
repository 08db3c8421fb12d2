#include "frontend/relay/ops/Op.h"

#include <fmt/format.h>

#include <algorithm>

#include "frontend/relay/ops/Broadcast.h"
#include "support/Error.h"

namespace grove::relay {

const char *to_string(OpPattern p) {
  switch (p) {
    case OpPattern::ElemWise:
      return "elemwise";
    case OpPattern::Broadcast:
      return "broadcast";
    case OpPattern::Injective:
      return "injective";
    case OpPattern::CommReduce:
      return "reduction";
    case OpPattern::OutEWiseFusable:
      return "out-elemwise-fusable";
    case OpPattern::Tuple:
      return "tuple";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

namespace {

// The table, built on first use from the op groups; a name defined twice is a grove bug.
const std::vector<OpDef> &table() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> all;
    for (auto group : {elementwise_ops, reduce_ops, transform_ops, nn_ops, annotation_ops}) {
      std::vector<OpDef> g = group();
      // The groups whose kernels compute take float16 through float32; transforms move its bytes.
      if (group == elementwise_ops || group == reduce_ops || group == nn_ops)
        for (OpDef &op : g) op.kernel = float16_in_float32(std::move(op.kernel));
      all.insert(all.end(), std::make_move_iterator(g.begin()), std::make_move_iterator(g.end()));
    }
    std::sort(all.begin(), all.end(), [](const OpDef &a, const OpDef &b) { return a.name < b.name; });
    for (size_t i = 1; i < all.size(); ++i)
      GROVE_CHECK(all[i - 1].name != all[i].name, "the op {} is defined twice", all[i].name);
    for (const OpDef &op : all)
      GROVE_CHECK(op.relation && op.kernel, "the op {} lacks a type relation or a kernel", op.name);
    return all;
  }();
  return ops;
}

const char *kind_name(AttrValue::Kind k) {
  switch (k) {
    case AttrValue::Kind::None:
      return "None";
    case AttrValue::Kind::Int:
      return "an integer";
    case AttrValue::Kind::Float:
      return "a float";
    case AttrValue::Kind::Bool:
      return "a bool";
    case AttrValue::Kind::String:
      return "a string";
    case AttrValue::Kind::List:
      return "a list";
  }
  return "?";
}

// The attribute, or null when absent or None.
const AttrValue *present(const Attrs &attrs, const std::string &name) {
  const AttrValue *v = attrs.find(name);
  return v && v->kind != AttrValue::Kind::None ? v : nullptr;
}

[[noreturn]] void wrong_kind(const std::string &name, const char *expected, const AttrValue &found) {
  throw OpError(fmt::format("attribute '{}' must be {}, not {}", name, expected, kind_name(found.kind)));
}

}  // namespace

OpKernel float16_in_float32(OpKernel kernel) {
  return [kernel = std::move(kernel)](const std::vector<NDArray> &args, const Attrs &attrs) {
    bool any = false;
    for (const NDArray &a : args) any = any || a.dtype() == DType::Float16;
    if (!any) return kernel(args, attrs);
    std::vector<NDArray> wide;
    for (const NDArray &a : args) wide.push_back(a.dtype() == DType::Float16 ? widen_float16(a) : a);
    Attrs inner = attrs;
    const std::string out_dtype = attr_string(attrs, "out_dtype", "");
    if (out_dtype == "float16") inner = attrs.with("out_dtype", AttrValue::of_string("float32"));
    const bool wants_float32 = out_dtype == "float32" || attr_string(attrs, "dtype", "") == "float32";
    std::vector<NDArray> results = kernel(wide, inner);
    if (!wants_float32)
      for (NDArray &r : results)
        if (r.dtype() == DType::Float32) r = narrow_to_float16(r);
    return results;
  };
}

const OpDef *find_op(std::string_view name) {
  const std::vector<OpDef> &ops = table();
  auto it = std::lower_bound(ops.begin(), ops.end(), name,
                             [](const OpDef &op, std::string_view n) { return op.name < n; });
  return it != ops.end() && it->name == name ? &*it : nullptr;
}

const std::vector<OpDef> &all_ops() { return table(); }

int64_t attr_int(const Attrs &attrs, const std::string &name, int64_t fallback) {
  const AttrValue *v = present(attrs, name);
  if (!v) return fallback;
  if (v->kind == AttrValue::Kind::Int) return v->i;
  if (v->kind == AttrValue::Kind::Bool) return v->b ? 1 : 0;
  wrong_kind(name, "an integer", *v);
}

double attr_float(const Attrs &attrs, const std::string &name, double fallback) {
  const AttrValue *v = present(attrs, name);
  if (!v) return fallback;
  if (v->kind == AttrValue::Kind::Float) return v->f;
  if (v->kind == AttrValue::Kind::Int) return static_cast<double>(v->i);
  wrong_kind(name, "a number", *v);
}

bool attr_bool(const Attrs &attrs, const std::string &name, bool fallback) {
  const AttrValue *v = present(attrs, name);
  if (!v) return fallback;
  if (v->kind == AttrValue::Kind::Bool) return v->b;
  if (v->kind == AttrValue::Kind::Int && (v->i == 0 || v->i == 1)) return v->i == 1;
  wrong_kind(name, "True or False", *v);
}

std::string attr_string(const Attrs &attrs, const std::string &name, const std::string &fallback) {
  const AttrValue *v = present(attrs, name);
  if (!v) return fallback;
  if (v->kind == AttrValue::Kind::String) return v->s;
  wrong_kind(name, "a string", *v);
}

std::vector<int64_t> attr_ints(const Attrs &attrs, const std::string &name,
                               const std::vector<int64_t> &fallback) {
  const AttrValue *v = present(attrs, name);
  if (!v) return fallback;
  if (v->kind == AttrValue::Kind::Int) return {v->i};
  if (v->kind != AttrValue::Kind::List) wrong_kind(name, "a list of integers", *v);
  std::vector<int64_t> out;
  for (const AttrValue &x : v->list) {
    if (x.kind != AttrValue::Kind::Int) wrong_kind(name, "a list of integers", x);
    out.push_back(x.i);
  }
  return out;
}

void require_attr(const Attrs &attrs, const std::string &name) {
  if (!present(attrs, name)) throw OpError(fmt::format("attribute '{}' is required", name));
}

}  // namespace grove::relay
