#include "backends/relay/vm/Bytecode.h"

#include <fmt/format.h>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"

namespace grove::relay::vm {

namespace {

std::string reg(int r) { return fmt::format("${}", r); }

std::string regs(const std::vector<int> &rs) {
  std::string s = "(";
  for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : "") + reg(rs[i]);
  return s + ")";
}

std::string instruction_text(const Executable &exe, const Instruction &in) {
  switch (in.op) {
    case Opcode::Move:
      return fmt::format("Move {} <- {}", reg(in.dst), reg(in.a));
    case Opcode::Ret:
      return fmt::format("Ret {}", reg(in.a));
    case Opcode::Invoke:
      return fmt::format("Invoke {} <- {}{}", reg(in.dst), exe.functions[in.index].name, regs(in.args));
    case Opcode::InvokeClosure:
      return fmt::format("InvokeClosure {} <- {}{}", reg(in.dst), reg(in.a), regs(in.args));
    case Opcode::InvokeKernel:
      return fmt::format("InvokeKernel {} <- k{}{}", regs(in.outs), in.index, regs(in.args));
    case Opcode::AllocTensor:
      return fmt::format("AllocTensor {} <- storage {}, {}, {}", reg(in.dst), in.index,
                         shape_to_string(in.shape), to_string(in.dtype));
    case Opcode::AllocADT:
      if (in.index == kTupleTag) return fmt::format("AllocADT {} <- tuple{}", reg(in.dst), regs(in.args));
      return fmt::format("AllocADT {} <- {}{}", reg(in.dst),
                         exe.constructors[in.index].as<Constructor>()->name,
                         in.args.empty() ? "" : regs(in.args));
    case Opcode::AllocClosure:
      return fmt::format("AllocClosure {} <- {}{}", reg(in.dst), exe.functions[in.index].name, regs(in.args));
    case Opcode::GetField:
      return fmt::format("GetField {} <- {}.{}", reg(in.dst), reg(in.a), in.index);
    case Opcode::GetTag:
      return fmt::format("GetTag {} <- {}", reg(in.dst), reg(in.a));
    case Opcode::If:
      if (in.index < 0) return fmt::format("If {} else goto {}", reg(in.a), in.target);
      return fmt::format("If {} == {} else goto {}", reg(in.a), in.index, in.target);
    case Opcode::Goto:
      return fmt::format("Goto {}", in.target);
    case Opcode::LoadConst:
      return fmt::format("LoadConst {} <- c{}", reg(in.dst), in.index);
    case Opcode::Fatal:
      return fmt::format("Fatal {} \"{}\"", reg(in.a), in.message);
    case Opcode::RefCreate:
      return fmt::format("RefCreate {} <- {}", reg(in.dst), reg(in.a));
    case Opcode::RefRead:
      return fmt::format("RefRead {} <- {}", reg(in.dst), reg(in.a));
    case Opcode::RefWrite:
      return fmt::format("RefWrite {} <- {} := {}", reg(in.dst), reg(in.a), reg(in.b));
    case Opcode::ReshapeTensor:
      return fmt::format("ReshapeTensor {} <- k{}({}), a view", reg(in.dst), in.index, reg(in.a));
    case Opcode::InvokeExternal:
      return fmt::format("InvokeExternal {} <- ext{}{}", reg(in.dst), in.index, regs(in.args));
    case Opcode::StackList:
      return fmt::format("StackList {} <- {}, rows along axis 0", reg(in.dst), reg(in.a));
    case Opcode::UnstackList:
      return fmt::format("UnstackList {} <- {}, a {} of its rows, as long as {}", reg(in.dst), reg(in.a),
                         exe.constructors[in.index].as<Constructor>()->name, reg(in.b));
  }
  return "";
}

// A call of a reshape-class op (reshape, squeeze, expand_dims, nn.batch_flatten): its result views
// its argument.
bool is_reshape(const Call &call) {
  const auto *op = call.op.as<Op>();
  return op != nullptr && call.args.size() == 1 &&
         (op->name == "reshape" || op->name == "squeeze" || op->name == "expand_dims" ||
          op->name == "nn.batch_flatten");
}

}  // namespace

std::optional<int> reshaped_field(const Expr &primitive) {
  const auto *fn = primitive.as<Function>();
  if (fn->params.size() != 1) return std::nullopt;
  const Expr &param = fn->params[0];
  Expr cur = fn->body;
  int reshapes = 0;
  for (const Call *call; (call = cur.as<Call>()) != nullptr && is_reshape(*call); ++reshapes)
    cur = call->args[0];
  if (reshapes == 0) return std::nullopt;
  if (cur.same_as(param) && param->checked_type.as<TensorType>() != nullptr) return -1;
  const auto *get = cur.as<TupleGetItem>();
  if (get != nullptr && get->tuple.same_as(param) && param->checked_type.as<TupleType>() != nullptr &&
      get->checked_type.as<TensorType>() != nullptr)
    return get->index;
  return std::nullopt;
}

NDArray apply_reshapes(const Expr &primitive, const NDArray &x) {
  std::vector<const Call *> chain;
  for (const Call *call = primitive.as<Function>()->body.as<Call>(); call != nullptr && is_reshape(*call);
       call = call->args[0].as<Call>())
    chain.push_back(call);
  NDArray out = x;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    out = find_op((*it)->op.as<Op>()->name)->kernel({out}, (*it)->attrs)[0];
  return out;
}

std::string kernel_op_names(const Expr &primitive) {
  std::string names;
  post_order_visit(primitive.as<Function>()->body, [&](const Expr &e) {
    const auto *call = e.as<Call>();
    if (call == nullptr || call->op.as<Op>() == nullptr) return;
    names += (names.empty() ? "" : "+") + call->op.as<Op>()->name;
  });
  return names.empty() ? "(no operator)" : names;
}

const char *to_string(Opcode op) {
  switch (op) {
#define GROVE_OPCODE_NAME(N) \
  case Opcode::N:            \
    return #N;
    GROVE_OPCODE_NAME(Move)
    GROVE_OPCODE_NAME(Ret)
    GROVE_OPCODE_NAME(Invoke)
    GROVE_OPCODE_NAME(InvokeClosure)
    GROVE_OPCODE_NAME(InvokeKernel)
    GROVE_OPCODE_NAME(AllocTensor)
    GROVE_OPCODE_NAME(AllocADT)
    GROVE_OPCODE_NAME(AllocClosure)
    GROVE_OPCODE_NAME(GetField)
    GROVE_OPCODE_NAME(GetTag)
    GROVE_OPCODE_NAME(If)
    GROVE_OPCODE_NAME(Goto)
    GROVE_OPCODE_NAME(LoadConst)
    GROVE_OPCODE_NAME(Fatal)
    GROVE_OPCODE_NAME(RefCreate)
    GROVE_OPCODE_NAME(RefRead)
    GROVE_OPCODE_NAME(RefWrite)
    GROVE_OPCODE_NAME(ReshapeTensor)
    GROVE_OPCODE_NAME(InvokeExternal)
    GROVE_OPCODE_NAME(StackList)
    GROVE_OPCODE_NAME(UnstackList)
#undef GROVE_OPCODE_NAME
  }
  return "?";
}

std::string to_string(const Executable &exe) {
  std::string out;
  for (const VMFunction &fn : exe.functions) {
    out += fmt::format("{}: {} captured, {} params, {} registers, {} storage{}\n", fn.name, fn.num_captured,
                       fn.num_params, fn.num_registers, fn.num_storage,
                       fn.self_register >= 0 ? fmt::format(", self {}", reg(fn.self_register)) : "");
    for (size_t i = 0; i < fn.code.size(); ++i)
      out += fmt::format("  {}: {}\n", i, instruction_text(exe, fn.code[i]));
  }
  for (size_t i = 0; i < exe.kernels.size(); ++i) out += fmt::format("k{}: {}\n", i, exe.kernels[i].ops);
  for (size_t i = 0; i < exe.external_functions.size(); ++i)
    out += fmt::format("ext{}: @{}: {}\n", i, exe.external_functions[i].name,
                       exe.external_functions[i].prepared.description);
  for (size_t i = 0; i < exe.constants.size(); ++i)
    out += fmt::format("c{}: {} {}\n", i, shape_to_string(exe.constants[i].shape()),
                       to_string(exe.constants[i].dtype()));
  return out;
}

}  // namespace grove::relay::vm
