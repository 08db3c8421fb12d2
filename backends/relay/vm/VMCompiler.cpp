#include "backends/relay/vm/VMCompiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/recursive/ClaimRecursive.h"
#include "backends/relay/recursive/TreeAdts.h"
#include "backends/relay/vm/MemoryPlan.h"
#include "backends/relay/vm/RowWise.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/byoc/Regions.h"
#include "frontend/relay/passes/PassList.h"
#include "support/Error.h"

namespace grove::relay::vm {

namespace {

namespace msg {
inline constexpr char kNoMain[] = "the module has no @main function";
inline constexpr char kKernelAsValue[] =
    "{}the VM cannot compile the fused (Primitive) function {} used as a value: it can only be called";
inline constexpr char kExternal[] =
    "{}the function with Compiler=\"{}\" can only be called: the VM cannot use it as a value";
inline constexpr char kExternalOff[] =
    "{}@{} has Compiler=\"{}\" but the VM compiles no external functions over values: recursive "
    "compilation is turned off";
inline constexpr char kNoClause[] = "no clause of the match at {} matches";
}  // namespace msg

std::string at(const Span &span) { return span.defined() ? to_string(span) + ": " : ""; }

bool is_primitive(const Function *fn) { return fn->has_attr(attr::kPrimitive); }

// The tensor types of `t`, tuples flattened left to right (as kernels take and give them).
void flatten_type(const Type &t, std::vector<Type> &out) {
  if (const auto *tuple = t.as<TupleType>()) {
    for (const Type &f : tuple->fields) flatten_type(f, out);
    return;
  }
  out.push_back(t);
}

// `t` with the leading dimension of each tensor `?` (tuples walked): a kernel's output type where it
// runs on the stacked rows of a list's elements, whose count is known only at run time.
Type any_rows(const Type &t) {
  if (const auto *tuple = t.as<TupleType>()) {
    std::vector<Type> fields;
    for (const Type &f : tuple->fields) fields.push_back(any_rows(f));
    return TupleType::make(std::move(fields), t->span);
  }
  const auto *tensor = t.as<TensorType>();
  if (tensor == nullptr || tensor->shape.empty()) return t;
  Shape shape = tensor->shape;
  shape[0] = kAnyDim;
  return TensorType::make(std::move(shape), tensor->dtype, t->span);
}

// What lifting a closure needs: its Function node, the variables it captures, the variable naming
// it inside itself, and the fused kernels bound outside it that it calls.
struct Pending {
  int index;
  Expr function;
  std::vector<Expr> captured;
  Expr self;
  std::unordered_map<const ExprNode *, int> kernels;
};

class ModuleCompiler;

// One function's bytecode. Registers are allocated upward; variables map to the register holding
// their value (a pattern or let binding needs no Move).
class FunctionCompiler {
 public:
  FunctionCompiler(ModuleCompiler &mc, const Pending &p) : mc_(mc), pending_(p) {}
  VMFunction run();

 private:
  int fresh() { return num_registers_++; }
  Instruction &emit(Opcode op, const Span &span) {
    code_.push_back(Instruction{op});
    code_.back().span = span;
    return code_.back();
  }
  int here() const { return static_cast<int>(code_.size()); }

  int compile(const Expr &e);
  void bind(const Expr &var, const Expr &value);
  int compile_call(const Call *call, const Expr &e);
  int invoke_external(int index, const Call *call, const Expr &e);
  int try_batched_map(const Call *call, const Expr &e);
  int batched_rest(const std::vector<int> &lists, const std::vector<Expr> &results, const Expr &rest,
                   const std::string &cons, const std::string &nil, const Expr &e);
  int invoke_kernel(int kernel, const std::vector<int> &args, const Expr &call);
  int build_result(const Type &type, const std::vector<int> &outs, size_t *next, const Span &span);
  int compile_closure(const Expr &function, const Expr &self);
  int compile_if(const If *n, const Expr &e);
  int compile_match(const Match *n, const Expr &e);
  void compile_pattern(const Pattern &p, int reg, std::vector<int> &fails);
  std::vector<int> compile_all(const std::vector<Expr> &es);

  ModuleCompiler &mc_;
  const Pending &pending_;
  std::vector<Instruction> code_;
  int num_registers_ = 0;
  std::unordered_map<const ExprNode *, int> var_reg_;
  std::unordered_map<const ExprNode *, int> var_kernel_;    // let-bound Primitive functions
  std::unordered_map<const ExprNode *, Expr> var_closure_;  // let-bound closures' Function nodes
  // Compiling a mapped closure's rest over the stacked rows of every element (batched_rest): the
  // kernels' outputs have as many rows as the list has elements.
  bool stacked_rows_ = false;
  std::unordered_set<int> external_results_;  // registers holding an InvokeExternal's result
};

class ModuleCompiler {
 public:
  // `typed`: the module claimed and typed, before fusion (null when recursive functions are off).
  ModuleCompiler(Executable &exe, const CompileOptions &options, const Module *typed)
      : exe_(exe), options_(options), typed_(typed) {}

  // 1. Every global gets its index first (globals may call later ones), then each function is
  //    compiled from a queue: compiling a function lifts the closures it creates onto the queue, so
  //    nothing recurses per nested closure. 2. Each compiled function gets its memory plan.
  void run() {
    for (const auto &[name, fn] : exe_.module.functions()) {
      // 1a. A function an external code generator compiles (partition_graph's output) is a kernel,
      //     called like a fused group; one it runs over values (grove's claimed calls) is called by
      //     InvokeExternal, and its own bytecode runs the calls it declines.
      if (fn.as<Function>()->attrs.find(attr::kCompiler) != nullptr) {
        const Codegen *codegen = function_codegen(*fn.as<Function>());
        if (codegen == nullptr) {
          external_[name] = kernel(fn);
          continue;
        }
        if (typed_ == nullptr) user_error(msg::kExternalOff, at(fn->span), name, codegen->name);
        external_function_[name] = static_cast<int>(exe_.external_functions.size());
        exe_.external_functions.push_back(
            ExternalFunctionInfo{name, -1, codegen->prepare_function(*typed_, name)});
      }
      int index = add_function("@" + name, fn);
      exe_.globals[name] = index;
      queue_.push_back(Pending{index, fn, {}, {}, {}});
    }
    for (ExternalFunctionInfo &info : exe_.external_functions) info.body = exe_.globals.at(info.name);
    if (exe_.globals.count("main") == 0) user_error(msg::kNoMain);
    while (!queue_.empty()) {
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      VMFunction compiled = FunctionCompiler(*this, p).run();
      VMFunction &slot = exe_.functions[p.index];
      slot.code = std::move(compiled.code);
      slot.num_registers = compiled.num_registers;
      slot.num_captured = compiled.num_captured;
      slot.num_params = compiled.num_params;
      slot.self_register = compiled.self_register;
      plan_memory(slot);
    }
  }

  int global(const std::string &name, const Span &span) {
    auto found = exe_.globals.find(name);
    // Type inference has checked that every global exists.
    GROVE_CHECK(found != exe_.globals.end(), "{}the module has no global function @{}", at(span), name);
    return found->second;
  }

  // One kernel per distinct function: fusion of unrolled code makes many equal Primitive functions
  // (a chain of 100,000 lets of `add` gives 100,000), and each kernel is compiled per shape.
  // Structurally equal functions (StructuralEqual.h: the same operators, attributes, parameter types
  // and constants' bytes, whatever the variables' names) are one kernel.
  int kernel(const Expr &primitive) {
    auto found = kernel_index_.find(primitive.get());
    if (found != kernel_index_.end()) return found->second;
    std::vector<int> &same_hash = kernel_by_hash_[structural_hash(primitive)];
    int index = -1;
    for (int candidate : same_hash)
      if (structural_equal(exe_.kernels[candidate].primitive, primitive)) index = candidate;
    if (index < 0) {
      index = static_cast<int>(exe_.kernels.size());
      exe_.kernels.push_back(KernelInfo{primitive, kernel_op_names(primitive)});
      same_hash.push_back(index);
    }
    kernel_index_.emplace(primitive.get(), index);
    return index;
  }

  // The kernel `index` for the stacked rows of a list's elements (FunctionCompiler::batched_rest): its
  // function with every parameter's leading dimension of 1 made `?`, typed again, so that each
  // operator's result type has as many rows as its inputs.
  int rows_kernel(int index) {
    if (auto found = rows_kernel_.find(index); found != rows_kernel_.end()) return found->second;
    const auto *fn = exe_.kernels[index].primitive.as<Function>();
    std::vector<Expr> params;
    std::unordered_map<Expr, Expr, ExprHash, ExprEqual> rename;
    for (const Expr &p : fn->params) {
      Expr q = Var::make(p.as<Var>()->name_hint, any_rows(p->checked_type), p->span);
      rename.emplace(p, q);
      params.push_back(q);
    }
    Expr rows =
        Function::make(params, substitute(fn->body, rename), {}, fn->type_params, fn->attrs, fn->span);
    infer_type(rows, exe_.module);
    const int k = kernel(rows);
    rows_kernel_.emplace(index, k);
    return k;
  }

  // An operator call that fusion left alone: a Primitive function of that one call, typed.
  int one_op_kernel(const Call *call, const Expr &e) {
    std::vector<Expr> params;
    for (size_t i = 0; i < call->args.size(); ++i)
      params.push_back(Var::make(fmt::format("p{}", i), call->args[i]->checked_type, e->span));
    Expr fn = Function::make(params, Call::make(call->op, params, call->attrs, {}, e->span), e->checked_type,
                             {}, Attrs().with(attr::kPrimitive, AttrValue::of_int(1)), e->span);
    infer_type(fn, exe_.module);
    return kernel(fn);
  }

  int constant(const NDArray &data) {
    exe_.constants.push_back(data);
    return static_cast<int>(exe_.constants.size()) - 1;
  }

  int constructor(const Expr &ctor) {
    const std::string &name = ctor.as<Constructor>()->name;
    auto [it, added] = constructor_index_.emplace(name, static_cast<int>(exe_.constructors.size()));
    if (added) {
      // The module's own node, so values built here are those run_main's callers build.
      const Expr *own = exe_.module.find_constructor(name);
      exe_.constructors.push_back(own != nullptr ? *own : ctor);
    }
    return it->second;
  }

  // A constructor used as a value: a function of its fields that builds the ADT value.
  int constructor_function(const Expr &ctor) {
    const auto *c = ctor.as<Constructor>();
    auto found = constructor_function_.find(c->name);
    if (found != constructor_function_.end()) return found->second;
    std::vector<Expr> params;
    for (size_t i = 0; i < c->inputs.size(); ++i)
      params.push_back(Var::make(fmt::format("field{}", i), {}, ctor->span));
    Expr fn = Function::make(params, Call::make(ctor, params, {}, {}, ctor->span), {}, {}, {}, ctor->span);
    int index = add_function("constructor " + c->name, fn);
    constructor_function_[c->name] = index;
    queue_.push_back(Pending{index, fn, {}, {}, {}});
    return index;
  }

  // The function index of closure `function` (compiled once per node, later).
  int lift(const Expr &function, std::vector<Expr> captured, const Expr &self,
           std::unordered_map<const ExprNode *, int> kernels) {
    auto found = exe_.function_index.find(function.get());
    if (found != exe_.function_index.end()) return found->second;
    int index = add_function("closure at " + to_string(function->span), function);
    exe_.functions[index].captured_vars = captured;
    exe_.functions[index].self_var = self;
    queue_.push_back(Pending{index, function, std::move(captured), self, std::move(kernels)});
    return index;
  }

  // The kernel of global `name` when an external code generator compiles it, else -1.
  int external(const std::string &name) const {
    auto found = external_.find(name);
    return found == external_.end() ? -1 : found->second;
  }

  // The InvokeExternal table entry of global `name`, else -1.
  int external_function(const std::string &name) const {
    auto found = external_function_.find(name);
    return found == external_function_.end() ? -1 : found->second;
  }

  // Whether global `name` is the standard map over a List (checked once, on the module before fusion).
  bool list_map(const std::string &name, std::string *cons, std::string *nil) {
    return list_maps_.find(name, cons, nil);
  }

  Executable &exe_;

 private:
  const CompileOptions &options_;
  const Module *typed_;
  std::unordered_map<std::string, int> external_;           // globals external code generators compile
  std::unordered_map<std::string, int> external_function_;  // those run over values: InvokeExternal
  tree_to_dsl::ListMaps list_maps_{typed_};

  int add_function(std::string name, const Expr &fn) {
    int index = static_cast<int>(exe_.functions.size());
    exe_.functions.push_back(VMFunction{});
    exe_.functions.back().name = std::move(name);
    exe_.functions.back().function = fn;
    exe_.function_index[fn.get()] = index;
    return index;
  }

  std::deque<Pending> queue_;
  std::unordered_map<const ExprNode *, int> kernel_index_;
  std::unordered_map<size_t, std::vector<int>> kernel_by_hash_;
  std::unordered_map<int, int> rows_kernel_;
  std::unordered_map<std::string, int> constructor_index_;
  std::unordered_map<std::string, int> constructor_function_;
};

VMFunction FunctionCompiler::run() {
  const auto *fn = pending_.function.as<Function>();
  var_kernel_ = pending_.kernels;
  VMFunction out;
  for (const Expr &var : pending_.captured) var_reg_[var.get()] = fresh();
  for (const Expr &param : fn->params) var_reg_[param.get()] = fresh();
  out.num_captured = static_cast<int>(pending_.captured.size());
  out.num_params = static_cast<int>(fn->params.size());
  if (pending_.self.defined()) {
    out.self_register = fresh();
    var_reg_[pending_.self.get()] = out.self_register;
  }
  int result = compile(fn->body);
  emit(Opcode::Ret, fn->span).a = result;
  out.code = std::move(code_);
  out.num_registers = num_registers_;
  return out;
}

std::vector<int> FunctionCompiler::compile_all(const std::vector<Expr> &es) {
  std::vector<int> regs;
  regs.reserve(es.size());
  for (const Expr &e : es) regs.push_back(compile(e));
  return regs;
}

// A let chain is a loop, not recursion: 100,000 lets compile in constant C stack.
void FunctionCompiler::bind(const Expr &var, const Expr &value) {
  if (const auto *fn = value.as<Function>()) {
    if (is_primitive(fn)) {
      var_kernel_[var.get()] = mc_.kernel(value);
      return;
    }
    var_reg_[var.get()] = compile_closure(value, var);
    var_closure_[var.get()] = value;
    return;
  }
  var_reg_[var.get()] = compile(value);
}

int FunctionCompiler::compile(const Expr &e) {
  switch (e->kind) {
    case ExprKind::Let: {
      Expr cur = e;
      while (const auto *let = cur.as<Let>()) {
        bind(let->var, let->value);
        cur = let->body;
      }
      return compile(cur);
    }
    case ExprKind::Var: {
      auto found = var_reg_.find(e.get());
      if (found != var_reg_.end()) return found->second;
      if (var_kernel_.count(e.get()) != 0)
        user_error(msg::kKernelAsValue, at(e->span), "%" + e.as<Var>()->name_hint);
      GROVE_CHECK(false, "{}the variable %{} has no register", at(e->span), e.as<Var>()->name_hint);
      return -1;
    }
    case ExprKind::Constant: {
      int dst = fresh();
      Instruction &in = emit(Opcode::LoadConst, e->span);
      in.dst = dst;
      in.index = mc_.constant(e.as<Constant>()->data);
      return dst;
    }
    case ExprKind::GlobalVar: {
      const std::string &name = e.as<GlobalVar>()->name;
      if (mc_.external(name) >= 0) {
        const Expr *fn = mc_.exe_.module.find_function(name);
        user_error(msg::kExternal, at(e->span), fn->as<Function>()->attrs.find(attr::kCompiler)->s);
      }
      int dst = fresh();
      Instruction &in = emit(Opcode::AllocClosure, e->span);
      in.dst = dst;
      in.index = mc_.global(e.as<GlobalVar>()->name, e->span);
      return dst;
    }
    case ExprKind::Tuple: {
      std::vector<int> fields = compile_all(e.as<Tuple>()->fields);
      int dst = fresh();
      Instruction &in = emit(Opcode::AllocADT, e->span);
      in.dst = dst;
      in.index = kTupleTag;
      in.args = std::move(fields);
      return dst;
    }
    case ExprKind::TupleGetItem: {
      const auto *n = e.as<TupleGetItem>();
      int tuple = compile(n->tuple);
      int dst = fresh();
      Instruction &in = emit(Opcode::GetField, e->span);
      in.dst = dst;
      in.a = tuple;
      in.index = n->index;
      return dst;
    }
    case ExprKind::Call:
      return compile_call(e.as<Call>(), e);
    case ExprKind::Function:
      if (is_primitive(e.as<Function>())) user_error(msg::kKernelAsValue, at(e->span), "fn");
      return compile_closure(e, Expr());
    case ExprKind::If:
      return compile_if(e.as<If>(), e);
    case ExprKind::Match:
      return compile_match(e.as<Match>(), e);
    case ExprKind::RefCreate: {
      int value = compile(e.as<RefCreate>()->value);
      int dst = fresh();
      Instruction &in = emit(Opcode::RefCreate, e->span);
      in.dst = dst;
      in.a = value;
      return dst;
    }
    case ExprKind::RefRead: {
      int ref = compile(e.as<RefRead>()->ref);
      int dst = fresh();
      Instruction &in = emit(Opcode::RefRead, e->span);
      in.dst = dst;
      in.a = ref;
      return dst;
    }
    case ExprKind::RefWrite: {
      int ref = compile(e.as<RefWrite>()->ref);
      int value = compile(e.as<RefWrite>()->value);
      int dst = fresh();
      Instruction &in = emit(Opcode::RefWrite, e->span);
      in.dst = dst;
      in.a = ref;
      in.b = value;
      return dst;
    }
    case ExprKind::Op:
      // Type inference rejects an operator used as a value.
      GROVE_CHECK(false, "{}the operator {} is used as a value", at(e->span), e.as<Op>()->name);
      return -1;
    case ExprKind::Constructor: {
      const auto *c = e.as<Constructor>();
      bool is_function =
          e->checked_type.defined() ? e->checked_type.as<FuncType>() != nullptr : !c->inputs.empty();
      int dst = fresh();
      if (!is_function) {
        Instruction &in = emit(Opcode::AllocADT, e->span);
        in.dst = dst;
        in.index = mc_.constructor(e);
        return dst;
      }
      int index = mc_.constructor_function(e);
      Instruction &in = emit(Opcode::AllocClosure, e->span);
      in.dst = dst;
      in.index = index;
      return dst;
    }
  }
  GROVE_CHECK(false, "unknown Relay expression kind");
}

int FunctionCompiler::compile_call(const Call *call, const Expr &e) {
  const Expr &callee = call->op;
  if (callee.as<Op>() != nullptr)
    return invoke_kernel(mc_.one_op_kernel(call, e), compile_all(call->args), e);
  if (callee.as<Constructor>() != nullptr) {
    std::vector<int> fields = compile_all(call->args);
    int dst = fresh();
    Instruction &in = emit(Opcode::AllocADT, e->span);
    in.dst = dst;
    in.index = mc_.constructor(callee);
    in.args = std::move(fields);
    return dst;
  }
  if (const auto *gv = callee.as<GlobalVar>()) {
    if (int kernel = mc_.external(gv->name); kernel >= 0)
      return invoke_kernel(kernel, compile_all(call->args), e);
    if (int index = mc_.external_function(gv->name); index >= 0) return invoke_external(index, call, e);
    if (int dst = try_batched_map(call, e); dst >= 0) return dst;
    int index = mc_.global(gv->name, callee->span);
    std::vector<int> args = compile_all(call->args);
    int dst = fresh();
    Instruction &in = emit(Opcode::Invoke, e->span);
    in.dst = dst;
    in.index = index;
    in.args = std::move(args);
    return dst;
  }
  if (const auto *fn = callee.as<Function>(); fn != nullptr && is_primitive(fn))
    return invoke_kernel(mc_.kernel(callee), compile_all(call->args), e);
  if (auto found = var_kernel_.find(callee.get()); found != var_kernel_.end())
    return invoke_kernel(found->second, compile_all(call->args), e);
  int closure = compile(callee);
  std::vector<int> args = compile_all(call->args);
  int dst = fresh();
  Instruction &in = emit(Opcode::InvokeClosure, e->span);
  in.dst = dst;
  in.a = closure;
  in.args = std::move(args);
  return dst;
}

// A call of an external function over values (Codegen::prepare_function): InvokeExternal, its
// arguments in parameter order. Its result register is remembered: @map over it may run batched.
int FunctionCompiler::invoke_external(int index, const Call *call, const Expr &e) {
  std::vector<int> args = compile_all(call->args);
  int dst = fresh();
  Instruction &in = emit(Opcode::InvokeExternal, e->span);
  in.dst = dst;
  in.index = index;
  in.args = std::move(args);
  external_results_.insert(dst);
  return dst;
}

// `@map(fn (%r) { rest }, %rs)`, %rs the result of an external function over values — the claimed
// `@map` of a recursive function (recursive/ClaimRecursive.h), an encoder feeding a classifier —
// where @map is the standard map over a List, its closure a known Function of one parameter, and
// the rest computes each element's rows apart (RowWise.h): the rest runs once over the stacked
// results (batched_rest) rather than once per element. -1, with nothing emitted, otherwise.
int FunctionCompiler::try_batched_map(const Call *call, const Expr &e) {
  const std::string &map_name = call->op.as<GlobalVar>()->name;
  std::string cons, nil;
  if (call->args.size() != 2 || call->args[1].as<Var>() == nullptr) return -1;
  auto list = var_reg_.find(call->args[1].get());
  if (list == var_reg_.end() || external_results_.count(list->second) == 0) return -1;
  if (!mc_.list_map(map_name, &cons, &nil)) return -1;
  Expr closure = call->args[0];
  if (auto found = var_closure_.find(closure.get()); found != var_closure_.end()) closure = found->second;
  const auto *fn = closure.as<Function>();
  if (fn == nullptr || is_primitive(fn) || fn->params.size() != 1) return -1;
  const Expr &r = fn->params[0];
  if (!computes_rows_apart({r}, {r->checked_type}, fn->body, [&](const Expr &callee) -> const Function * {
        auto k = var_kernel_.find(callee.get());
        return k == var_kernel_.end() ? nullptr : mc_.exe_.kernels[k->second].primitive.as<Function>();
      }))
    return -1;
  return batched_rest({list->second}, {r}, fn->body, cons, nil, e);
}

// The rest of a mapped closure that computes each element's rows apart (RowWise.h), run once over
// the list: unless the results are Nil, each encoder's results are stacked into rows ([N, ...]), the
// rest is compiled here with their variables bound to them (its kernels run on N rows), and its
// result is split back into a List of N elements. Nil stays Nil, as @map gives. The encoders ran
// over the same list, so their results have the same length.
int FunctionCompiler::batched_rest(const std::vector<int> &lists, const std::vector<Expr> &results,
                                   const Expr &rest, const std::string &cons, const std::string &nil,
                                   const Expr &e) {
  const Expr &cons_ctor = *mc_.exe_.module.find_constructor(cons);
  const Expr &nil_ctor = *mc_.exe_.module.find_constructor(nil);
  int tag = fresh();
  Instruction &get_tag = emit(Opcode::GetTag, e->span);
  get_tag.dst = tag;
  get_tag.a = lists[0];
  int dst = fresh();
  int branch = here();
  Instruction &test = emit(Opcode::If, e->span);
  test.a = tag;
  test.index = cons_ctor.as<Constructor>()->tag;
  for (size_t i = 0; i < lists.size(); ++i) {
    int stacked = fresh();
    Instruction &stack = emit(Opcode::StackList, e->span);
    stack.dst = stacked;
    stack.a = lists[i];
    stack.index = mc_.constructor(cons_ctor);
    var_reg_[results[i].get()] = stacked;
  }
  stacked_rows_ = true;
  int rows = compile(rest);
  stacked_rows_ = false;
  Instruction &unstack = emit(Opcode::UnstackList, e->span);
  unstack.dst = dst;
  unstack.a = rows;
  unstack.b = lists[0];
  unstack.index = mc_.constructor(cons_ctor);
  unstack.nil = mc_.constructor(nil_ctor);
  int jump = here();
  emit(Opcode::Goto, e->span);
  code_[branch].target = here();
  Instruction &empty = emit(Opcode::Move, e->span);
  empty.dst = dst;
  empty.a = lists[0];
  code_[jump].target = here();
  return dst;
}

// A kernel call: one output register per tensor of the call's type, then the tuple (if the result
// is one) rebuilt from them.
int FunctionCompiler::invoke_kernel(int kernel, const std::vector<int> &args, const Expr &call) {
  if (stacked_rows_) kernel = mc_.rows_kernel(kernel);
  // A group that only reshapes: a view, no kernel (its tuple argument's field taken first).
  if (std::optional<int> field = reshaped_field(mc_.exe_.kernels[kernel].primitive);
      field && args.size() == 1) {
    int source = args[0];
    if (*field >= 0) {
      source = fresh();
      Instruction &get = emit(Opcode::GetField, call->span);
      get.dst = source;
      get.a = args[0];
      get.index = *field;
    }
    int dst = fresh();
    Instruction &in = emit(Opcode::ReshapeTensor, call->span);
    in.dst = dst;
    in.a = source;
    in.index = kernel;
    return dst;
  }
  std::vector<Type> leaves;
  flatten_type(stacked_rows_ ? any_rows(call->checked_type) : call->checked_type, leaves);
  std::vector<int> outs;
  for (size_t i = 0; i < leaves.size(); ++i) outs.push_back(fresh());
  Instruction &in = emit(Opcode::InvokeKernel, call->span);
  in.index = kernel;
  in.args = args;
  in.outs = outs;
  in.out_types = std::move(leaves);
  size_t next = 0;
  return build_result(call->checked_type, outs, &next, call->span);
}

int FunctionCompiler::build_result(const Type &type, const std::vector<int> &outs, size_t *next,
                                   const Span &span) {
  const auto *tuple = type.as<TupleType>();
  if (tuple == nullptr) return outs[(*next)++];
  std::vector<int> fields;
  for (const Type &f : tuple->fields) fields.push_back(build_result(f, outs, next, span));
  int dst = fresh();
  Instruction &in = emit(Opcode::AllocADT, span);
  in.dst = dst;
  in.index = kTupleTag;
  in.args = std::move(fields);
  return dst;
}

// A closure value: its free variables' registers captured (a fused kernel bound outside is passed
// to the lifted function's compiler instead, and `self` is bound when it runs).
int FunctionCompiler::compile_closure(const Expr &function, const Expr &self) {
  if (const AttrValue *compiler = function.as<Function>()->attrs.find(attr::kCompiler))
    user_error(msg::kExternal, at(function->span), compiler->s);
  std::vector<Expr> captured;
  std::vector<int> regs;
  std::unordered_map<const ExprNode *, int> kernels;
  Expr used_self;
  for (const Expr &var : free_vars(function)) {
    if (var.same_as(self)) {
      used_self = self;
      continue;
    }
    if (auto k = var_kernel_.find(var.get()); k != var_kernel_.end()) {
      kernels.emplace(k->first, k->second);
      continue;
    }
    captured.push_back(var);
    regs.push_back(compile(var));
  }
  int index = mc_.lift(function, captured, used_self, std::move(kernels));
  int dst = fresh();
  Instruction &in = emit(Opcode::AllocClosure, function->span);
  in.dst = dst;
  in.index = index;
  in.args = std::move(regs);
  return dst;
}

int FunctionCompiler::compile_if(const If *n, const Expr &e) {
  int cond = compile(n->cond);
  int dst = fresh();
  int branch = here();
  emit(Opcode::If, e->span).a = cond;
  int then_result = compile(n->then_branch);
  Instruction &then_move = emit(Opcode::Move, n->then_branch->span);
  then_move.dst = dst;
  then_move.a = then_result;
  int jump = here();
  emit(Opcode::Goto, e->span);
  code_[branch].target = here();
  int else_result = compile(n->else_branch);
  Instruction &else_move = emit(Opcode::Move, n->else_branch->span);
  else_move.dst = dst;
  else_move.a = else_result;
  code_[jump].target = here();
  return dst;
}

// Clauses in order: each tests its pattern (jumping to the next clause on a mismatch), binds its
// variables and computes its body into the result register; after the last, Fatal.
int FunctionCompiler::compile_match(const Match *n, const Expr &e) {
  int data = compile(n->data);
  int dst = fresh();
  std::vector<int> ends;
  for (const Clause &clause : n->clauses) {
    std::vector<int> fails;
    compile_pattern(clause.lhs, data, fails);
    int result = compile(clause.rhs);
    Instruction &move = emit(Opcode::Move, clause.rhs->span);
    move.dst = dst;
    move.a = result;
    ends.push_back(here());
    emit(Opcode::Goto, e->span);
    for (int f : fails) code_[f].target = here();
  }
  Instruction &fatal = emit(Opcode::Fatal, e->span);
  fatal.a = data;
  fatal.message = fmt::format(msg::kNoClause, to_string(e->span));
  for (int j : ends) code_[j].target = here();
  return dst;
}

// Recursion over the pattern's nesting only. `fails` collects the If instructions to patch.
void FunctionCompiler::compile_pattern(const Pattern &p, int reg, std::vector<int> &fails) {
  switch (p->kind) {
    case PatternKind::Wildcard:
      return;
    case PatternKind::Var:
      var_reg_[p->var.get()] = reg;
      return;
    case PatternKind::Constructor: {
      int tag = fresh();
      Instruction &get = emit(Opcode::GetTag, p->span);
      get.dst = tag;
      get.a = reg;
      fails.push_back(here());
      Instruction &test = emit(Opcode::If, p->span);
      test.a = tag;
      test.index = p->constructor.as<Constructor>()->tag;
      break;
    }
    case PatternKind::Tuple:
      break;
  }
  for (size_t i = 0; i < p->patterns.size(); ++i) {
    if (p->patterns[i]->kind == PatternKind::Wildcard) continue;
    int field = fresh();
    Instruction &get = emit(Opcode::GetField, p->patterns[i]->span);
    get.dst = field;
    get.a = reg;
    get.index = static_cast<int>(i);
    compile_pattern(p->patterns[i], field, fails);
  }
}

}  // namespace

// 1. Type the module as given, recognise its recursive functions once and claim their calls
// (ClaimRecursive.h) before fusion. 2. The pipeline. 3. Bytecode.
Claimed claim(const Module &module, const CompileOptions &options) {
  // BYOC's region markers (compiler_begin/end) left in a module that was not partitioned are identities.
  Claimed c{remove_annotations(module), std::nullopt};
  if (options.recursive_functions) {
    infer_types(c.base);
    c.claimed = claim_recursive(c.base, RecursiveForms(c.base));
  }
  return c;
}

Executable compile(const Module &module, const CompileOptions &options) {
  Executable exe;
  const Claimed c = claim(module, options);
  exe.module = run_passes(c.module(), parse_pass_list("fuse,anf"));
  ModuleCompiler(exe, options, c.claimed ? &*c.claimed : nullptr).run();
  return exe;
}

}  // namespace grove::relay::vm
