#include "frontend/relay/IR.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "frontend/relay/ops/Op.h"
#include "support/Error.h"

namespace grove::relay {

std::string to_string(const Span &span) {
  if (!span.defined()) return "<unknown>";
  return fmt::format("{}:{}:{}", span.file ? *span.file : std::string("<input>"), span.line, span.col);
}

// ---------------------------------------------------------------------------------------------
// Data types and tensors
// ---------------------------------------------------------------------------------------------

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t bytes;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::Bool, "bool", 1},       {DType::Int8, "int8", 1},       {DType::Int16, "int16", 2},
    {DType::Int32, "int32", 4},     {DType::Int64, "int64", 8},     {DType::UInt8, "uint8", 1},
    {DType::UInt16, "uint16", 2},   {DType::UInt32, "uint32", 4},   {DType::UInt64, "uint64", 8},
    {DType::Float16, "float16", 2}, {DType::Float32, "float32", 4}, {DType::Float64, "float64", 8},
};

const DTypeInfo &info(DType t) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == t) return i;
  GROVE_CHECK(false, "unknown DType {}", static_cast<int>(t));
}

// IEEE half <-> float, for the few places (element access) that read float16 values.
float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v;
  if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    v = mantissa ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  if (std::isnan(f)) return sign | 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -24)) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  if (e < -13) {      // subnormal: value = mantissa * 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  const uint32_t m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 11 - e)));  // in [1024, 2048]
  uint32_t exponent = static_cast<uint32_t>(e + 14), mant = m - 1024;
  if (m == 2048) exponent += 1, mant = 0;
  return sign | static_cast<uint16_t>((exponent << 10) | mant);
}

template <typename F>
auto dispatch_dtype(DType t, F &&f) {
  switch (t) {
    case DType::Bool:
      return f(static_cast<bool *>(nullptr));
    case DType::Int8:
      return f(static_cast<int8_t *>(nullptr));
    case DType::Int16:
      return f(static_cast<int16_t *>(nullptr));
    case DType::Int32:
      return f(static_cast<int32_t *>(nullptr));
    case DType::Int64:
      return f(static_cast<int64_t *>(nullptr));
    case DType::UInt8:
      return f(static_cast<uint8_t *>(nullptr));
    case DType::UInt16:
      return f(static_cast<uint16_t *>(nullptr));
    case DType::UInt32:
      return f(static_cast<uint32_t *>(nullptr));
    case DType::UInt64:
      return f(static_cast<uint64_t *>(nullptr));
    case DType::Float32:
      return f(static_cast<float *>(nullptr));
    case DType::Float64:
      return f(static_cast<double *>(nullptr));
    case DType::Float16:
      break;
  }
  GROVE_CHECK(false, "dispatch_dtype on float16");
}

}  // namespace

const char *to_string(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(const std::string &name) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name) return i.dtype;
  return std::nullopt;
}

size_t dtype_bytes(DType t) { return info(t).bytes; }

bool is_float(DType t) { return t == DType::Float16 || t == DType::Float32 || t == DType::Float64; }

bool is_int(DType t) { return t != DType::Bool && !is_float(t); }

std::string shape_to_string(const Shape &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] == kAnyDim ? std::string("?") : std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

NDArray::NDArray(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  int64_t n = 1;
  for (int64_t d : shape_) {
    GROVE_CHECK(d >= 0, "an NDArray needs known, non-negative dimensions, not {}", shape_to_string(shape_));
    n *= d;
  }
  data_ = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(n) * dtype_bytes(dtype));
}

NDArray NDArray::reshaped(Shape shape) const {
  NDArray view = *this;
  view.shape_ = std::move(shape);
  GROVE_CHECK(view.size() == size(), "viewing {} elements as {}", size(), shape_to_string(view.shape_));
  return view;
}

int64_t NDArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

double NDArray::element_as_double(int64_t i) const {
  GROVE_CHECK(defined() && i >= 0 && i < size(), "element {} of an array of {} elements", i, size());
  if (dtype_ == DType::Float16) return half_to_float(data<uint16_t>()[i]);
  return dispatch_dtype(dtype_, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return static_cast<double>(data<T>()[i]);
  });
}

int64_t NDArray::element_as_int(int64_t i) const {
  GROVE_CHECK(defined() && i >= 0 && i < size(), "element {} of an array of {} elements", i, size());
  if (dtype_ == DType::Float16) return static_cast<int64_t>(half_to_float(data<uint16_t>()[i]));
  return dispatch_dtype(dtype_, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return static_cast<int64_t>(data<T>()[i]);
  });
}

NDArray NDArray::scalar(DType dtype, double value) {
  NDArray a(dtype, {});
  if (dtype == DType::Float16) {
    a.data<uint16_t>()[0] = float_to_half(static_cast<float>(value));
    return a;
  }
  dispatch_dtype(dtype, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>)
      a.data<T>()[0] = value != 0.0;
    else
      a.data<T>()[0] = static_cast<T>(value);
    return 0;
  });
  return a;
}

bool NDArray::bitwise_equal(const NDArray &other) const {
  if (defined() != other.defined()) return false;
  if (!defined()) return true;
  return dtype_ == other.dtype_ && shape_ == other.shape_ && *data_ == *other.data_;
}

// ---------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------

AttrValue AttrValue::of_int(int64_t v) {
  AttrValue a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
AttrValue AttrValue::of_float(double v) {
  AttrValue a;
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
AttrValue AttrValue::of_bool(bool v) {
  AttrValue a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
AttrValue AttrValue::of_string(std::string v) {
  AttrValue a;
  a.kind = Kind::String;
  a.s = std::move(v);
  return a;
}
AttrValue AttrValue::of_list(std::vector<AttrValue> v) {
  AttrValue a;
  a.kind = Kind::List;
  a.list = std::move(v);
  return a;
}

bool AttrValue::operator==(const AttrValue &o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None:
      return true;
    case Kind::Int:
      return i == o.i;
    case Kind::Float:
      // Bitwise, so that NaN equals NaN and -0 differs from 0: attributes are data, not numbers.
      return std::memcmp(&f, &o.f, sizeof f) == 0;
    case Kind::Bool:
      return b == o.b;
    case Kind::String:
      return s == o.s;
    case Kind::List:
      return list == o.list;
  }
  return false;
}

const AttrValue *Attrs::find(const std::string &name) const {
  for (const auto &[n, v] : entries_)
    if (n == name) return &v;
  return nullptr;
}

Attrs Attrs::with(const std::string &name, AttrValue value) const {
  Attrs a;
  a.entries_ = entries_;
  for (auto &[n, v] : a.entries_)
    if (n == name) {
      v = std::move(value);
      return a;
    }
  a.entries_.emplace_back(name, std::move(value));
  return a;
}

Attrs Attrs::without(const std::string &name) const {
  Attrs a;
  a.entries_ = entries_;
  std::erase_if(a.entries_, [&](const auto &e) { return e.first == name; });
  return a;
}

bool Attrs::operator==(const Attrs &o) const {
  if (entries_.size() != o.entries_.size()) return false;
  for (const auto &[n, v] : entries_) {
    const AttrValue *w = o.find(n);
    if (!w || !(*w == v)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

namespace {
void check_defined(const std::vector<Type> &types, const char *what) {
  for (const Type &t : types) GROVE_CHECK(t.defined(), "{} with an undefined type", what);
}
}  // namespace

Type TensorType::make(Shape shape, DType dtype, Span span) {
  for (int64_t d : shape) GROVE_CHECK(d >= 0 || d == kAnyDim, "a tensor dimension of {}", d);
  return Type(std::make_shared<const TensorType>(std::move(shape), dtype, std::move(span)));
}

Type TupleType::make(std::vector<Type> fields, Span span) {
  check_defined(fields, "a TupleType");
  return Type(std::make_shared<const TupleType>(std::move(fields), std::move(span)));
}

Type FuncType::make(std::vector<Type> arg_types, Type ret_type, std::vector<Type> type_params, Span span) {
  check_defined(arg_types, "a FuncType");
  GROVE_CHECK(ret_type.defined(), "a FuncType without a result type");
  for (const Type &p : type_params)
    GROVE_CHECK(p.as<TypeVar>(), "a FuncType's type parameter is not a TypeVar");
  return Type(std::make_shared<const FuncType>(std::move(type_params), std::move(arg_types),
                                               std::move(ret_type), std::move(span)));
}

Type RefType::make(Type value, Span span) {
  GROVE_CHECK(value.defined(), "a RefType of an undefined type");
  return Type(std::make_shared<const RefType>(std::move(value), std::move(span)));
}

Type TypeVar::make(std::string name, Span span) {
  GROVE_CHECK(!name.empty(), "a TypeVar needs a name");
  return Type(std::make_shared<const TypeVar>(std::move(name), std::move(span)));
}

Type GlobalTypeVar::make(std::string name, Span span) {
  GROVE_CHECK(!name.empty(), "a GlobalTypeVar needs a name");
  return Type(std::make_shared<const GlobalTypeVar>(std::move(name), std::move(span)));
}

Type TypeCall::make(Type func, std::vector<Type> args, Span span) {
  GROVE_CHECK(func.as<GlobalTypeVar>(), "a TypeCall of something other than an ADT");
  check_defined(args, "a TypeCall");
  return Type(std::make_shared<const TypeCall>(std::move(func), std::move(args), std::move(span)));
}

Type IncompleteType::make(Span span) { return Type(std::make_shared<const IncompleteType>(std::move(span))); }

namespace {

std::string join_types(const std::vector<Type> &types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) s += ", ";
    s += to_string(types[i]);
  }
  return s;
}

}  // namespace

std::string to_string(const Type &type) {
  if (!type.defined()) return "<no type>";
  switch (type->kind) {
    case TypeKind::TensorType: {
      const auto *t = type.as<TensorType>();
      if (t->shape.empty()) return to_string(t->dtype);
      std::string dims;
      for (size_t i = 0; i < t->shape.size(); ++i) {
        if (i) dims += ", ";
        dims += t->shape[i] == kAnyDim ? std::string("?") : std::to_string(t->shape[i]);
      }
      // TVM prints a 1-D shape as `(10)`, without the tuple's trailing comma.
      return fmt::format("Tensor[({}), {}]", dims, to_string(t->dtype));
    }
    case TypeKind::TupleType: {
      const auto *t = type.as<TupleType>();
      if (t->fields.size() == 1) return "(" + to_string(t->fields[0]) + ",)";
      return "(" + join_types(t->fields) + ")";
    }
    case TypeKind::FuncType: {
      const auto *t = type.as<FuncType>();
      std::string s = "fn ";
      if (!t->type_params.empty()) s += "[" + join_types(t->type_params) + "]";
      return s + "(" + join_types(t->arg_types) + ") -> " + to_string(t->ret_type);
    }
    case TypeKind::RefType:
      return "ref(" + to_string(type.as<RefType>()->value) + ")";
    case TypeKind::TypeVar:
      return type.as<TypeVar>()->name;
    case TypeKind::GlobalTypeVar:
      return type.as<GlobalTypeVar>()->name;
    case TypeKind::TypeCall: {
      const auto *t = type.as<TypeCall>();
      if (t->args.empty()) return to_string(t->func);
      return to_string(t->func) + "[" + join_types(t->args) + "]";
    }
    case TypeKind::IncompleteType:
      return "_";
  }
  GROVE_CHECK(false, "unknown type kind");
}

// ---------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------

const char *to_string(ExprKind k) {
  switch (k) {
#define GROVE_RELAY_NAME(N) \
  case ExprKind::N:         \
    return #N;
    GROVE_RELAY_EXPR_NODES(GROVE_RELAY_NAME)
#undef GROVE_RELAY_NAME
  }
  return "?";
}

const Type &Expr::type() const {
  GROVE_CHECK(defined(), "the type of an undefined expression");
  GROVE_CHECK(node_->checked_type.defined(), "the type of a {} at {} before type inference ran",
              to_string(node_->kind), to_string(node_->span));
  return node_->checked_type;
}

void ExprNode::defer_destruction(Expr &child) {
  thread_local std::vector<std::shared_ptr<const ExprNode>> queue;
  thread_local bool draining = false;
  if (!child.node_) return;
  queue.push_back(std::move(child.node_));
  if (draining) return;  // an outer call's loop below destroys it
  draining = true;
  while (!queue.empty()) {
    std::shared_ptr<const ExprNode> node = std::move(queue.back());
    queue.pop_back();
    node.reset();  // may run a destructor that queues that node's children
  }
  draining = false;
}

Tuple::~Tuple() {
  for (Expr &f : fields) defer_destruction(f);
}
TupleGetItem::~TupleGetItem() { defer_destruction(tuple); }
Call::~Call() {
  defer_destruction(op);
  for (Expr &a : args) defer_destruction(a);
}
Function::~Function() {
  for (Expr &p : params) defer_destruction(p);
  defer_destruction(body);
}
Let::~Let() {
  defer_destruction(var);
  defer_destruction(value);
  defer_destruction(body);
}
If::~If() {
  defer_destruction(cond);
  defer_destruction(then_branch);
  defer_destruction(else_branch);
}
Match::~Match() {
  defer_destruction(data);
  for (Clause &c : clauses) defer_destruction(c.rhs);
}
RefCreate::~RefCreate() { defer_destruction(value); }
RefRead::~RefRead() { defer_destruction(ref); }
RefWrite::~RefWrite() {
  defer_destruction(ref);
  defer_destruction(value);
}

namespace {
void check_defined(const std::vector<Expr> &exprs, const char *what) {
  for (const Expr &e : exprs) GROVE_CHECK(e.defined(), "{} with an undefined expression", what);
}
}  // namespace

Expr Constant::make(NDArray data, Span span) {
  GROVE_CHECK(data.defined(), "a Constant without data");
  return Expr(std::make_shared<const Constant>(std::move(data), std::move(span)));
}

Expr Var::make(std::string name_hint, Type type_annotation, Span span) {
  return Expr(std::make_shared<const Var>(std::move(name_hint), std::move(type_annotation), std::move(span)));
}

Expr GlobalVar::make(std::string name, Span span) {
  GROVE_CHECK(!name.empty(), "a GlobalVar needs a name");
  return Expr(std::make_shared<const GlobalVar>(std::move(name), std::move(span)));
}

Expr Tuple::make(std::vector<Expr> fields, Span span) {
  check_defined(fields, "a Tuple");
  return Expr(std::make_shared<const Tuple>(std::move(fields), std::move(span)));
}

Expr TupleGetItem::make(Expr tuple, int index, Span span) {
  GROVE_CHECK(tuple.defined() && index >= 0, "a TupleGetItem needs a tuple and an index >= 0");
  return Expr(std::make_shared<const TupleGetItem>(std::move(tuple), index, std::move(span)));
}

Expr Call::make(Expr op, std::vector<Expr> args, Attrs attrs, std::vector<Type> type_args, Span span) {
  GROVE_CHECK(op.defined(), "a Call of an undefined expression");
  check_defined(args, "a Call");
  check_defined(type_args, "a Call");
  return Expr(std::make_shared<const Call>(std::move(op), std::move(args), std::move(attrs),
                                           std::move(type_args), std::move(span)));
}

Expr Function::make(std::vector<Expr> params, Expr body, Type ret_type, std::vector<Type> type_params,
                    Attrs attrs, Span span) {
  for (const Expr &p : params) GROVE_CHECK(p.as<Var>(), "a Function parameter is not a Var");
  GROVE_CHECK(body.defined(), "a Function without a body");
  for (const Type &p : type_params)
    GROVE_CHECK(p.as<TypeVar>(), "a Function's type parameter is not a TypeVar");
  return Expr(std::make_shared<const Function>(std::move(params), std::move(body), std::move(ret_type),
                                               std::move(type_params), std::move(attrs), std::move(span)));
}

Expr Let::make(Expr var, Expr value, Expr body, Span span) {
  GROVE_CHECK(var.as<Var>(), "a Let binds something other than a Var");
  GROVE_CHECK(value.defined() && body.defined(), "a Let without a value or a body");
  return Expr(
      std::make_shared<const Let>(std::move(var), std::move(value), std::move(body), std::move(span)));
}

Expr If::make(Expr cond, Expr then_branch, Expr else_branch, Span span) {
  GROVE_CHECK(cond.defined() && then_branch.defined() && else_branch.defined(),
              "an If with an undefined part");
  return Expr(std::make_shared<const If>(std::move(cond), std::move(then_branch), std::move(else_branch),
                                         std::move(span)));
}

Pattern PatternNode::wildcard(Span span) {
  auto p = std::make_shared<PatternNode>();
  p->kind = PatternKind::Wildcard;
  p->span = std::move(span);
  return p;
}

Pattern PatternNode::variable(Expr var, Span span) {
  GROVE_CHECK(var.as<Var>(), "a variable pattern binds something other than a Var");
  auto p = std::make_shared<PatternNode>();
  p->kind = PatternKind::Var;
  p->var = std::move(var);
  p->span = std::move(span);
  return p;
}

Pattern PatternNode::constructor_of(Expr constructor, std::vector<Pattern> patterns, Span span) {
  const auto *c = constructor.as<Constructor>();
  GROVE_CHECK(c, "a constructor pattern of something other than a Constructor");
  GROVE_CHECK(c->inputs.size() == patterns.size(), "constructor pattern {} with {} fields, expected {}",
              c->name, patterns.size(), c->inputs.size());
  for (const Pattern &q : patterns) GROVE_CHECK(q != nullptr, "an undefined sub-pattern");
  auto p = std::make_shared<PatternNode>();
  p->kind = PatternKind::Constructor;
  p->constructor = std::move(constructor);
  p->patterns = std::move(patterns);
  p->span = std::move(span);
  return p;
}

Pattern PatternNode::tuple(std::vector<Pattern> patterns, Span span) {
  for (const Pattern &q : patterns) GROVE_CHECK(q != nullptr, "an undefined sub-pattern");
  auto p = std::make_shared<PatternNode>();
  p->kind = PatternKind::Tuple;
  p->patterns = std::move(patterns);
  p->span = std::move(span);
  return p;
}

Expr Match::make(Expr data, std::vector<Clause> clauses, bool complete, Span span) {
  GROVE_CHECK(data.defined(), "a Match of an undefined expression");
  for (const Clause &c : clauses)
    GROVE_CHECK(c.lhs && c.rhs.defined(), "a Match clause with an undefined part");
  return Expr(std::make_shared<const Match>(std::move(data), std::move(clauses), complete, std::move(span)));
}

Expr RefCreate::make(Expr value, Span span) {
  GROVE_CHECK(value.defined(), "a RefCreate of an undefined expression");
  return Expr(std::make_shared<const RefCreate>(std::move(value), std::move(span)));
}

Expr RefRead::make(Expr ref, Span span) {
  GROVE_CHECK(ref.defined(), "a RefRead of an undefined expression");
  return Expr(std::make_shared<const RefRead>(std::move(ref), std::move(span)));
}

Expr RefWrite::make(Expr ref, Expr value, Span span) {
  GROVE_CHECK(ref.defined() && value.defined(), "a RefWrite with an undefined part");
  return Expr(std::make_shared<const RefWrite>(std::move(ref), std::move(value), std::move(span)));
}

Expr Op::make(const std::string &name, Span span) {
  const OpDef *def = find_op(name);
  if (!def)
    throw UserError(
        fmt::format("{}: grove does not support the operator '{}' (grove relay ops lists the ones it has)",
                    to_string(span), name));
  return Expr(std::make_shared<const Op>(name, def, std::move(span)));
}

Expr Constructor::make(std::string name, std::vector<Type> inputs, Type belongs_to, int tag, Span span) {
  GROVE_CHECK(!name.empty(), "a Constructor needs a name");
  GROVE_CHECK(belongs_to.as<GlobalTypeVar>(), "constructor {} belongs to something other than an ADT", name);
  check_defined(inputs, "a Constructor");
  return Expr(std::make_shared<const Constructor>(std::move(name), std::move(inputs), std::move(belongs_to),
                                                  tag, std::move(span)));
}

// ---------------------------------------------------------------------------------------------
// Modules
// ---------------------------------------------------------------------------------------------

void Module::add_function(const std::string &name, Expr function) {
  GROVE_CHECK(function.as<Function>(), "global @{} is not a Function", name);
  for (auto &[n, f] : functions_)
    if (n == name) {
      f = std::move(function);
      return;
    }
  functions_.emplace_back(name, std::move(function));
}

void Module::add_type(TypeData data) {
  const auto *header = data.header.as<GlobalTypeVar>();
  GROVE_CHECK(header, "an ADT definition without a GlobalTypeVar header");
  if (find_type(header->name))
    throw UserError(
        fmt::format("{}: error: the type {} is defined twice", to_string(data.span), header->name));
  for (const Expr &c : data.constructors) {
    const auto *ctor = c.as<Constructor>();
    GROVE_CHECK(ctor, "an ADT with a non-Constructor constructor");
    if (find_constructor(ctor->name))
      throw UserError(
          fmt::format("{}: error: the constructor {} is defined twice", to_string(c->span), ctor->name));
  }
  types_.push_back(std::move(data));
}

const Expr *Module::find_function(const std::string &name) const {
  for (const auto &[n, f] : functions_)
    if (n == name) return &f;
  return nullptr;
}

const TypeData *Module::find_type(const std::string &name) const {
  for (const TypeData &t : types_)
    if (t.header.as<GlobalTypeVar>()->name == name) return &t;
  return nullptr;
}

const Expr *Module::find_constructor(const std::string &name) const {
  for (const TypeData &t : types_)
    for (const Expr &c : t.constructors)
      if (c.as<Constructor>()->name == name) return &c;
  return nullptr;
}

}  // namespace grove::relay
