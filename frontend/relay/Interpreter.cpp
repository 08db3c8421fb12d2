#include "frontend/relay/Interpreter.h"

#include <fmt/format.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// Every message of the interpreter, in one place. Most start with the location (see at()).
namespace msg {
inline constexpr char kResultMismatch[] =
    "{}error in {}: the result has shape {} and dtype {}, but the call's type is {}";
inline constexpr char kPatternNotADT[] = "{}the pattern {} cannot match {}";
inline constexpr char kPatternFields[] = "{}the pattern {} has {} fields, but the value has {}";
inline constexpr char kTuplePattern[] = "{}a tuple pattern of {} fields cannot match {}";
inline constexpr char kNotAFunction[] = "{}cannot call {}: it is not a function";
inline constexpr char kArity[] = "{}the function {} takes {} argument(s), but the call passes {}";
inline constexpr char kNoGlobal[] = "{}the module has no global function @{}";
inline constexpr char kUnboundVar[] =
    "{}the variable %{} has no value here: only closed expressions can be evaluated";
inline constexpr char kOpAsValue[] =
    "{}the operator {} is used as a value; the interpreter can only call operators directly";
inline constexpr char kConstructorArity[] = "{}the constructor {} takes {} fields, but the call passes {}";
inline constexpr char kOpArgument[] = "{}error in {}: argument {} is {}, not a tensor or a tuple of tensors";
inline constexpr char kNoKernel[] = "{}error in {}: the interpreter has no kernel for this operator";
inline constexpr char kOpError[] = "{}error in {}: {}";
inline constexpr char kNotATuple[] = "{}cannot take field {} of {}";
inline constexpr char kFieldOutOfRange[] = "{}field {} is out of range for a tuple of {} fields";
inline constexpr char kBadCondition[] = "{}the condition of an if must be a rank-0 bool tensor, but it is {}";
inline constexpr char kNoClause[] = "no clause of the match at {} matches {}";
inline constexpr char kRefReadOfNonRef[] = "{}ref_read of {}, not a reference";
inline constexpr char kRefWriteToNonRef[] = "{}ref_write to {}, not a reference";
inline constexpr char kNoMain[] = "the module has no @main function";
inline constexpr char kMainArity[] = "{}@main takes {} argument{}, but {} {} given";
inline constexpr char kMainArgument[] = "{}argument %{} of @main: expected {}, found {}";
}  // namespace msg

using NodeSet = std::unordered_set<const ExprNode *>;
using Bindings = std::vector<std::pair<const ExprNode *, Value>>;

// "file:line:col: " for messages, or nothing when the node has no location.
std::string at(const Span &span) { return span.defined() ? to_string(span) + ": " : ""; }

// The variables of one running function body (or of the expression given to evaluate()), and the
// values of that body's shared nodes once computed. Variables are keyed by their Var node.
struct Frame {
  std::unordered_map<const ExprNode *, Value> values;
  const NodeSet *shared = nullptr;  // the nodes to memoize: those with more than one parent

  bool memoizes(const Expr &e) const { return !shared->empty() && shared->count(e.get()) != 0; }
};

// One expression under evaluation, waiting for the values of its children: a continuation.
struct Task {
  Expr expr;
  Frame *frame;
  std::vector<Value> values;      // its children's values so far, in evaluation order
  std::unique_ptr<Frame> callee;  // a call's: the frame of the function body it runs
};

bool is_leaf(ExprKind k) {
  return k == ExprKind::Var || k == ExprKind::Constant || k == ExprKind::GlobalVar || k == ExprKind::Op ||
         k == ExprKind::Constructor || k == ExprKind::Function;
}

// "a tensor of shape (1, 8) and dtype float32", "a tuple of 2 fields", ... for messages.
std::string describe(const Value &v) {
  switch (v->kind) {
    case ValueKind::Tensor: {
      const NDArray &a = v->as<TensorValue>()->data;
      return fmt::format("a tensor of shape {} and dtype {}", shape_to_string(a.shape()),
                         to_string(a.dtype()));
    }
    case ValueKind::Tuple:
      return fmt::format("a tuple of {} fields", v->as<TupleValue>()->fields.size());
    case ValueKind::Closure:
      return "the function " + value_to_string(v);
    case ValueKind::ADT:
      return "the value " + value_to_string(v);
    case ValueKind::Ref:
      return "a reference";
  }
  return "";
}

bool fits(const NDArray &a, const TensorType &t) {
  if (a.dtype() != t.dtype || a.shape().size() != t.shape.size()) return false;
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] != kAnyDim && t.shape[i] != a.shape()[i]) return false;
  return true;
}

// What about `value` does not fit `type`, or "" when it fits (`?` accepts any size; type variables
// anything). Recursion over the type's nesting only.
std::string mismatch(const Type &type, const Value &value) {
  if (const auto *t = type.as<TensorType>()) {
    const auto *tensor = value->as<TensorValue>();
    if (tensor == nullptr || !fits(tensor->data, *t)) return describe(value);
    return "";
  }
  if (const auto *t = type.as<TupleType>()) {
    const auto *tuple = value->as<TupleValue>();
    if (tuple == nullptr || tuple->fields.size() != t->fields.size()) return describe(value);
    for (size_t i = 0; i < t->fields.size(); ++i) {
      std::string inner = mismatch(t->fields[i], tuple->fields[i]);
      if (!inner.empty()) return fmt::format("a tuple whose field {} is {}", i, inner);
    }
    return "";
  }
  bool ok = true;
  if (type.as<FuncType>()) ok = value->kind == ValueKind::Closure;
  if (type.as<RefType>()) ok = value->kind == ValueKind::Ref;
  if (type.as<TypeCall>() || type.as<GlobalTypeVar>()) ok = value->kind == ValueKind::ADT;
  return ok ? "" : describe(value);
}

// The result of op `name` against the call's inferred type; a mismatch means a `?` of an argument
// met a known dimension at run time.
void check_result(const NDArray &a, const Type &type, const std::string &name, const Span &where) {
  const auto *t = type.as<TensorType>();
  if (t == nullptr || fits(a, *t)) return;
  user_error(msg::kResultMismatch, at(where), name, shape_to_string(a.shape()), to_string(a.dtype()),
             to_string(type));
}

// Whether `value` matches `p`; the variables it binds are appended to `bindings`. Recursion over the
// pattern's nesting only.
bool match_pattern(const Pattern &p, const Value &value, Bindings &bindings) {
  switch (p->kind) {
    case PatternKind::Wildcard:
      return true;
    case PatternKind::Var:
      bindings.emplace_back(p->var.get(), value);
      return true;
    case PatternKind::Constructor: {
      const auto *c = p->constructor.as<Constructor>();
      const auto *adt = value->as<ADTValue>();
      if (adt == nullptr) user_error(msg::kPatternNotADT, at(p->span), c->name, describe(value));
      if (adt->tag != c->tag || adt->constructor.as<Constructor>()->name != c->name) return false;
      if (adt->fields.size() != p->patterns.size())
        user_error(msg::kPatternFields, at(p->span), c->name, p->patterns.size(), adt->fields.size());
      for (size_t i = 0; i < p->patterns.size(); ++i)
        if (!match_pattern(p->patterns[i], adt->fields[i], bindings)) return false;
      return true;
    }
    case PatternKind::Tuple: {
      const auto *tuple = value->as<TupleValue>();
      if (tuple == nullptr || tuple->fields.size() != p->patterns.size())
        user_error(msg::kTuplePattern, at(p->span), p->patterns.size(), describe(value));
      for (size_t i = 0; i < p->patterns.size(); ++i)
        if (!match_pattern(p->patterns[i], tuple->fields[i], bindings)) return false;
      return true;
    }
  }
  return false;
}

// The interpreter: an explicit CEK-style machine, so nothing recurses on the C stack per evaluated
// node, call or list element.
//
//   1. An expression whose value is known at once — a constant, a variable, a global, a closure, a
//      constructor, a shared node already computed in this frame — is never pushed (immediate()).
//   2. Any other expression becomes a Task on the stack. step() advances the top task: it asks for
//      its next child (pushing the child's task unless the value is immediate) or, with every child
//      known, computes its value. A finished task is popped and its value appended to the values
//      of the task below; a shared node's value is also memoized in its frame.
//   3. Calling a closure makes a new Frame from its captured values, its parameters and (for a
//      let-bound closure) itself; its body is evaluated in that frame.
//   4. A node in tail position (a let body, an if branch, a clause body, the body of a called
//      function) reuses its parent's task when the parent is not shared, so tail recursion and let
//      chains run in constant stack; other recursion grows the heap-allocated stack only.
class Machine {
 public:
  explicit Machine(const Module &module) : module_(module) {}

  Value run(const Expr &root, Frame *frame);
  // A frame in which the closure `function`'s body runs with `args`.
  std::unique_ptr<Frame> enter(const Value &function, std::vector<Value> args, const Span &call_span);
  const NodeSet &shared_nodes(const Expr &root);
  Value global(const std::string &name, const Span &span);

 private:
  bool immediate(const Expr &e, Frame *frame, Value *out);
  bool request(std::vector<Task> &stack, const Expr &e, Frame *frame);
  bool continue_with(std::vector<Task> &stack, const Expr &e, Value *out);
  bool step(std::vector<Task> &stack, Value *out);
  bool step_call(std::vector<Task> &stack, const Expr &e, Value *out);
  Value make_closure(const Expr &function, Frame *frame, const Expr &self);
  Value constructor_value(const Expr &e);
  Value call_op(const Call *call, const Expr &e, const Op *op, const std::vector<Value> &values);
  Value construct(const Call *call, const std::vector<Value> &values);

  const Module &module_;
  std::unordered_map<Expr, NodeSet, ExprHash, ExprEqual> shared_;
  std::unordered_map<Expr, std::vector<Expr>, ExprHash, ExprEqual> free_vars_;
  std::unordered_map<Expr, Expr, ExprHash, ExprEqual> constructor_functions_;
  std::unordered_map<std::string, Value> globals_;
};

Value Machine::run(const Expr &root, Frame *frame) {
  Value result;
  if (immediate(root, frame, &result)) return result;
  std::vector<Task> stack;
  stack.push_back(Task{root, frame, {}, nullptr});
  while (!stack.empty()) {
    Value v;
    if (!step(stack, &v)) continue;
    Task &done = stack.back();
    if (done.frame->memoizes(done.expr)) done.frame->values.emplace(done.expr.get(), v);
    stack.pop_back();
    if (stack.empty())
      result = std::move(v);
    else
      stack.back().values.push_back(std::move(v));
  }
  return result;
}

std::unique_ptr<Frame> Machine::enter(const Value &function, std::vector<Value> args, const Span &call_span) {
  GROVE_CHECK(function != nullptr, "calling a null value");
  const auto *closure = function->as<ClosureValue>();
  if (closure == nullptr) user_error(msg::kNotAFunction, at(call_span), describe(function));
  const auto *fn = closure->function.as<Function>();
  if (fn->params.size() != args.size())
    user_error(msg::kArity, at(call_span), value_to_string(function), fn->params.size(), args.size());
  auto frame = std::make_unique<Frame>();
  frame->shared = &shared_nodes(closure->function);
  frame->values.reserve(closure->captured.size() + args.size() + 1);
  for (const auto &[var, value] : closure->captured) frame->values.emplace(var.get(), value);
  if (closure->self.defined()) frame->values[closure->self.get()] = function;
  for (size_t i = 0; i < args.size(); ++i) frame->values[fn->params[i].get()] = std::move(args[i]);
  return frame;
}

// The nodes under `root` with more than one parent (graph form): evaluated once per frame, so their
// values are memoized. Leaves are cheap to look up again and are left out.
const NodeSet &Machine::shared_nodes(const Expr &root) {
  auto found = shared_.find(root);
  if (found != shared_.end()) return found->second;
  std::unordered_map<const ExprNode *, int> parents;
  post_order_visit(root, [&](const Expr &e) {
    for_each_child(e, [&](const Expr &c) {
      if (!is_leaf(c->kind)) ++parents[c.get()];
    });
  });
  NodeSet shared;
  for (const auto &[node, count] : parents)
    if (count > 1) shared.insert(node);
  return shared_.emplace(root, std::move(shared)).first->second;
}

Value Machine::global(const std::string &name, const Span &span) {
  auto found = globals_.find(name);
  if (found != globals_.end()) return found->second;
  const Expr *fn = module_.find_function(name);
  if (fn == nullptr) user_error(msg::kNoGlobal, at(span), name);
  // Globals are closed: their closures capture nothing.
  Value v = closure_value(*fn);
  globals_.emplace(name, v);
  return v;
}

bool Machine::immediate(const Expr &e, Frame *frame, Value *out) {
  auto found = frame->values.find(e.get());
  if (found != frame->values.end()) {
    *out = found->second;
    return true;
  }
  switch (e->kind) {
    case ExprKind::Constant:
      *out = tensor_value(e.as<Constant>()->data);
      return true;
    case ExprKind::Var:
      user_error(msg::kUnboundVar, at(e->span), e.as<Var>()->name_hint);
    case ExprKind::GlobalVar:
      *out = global(e.as<GlobalVar>()->name, e->span);
      return true;
    case ExprKind::Function:
      *out = make_closure(e, frame, Expr());
      return true;
    case ExprKind::Constructor:
      *out = constructor_value(e);
      return true;
    case ExprKind::Op:
      user_error(msg::kOpAsValue, at(e->span), e.as<Op>()->name);
    default:
      return false;
  }
}

// Appends the value of `e` in `frame` to the top task's values when it is immediate and returns
// true; otherwise pushes a task for `e` and returns false (references to the old top are then stale).
bool Machine::request(std::vector<Task> &stack, const Expr &e, Frame *frame) {
  Value v;
  if (immediate(e, frame, &v)) {
    stack.back().values.push_back(std::move(v));
    return true;
  }
  stack.push_back(Task{e, frame, {}, nullptr});
  return false;
}

// The top task's value is the value of `e` (in tail position, same frame). Returns true with *out
// set when it is known now. The task's values must hold exactly its children before `e`.
bool Machine::continue_with(std::vector<Task> &stack, const Expr &e, Value *out) {
  Task &t = stack.back();
  if (!t.frame->memoizes(t.expr)) {
    Expr next = e;  // `e` may live in t.expr's node
    t.expr = std::move(next);
    t.values.clear();
    return immediate(t.expr, t.frame, out);
  }
  // A shared node must stay on the stack to be memoized: wait for `e` as one more child.
  if (!request(stack, e, t.frame)) return false;
  *out = stack.back().values.back();
  return true;
}

Value Machine::make_closure(const Expr &function, Frame *frame, const Expr &self) {
  auto found = free_vars_.find(function);
  if (found == free_vars_.end()) found = free_vars_.emplace(function, free_vars(function)).first;
  std::vector<std::pair<Expr, Value>> captured;
  captured.reserve(found->second.size());
  for (const Expr &var : found->second) {
    if (var.same_as(self)) continue;
    auto value = frame->values.find(var.get());
    if (value == frame->values.end()) user_error(msg::kUnboundVar, at(var->span), var.as<Var>()->name_hint);
    captured.emplace_back(var, value->second);
  }
  return closure_value(function, std::move(captured), self);
}

// A constructor used as a value: the ADT value itself for a nullary one (`Nil`), else a function
// that builds the value (`Cons` passed to a map), synthesized once.
Value Machine::constructor_value(const Expr &e) {
  const auto *c = e.as<Constructor>();
  bool is_function = e->checked_type.defined() ? e->checked_type.as<FuncType>() != nullptr : false;
  if (!is_function && c->inputs.empty()) return adt_value(e, {});
  Expr &fn = constructor_functions_[e];
  if (!fn.defined()) {
    std::vector<Expr> params;
    for (size_t i = 0; i < c->inputs.size(); ++i)
      params.push_back(Var::make(fmt::format("field{}", i), {}, e->span));
    fn = Function::make(params, Call::make(e, params, {}, {}, e->span), {}, {}, {}, e->span);
  }
  return closure_value(fn);
}

Value Machine::construct(const Call *call, const std::vector<Value> &values) {
  const auto *c = call->op.as<Constructor>();
  if (c->inputs.size() + 1 != values.size())
    user_error(msg::kConstructorArity, at(call->span), c->name, c->inputs.size(), values.size() - 1);
  return adt_value(call->op, std::vector<Value>(values.begin() + 1, values.end()));
}

// Runs an op's kernel: tuple arguments flattened field by field; the result is a tuple when the
// call's type is, else one tensor; each result tensor is checked against its type.
Value Machine::call_op(const Call *call, const Expr &e, const Op *op, const std::vector<Value> &values) {
  const Span &where = call->span.defined() ? call->span : op->span;
  // BYOC's region markers pass any value through (a reference, an ADT, a closure too).
  if (op->name == "annotation.compiler_begin" || op->name == "annotation.compiler_end") return values[1];
  std::vector<NDArray> inputs;
  for (size_t i = 1; i < values.size(); ++i) {
    const Value &v = values[i];
    if (const auto *tensor = v->as<TensorValue>()) {
      inputs.push_back(tensor->data);
      continue;
    }
    const auto *tuple = v->as<TupleValue>();
    bool tensors = tuple != nullptr;
    for (size_t f = 0; tensors && f < tuple->fields.size(); ++f)
      tensors = tuple->fields[f]->as<TensorValue>();
    if (!tensors) user_error(msg::kOpArgument, at(where), op->name, i - 1, describe(v));
    for (const Value &field : tuple->fields) inputs.push_back(field->as<TensorValue>()->data);
  }
  if (op->def == nullptr || op->def->kernel == nullptr) user_error(msg::kNoKernel, at(where), op->name);
  std::vector<NDArray> results;
  try {
    results = op->def->kernel(inputs, call->attrs);
  } catch (const OpError &err) {
    user_error(msg::kOpError, at(where), op->name, err.what());
  }
  const Type &type = e->checked_type;
  const auto *tuple_type = type.as<TupleType>();
  if (tuple_type != nullptr || (!type.defined() && results.size() != 1)) {
    GROVE_CHECK(tuple_type == nullptr || results.size() == tuple_type->fields.size(),
                "{} returned {} tensors for a result of type {}", op->name, results.size(), to_string(type));
    std::vector<Value> fields;
    for (size_t i = 0; i < results.size(); ++i) {
      if (tuple_type != nullptr) check_result(results[i], tuple_type->fields[i], op->name, where);
      fields.push_back(tensor_value(std::move(results[i])));
    }
    return tuple_value(std::move(fields));
  }
  GROVE_CHECK(results.size() == 1, "{} returned {} tensors for a result of type {}", op->name, results.size(),
              to_string(type));
  check_result(results[0], type, op->name, where);
  return tensor_value(std::move(results[0]));
}

bool Machine::step_call(std::vector<Task> &stack, const Expr &e, Value *out) {
  Task &t = stack.back();
  const auto *call = e.as<Call>();
  const size_t num_args = call->args.size();
  // values: the callee (null for an op or a constructor), the arguments, then the body's value.
  if (t.values.size() == num_args + 2) {
    *out = t.values.back();
    return true;
  }
  const bool direct = call->op.as<Op>() != nullptr || call->op.as<Constructor>() != nullptr;
  if (t.values.empty()) {
    if (direct)
      t.values.push_back(nullptr);
    else if (!request(stack, call->op, t.frame))
      return false;
  }
  while (t.values.size() < num_args + 1)
    if (!request(stack, call->args[t.values.size() - 1], t.frame)) return false;
  if (const auto *op = call->op.as<Op>()) {
    *out = call_op(call, e, op, t.values);
    return true;
  }
  if (call->op.as<Constructor>()) {
    *out = construct(call, t.values);
    return true;
  }
  Value function = t.values[0];
  std::unique_ptr<Frame> frame =
      enter(function, std::vector<Value>(t.values.begin() + 1, t.values.end()), call->span);
  Expr body = function->as<ClosureValue>()->function.as<Function>()->body;
  if (!t.frame->memoizes(e)) {
    // A tail call: the task becomes the body's. A frame this task owned (it ran the caller's body)
    // is no longer needed — the arguments are in the new frame.
    t.values.clear();
    t.frame = frame.get();
    t.callee = std::move(frame);
    t.expr = std::move(body);
    return immediate(t.expr, t.frame, out);
  }
  t.callee = std::move(frame);
  if (!request(stack, body, t.callee.get())) return false;
  *out = stack.back().values.back();
  return true;
}

bool Machine::step(std::vector<Task> &stack, Value *out) {
  Task &t = stack.back();
  const Expr e = t.expr;
  switch (e->kind) {
    case ExprKind::Call:
      return step_call(stack, e, out);
    case ExprKind::Tuple: {
      const auto &fields = e.as<Tuple>()->fields;
      while (t.values.size() < fields.size())
        if (!request(stack, fields[t.values.size()], t.frame)) return false;
      *out = tuple_value(std::move(t.values));
      return true;
    }
    case ExprKind::TupleGetItem: {
      const auto *n = e.as<TupleGetItem>();
      if (t.values.empty() && !request(stack, n->tuple, t.frame)) return false;
      const auto *tuple = t.values[0]->as<TupleValue>();
      if (tuple == nullptr) user_error(msg::kNotATuple, at(e->span), n->index, describe(t.values[0]));
      if (n->index < 0 || static_cast<size_t>(n->index) >= tuple->fields.size())
        user_error(msg::kFieldOutOfRange, at(e->span), n->index, tuple->fields.size());
      *out = tuple->fields[n->index];
      return true;
    }
    case ExprKind::Let: {
      const auto *n = e.as<Let>();
      if (t.values.size() == 2) {  // a shared let: its body's value
        *out = t.values[1];
        return true;
      }
      if (t.values.empty()) {
        // A let-bound function sees itself (`self`), so it may recurse.
        if (n->value.as<Function>() != nullptr)
          t.values.push_back(make_closure(n->value, t.frame, n->var));
        else if (!request(stack, n->value, t.frame))
          return false;
      }
      t.frame->values[n->var.get()] = t.values[0];
      return continue_with(stack, n->body, out);
    }
    case ExprKind::If: {
      const auto *n = e.as<If>();
      if (t.values.size() == 2) {
        *out = t.values[1];
        return true;
      }
      if (t.values.empty() && !request(stack, n->cond, t.frame)) return false;
      const auto *cond = t.values[0]->as<TensorValue>();
      if (cond == nullptr || cond->data.ndim() != 0 || cond->data.dtype() != DType::Bool)
        user_error(msg::kBadCondition, at(e->span), describe(t.values[0]));
      return continue_with(stack, cond->data.element_as_int(0) != 0 ? n->then_branch : n->else_branch, out);
    }
    case ExprKind::Match: {
      const auto *n = e.as<Match>();
      if (t.values.size() == 2) {
        *out = t.values[1];
        return true;
      }
      if (t.values.empty() && !request(stack, n->data, t.frame)) return false;
      Bindings bindings;
      for (const Clause &clause : n->clauses) {
        bindings.clear();
        if (!match_pattern(clause.lhs, t.values[0], bindings)) continue;
        for (auto &[var, value] : bindings) t.frame->values[var] = std::move(value);
        return continue_with(stack, clause.rhs, out);
      }
      user_error(msg::kNoClause, to_string(e->span), value_to_string(t.values[0]));
    }
    case ExprKind::RefCreate:
      if (t.values.empty() && !request(stack, e.as<RefCreate>()->value, t.frame)) return false;
      *out = ref_value(t.values[0]);
      return true;
    case ExprKind::RefRead: {
      if (t.values.empty() && !request(stack, e.as<RefRead>()->ref, t.frame)) return false;
      const auto *ref = t.values[0]->as<RefValue>();
      if (ref == nullptr) user_error(msg::kRefReadOfNonRef, at(e->span), describe(t.values[0]));
      *out = ref->read();
      return true;
    }
    case ExprKind::RefWrite: {
      const auto *n = e.as<RefWrite>();
      if (t.values.empty() && !request(stack, n->ref, t.frame)) return false;
      if (t.values.size() == 1 && !request(stack, n->value, t.frame)) return false;
      const auto *ref = t.values[0]->as<RefValue>();
      if (ref == nullptr) user_error(msg::kRefWriteToNonRef, at(e->span), describe(t.values[0]));
      ref->write(t.values[1]);
      *out = tuple_value({});
      return true;
    }
    default:
      GROVE_CHECK(false, "a {} node was pushed on the interpreter's stack", to_string(e->kind));
  }
  return false;
}

}  // namespace

Value evaluate(const Module &module, const Expr &e) {
  GROVE_CHECK(e.defined(), "evaluating an undefined expression");
  Machine machine(module);
  Frame top;
  top.shared = &machine.shared_nodes(e);
  return machine.run(e, &top);
}

Value apply(const Module &module, const Value &function, const std::vector<Value> &args) {
  Machine machine(module);
  std::unique_ptr<Frame> frame = machine.enter(function, args, Span{});
  Expr body = function->as<ClosureValue>()->function.as<Function>()->body;
  return machine.run(body, frame.get());
}

Value global_function(const Module &module, const std::string &name) {
  return Machine(module).global(name, {});
}

void check_main_arguments(const Module &module, const std::vector<Value> &args) {
  const Expr *main = module.find_function("main");
  if (main == nullptr) user_error(msg::kNoMain);
  const auto &params = main->as<Function>()->params;
  if (params.size() != args.size())
    user_error(msg::kMainArity, at((*main)->span), params.size(), params.size() == 1 ? "" : "s", args.size(),
               args.size() == 1 ? "was" : "were");
  for (size_t i = 0; i < params.size(); ++i) {
    GROVE_CHECK(args[i] != nullptr, "argument {} of @main is null", i);
    const auto *var = params[i].as<Var>();
    const Type &type = params[i]->checked_type.defined() ? params[i]->checked_type : var->type_annotation;
    if (!type.defined()) continue;
    std::string found = mismatch(type, args[i]);
    if (!found.empty())
      user_error(msg::kMainArgument, at(params[i]->span), var->name_hint, to_string(type), found);
  }
}

std::string describe_value(const Value &v) { return describe(v); }

bool value_fits(const NDArray &a, const TensorType &t) { return fits(a, t); }

Value run_main(const Module &module, const std::vector<Value> &args) {
  check_main_arguments(module, args);
  return apply(module, global_function(module, "main"), args);
}

}  // namespace grove::relay
