#include "backends/relay/RelayProgram.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "backends/relay/VMRunner.h"
#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/vm/VM.h"
#include "datasets/PTBReader.h"
#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TreeValues.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

namespace msg {
inline constexpr char kNoMain[] = "{}: the program has no @main to run";
inline constexpr char kThreads[] = "{}: threads is {}; it must be at least 0 (0: all cores)";
inline constexpr char kTargetsOnSaved[] =
    "{}: a program grove relay build already partitioned; targets apply to a .relay or .onnx file";
inline constexpr char kArgCount[] = "{}: @main takes {} tensor{} ({}){}; got {}";
inline constexpr char kTreesFor[] = ", and trees for %{}";
inline constexpr char kNoTreeParam[] =
    "{}: trees were given, but @main has no parameter of type List[Tree[int32]] or List[Rose[int32]] "
    "that takes them (its parameters: {})";
inline constexpr char kNeedsTrees[] = "{}: @main's parameter %{}: {} takes trees, and none were given";
inline constexpr char kNotTensor[] =
    "{}: @main's parameter %{} has type {}, which cannot be given here: a program's arguments are "
    "tensors, lists of tensors (as one tensor) and one list of trees (List[Tree[int32]] or "
    "List[Rose[int32]])";
inline constexpr char kListArgument[] =
    "{}: argument %{} of @main: expected {}, given as one tensor of dtype {} and shape {} (the list's "
    "elements along its first axis), found {}";
inline constexpr char kResultNotTensors[] = "{}: the result {} is not a tensor or a tuple or list of tensors";
}  // namespace msg

std::string param_list(const std::vector<RelayParam> &params, int skip) {
  std::string names;
  for (size_t i = 0; i < params.size(); ++i)
    if (int(i) != skip) names += (names.empty() ? "%" : ", %") + params[i].name;
  return names;
}

// The result's tensors in order: a tensor; a tuple's fields; a List's elements (Cons/Nil). The
// walk keeps its own stack, so a long list or deep nesting costs no C stack.
std::vector<NDArray> flatten_result(const Value &result, const std::string &name) {
  std::vector<NDArray> out;
  std::vector<const Value *> stack{&result};
  while (!stack.empty()) {
    const Value &v = *stack.back();
    stack.pop_back();
    if (const auto *t = v->as<TensorValue>()) {
      out.push_back(t->data);
      continue;
    }
    if (const auto *t = v->as<TupleValue>()) {
      for (size_t i = t->fields.size(); i-- > 0;) stack.push_back(&t->fields[i]);
      continue;
    }
    const auto *adt = v->as<ADTValue>();
    const std::string ctor = adt ? adt->constructor.as<Constructor>()->name : "";
    if (ctor == "Nil" && adt->fields.empty()) continue;
    if (ctor == "Cons" && adt->fields.size() == 2) {
      stack.push_back(&adt->fields[1]);
      stack.push_back(&adt->fields[0]);
      continue;
    }
    user_error(msg::kResultNotTensors, name, value_to_string(result));
  }
  return out;
}

// The element type when `type` is List[Tensor[...]] and the module's Cons and Nil can build one.
const TensorType *tensor_list_element(const Module &m, const Type &type) {
  const auto *call = type.as<TypeCall>();
  if (!call || call->args.size() != 1) return nullptr;
  const auto *list = call->func.as<GlobalTypeVar>();
  const Expr *cons = m.find_constructor("Cons"), *nil = m.find_constructor("Nil");
  if (!list || list->name != "List" || !cons || !nil) return nullptr;
  if (cons->as<Constructor>()->inputs.size() != 2 || !nil->as<Constructor>()->inputs.empty()) return nullptr;
  return call->args[0].as<TensorType>();
}

std::string shape_text(const Shape &shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + (shape[i] == kAnyDim ? std::string("?") : std::to_string(shape[i]));
  return "(" + out + (shape.size() == 1 ? ",)" : ")");
}

// The list a stacked tensor stands for: its slices along the first axis, in order. The stacked
// tensor must have the param's dtype, and its every known dimension (RelayParam::shape).
Value tensor_list(const Module &m, const RelayParam &p, const NDArray &stacked, const std::string &name) {
  bool fits = stacked.dtype() == p.dtype && stacked.ndim() == int64_t(p.shape.size());
  for (size_t d = 0; fits && d < p.shape.size(); ++d)
    fits = p.shape[d] == kAnyDim || p.shape[d] == stacked.shape()[d];
  if (!fits)
    user_error(msg::kListArgument, name, p.name, p.type_text, to_string(p.dtype), shape_text(p.shape),
               describe_value(tensor_value(stacked)));
  Shape element(stacked.shape().begin() + 1, stacked.shape().end());
  std::vector<Value> elements;
  for (int64_t i = 0; i < stacked.shape()[0]; ++i) {
    NDArray e(stacked.dtype(), element);
    if (e.nbytes() > 0) std::memcpy(e.raw(), stacked.raw() + i * e.nbytes(), e.nbytes());
    elements.push_back(tensor_value(std::move(e)));
  }
  return list_of(*m.find_constructor("Cons"), *m.find_constructor("Nil"), std::move(elements));
}

}  // namespace

Module load_typed(const std::string &file) {
  Module m = onnx_frontend::read_program_file(file);
  infer_types(m);
  return m;
}

std::shared_ptr<RelayProgram> RelayProgram::open(const std::string &path, RelayProgramOptions options) {
  SavedProgram program;
  if (is_program_directory(path)) {
    if (!options.targets.empty()) user_error(msg::kTargetsOnSaved, path);
    program = load_program(path);
  } else {
    program.module = load_typed(path);
  }
  return std::shared_ptr<RelayProgram>(new RelayProgram(std::move(program), path, std::move(options)));
}

std::shared_ptr<RelayProgram> RelayProgram::parse(std::string_view text, const std::string &name,
                                                  RelayProgramOptions options) {
  SavedProgram program;
  program.module = parse_module(text, name);
  infer_types(program.module);
  return std::shared_ptr<RelayProgram>(new RelayProgram(std::move(program), name, std::move(options)));
}

// 1. Check the options, partition for the targets (as `grove relay run --target`).
// 2. Describe @main's parameters; the one list of trees, if there is exactly one, takes trees.
// 3. Build the VM now (bytecode; kernels compile on first use), so a program that the VM cannot
//    compile fails at open, not at its first run.
RelayProgram::RelayProgram(SavedProgram program, std::string name, RelayProgramOptions options)
    : name_(std::move(name)), module_(std::move(program.module)), options_(std::move(options)) {
  if (options_.threads < 0) user_error(msg::kThreads, name_, options_.threads);
  if (!options_.targets.empty()) module_ = partition_for_targets(module_, options_.targets);
  const Expr *main = module_.find_function("main");
  if (!main) user_error(msg::kNoMain, name_);
  const auto &fn = *main->as<Function>();
  std::vector<int> tree_lists;
  for (const Expr &p : fn.params) {
    RelayParam param;
    param.name = p.as<Var>()->name_hint;
    param.type = p->checked_type.defined() ? p->checked_type : p.as<Var>()->type_annotation;
    param.type_text = param.type.defined() ? to_string(param.type) : "?";
    if (const auto *t = param.type.defined() ? param.type.as<TensorType>() : nullptr) {
      param.kind = RelayParam::Kind::Tensor;
      param.dtype = t->dtype;
      param.shape = t->shape;
    } else if (param.type.defined() && is_tree_list_type(param.type)) {
      tree_lists.push_back(int(params_.size()));
    } else if (const TensorType *e =
                   param.type.defined() ? tensor_list_element(module_, param.type) : nullptr) {
      param.kind = RelayParam::Kind::TensorList;
      param.dtype = e->dtype;
      param.shape = e->shape;
      param.shape.insert(param.shape.begin(), kAnyDim);
    }
    params_.push_back(std::move(param));
  }
  if (tree_lists.size() == 1) {
    tree_param_ = tree_lists[0];
    params_[tree_param_].kind = RelayParam::Kind::Trees;
  }
  if (const auto *f = (*main)->checked_type.defined() ? (*main)->checked_type.as<FuncType>() : nullptr)
    result_type_ = to_string(f->ret_type);
  else if (fn.ret_type.defined())
    result_type_ = to_string(fn.ret_type);
  if (!options_.vocab.empty()) vocab_ = Vocab::load(options_.vocab);
  if (options_.executor == RelayExecutor::VM)
    vm_ = make_vm(module_, std::move(program.kernels), {.threads = options_.threads});
}

RelayProgram::~RelayProgram() = default;

std::vector<Tree> RelayProgram::read_trees(std::string_view text, const std::string &source) const {
  return read_ptb_tree_text(text, vocab_ ? &*vocab_ : nullptr, source);
}

Tree RelayProgram::read_tree(std::string_view line, int64_t number, const std::string &source) const {
  return parse_ptb_tree(line, vocab_ ? &*vocab_ : nullptr, source, number);
}

std::vector<NDArray> RelayProgram::run(const std::vector<NDArray> &tensors,
                                       const std::optional<std::vector<Tree>> &trees) const {
  if (trees && tree_param_ < 0) user_error(msg::kNoTreeParam, name_, param_list(params_, -1));
  if (tensors.size() != num_tensor_params()) {
    size_t n = num_tensor_params();
    std::string with_trees = tree_param_ >= 0 ? fmt::format(msg::kTreesFor, params_[tree_param_].name) : "";
    user_error(msg::kArgCount, name_, n, n == 1 ? "" : "s", param_list(params_, tree_param_), with_trees,
               tensors.size());
  }
  std::vector<Value> args(params_.size());
  for (size_t i = 0, k = 0; i < params_.size(); ++i) {
    const RelayParam &p = params_[i];
    if (int(i) == tree_param_) {
      if (!trees) user_error(msg::kNeedsTrees, name_, p.name, p.type_text);
      args[i] = trees_to_value(module_, p.type, *trees, "trees");
      continue;
    }
    if (p.kind == RelayParam::Kind::TensorList) {
      args[i] = tensor_list(module_, p, tensors[k++], name_);
      continue;
    }
    if (p.kind != RelayParam::Kind::Tensor) user_error(msg::kNotTensor, name_, p.name, p.type_text);
    args[i] = tensor_value(tensors[k++]);
  }
  Value result;
  if (vm_) {
    std::lock_guard<std::mutex> lock(vm_mutex_);
    result = vm_->run_main(args);
  } else {
    result = run_main(module_, args);
  }
  return flatten_result(result, name_);
}

}  // namespace grove::relay
