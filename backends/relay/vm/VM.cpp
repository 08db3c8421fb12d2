#include "backends/relay/vm/VM.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "frontend/relay/Interpreter.h"
#include "frontend/relay/ops/Op.h"
#include "support/Error.h"

namespace grove::relay {

using vm::Instruction;
using vm::Opcode;

namespace {

namespace msg {
inline constexpr char kKernelOutput[] =
    "{}error in the fused kernel {}: output {} has shape {} and dtype {}, but the call's type is {}";
inline constexpr char kKernelOutputCount[] =
    "{}error in the fused kernel {}: it returned {} tensors, expected {}";
inline constexpr char kReshapeError[] = "{}error in {}: {}";
inline constexpr char kNotCompiled[] = "cannot call {}: the VM did not compile this function";
inline constexpr char kStackRow[] =
    "{}cannot stack the list's elements into rows: an element's tensor has shape {}, not [1, ...]";
inline constexpr char kStackMismatch[] =
    "{}cannot stack the list's elements into rows: an element is {} where the first is {}";
inline constexpr char kUnstackRows[] =
    "{}cannot split the batched result into the list's rows: it is {}, expected tensors of {} rows";
}  // namespace msg

std::string at(const Span &span) { return span.defined() ? to_string(span) + ": " : ""; }

// Kernel inputs: tensors, tuples flattened field by field (recursion over the tuple's nesting).
void flatten(const Value &v, std::vector<NDArray> &out) {
  if (const auto *t = v->as<TensorValue>()) {
    out.push_back(t->data);
    return;
  }
  const auto *tuple = v->as<TupleValue>();
  GROVE_CHECK(tuple != nullptr, "a kernel argument is {}", describe_value(v));
  for (const Value &f : tuple->fields) flatten(f, out);
}

// StackList: the elements of a List, each a tensor [1, ...] or tuples
// of them, stacked along axis 0 field by field into `rows` rows (at least as many as elements): the
// rows past the last element repeat it, so that the kernels that read them compute nothing a real
// row does not. `where` names the instruction in errors.
Value stack_rows(const std::vector<Value> &elements, int64_t rows, const std::string &where) {
  const Value &first = elements.front();
  if (const auto *tuple = first->as<TupleValue>()) {
    std::vector<Value> fields;
    for (size_t f = 0; f < tuple->fields.size(); ++f) {
      std::vector<Value> column;
      for (const Value &e : elements) {
        const auto *t = e->as<TupleValue>();
        if (t == nullptr || t->fields.size() != tuple->fields.size())
          user_error(msg::kStackMismatch, where, describe_value(e), describe_value(first));
        column.push_back(t->fields[f]);
      }
      fields.push_back(stack_rows(column, rows, where));
    }
    return tuple_value(std::move(fields));
  }
  const NDArray &row = tensor_of(first);
  if (row.ndim() < 1 || row.shape()[0] != 1) user_error(msg::kStackRow, where, shape_to_string(row.shape()));
  Shape shape = row.shape();
  shape[0] = rows;
  NDArray out(row.dtype(), shape);
  const size_t bytes = row.nbytes();
  for (int64_t i = 0; i < rows; ++i) {
    const Value &e = elements[std::min<size_t>(static_cast<size_t>(i), elements.size() - 1)];
    const auto *t = e->as<TensorValue>();
    if (t == nullptr || t->data.dtype() != row.dtype() || t->data.shape() != row.shape())
      user_error(msg::kStackMismatch, where, describe_value(e), describe_value(first));
    if (bytes > 0) std::memcpy(out.raw() + i * bytes, t->data.raw(), bytes);
  }
  return tensor_value(std::move(out));
}

// UnstackList's rows: row `i` of every tensor of `v` ([N, ...] → [1, ...]), in `v`'s tuple structure.
Value row_of(const Value &v, int64_t i) {
  if (const auto *tuple = v->as<TupleValue>()) {
    std::vector<Value> fields;
    for (const Value &f : tuple->fields) fields.push_back(row_of(f, i));
    return tuple_value(std::move(fields));
  }
  const NDArray &all = tensor_of(v);
  Shape shape = all.shape();
  shape[0] = 1;
  NDArray out(all.dtype(), shape);
  if (out.nbytes() > 0) std::memcpy(out.raw(), all.raw() + i * out.nbytes(), out.nbytes());
  return tensor_value(std::move(out));
}

// The rows every tensor of `v` has (the leading dimension, equal in all of them), or -1.
int64_t rows_of(const Value &v) {
  if (const auto *tuple = v->as<TupleValue>()) {
    int64_t n = -1;
    for (const Value &f : tuple->fields) {
      int64_t m = rows_of(f);
      if (m < 0 || (n >= 0 && m != n)) return -1;
      n = m;
    }
    return n;
  }
  const auto *t = v->as<TensorValue>();
  return t != nullptr && t->data.ndim() >= 1 ? t->data.shape()[0] : -1;
}

}  // namespace

struct VirtualMachine::Frame {
  explicit Frame(int f) : function(f) {}
  int function;
  size_t pc = 0;
  std::vector<Value> regs;
  int return_register = -1;  // in the caller's frame
  std::vector<NDArray> storage;
};

VirtualMachine::VirtualMachine(vm::Executable exe, std::unique_ptr<KernelCompiler> kernels, VMOptions options)
    : exe_(std::move(exe)), compiler_(std::move(kernels)), options_(options) {}

Value VirtualMachine::run_main(const std::vector<Value> &args) {
  check_main_arguments(exe_.module, args);
  return invoke(exe_.globals.at("main"), args, nullptr);
}

void VirtualMachine::enter(std::vector<Frame> &stack, int function, std::vector<Value> args,
                           const Value &closure, int return_register) {
  const vm::VMFunction &fn = exe_.functions[function];
  Frame frame(function);
  frame.regs.resize(fn.num_registers);
  frame.storage.resize(fn.num_storage);
  frame.return_register = return_register;
  size_t next = 0;
  if (closure != nullptr) {
    for (const auto &[var, value] : closure->as<ClosureValue>()->captured) frame.regs[next++] = value;
  }
  GROVE_CHECK(
      next == static_cast<size_t>(fn.num_captured) && args.size() == static_cast<size_t>(fn.num_params),
      "{} takes {} captured and {} arguments, given {} and {}", fn.name, fn.num_captured, fn.num_params, next,
      args.size());
  for (Value &a : args) frame.regs[next++] = std::move(a);
  if (fn.self_register >= 0) frame.regs[fn.self_register] = closure;
  stack.push_back(std::move(frame));
}

std::shared_ptr<Kernel> VirtualMachine::kernel_for(int kernel, const std::vector<NDArray> &inputs) {
  std::vector<std::pair<DType, Shape>> key;
  key.reserve(inputs.size());
  for (const NDArray &a : inputs) key.emplace_back(a.dtype(), a.shape());
  auto [it, added] = cache_.try_emplace({kernel, key});
  if (added) {
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    for (auto &[d, s] : key) {
      dtypes.push_back(d);
      shapes.push_back(s);
    }
    try {
      // Unsupported here: no compiler is left to fall back to, so the reason is the user's error.
      it->second = compiler_->compile(exe_.kernels[kernel].primitive, dtypes, shapes).kernel_or_user_error();
    } catch (...) {
      cache_.erase(it);
      throw;
    }
    ++stats_.kernel_compiles;
  }
  return it->second;
}

// Inputs flattened; each output checked against the call's static type, then copied into its
// planned storage when the memory plan gave it one (the AllocTensor before set the register), or
// kept — copied away when it shares an input's buffer, which a plan may reuse later.
void VirtualMachine::run_kernel(Frame &frame, const Instruction &in) {
  std::vector<NDArray> inputs;
  for (int r : in.args) flatten(frame.regs[r], inputs);
  std::vector<NDArray> outputs = kernel_for(in.index, inputs)->run(inputs);
  ++stats_.kernel_calls;
  const std::string &ops = exe_.kernels[in.index].ops;
  if (outputs.size() != in.outs.size())
    user_error(msg::kKernelOutputCount, at(in.span), ops, outputs.size(), in.outs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    NDArray &out = outputs[j];
    const auto *type = in.out_types[j].as<TensorType>();
    if (type != nullptr && !value_fits(out, *type))
      user_error(msg::kKernelOutput, at(in.span), ops, j, shape_to_string(out.shape()),
                 to_string(out.dtype()), to_string(in.out_types[j]));
    Value &reg = frame.regs[in.outs[j]];
    if (reg != nullptr) {
      NDArray storage = reg->as<TensorValue>()->data;
      // An empty tensor has no buffer: raw() is null, which memmove may not be given even for 0 bytes.
      if (out.nbytes() > 0) std::memmove(storage.raw(), out.raw(), out.nbytes());
      continue;
    }
    for (const NDArray &input : inputs) {
      if (input.nbytes() == 0 || out.nbytes() == 0 || input.raw() != out.raw()) continue;
      NDArray copy(out.dtype(), out.shape());
      std::memcpy(copy.raw(), out.raw(), out.nbytes());
      out = copy;
      break;
    }
    reg = tensor_value(std::move(out));
  }
}

ExternalFunction &VirtualMachine::external_function(int index) {
  if (external_functions_.size() < exe_.external_functions.size())
    external_functions_.resize(exe_.external_functions.size());
  std::unique_ptr<ExternalFunction> &f = external_functions_[index];
  if (f == nullptr)
    f = exe_.external_functions[index].prepared.make(ExternalFunctionOptions{options_.threads});
  return *f;
}

// The dispatch loop: one Frame per active call on `stack`; Ret pops and writes the caller's register.
Value VirtualMachine::invoke(int function, std::vector<Value> args, const Value &closure) {
  std::vector<Frame> stack;
  enter(stack, function, std::move(args), closure, -1);
  while (true) {
    Frame &frame = stack.back();
    const vm::VMFunction &fn = exe_.functions[frame.function];
    GROVE_CHECK(frame.pc < fn.code.size(), "{} ran past its last instruction", fn.name);
    const Instruction &in = fn.code[frame.pc++];
    std::vector<Value> &regs = frame.regs;
    switch (in.op) {
      case Opcode::Move:
        regs[in.dst] = regs[in.a];
        break;
      case Opcode::Ret: {
        Value result = std::move(regs[in.a]);
        int dst = frame.return_register;
        stack.pop_back();
        if (stack.empty()) return result;
        stack.back().regs[dst] = std::move(result);
        break;
      }
      case Opcode::Invoke: {
        std::vector<Value> call_args;
        for (int r : in.args) call_args.push_back(regs[r]);
        enter(stack, in.index, std::move(call_args), nullptr, in.dst);  // `frame` is stale from here
        break;
      }
      case Opcode::InvokeClosure: {
        Value closure = regs[in.a];
        const auto *c = closure->as<ClosureValue>();
        GROVE_CHECK(c != nullptr, "{}calling {}", at(in.span), describe_value(closure));
        auto found = exe_.function_index.find(c->function.get());
        if (found == exe_.function_index.end()) user_error(msg::kNotCompiled, value_to_string(closure));
        std::vector<Value> call_args;
        for (int r : in.args) call_args.push_back(regs[r]);
        enter(stack, found->second, std::move(call_args), closure, in.dst);
        break;
      }
      case Opcode::InvokeKernel:
        run_kernel(frame, in);
        break;
      case Opcode::AllocTensor: {
        NDArray &storage = frame.storage[in.index];
        if (storage.defined() && storage.dtype() == in.dtype && storage.shape() == in.shape) {
          ++stats_.storage_reuses;
        } else {
          storage = NDArray(in.dtype, in.shape);
          ++stats_.storage_allocations;
        }
        regs[in.dst] = tensor_value(storage);
        break;
      }
      case Opcode::AllocADT: {
        std::vector<Value> fields;
        for (int r : in.args) fields.push_back(regs[r]);
        if (in.index == vm::kTupleTag)
          regs[in.dst] = tuple_value(std::move(fields));
        else
          regs[in.dst] = adt_value(exe_.constructors[in.index], std::move(fields));
        break;
      }
      case Opcode::AllocClosure: {
        const vm::VMFunction &callee = exe_.functions[in.index];
        std::vector<std::pair<Expr, Value>> captured;
        for (size_t i = 0; i < in.args.size(); ++i)
          captured.emplace_back(callee.captured_vars[i], regs[in.args[i]]);
        regs[in.dst] = closure_value(callee.function, std::move(captured), callee.self_var);
        break;
      }
      case Opcode::GetField: {
        const Value &v = regs[in.a];
        if (const auto *t = v->as<TupleValue>()) {
          GROVE_CHECK(in.index < static_cast<int>(t->fields.size()), "field {} of {}", in.index,
                      describe_value(v));
          regs[in.dst] = t->fields[in.index];
        } else {
          const auto *adt = v->as<ADTValue>();
          GROVE_CHECK(adt != nullptr && in.index < static_cast<int>(adt->fields.size()), "field {} of {}",
                      in.index, describe_value(v));
          regs[in.dst] = adt->fields[in.index];
        }
        break;
      }
      case Opcode::GetTag: {
        const auto *adt = regs[in.a]->as<ADTValue>();
        GROVE_CHECK(adt != nullptr, "{}GetTag of {}", at(in.span), describe_value(regs[in.a]));
        regs[in.dst] = tensor_value(NDArray::scalar(DType::Int32, adt->tag));
        break;
      }
      case Opcode::If: {
        const auto *t = regs[in.a]->as<TensorValue>();
        bool holds;
        if (in.index < 0) {
          // Type inference gives every condition the type bool.
          GROVE_CHECK(t != nullptr && t->data.ndim() == 0 && t->data.dtype() == DType::Bool,
                      "{}the condition of an if is {}", at(in.span), describe_value(regs[in.a]));
          holds = t->data.element_as_int(0) != 0;
        } else {
          holds = t->data.element_as_int(0) == in.index;
        }
        if (!holds) frame.pc = in.target;
        break;
      }
      case Opcode::Goto:
        frame.pc = in.target;
        break;
      case Opcode::LoadConst:
        regs[in.dst] = tensor_value(exe_.constants[in.index]);
        break;
      case Opcode::Fatal:
        user_error("{} {}", in.message, value_to_string(regs[in.a]));
      case Opcode::RefCreate:
        regs[in.dst] = ref_value(regs[in.a]);
        break;
      case Opcode::RefRead: {
        const auto *ref = regs[in.a]->as<RefValue>();
        GROVE_CHECK(ref != nullptr, "{}ref_read of {}", at(in.span), describe_value(regs[in.a]));
        regs[in.dst] = ref->read();
        break;
      }
      case Opcode::RefWrite: {
        const auto *ref = regs[in.a]->as<RefValue>();
        GROVE_CHECK(ref != nullptr, "{}ref_write to {}", at(in.span), describe_value(regs[in.a]));
        ref->write(regs[in.b]);
        regs[in.dst] = tuple_value({});
        break;
      }
      case Opcode::ReshapeTensor: {
        const auto *t = regs[in.a]->as<TensorValue>();
        GROVE_CHECK(t != nullptr, "{}ReshapeTensor of {}", at(in.span), describe_value(regs[in.a]));
        try {
          regs[in.dst] = tensor_value(vm::apply_reshapes(exe_.kernels[in.index].primitive, t->data));
        } catch (const OpError &err) {
          user_error(msg::kReshapeError, at(in.span), exe_.kernels[in.index].ops, err.what());
        }
        ++stats_.reshapes;
        break;
      }
      case Opcode::StackList: {
        const std::optional<std::vector<Value>> list =
            list_elements(regs[in.a], exe_.constructors[in.index].as<Constructor>()->tag);
        GROVE_CHECK(list && !list->empty(), "StackList of {}", describe_value(regs[in.a]));
        const std::vector<Value> &elements = *list;
        // Rows for the next power of two of the elements: the kernels after it compile once per
        // power of two, not once per list length.
        int64_t rows = 1;
        while (rows < static_cast<int64_t>(elements.size())) rows *= 2;
        regs[in.dst] = stack_rows(elements, rows, at(in.span));
        break;
      }
      case Opcode::UnstackList: {
        // As many elements as the List in b, the first rows of a.
        const Expr &cons = exe_.constructors[in.index];
        const std::optional<std::vector<Value>> list = list_elements(regs[in.b], cons.as<Constructor>()->tag);
        GROVE_CHECK(list.has_value(), "UnstackList as long as {}", describe_value(regs[in.b]));
        const int64_t n = static_cast<int64_t>(list->size());
        const Value &all = regs[in.a];
        if (rows_of(all) < n)
          user_error(msg::kUnstackRows, at(in.span), describe_value(all), fmt::format("at least {}", n));
        std::vector<Value> rows;
        for (int64_t i = 0; i < n; ++i) rows.push_back(row_of(all, i));
        regs[in.dst] = list_of(cons, exe_.constructors[in.nil], std::move(rows));
        break;
      }
      case Opcode::InvokeExternal: {
        std::vector<Value> call_args;
        for (int r : in.args) call_args.push_back(regs[r]);
        ExternalFunction &f = external_function(in.index);
        const size_t compiles = f.compiles(), runs = f.runs();
        std::optional<Value> result = f.run(call_args);
        stats_.recursive_compiles += f.compiles() - compiles;
        stats_.recursive_calls += f.runs() - runs;
        if (result) {
          regs[in.dst] = std::move(*result);
          break;
        }
        ++stats_.recursive_fallbacks;
        enter(stack, exe_.external_functions[in.index].body, std::move(call_args), nullptr, in.dst);
        break;
      }
    }
  }
}

}  // namespace grove::relay
