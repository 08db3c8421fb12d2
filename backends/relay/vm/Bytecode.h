#pragma once
// The Relay VM's bytecode: a compact register machine after TVM's Relay VM
// (tvm:include/tvm/runtime/vm/bytecode.h). A VMFunction has numbered registers ($0, $1, ...), each
// holding one interpreter Value (relay/Value.h) and written once per call, except the result
// register of an `if` or `match`, written by each branch. Control flows forward only (If and Goto
// jump ahead), which the memory plan relies on.
//
// Register layout of a function: its captured variables (closures only), then its parameters, then
// the closure itself when it refers to itself (a let-bound recursive closure), then temporaries.

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/relay/Kernel.h"
#include "frontend/relay/IR.h"

namespace grove::relay::vm {

enum class Opcode {
  Move,            // dst = a
  Ret,             // return a
  Invoke,          // dst = functions[index](args)              (a global)
  InvokeClosure,   // dst = (closure in a)(args)
  InvokeKernel,    // outs = kernels[index](args flattened)      (a fused Primitive function)
  AllocTensor,     // dst = storage slot `index` of dtype/shape  (from the memory plan)
  AllocADT,        // dst = constructors[index](args), or a tuple of args when index == kTupleTag
  AllocClosure,    // dst = closure of functions[index] capturing args
  GetField,        // dst = field `index` of the tuple or ADT in a
  GetTag,          // dst = the ADT in a's constructor tag, an int32 scalar
  If,              // index < 0: unless a (a rank-0 bool) is true, goto target;
                   // index >= 0: unless a (a tag) == index, goto target
  Goto,            // goto target
  LoadConst,       // dst = constants[index]
  Fatal,           // a run-time error: `message`, with the value in a described
  RefCreate,       // dst = ref(a)
  RefRead,         // dst = ref_read(a)
  RefWrite,        // ref_write(a, b); dst = ()
  ReshapeTensor,   // dst = kernels[index] on tensor a, a fused group that only reshapes
                   // (reshaped_field): a's storage viewed with the result's shape, no kernel run
  InvokeExternal,  // dst = external_functions[index](args): a function an external code generator
                   // runs over values of any type (grove's recursive functions: trees, lists),
                   // its arguments in parameter order; where it declines the call, functions[body]
                   // (the function's own bytecode) runs on them instead
  StackList,       // dst = the elements of the non-empty List in a (constructors[index] its Cons)
                   // stacked along axis 0: each element a tensor [1, ...] (or tuples of them), the
                   // result [R, ...] (or tuples) with R the power of two at or above the length N,
                   // rows past N the last's
  UnstackList,     // dst = the List (constructors[index] Cons, constructors[nil] Nil) of the first
                   // N rows of a, N the length of the List in b: tensors [R, ...] (or tuples of
                   // them) → N elements [1, ...]
};
const char *to_string(Opcode op);

// AllocADT's index for a tuple.
inline constexpr int kTupleTag = -1;

struct Instruction {
  explicit Instruction(Opcode o) : op(o) {}
  Opcode op;
  int dst = -1;                  // the result register
  int a = -1, b = -1;            // operand registers
  int index = -1;                // function, kernel, constant, constructor, field, tag or storage slot
  int target = -1;               // If / Goto: the instruction to jump to
  int nil = -1;                  // UnstackList: the Nil constructor's index in constructors[]
  std::vector<int> args;         // argument, field or captured registers
  std::vector<int> outs;         // InvokeKernel: one register per output tensor (a tuple result flattened)
  std::vector<Type> out_types;   // InvokeKernel: the call's static type of each output tensor
  DType dtype = DType::Float32;  // AllocTensor
  Shape shape;                   // AllocTensor
  std::string message;           // Fatal
  Span span;                     // where in the source (errors)
};

struct VMFunction {
  std::string name;                 // "@main", "@map", "closure at file:3:5", "constructor Cons"
  Expr function;                    // the Function node (closure values refer to it)
  std::vector<Expr> captured_vars;  // the closure's free variables, in register order
  Expr self_var;                    // the Var naming a let-bound closure inside itself, or null
  int num_captured = 0;
  int num_params = 0;
  int self_register = -1;  // the register holding the closure itself, or -1
  int num_registers = 0;
  int num_storage = 0;  // storage slots of the memory plan
  std::vector<Instruction> code;
};

// One fused kernel: a Primitive=1 function (or a synthesized one-operator one).
struct KernelInfo {
  Expr primitive;
  std::string ops;  // its operators in order, "nn.dense+add"
};

// A global function an external code generator runs over values (Codegen::prepare_function: grove's
// claimed calls of recursive functions, recursive/ClaimRecursive.h), called by InvokeExternal.
struct ExternalFunctionInfo {
  std::string name;  // the global, without `@`
  int body = -1;     // functions[]: its own bytecode, which runs the calls the code generator declines
  PreparedFunction prepared;
};

struct Executable {
  Module module;  // after the pipeline: claimed (recursive functions), typed, fused, in A-normal form
  std::vector<ExternalFunctionInfo> external_functions;  // InvokeExternal's table
  std::vector<VMFunction> functions;
  std::vector<KernelInfo> kernels;
  std::vector<NDArray> constants;
  std::vector<Expr> constructors;                            // AllocADT's table
  std::unordered_map<const ExprNode *, int> function_index;  // Function node -> functions[]
  std::unordered_map<std::string, int> globals;              // "main" -> functions[]
};

// Whether a Primitive function only reshapes its argument: a chain of reshape, squeeze,
// expand_dims and nn.batch_flatten (at least one) on its one parameter — a tensor (-1), or field i of a tuple
// (i). The VM runs such a group as a view of that tensor's storage (ReshapeTensor). Nullopt otherwise.
std::optional<int> reshaped_field(const Expr &primitive);
// The reshapes of such a function applied to `x` (the ops' own kernels, which view their input).
// Throws OpError when `x` does not fit them.
NDArray apply_reshapes(const Expr &primitive, const NDArray &x);

// "nn.dense+add": the operators a Primitive function calls, in evaluation order.
std::string kernel_op_names(const Expr &primitive);

// The executable as text: each function with its registers and instructions, one per line, then
// the kernels and constants (`grove relay dump FILE --stage vm`).
std::string to_string(const Executable &exe);

}  // namespace grove::relay::vm
