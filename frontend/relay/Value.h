#pragma once
// Run-time values of Relay programs, as the reference interpreter (relay/Interpreter.h) computes them.
//
//   * TensorValue  — an NDArray.
//   * TupleValue   — the values of a tuple's fields (`()` is the empty tuple).
//   * ClosureValue — a Function node with the values of its free variables. A closure bound by
//                    `let %f = fn ...` may call itself: `self` is `%f`, bound to the closure whenever
//                    it runs (so the closure does not hold itself, and no reference cycle forms).
//   * ADTValue     — a constructor applied to values (`Cons(1f, Nil)`); `tag` is the constructor's.
//   * RefValue     — a mutable cell shared by every holder: write() changes what all of them read.
//
// Values are immutable (except a RefValue's cell) and shared. Destroying a value never recurses on
// the C stack per nested value: dropping a 100,000-element list is a loop.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

enum class ValueKind { Tensor, Tuple, Closure, ADT, Ref };

struct ValueNode;
using Value = std::shared_ptr<const ValueNode>;

struct ValueNode {
  ValueKind kind;
  explicit ValueNode(ValueKind k) : kind(k) {}
  virtual ~ValueNode() = default;
  ValueNode(const ValueNode &) = delete;
  ValueNode &operator=(const ValueNode &) = delete;

  template <typename T>
  const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};

struct TensorValue : ValueNode {
  static constexpr ValueKind kKind = ValueKind::Tensor;
  NDArray data;
  explicit TensorValue(NDArray d) : ValueNode(kKind), data(std::move(d)) {}
};

struct TupleValue : ValueNode {
  static constexpr ValueKind kKind = ValueKind::Tuple;
  std::vector<Value> fields;
  explicit TupleValue(std::vector<Value> f) : ValueNode(kKind), fields(std::move(f)) {}
  ~TupleValue() override;
};

struct ClosureValue : ValueNode {
  static constexpr ValueKind kKind = ValueKind::Closure;
  Expr function;                                 // a Function node
  std::vector<std::pair<Expr, Value>> captured;  // the function's free Vars and their values
  Expr self;                                     // the Var naming the closure inside itself, or null
  ClosureValue(Expr fn, std::vector<std::pair<Expr, Value>> c, Expr s)
      : ValueNode(kKind), function(std::move(fn)), captured(std::move(c)), self(std::move(s)) {}
  ~ClosureValue() override;
};

struct ADTValue : ValueNode {
  static constexpr ValueKind kKind = ValueKind::ADT;
  Expr constructor;  // a Constructor node
  int tag;           // the constructor's tag
  std::vector<Value> fields;
  ADTValue(Expr c, int t, std::vector<Value> f)
      : ValueNode(kKind), constructor(std::move(c)), tag(t), fields(std::move(f)) {}
  ~ADTValue() override;
};

struct RefValue : ValueNode {
  static constexpr ValueKind kKind = ValueKind::Ref;
  explicit RefValue(Value v) : ValueNode(kKind), cell_(std::move(v)) {}
  ~RefValue() override;
  const Value &read() const { return cell_; }
  // Every holder of this reference sees `v` from now on.
  void write(Value v) const;

 private:
  mutable Value cell_;  // the one mutable part of a value: references are shared cells
};

Value tensor_value(NDArray data);
Value tuple_value(std::vector<Value> fields);
Value closure_value(Expr function, std::vector<std::pair<Expr, Value>> captured = {}, Expr self = {});
// `constructor` must be a Constructor node with as many inputs as `fields`.
Value adt_value(Expr constructor, std::vector<Value> fields);
Value ref_value(Value initial);
// A List value of `items`, in order, from its constructors `cons` (head, tail) and `nil`; built from
// the back, without recursion.
Value list_of(const Expr &cons, const Expr &nil, std::vector<Value> items);
// The elements of the List `list` whose Cons has tag `cons_tag`, walked iteratively; nullopt when it
// holds something that is not an ADT value.
std::optional<std::vector<Value>> list_elements(Value list, int cons_tag);

// The tensor a value holds; an InternalError when it is something else.
const NDArray &tensor_of(const Value &v);

// A short description for messages and the CLI: `1f`, `Cons(1f, Nil)`, `(1f, 2f)`,
// `Tensor[(2, 3), float32] [1, 2, 3, 4, 5, 6]`, `fn(%x) at file:1:2`, `ref(0)`. Large values are cut
// short with `...`.
std::string value_to_string(const Value &v);

}  // namespace grove::relay
