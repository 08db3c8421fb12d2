#pragma once
// ILIR — grove's irregular-loop IR.
//
// What the IR means
// -----------------
// A Program describes one recursive model over an input *structure*: a binary tree, a tree of any
// arity, a DAG whose nodes have up to two ordered predecessor slots, or a sequence (a chain whose
// nodes have one predecessor slot, the previous token). For DAGs and sequences `child(n, k)` is
// predecessor slot k; an empty slot (a source, the first token) is the *zero node*, whose states are
// all zero, so every node of such a structure has exactly 2 (DAG) or 1 (sequence) "children".
//
// Every node n of every input structure carries the same set of *node-indexed tensors*: `h[n, j]` is
// element j of node n's tensor h. There are three kinds of tensor:
//
//   * Param  — a weight, the same for every node: `W[j, k]`. It has no node index.
//   * State  — a recursive tensor, defined for every node and read by the node's parent:
//              `h[child(n, 0), k]`. The model's output is a state at the roots.
//   * Temp   — a per-node intermediate, defined and read within one node's computation.
//
// A Program has two Cases, `leaf` (nodes without children) and `internal` (nodes with children).
// Each Case is a list of Compute operators, evaluated in order for one node n:
//
//     tensor[n, i0, i1, ...] = value        for every i0 in [0, shape[0]), i1 ...
//
// `value` is an expression in the index variables i0, i1, ..., the node variable `n`, the size
// variables (H, D, V, ...) and loads. Reductions are explicit: `Sum(k, extent, body)` is
// Σ_{k=0}^{extent-1} body. Structure is reached only through uninterpreted functions:
// `child(n, k)`, `num_children(n)`, `is_leaf(n)`, `token(n)`; the inspector later turns them into
// arrays. For DAGs and sequences the two Cases are identical (the model language has one `node`
// case): every node has a token and reads its predecessor slots, so `token(n)` and `child(n, k)` are
// allowed in both Cases. A ragged reduction over the children of n is `Sum(k, num_children(n), ...)`.
//
// Semantics of recursion: a Compute in a Case may read a State at `child(n, k)` only, and only
// the children's final values; every node's tensors are complete before its parent reads them.
// Hence any evaluation order that visits children before parents gives the same results — the
// freedom that dynamic batching (all nodes of one height at once) exploits.
//
// What passes may assume (checked by ilir::verify): index variables used in a value are bound by
// the Compute or by an enclosing Sum; loads use as many indices as the tensor has dimensions;
// states are read at the current node or at a child, temps and params never at a child; every
// State is defined by both Cases; sizes are expressions over size variables and integer constants.
//
// Backward programs (plan/Differentiate.h) run the recursion the other way, *top down*
// (Program::direction): a node's parent is computed before the node — levels from the highest down
// to the leaves — and a Compute may read a State at `parent(n)` (for a root, the zero node: all
// zeros), never at a child; `child_slot(n)` is the slot k with child(parent(n), k) = n (0 at a
// root). Leaf and internal still mean the node's own kind. Two more tensor kinds appear there:
//
//   * Saved    — a node-indexed tensor the caller gives and the program only reads (what the forward
//                kept): read at n, at a child or at the parent.
//   * Gradient — a param-shaped tensor with no node index, written only by the program's
//                *reductions*: `g[i…] += Σ_{n of case c} value`, run after the recursion over every
//                node of the call of that case (the leaves, or the internal nodes), every Gradient
//                starting at zero. A weight's gradient, Σ_n δ[n] · x[n]ᵀ, is one of them.
//
// A top-down program's States need not be defined by both Cases; one read at parent(n) is defined by
// the internal case (a parent is internal). It has no hoisted case. Over DAGs and sequences a node
// may have several successors (a grid's cell is read by two): `num_parents(n)`, `parent(n, j)` and
// `child_slot(n, j)` name them, and a node gathers its adjoint with a ragged sum over them.
//
// Nodes are immutable and reference counted. Build them with the static make() functions, which
// check their invariants; compare handles with `same_as`; downcast with `as<T>()`.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace grove::ilir {

// The one list of expression node types: it generates the kind enum and the visitor methods.
#define GROVE_ILIR_EXPR_NODES(X) \
  X(FloatImm)                    \
  X(IntImm)                      \
  X(Var)                         \
  X(Binary)                      \
  X(Unary)                       \
  X(Select)                      \
  X(Load)                        \
  X(StructCall)                  \
  X(Sum)

enum class ExprKind {
#define GROVE_ILIR_ENUM(N) N,
  GROVE_ILIR_EXPR_NODES(GROVE_ILIR_ENUM)
#undef GROVE_ILIR_ENUM
};

enum class ScalarType { Float, Int, Bool };

struct ExprNode {
  ExprKind kind;
  ScalarType type;
  ExprNode(ExprKind k, ScalarType t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
};

// A handle to an immutable expression node (null when default constructed).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  Expr(float v);  // NOLINT(google-explicit-constructor): FloatImm
  Expr(int v);    // NOLINT(google-explicit-constructor): IntImm

  bool defined() const { return node_ != nullptr; }
  const ExprNode *get() const { return node_.get(); }
  const ExprNode *operator->() const { return node_.get(); }
  bool same_as(const Expr &o) const { return node_ == o.node_; }
  ScalarType type() const { return node_->type; }
  template <typename T>
  const T *as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct FloatImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  float value;
  static Expr make(float value);
  explicit FloatImm(float v) : ExprNode(kKind, ScalarType::Float), value(v) {}
};

struct IntImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  static Expr make(int64_t value);
  explicit IntImm(int64_t v) : ExprNode(kKind, ScalarType::Int), value(v) {}
};

// Index variables (bound by a Compute or a Sum), the node variable `n`, and size variables
// (H, D, V: bound to integers from the weight file before code generation).
enum class VarKind { Index, Node, Size };

struct Var : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  VarKind var_kind;
  static Expr make(const std::string &name, VarKind kind);
  static Expr node() { return make("n", VarKind::Node); }
  Var(std::string n, VarKind k) : ExprNode(kKind, ScalarType::Int), name(std::move(n)), var_kind(k) {}
};

// Whether `e` is the node variable `n` (the node a case computes).
bool is_node_var(const Expr &e);

enum class BinOp { Add, Sub, Mul, Div, Min, Max, Mod, LT, LE, EQ, And };

struct Binary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinOp op;
  Expr a, b;
  // Both operands must have the same type; comparisons and And give Bool.
  static Expr make(BinOp op, Expr a, Expr b);
  Binary(BinOp o, Expr x, Expr y, ScalarType t)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
};

enum class UnaryOp { Neg, Tanh, Sigmoid, Exp, Relu };

struct Unary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryOp op;
  Expr a;
  // Neg works on Int and Float; the functions need a Float operand.
  static Expr make(UnaryOp op, Expr a);
  Unary(UnaryOp o, Expr x) : ExprNode(kKind, x.type()), op(o), a(std::move(x)) {}
};

struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr cond, t, f;
  static Expr make(Expr cond, Expr t, Expr f);
  Select(Expr c, Expr x, Expr y)
      : ExprNode(kKind, x.type()), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
};

// A load of element `indices` of tensor `tensor`. For a param `node` is undefined; for a state or
// temp it is the node whose tensor is read: `n` or `child(n, k)`.
struct Load : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  std::string tensor;
  Expr node;
  std::vector<Expr> indices;
  static Expr make(const std::string &tensor, Expr node, std::vector<Expr> indices);
  Load(std::string t, Expr n, std::vector<Expr> i)
      : ExprNode(kKind, ScalarType::Float), tensor(std::move(t)), node(std::move(n)), indices(std::move(i)) {}
};

// The uninterpreted structure functions. `arg` is the child slot for Child, undefined otherwise.
enum class StructFn { Child, NumChildren, IsLeaf, Token, Parent, ChildSlot, NumParents };

struct StructCall : ExprNode {
  static constexpr ExprKind kKind = ExprKind::StructCall;
  StructFn fn;
  Expr node, arg;
  static Expr make(StructFn fn, Expr node, Expr arg = Expr());
  static Expr child(Expr node, Expr k) { return make(StructFn::Child, std::move(node), std::move(k)); }
  static Expr token(Expr node) { return make(StructFn::Token, std::move(node)); }
  static Expr num_children(Expr node) { return make(StructFn::NumChildren, std::move(node)); }
  static Expr parent(Expr node) { return make(StructFn::Parent, std::move(node)); }
  static Expr child_slot(Expr node) { return make(StructFn::ChildSlot, std::move(node)); }
  // DAGs and sequences, top down: the j-th of a node's num_parents(n) successors, and the
  // predecessor slot the node fills there.
  static Expr parent(Expr node, Expr j) { return make(StructFn::Parent, std::move(node), std::move(j)); }
  static Expr child_slot(Expr node, Expr j) {
    return make(StructFn::ChildSlot, std::move(node), std::move(j));
  }
  static Expr num_parents(Expr node) { return make(StructFn::NumParents, std::move(node)); }
  StructCall(StructFn f, Expr n, Expr a, ScalarType t)
      : ExprNode(kKind, t), fn(f), node(std::move(n)), arg(std::move(a)) {}
};

// Σ_{var = 0}^{extent - 1} body. `extent` is a size expression or num_children(n).
struct Sum : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Sum;
  std::string var;
  Expr extent, body;
  static Expr make(const std::string &var, Expr extent, Expr body);
  Sum(std::string v, Expr e, Expr b)
      : ExprNode(kKind, b.type()), var(std::move(v)), extent(std::move(e)), body(std::move(b)) {}
};

// Convenience constructors, so that passes read like the math.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator-(Expr a);

// ---------------------------------------------------------------------------------------------
// Programs

enum class TensorKind { Param, State, Temp, Saved, Gradient };

struct TensorDecl {
  std::string name;
  TensorKind kind;
  std::vector<Expr> shape;  // size expressions (IntImm, size Vars, + and *)
};

// tensor[n, indices...] = value, for the current node n.
struct Compute {
  std::string tensor;
  std::vector<std::string> indices;
  Expr value;
};

// Leaf and Internal run per node in the recursion. Hoisted runs first, for every node of the batch at
// once: it reads only params and token(n), and the states it defines are read at n by the other cases
// (computation hoisting: e.g. an LSTM's W_ih x_t for all steps as one GEMM).
enum class CaseKind { Leaf, Internal, Hoisted };

struct Case {
  CaseKind kind;
  std::vector<Compute> body;
};

// g[i…] += Σ over every node n of case `over` of value (top-down programs; see the header).
struct Reduction {
  std::string tensor;  // a Gradient
  CaseKind over = CaseKind::Internal;
  std::vector<std::string> indices;
  Expr value;  // in n, the indices, size variables; reads what case `over` reads or defines
};

// Children before parents (every forward model), or parents before children (backward programs).
enum class Direction { BottomUp, TopDown };

// Which input structures a Program accepts.
enum class StructureKind {
  BinaryTree,  // every internal node has exactly two children, ordered (left, right)
  Tree,        // any number of children (child-sum models); leaves have none
  Dag,         // predecessor slots 0 and 1 (child(n, 0), child(n, 1)); an empty slot reads zeros
  Sequence,    // predecessor slot 0, the previous token; the first token's reads zeros
};

// Whether every node of `kind` carries a token and reads fixed predecessor slots (DAG, sequence).
bool has_predecessor_slots(StructureKind kind);
// The number of predecessor slots of a DAG (2) or a sequence (1) node; 0 for trees.
int predecessor_slots(StructureKind kind);

struct Program {
  std::string name;
  StructureKind structure = StructureKind::BinaryTree;
  std::vector<std::string> size_vars;  // in order of first appearance
  std::vector<TensorDecl> tensors;     // params, then states, then temps
  Case leaf{CaseKind::Leaf, {}};
  Case internal{CaseKind::Internal, {}};
  Case hoisted{CaseKind::Hoisted, {}};  // empty unless a pass hoists work out of the recursion
  std::string output;                   // a State: the model's result at each root
  Direction direction = Direction::BottomUp;
  std::vector<Reduction> reductions;  // top-down programs: run after the recursion, in order
  // Scheduling directives from the model file's `schedule { key = value ... }` block, in order;
  // scheduling/Schedule.h interprets them. They never change what the program computes.
  std::vector<std::pair<std::string, std::string>> schedule;

  const TensorDecl *find(const std::string &tensor) const;
  const TensorDecl &get(const std::string &tensor) const;  // internal error if absent
};

// The value of a size expression (IntImm, size Vars, +, -, *) under `sizes`; an internal error if a
// variable is unbound or the expression is not a size.
int64_t eval_size(const Expr &size, const std::map<std::string, int64_t> &sizes);

const char *to_string(BinOp op);
const char *to_string(UnaryOp op);
const char *to_string(StructFn fn);
const char *to_string(TensorKind kind);
const char *to_string(StructureKind kind);
const char *to_string(CaseKind kind);  // "leaf", "internal", "hoisted"

}  // namespace grove::ilir
