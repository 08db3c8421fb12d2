#pragma once
// Relay — grove's functional, statically typed IR for whole models (after TVM's Relay).
//
// What the IR means
// -----------------
// A Module holds global functions (`@main`, `@f`) and algebraic data type definitions
// (`type List[A] { Cons(A, List[A]), Nil }`). An expression evaluates, strictly and left to right,
// to a *value*: a tensor (NDArray), a tuple of values, a closure (a Function with the values of its
// free variables), an ADT value (a constructor applied to values), or a reference (a mutable cell).
//
//   * Var         `%x` — a local variable, bound by a Function parameter, a Let, or a pattern.
//                 Variables are identified by the node, never by name: two Vars named `%x` are two
//                 variables. A Var carries an optional type annotation.
//   * GlobalVar   `@f` — a module-level function, identified by its name. Globals may be mutually
//                 recursive.
//   * Constant    a tensor literal (`1f`, `meta[relay.Constant][0]`).
//   * Tuple / TupleGetItem  `(a, b)`, `%t.1`.
//   * Call        `f(args)` of an Op (`add`, `nn.dense`), a Function or closure, a GlobalVar or a
//                 Constructor. Op calls carry keyword attributes (`axis=1`); the op's type relation
//                 and kernel read them. Arguments are evaluated before the call.
//   * Function    `fn (%x: T) -> R { body }` — a closure over its free variables. Attributes such as
//                 `Primitive=1` (a fused kernel), `Compiler="dnnl"`, `Composite="..."`,
//                 `global_symbol="..."` annotate it for later stages. Type parameters make it
//                 polymorphic (`fn [A](%x: A) -> A`).
//   * Let         `let %x = value; body` — a scoped binding; `%x` is visible in `body` only (and in
//                 `value` when value is a Function: a let-bound closure may recurse).
//   * If          `if (c) { a } else { b }` — c is a rank-0 bool tensor; only one branch runs.
//   * Match       `match (e) { Cons(%h, %t) => ..., _ => ... }` — clauses are tried in order; a
//                 `match?` (incomplete) with no matching clause is a run-time error.
//   * RefCreate / RefRead / RefWrite — `ref(v)`, `ref_read(r)`, `ref_write(r, v)` (the latter
//                 returns `()`). The only effects in the language, with calls of Ops that have none.
//   * Op / Constructor — what a Call may call: a primitive operator (found in the op table,
//                 relay/ops/Op.h) or an ADT constructor (`Cons`).
//
// Graph form and A-normal form. The same node may appear as an argument of several others: the
// expression is a DAG ("graph form", text `%0 = add(%x, %y); multiply(%0, %0)`), and a shared
// node is evaluated once. A-normal form names every intermediate with a Let.
//
// Types (Type below): TensorType (dtype, shape — each dimension a non-negative integer or `?`,
// kAnyDim, unknown until run time; rank is always static), TupleType, FuncType (with type
// parameters), RefType, TypeVar, TypeCall of an ADT's GlobalTypeVar (`List[int32]`), and
// IncompleteType, a hole that only type inference creates.
//
// Invariants that passes may assume (checked by the make() functions and by type inference):
// handles are non-null where the grammar requires a node; every Var is bound once (a Function
// parameter, a Let or a pattern) and used only in its scope; a Constructor call has as many
// arguments as the constructor has fields. After infer_types() every expression reachable from the
// module has `checked_type` set.
//
// Nodes are immutable and reference counted, with one exception: `checked_type`, a cache that only
// type inference writes (as in TVM). It is not part of a node's identity or of structural equality.
// Build nodes with the static make() functions; compare handles with `same_as`; downcast with
// `as<T>()`. Deep IR is normal (a chain of 100,000 lets): code that walks it uses the iterative
// visitors of relay/Visitor.h, never recursion on the C stack per node.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace grove::relay {

// ---------------------------------------------------------------------------------------------
// Source locations
// ---------------------------------------------------------------------------------------------

// Where a node came from: 1-based line and column in a named source (line 0: no location).
struct Span {
  std::shared_ptr<const std::string> file;
  int line = 0;
  int col = 0;
  bool defined() const { return line > 0; }
};
// "file:line:col", or "<unknown>" without a location.
std::string to_string(const Span &span);

// ---------------------------------------------------------------------------------------------
// Data types and tensors
// ---------------------------------------------------------------------------------------------

enum class DType {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  Float32,
  Float64
};

// "float32", "int64", "bool", ... (the text format's names).
const char *to_string(DType t);
// The DType named `name`, or nullopt.
std::optional<DType> parse_dtype(const std::string &name);
// Bytes per element (bool: 1).
size_t dtype_bytes(DType t);
bool is_float(DType t);
bool is_int(DType t);  // signed or unsigned integer (not bool)

// An unknown dimension, `?` in the text format (Relay's `Any`).
inline constexpr int64_t kAnyDim = -1;
inline bool known(int64_t d) { return d != kAnyDim; }
using Shape = std::vector<int64_t>;
// "(1, ?, 16)" — how shapes appear in the text format and in messages.
std::string shape_to_string(const Shape &shape);

// A dense row-major tensor of any dtype. Copying an NDArray shares its storage; kernels allocate
// new arrays and never write into their inputs.
class NDArray {
 public:
  NDArray() = default;
  // A zero-filled array; every dimension must be known (>= 0).
  NDArray(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size() const;  // number of elements
  bool defined() const { return data_ != nullptr; }
  size_t nbytes() const { return data_ ? data_->size() : 0; }

  template <typename T>
  T *data() {
    return reinterpret_cast<T *>(data_->data());
  }
  template <typename T>
  const T *data() const {
    return reinterpret_cast<const T *>(data_->data());
  }
  std::byte *raw() { return data_->data(); }
  const std::byte *raw() const { return data_->data(); }

  // Element i (row-major) converted to double / int64 (bool: 0 or 1), for any dtype.
  double element_as_double(int64_t i) const;
  int64_t element_as_int(int64_t i) const;
  // A rank-0 array holding `value` converted to dtype.
  static NDArray scalar(DType dtype, double value);

  // The same elements, sharing this array's storage, with another shape of as many elements.
  NDArray reshaped(Shape shape) const;

  // Same dtype, shape and bytes.
  bool bitwise_equal(const NDArray &other) const;

 private:
  DType dtype_ = DType::Float32;
  Shape shape_;
  std::shared_ptr<std::vector<std::byte>> data_;
};

// ---------------------------------------------------------------------------------------------
// Attributes: keyword arguments of op calls and function attributes
// ---------------------------------------------------------------------------------------------

// One attribute value as written in the text format: None, an integer, a float, a bool, a string,
// or a list of values (`padding=[1, 1, 1, 1]`).
struct AttrValue {
  enum class Kind { None, Int, Float, Bool, String, List };
  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  std::string s;
  std::vector<AttrValue> list;

  static AttrValue none() { return AttrValue(); }
  static AttrValue of_int(int64_t v);
  static AttrValue of_float(double v);
  static AttrValue of_bool(bool v);
  static AttrValue of_string(std::string v);
  static AttrValue of_list(std::vector<AttrValue> v);
  bool operator==(const AttrValue &o) const;
};

// Attributes by name, in the order they were written (printing keeps that order; equality does not
// depend on it).
class Attrs {
 public:
  Attrs() = default;
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<std::string, AttrValue>> &entries() const { return entries_; }
  // Null when absent.
  const AttrValue *find(const std::string &name) const;
  bool has(const std::string &name) const { return find(name) != nullptr; }
  // Adds or replaces `name`; returns a new Attrs (Attrs are values).
  Attrs with(const std::string &name, AttrValue value) const;
  Attrs without(const std::string &name) const;
  bool operator==(const Attrs &o) const;  // same names and values, in any order

  // The attributes parsed into their op family's struct (ops/OpAttrs.h), when type inference has
  // parsed them: like an expression's checked_type, a cache that only type inference fills
  // (ops/OpAttrs.h's cache_typed_attrs, on the call's own Attrs, before any back end reads it), so
  // that every later reader — relations, kernels, code generators, the translation — reads the one
  // parse. Not part of the value: equality and printing ignore it, copies share it, and with() and
  // without() drop it. Null when absent or of another type.
  template <typename T>
  const T *typed() const {
    return typed_ && *typed_type_ == typeid(T) ? static_cast<const T *>(typed_.get()) : nullptr;
  }
  template <typename T>
  void cache_typed(T value) const {
    typed_ = std::make_shared<const T>(std::move(value));
    typed_type_ = &typeid(T);
  }

 private:
  std::vector<std::pair<std::string, AttrValue>> entries_;
  mutable std::shared_ptr<const void> typed_;
  mutable const std::type_info *typed_type_ = nullptr;
};

// Function attribute names with a meaning in grove (TVM's spelling).
namespace attr {
inline constexpr const char *kPrimitive = "Primitive";
inline constexpr const char *kCompiler = "Compiler";
inline constexpr const char *kComposite = "Composite";
inline constexpr const char *kGlobalSymbol = "global_symbol";
inline constexpr const char *kInline = "Inline";
inline constexpr const char *kPartitionedFromPattern = "PartitionedFromPattern";
}  // namespace attr

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

#define GROVE_RELAY_TYPE_NODES(X) \
  X(TensorType)                   \
  X(TupleType)                    \
  X(FuncType)                     \
  X(RefType)                      \
  X(TypeVar)                      \
  X(GlobalTypeVar)                \
  X(TypeCall)                     \
  X(IncompleteType)

enum class TypeKind {
#define GROVE_RELAY_ENUM(N) N,
  GROVE_RELAY_TYPE_NODES(GROVE_RELAY_ENUM)
#undef GROVE_RELAY_ENUM
};

struct TypeNode {
  TypeKind kind;
  Span span;
  TypeNode(TypeKind k, Span s) : kind(k), span(std::move(s)) {}
  virtual ~TypeNode() = default;
};

// A handle to an immutable type node (null when default constructed).
class Type {
 public:
  Type() = default;
  explicit Type(std::shared_ptr<const TypeNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const TypeNode *get() const { return node_.get(); }
  const TypeNode *operator->() const { return node_.get(); }
  bool same_as(const Type &o) const { return node_ == o.node_; }
  template <typename T>
  const T *as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const TypeNode> node_;
};

struct TensorType : TypeNode {
  static constexpr TypeKind kKind = TypeKind::TensorType;
  DType dtype;
  Shape shape;  // kAnyDim for `?`
  static Type make(Shape shape, DType dtype, Span span = {});
  static Type scalar(DType dtype) { return make({}, dtype); }
  TensorType(Shape sh, DType d, Span s) : TypeNode(kKind, std::move(s)), dtype(d), shape(std::move(sh)) {}
};

struct TupleType : TypeNode {
  static constexpr TypeKind kKind = TypeKind::TupleType;
  std::vector<Type> fields;  // `()` is the empty tuple, the unit type
  static Type make(std::vector<Type> fields, Span span = {});
  TupleType(std::vector<Type> f, Span s) : TypeNode(kKind, std::move(s)), fields(std::move(f)) {}
};

// fn [type_params](arg_types) -> ret_type
struct FuncType : TypeNode {
  static constexpr TypeKind kKind = TypeKind::FuncType;
  std::vector<Type> type_params;  // TypeVars
  std::vector<Type> arg_types;
  Type ret_type;
  static Type make(std::vector<Type> arg_types, Type ret_type, std::vector<Type> type_params = {},
                   Span span = {});
  FuncType(std::vector<Type> tp, std::vector<Type> a, Type r, Span s)
      : TypeNode(kKind, std::move(s)),
        type_params(std::move(tp)),
        arg_types(std::move(a)),
        ret_type(std::move(r)) {}
};

struct RefType : TypeNode {
  static constexpr TypeKind kKind = TypeKind::RefType;
  Type value;
  static Type make(Type value, Span span = {});
  RefType(Type v, Span s) : TypeNode(kKind, std::move(s)), value(std::move(v)) {}
};

// A type parameter (`A` in `def @id[A](%x: A) -> A`). Identified by the node, like Var.
struct TypeVar : TypeNode {
  static constexpr TypeKind kKind = TypeKind::TypeVar;
  std::string name;
  static Type make(std::string name, Span span = {});
  TypeVar(std::string n, Span s) : TypeNode(kKind, std::move(s)), name(std::move(n)) {}
};

// The name of an ADT (`List`). Identified by its name within a module.
struct GlobalTypeVar : TypeNode {
  static constexpr TypeKind kKind = TypeKind::GlobalTypeVar;
  std::string name;
  static Type make(std::string name, Span span = {});
  GlobalTypeVar(std::string n, Span s) : TypeNode(kKind, std::move(s)), name(std::move(n)) {}
};

// An ADT applied to type arguments: `List[int32]` (func is a GlobalTypeVar; args may be empty).
struct TypeCall : TypeNode {
  static constexpr TypeKind kKind = TypeKind::TypeCall;
  Type func;
  std::vector<Type> args;
  static Type make(Type func, std::vector<Type> args, Span span = {});
  TypeCall(Type f, std::vector<Type> a, Span s)
      : TypeNode(kKind, std::move(s)), func(std::move(f)), args(std::move(a)) {}
};

// A type hole, created by type inference (and by the parser for `_`). Identified by the node.
struct IncompleteType : TypeNode {
  static constexpr TypeKind kKind = TypeKind::IncompleteType;
  static Type make(Span span = {});
  explicit IncompleteType(Span s) : TypeNode(kKind, std::move(s)) {}
};

// A type in the text format's syntax: `Tensor[(1, ?), float32]`, `(float32, List[A])`,
// `fn [A](A) -> A`, `ref(float32)`, `_` for a hole.
std::string to_string(const Type &type);

// ---------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------

#define GROVE_RELAY_EXPR_NODES(X) \
  X(Constant)                     \
  X(Var)                          \
  X(GlobalVar)                    \
  X(Tuple)                        \
  X(TupleGetItem)                 \
  X(Call)                         \
  X(Function)                     \
  X(Let)                          \
  X(If)                           \
  X(Match)                        \
  X(RefCreate)                    \
  X(RefRead)                      \
  X(RefWrite)                     \
  X(Op)                           \
  X(Constructor)

enum class ExprKind {
#define GROVE_RELAY_ENUM(N) N,
  GROVE_RELAY_EXPR_NODES(GROVE_RELAY_ENUM)
#undef GROVE_RELAY_ENUM
};
const char *to_string(ExprKind k);

class Expr;

struct ExprNode {
  ExprKind kind;
  Span span;
  // Written by type inference only (see the header comment); null before it runs.
  mutable Type checked_type;
  ExprNode(ExprKind k, Span s) : kind(k), span(std::move(s)) {}
  virtual ~ExprNode() = default;

 protected:
  // Destroying the head of a 100,000-let chain would destroy the whole chain recursively and
  // overflow the C stack; nodes with children hand them to this queue, drained iteratively.
  static void defer_destruction(Expr &child);
};

// A handle to an immutable expression node (null when default constructed).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const ExprNode *get() const { return node_.get(); }
  const ExprNode *operator->() const { return node_.get(); }
  bool same_as(const Expr &o) const { return node_ == o.node_; }
  template <typename T>
  const T *as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }
  // The inferred type; an InternalError if inference has not run on this node.
  const Type &type() const;

 private:
  friend struct ExprNode;
  std::shared_ptr<const ExprNode> node_;
};

// Hashing and ordering by node identity, for memo tables: std::unordered_map<Expr, T, ExprHash>.
struct ExprHash {
  size_t operator()(const Expr &e) const { return std::hash<const void *>()(e.get()); }
};
struct ExprEqual {
  bool operator()(const Expr &a, const Expr &b) const { return a.same_as(b); }
};
struct TypeHash {
  size_t operator()(const Type &t) const { return std::hash<const void *>()(t.get()); }
};
struct TypeEqual {
  bool operator()(const Type &a, const Type &b) const { return a.same_as(b); }
};

struct Constant : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Constant;
  NDArray data;
  static Expr make(NDArray data, Span span = {});
  Constant(NDArray d, Span s) : ExprNode(kKind, std::move(s)), data(std::move(d)) {}
};

struct Var : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name_hint;  // without the `%`
  Type type_annotation;   // may be null
  static Expr make(std::string name_hint, Type type_annotation = {}, Span span = {});
  Var(std::string n, Type t, Span s)
      : ExprNode(kKind, std::move(s)), name_hint(std::move(n)), type_annotation(std::move(t)) {}
};

struct GlobalVar : ExprNode {
  static constexpr ExprKind kKind = ExprKind::GlobalVar;
  std::string name;  // without the `@`
  static Expr make(std::string name, Span span = {});
  GlobalVar(std::string n, Span s) : ExprNode(kKind, std::move(s)), name(std::move(n)) {}
};

struct Tuple : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Tuple;
  std::vector<Expr> fields;
  static Expr make(std::vector<Expr> fields, Span span = {});
  Tuple(std::vector<Expr> f, Span s) : ExprNode(kKind, std::move(s)), fields(std::move(f)) {}
  ~Tuple() override;
};

struct TupleGetItem : ExprNode {
  static constexpr ExprKind kKind = ExprKind::TupleGetItem;
  Expr tuple;
  int index;
  static Expr make(Expr tuple, int index, Span span = {});
  TupleGetItem(Expr t, int i, Span s) : ExprNode(kKind, std::move(s)), tuple(std::move(t)), index(i) {}
  ~TupleGetItem() override;
};

struct Call : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  Expr op;  // an Op, a Constructor, a GlobalVar, or any expression of function type
  std::vector<Expr> args;
  Attrs attrs;                  // an op's; on other calls kept as written (TVM's call attrs), ignored
  std::vector<Type> type_args;  // explicit type arguments, if written; usually inferred
  static Expr make(Expr op, std::vector<Expr> args, Attrs attrs = {}, std::vector<Type> type_args = {},
                   Span span = {});
  Call(Expr o, std::vector<Expr> a, Attrs at, std::vector<Type> ta, Span s)
      : ExprNode(kKind, std::move(s)),
        op(std::move(o)),
        args(std::move(a)),
        attrs(std::move(at)),
        type_args(std::move(ta)) {}
  ~Call() override;
};

struct Function : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Function;
  std::vector<Expr> params;  // Vars
  Expr body;
  Type ret_type;                  // may be null
  std::vector<Type> type_params;  // TypeVars
  Attrs attrs;
  static Expr make(std::vector<Expr> params, Expr body, Type ret_type = {},
                   std::vector<Type> type_params = {}, Attrs attrs = {}, Span span = {});
  Function(std::vector<Expr> p, Expr b, Type r, std::vector<Type> tp, Attrs a, Span s)
      : ExprNode(kKind, std::move(s)),
        params(std::move(p)),
        body(std::move(b)),
        ret_type(std::move(r)),
        type_params(std::move(tp)),
        attrs(std::move(a)) {}
  // The attribute's integer value (Primitive=1) or nullopt.
  bool has_attr(const std::string &name) const { return attrs.has(name); }
  ~Function() override;
};

struct Let : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  Expr var;  // a Var
  Expr value, body;
  static Expr make(Expr var, Expr value, Expr body, Span span = {});
  Let(Expr v, Expr val, Expr b, Span s)
      : ExprNode(kKind, std::move(s)), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  ~Let() override;
};

struct If : ExprNode {
  static constexpr ExprKind kKind = ExprKind::If;
  Expr cond, then_branch, else_branch;
  static Expr make(Expr cond, Expr then_branch, Expr else_branch, Span span = {});
  If(Expr c, Expr t, Expr e, Span s)
      : ExprNode(kKind, std::move(s)),
        cond(std::move(c)),
        then_branch(std::move(t)),
        else_branch(std::move(e)) {}
  ~If() override;
};

// Patterns of `match` clauses.
enum class PatternKind { Wildcard, Var, Constructor, Tuple };

struct PatternNode;
using Pattern = std::shared_ptr<const PatternNode>;

struct PatternNode {
  PatternKind kind;
  Expr var;                       // Var: the bound variable
  Expr constructor;               // Constructor: the Constructor node
  std::vector<Pattern> patterns;  // Constructor: one per field; Tuple: one per field
  Span span;
  static Pattern wildcard(Span span = {});
  static Pattern variable(Expr var, Span span = {});
  static Pattern constructor_of(Expr constructor, std::vector<Pattern> patterns, Span span = {});
  static Pattern tuple(std::vector<Pattern> patterns, Span span = {});
};

struct Clause {
  Pattern lhs;
  Expr rhs;
};

struct Match : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Match;
  Expr data;
  std::vector<Clause> clauses;
  bool complete;  // `match` (true) or `match?` (false)
  static Expr make(Expr data, std::vector<Clause> clauses, bool complete = true, Span span = {});
  Match(Expr d, std::vector<Clause> c, bool comp, Span s)
      : ExprNode(kKind, std::move(s)), data(std::move(d)), clauses(std::move(c)), complete(comp) {}
  ~Match() override;
};

struct RefCreate : ExprNode {
  static constexpr ExprKind kKind = ExprKind::RefCreate;
  Expr value;
  static Expr make(Expr value, Span span = {});
  RefCreate(Expr v, Span s) : ExprNode(kKind, std::move(s)), value(std::move(v)) {}
  ~RefCreate() override;
};

struct RefRead : ExprNode {
  static constexpr ExprKind kKind = ExprKind::RefRead;
  Expr ref;
  static Expr make(Expr ref, Span span = {});
  RefRead(Expr r, Span s) : ExprNode(kKind, std::move(s)), ref(std::move(r)) {}
  ~RefRead() override;
};

struct RefWrite : ExprNode {
  static constexpr ExprKind kKind = ExprKind::RefWrite;
  Expr ref, value;
  static Expr make(Expr ref, Expr value, Span span = {});
  RefWrite(Expr r, Expr v, Span s) : ExprNode(kKind, std::move(s)), ref(std::move(r)), value(std::move(v)) {}
  ~RefWrite() override;
};

struct OpDef;  // relay/ops/Op.h: the op table entry (type relation, kernel, fusion pattern)

// A primitive operator, e.g. `nn.dense`. make() looks the name up in the op table; an unknown name
// is a UserError ("grove does not support the operator ...").
struct Op : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Op;
  std::string name;
  const OpDef *def;
  static Expr make(const std::string &name, Span span = {});
  Op(std::string n, const OpDef *d, Span s) : ExprNode(kKind, std::move(s)), name(std::move(n)), def(d) {}
};

// An ADT constructor: `Cons` of `List`, with field types over the ADT's type parameters.
struct Constructor : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Constructor;
  std::string name;
  std::vector<Type> inputs;  // field types, over the TypeData's type_vars
  Type belongs_to;           // the ADT's GlobalTypeVar
  int tag;                   // index among the ADT's constructors
  static Expr make(std::string name, std::vector<Type> inputs, Type belongs_to, int tag, Span span = {});
  Constructor(std::string n, std::vector<Type> in, Type b, int t, Span s)
      : ExprNode(kKind, std::move(s)),
        name(std::move(n)),
        inputs(std::move(in)),
        belongs_to(std::move(b)),
        tag(t) {}
};

// ---------------------------------------------------------------------------------------------
// Modules
// ---------------------------------------------------------------------------------------------

// `type List[A] { Cons(A, List[A]), Nil }`
struct TypeData {
  Type header;                     // GlobalTypeVar
  std::vector<Type> type_vars;     // TypeVars, used by the constructors' input types
  std::vector<Expr> constructors;  // Constructors, tag = index
  Span span;
};

// Global functions and ADT definitions, in definition order (printing keeps it). Modules are
// values: copying one copies handles, and passes return new modules.
class Module {
 public:
  // Adds or replaces `@name`. `function` must be a Function.
  void add_function(const std::string &name, Expr function);
  // Adds an ADT; a second definition of the same name is a UserError at the new one's span.
  void add_type(TypeData data);

  // Null when absent.
  const Expr *find_function(const std::string &name) const;
  const TypeData *find_type(const std::string &name) const;
  // The constructor named `name` (e.g. "Cons") in any ADT, or null.
  const Expr *find_constructor(const std::string &name) const;

  const std::vector<std::pair<std::string, Expr>> &functions() const { return functions_; }
  const std::vector<TypeData> &types() const { return types_; }

 private:
  std::vector<std::pair<std::string, Expr>> functions_;
  std::vector<TypeData> types_;
};

}  // namespace grove::relay
