#include "frontend/relay/Value.h"

#include <fmt/format.h>

#include "support/Error.h"

namespace grove::relay {

namespace {

// Destroying values without recursion.
//
// A value's destructor would normally destroy its fields, whose destructors destroy theirs: a
// 100,000-element list would recurse 100,000 deep. Instead every destructor hands its fields to
// dispose():
//   1. The outermost dispose() moves the fields into a work list and marks itself running.
//   2. It drops the work list's values one by one. A value whose last owner this was is destroyed,
//      and its destructor calls dispose() again, which sees the running loop and only appends the
//      value's own fields to the work list.
//   3. The loop ends when the work list is empty; the C stack never holds more than two destructors.
thread_local std::vector<Value> *pending = nullptr;

void dispose(std::vector<Value> &values) {
  if (pending != nullptr) {
    for (Value &v : values)
      if (v) pending->push_back(std::move(v));
    values.clear();
    return;
  }
  std::vector<Value> work = std::move(values);
  values.clear();
  pending = &work;
  while (!work.empty()) {
    Value v = std::move(work.back());
    work.pop_back();
    v.reset();
  }
  pending = nullptr;
}

void dispose_one(Value &v) {
  std::vector<Value> one;
  one.push_back(std::move(v));
  dispose(one);
}

// A rank-0 tensor as a literal of the text format: 1f, 2.5f64, 3, 4i64, True.
std::string scalar_literal(const NDArray &a) {
  DType t = a.dtype();
  if (t == DType::Bool) return a.element_as_int(0) ? "True" : "False";
  if (is_float(t)) {
    double x = a.element_as_double(0);
    if (t == DType::Float32) return fmt::format("{}f", static_cast<float>(x));
    return fmt::format("{}{}", x, t == DType::Float64 ? "f64" : "f16");
  }
  int64_t x = a.element_as_int(0);
  if (t == DType::Int32) return fmt::format("{}", x);
  std::string name = to_string(t);  // "int64" -> "i64", "uint8" -> "u8"
  std::string suffix = name[0] == 'u' ? "u" + name.substr(4) : "i" + name.substr(3);
  if (t == DType::UInt64) return fmt::format("{}{}", static_cast<uint64_t>(x), suffix);
  return fmt::format("{}{}", x, suffix);
}

std::string element_string(const NDArray &a, int64_t i) {
  if (a.dtype() == DType::Bool) return a.element_as_int(i) ? "True" : "False";
  if (is_float(a.dtype()))
    return fmt::format("{}", a.dtype() == DType::Float64
                                 ? a.element_as_double(i)
                                 : static_cast<double>(static_cast<float>(a.element_as_double(i))));
  return fmt::format("{}", a.element_as_int(i));
}

// Prints at most kBudget values (then `...`), so the recursion below is at most that deep and a long
// list prints as its first elements.
class ValuePrinter {
 public:
  std::string print(const Value &v) {
    write(v);
    return out_;
  }

 private:
  static constexpr int kBudget = 32;
  static constexpr int64_t kMaxElements = 6;

  void write(const Value &v) {
    if (budget_-- <= 0) {
      out_ += "...";
      return;
    }
    if (!v) {
      out_ += "<null>";
      return;
    }
    switch (v->kind) {
      case ValueKind::Tensor:
        write_tensor(v->as<TensorValue>()->data);
        return;
      case ValueKind::Tuple: {
        const auto &fields = v->as<TupleValue>()->fields;
        out_ += "(";
        write_list(fields);
        out_ += fields.size() == 1 ? ",)" : ")";
        return;
      }
      case ValueKind::Closure: {
        const Expr &fn = v->as<ClosureValue>()->function;
        out_ += "fn(";
        const auto &params = fn.as<Function>()->params;
        for (size_t i = 0; i < params.size(); ++i)
          out_ += fmt::format("{}%{}", i ? ", " : "", params[i].as<Var>()->name_hint);
        out_ += ")";
        if (fn->span.defined()) out_ += " at " + to_string(fn->span);
        return;
      }
      case ValueKind::ADT: {
        const auto *adt = v->as<ADTValue>();
        out_ += adt->constructor.as<Constructor>()->name;
        if (adt->fields.empty()) return;
        out_ += "(";
        write_list(adt->fields);
        out_ += ")";
        return;
      }
      case ValueKind::Ref:
        out_ += "ref(";
        write(v->as<RefValue>()->read());
        out_ += ")";
        return;
    }
  }

  void write_list(const std::vector<Value> &values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out_ += ", ";
      if (budget_ <= 0) {
        out_ += "...";
        return;
      }
      write(values[i]);
    }
  }

  void write_tensor(const NDArray &a) {
    if (!a.defined()) {
      out_ += "<undefined tensor>";
      return;
    }
    if (a.ndim() == 0) {
      out_ += scalar_literal(a);
      return;
    }
    out_ += fmt::format("Tensor[{}, {}] [", shape_to_string(a.shape()), to_string(a.dtype()));
    int64_t n = a.size();
    for (int64_t i = 0; i < n && i < kMaxElements; ++i) out_ += (i ? ", " : "") + element_string(a, i);
    if (n > kMaxElements) out_ += ", ...";
    out_ += "]";
  }

  int budget_ = kBudget;
  std::string out_;
};

}  // namespace

TupleValue::~TupleValue() { dispose(fields); }

ClosureValue::~ClosureValue() {
  std::vector<Value> values;
  values.reserve(captured.size());
  for (auto &entry : captured) values.push_back(std::move(entry.second));
  dispose(values);
}

ADTValue::~ADTValue() { dispose(fields); }

RefValue::~RefValue() { dispose_one(cell_); }

void RefValue::write(Value v) const {
  Value old = std::move(cell_);
  cell_ = std::move(v);
  dispose_one(old);
}

Value tensor_value(NDArray data) { return std::make_shared<TensorValue>(std::move(data)); }

Value tuple_value(std::vector<Value> fields) { return std::make_shared<TupleValue>(std::move(fields)); }

Value closure_value(Expr function, std::vector<std::pair<Expr, Value>> captured, Expr self) {
  GROVE_CHECK(function.as<Function>() != nullptr, "a closure needs a Function node");
  return std::make_shared<ClosureValue>(std::move(function), std::move(captured), std::move(self));
}

Value list_of(const Expr &cons, const Expr &nil, std::vector<Value> items) {
  Value list = adt_value(nil, {});
  for (auto it = items.rbegin(); it != items.rend(); ++it) list = adt_value(cons, {std::move(*it), list});
  return list;
}

std::optional<std::vector<Value>> list_elements(Value list, int cons_tag) {
  std::vector<Value> elements;
  for (;;) {
    const auto *cell = list ? list->as<ADTValue>() : nullptr;
    if (cell == nullptr) return std::nullopt;
    if (cell->tag != cons_tag) return elements;
    elements.push_back(cell->fields[0]);
    list = cell->fields[1];
  }
}

Value adt_value(Expr constructor, std::vector<Value> fields) {
  const auto *c = constructor.as<Constructor>();
  GROVE_CHECK(c != nullptr, "an ADT value needs a Constructor node");
  GROVE_CHECK(c->inputs.size() == fields.size(), "{} takes {} fields, got {}", c->name, c->inputs.size(),
              fields.size());
  int tag = c->tag;
  return std::make_shared<ADTValue>(std::move(constructor), tag, std::move(fields));
}

Value ref_value(Value initial) { return std::make_shared<RefValue>(std::move(initial)); }

const NDArray &tensor_of(const Value &v) {
  GROVE_CHECK(v && v->kind == ValueKind::Tensor, "expected a tensor value, found {}",
              v ? value_to_string(v) : "null");
  return v->as<TensorValue>()->data;
}

std::string value_to_string(const Value &v) { return ValuePrinter().print(v); }

}  // namespace grove::relay
