#include "tools/RelayCommands.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "backends/relay/RelayProgram.h"
#include "backends/relay/VMRunner.h"
#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/byoc/SavedProgram.h"
#include "backends/relay/recursive/RecursiveFunctions.h"
#include "backends/relay/recursive/SequenceFunctions.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "datasets/PTBReader.h"
#include "frontend/dsl/Printer.h"
#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/TreeValues.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/PassList.h"
#include "ilir/IRPrinter.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/Messages.h"
#include "tools/Report.h"

namespace grove::tool {

namespace msg = tool_messages;
using namespace grove::relay;

namespace {

// --out must name neither an input nor an input's constants sidecar.
void check_out_is_not_input(const std::string &out,
                            const std::vector<std::pair<std::string, std::string>> &inputs) {
  for (const auto &[path, what] : inputs)
    if (!path.empty() && same_file(out, path)) user_error(msg::kOutIsInput, out, what);
}

// The parameters of @main by name hint (without `%`).
const Function &main_function(const Module &m, const std::string &file) {
  const Expr *main = m.find_function("main");
  if (!main) user_error(msg::kRelayNoMain, file);
  return *main->as<Function>();
}

// Writes a tensor or a (nested) tuple or List of tensors: OUT.npy for a tensor; else one .npy per
// field or element under the directory OUT ("0.npy", "1.npy", nested "1.0.npy"), or one safetensors
// file when OUT ends in ".safetensors" (tensors named "0", "1", "1.0"). A List's elements are walked
// in a loop, so a long list costs no C stack; recursion is per level of nesting only.
void flatten_result(const Value &v, const std::string &name, std::map<std::string, NDArray> &out) {
  auto field_name = [&](size_t i) {
    return name.empty() ? std::to_string(i) : name + "." + std::to_string(i);
  };
  if (const auto *t = v->as<TensorValue>()) {
    out.emplace(name, t->data);
    return;
  }
  if (const auto *t = v->as<TupleValue>()) {
    for (size_t i = 0; i < t->fields.size(); ++i) flatten_result(t->fields[i], field_name(i), out);
    return;
  }
  size_t i = 0;
  for (const Value *cell = &v;; ++i) {
    const auto *adt = (*cell)->as<ADTValue>();
    const std::string ctor = adt ? adt->constructor.as<Constructor>()->name : "";
    if (ctor == "Nil" && adt->fields.empty()) return;
    if (ctor != "Cons" || adt->fields.size() != 2) break;
    flatten_result(adt->fields[0], field_name(i), out);
    cell = &adt->fields[1];
  }
  user_error(msg::kRelayOutNotTensors, value_to_string(v));
}

void write_result(const Value &result, const std::string &out) {
  if (const auto *t = result->as<TensorValue>()) {
    write_npy_array(out, t->data);
    return;
  }
  std::map<std::string, NDArray> fields;
  flatten_result(result, "", fields);
  if (out.size() > 12 && out.ends_with(".safetensors")) {
    write_safetensors_arrays(out, fields);
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || !std::filesystem::is_directory(out)) user_error(msg::kRelayOutDirectory, out, ec.message());
  for (const auto &[name, array] : fields)
    write_npy_array((std::filesystem::path(out) / (name + ".npy")).string(), array);
}

// The value of `--arg NAME=@PATH`: a closed Relay expression (constructors, tuples, literals) read
// with the module's ADTs, type-checked against the parameter's type, then evaluated.
//   1. Parse and bind it to a variable annotated with the parameter's type: inference unifies the two.
//   2. If that fails, infer the value's own type on a fresh parse: if it has one, the error is the
//      mismatch (expected and found); if not, the value's own type error is the one to report.
//   3. Evaluate the typed expression.
Value read_value_file(const Module &m, const std::string &name, const std::string &path, const Type &type) {
  const std::string text = read_text_file(path, "value file");
  Expr value;
  try {
    value = parse_expr(text, path, &m);
  } catch (const UserError &e) {
    if (std::string_view(e.what()).find("nested too deeply") == std::string_view::npos) throw;
    throw UserError(std::string(e.what()) + "\n" + fmt::format(msg::kRelayValueTooDeep, name));
  }
  if (std::vector<Expr> free = free_vars(value); !free.empty())
    user_error(msg::kRelayValueFreeVar, name, path, free[0].as<Var>()->name_hint);
  Expr var = Var::make(name, type);
  Expr bound = Let::make(var, value, var);
  try {
    infer_type(bound, m);
  } catch (const UserError &) {
    Type found;
    try {
      found = infer_type(parse_expr(text, path, &m), m);
    } catch (const UserError &e) {
      user_error(msg::kRelayValueIllTyped, name, path, name, to_string(type), e.what());
    }
    user_error(msg::kRelayValueType, name, path, name, to_string(type), to_string(found));
  }
  return evaluate(m, bound);
}

// The index of @main's parameter that --trees binds: the one parameter of type List[Tree[int32]]
// or List[Rose[int32]] that no --arg gives.
size_t tree_parameter(const Function &main, const std::string &file, const std::string &params,
                      const std::map<std::string, std::string> &arg_files) {
  std::vector<size_t> found;
  std::string names;
  for (size_t i = 0; i < main.params.size(); ++i) {
    if (!is_tree_list_type(main.params[i].type()) || arg_files.count(main.params[i].as<Var>()->name_hint))
      continue;
    found.push_back(i);
    names += fmt::format("{}%{}: {}", names.empty() ? "" : ", ", main.params[i].as<Var>()->name_hint,
                         to_string(main.params[i].type()));
  }
  if (found.empty()) user_error(msg::kRelayNoTreeParam, file, params);
  if (found.size() > 1) user_error(msg::kRelayManyTreeParams, file, names);
  return found[0];
}

}  // namespace

int relay_check(const RelayCheckCommand &c) {
  Module m = load_typed(c.file);
  PrintOptions options;
  options.show_types = true;
  std::cout << print_module(m, options).text;
  return 0;
}

int relay_opt(const RelayOptCommand &c) {
  std::vector<PassStep> passes = parse_pass_list(c.passes);
  if (!c.out.empty()) check_out_is_not_input(c.out, {{c.file, "Relay"}, {meta_path(c.file), "constants"}});
  PassOptions pass_options;
  if (c.fuse_max_depth < 1) user_error(msg::kRelayFuseDepth, c.fuse_max_depth);
  pass_options.fuse_max_depth = c.fuse_max_depth;
  for (const Codegen &codegen : all_codegens())
    if (codegen.target) pass_options.targets.push_back(codegen.target());
  Module m = run_passes(onnx_frontend::read_program_file(c.file), passes, pass_options);
  if (c.explain) {
    infer_types(m);
    std::cerr << explain_recursive_functions(m);
  }
  PrintOptions options;
  options.show_types = c.types;
  if (c.meta != "sidecar" && c.meta != "inline") user_error(msg::kRelayMetaMode, c.meta);
  options.inline_meta = c.meta == "inline";
  if (c.out.empty()) {
    PrintedModule printed = print_module(m, options);
    if (options.inline_meta) printed.meta.clear();  // in the text
    if (!printed.meta.empty()) user_error(msg::kRelayMetaNeedsOut, printed.meta.size());
    std::cout << printed.text;
  } else {
    if (same_file(meta_path(c.out), c.file) || same_file(meta_path(c.out), meta_path(c.file)))
      user_error(msg::kOutIsInput, meta_path(c.out), "constants");
    write_relay_file(c.out, m, options);
  }
  return 0;
}

int relay_partition(const RelayPartitionCommand &c) {
  if (!c.out.empty()) check_out_is_not_input(c.out, {{c.file, "Relay"}, {meta_path(c.file), "constants"}});
  Module m = partition_for_targets(onnx_frontend::read_program_file(c.file), c.targets);
  if (c.out.empty()) {
    PrintedModule printed = print_module(m);
    if (!printed.meta.empty()) user_error(msg::kRelayMetaNeedsOut, printed.meta.size());
    std::cout << printed.text;
  } else {
    if (same_file(meta_path(c.out), c.file) || same_file(meta_path(c.out), meta_path(c.file)))
      user_error(msg::kOutIsInput, meta_path(c.out), "constants");
    write_relay_file(c.out, m, PrintOptions{});
  }
  return 0;
}

int relay_build(const RelayBuildCommand &c) {
  build_program(load_typed(c.file), c.targets, c.out, {c.file, meta_path(c.file)});
  return 0;
}

int relay_import(const RelayImportCommand &c) {
  check_out_is_not_input(c.out, {{c.file, "ONNX"}});
  if (same_file(meta_path(c.out), c.file)) user_error(msg::kOutIsInput, meta_path(c.out), "ONNX");
  Module m = onnx_frontend::import_onnx_file(c.file);
  write_relay_file(c.out, m, PrintOptions{});
  return 0;
}

int relay_targets() {
  for (const Codegen &c : all_codegens()) std::cout << fmt::format("{:<10} {}\n", c.name, c.description);
  return 0;
}

int relay_equal(const RelayEqualCommand &c) {
  Module a = onnx_frontend::read_program_file(c.a), b = onnx_frontend::read_program_file(c.b);
  EqualResult r = structural_equal(a, b, /*map_free_vars=*/true);
  if (r.equal) {
    std::cout << "equal\n";
    return 0;
  }
  std::cout << fmt::format("not equal: first difference at {}\n  {}: {}\n  {}: {}\n", r.path, c.a, r.lhs, c.b,
                           r.rhs);
  return 1;
}

std::map<std::string, std::string> parse_relay_args(const std::vector<std::string> &args) {
  std::map<std::string, std::string> arg_files;
  for (const std::string &a : args) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size() || a.substr(eq + 1) == "@")
      user_error(msg::kRelayBadArg, a);
    std::string name = a.substr(0, eq), path = a.substr(eq + 1);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    if (!arg_files.emplace(name, path).second) user_error(msg::kRelayArgTwice, name);
  }
  return arg_files;
}

MainArgs bind_main_args(const Module &m, const std::string &file,
                        std::map<std::string, std::string> arg_files, const std::string &trees,
                        const std::string &vocab, const std::function<Value(const Expr &param)> &fill) {
  const Function &main = main_function(m, file);
  std::string params;
  for (const Expr &p : main.params) params += (params.empty() ? "%" : ", %") + p.as<Var>()->name_hint;
  MainArgs bound;
  bound.values.resize(main.params.size());
  if (!trees.empty()) {
    bound.tree_param = int(tree_parameter(main, file, params, arg_files));
    std::optional<Vocab> words;
    if (!vocab.empty()) words = Vocab::load(vocab);
    bound.trees = read_ptb_trees(trees, words ? &*words : nullptr);
  }
  for (size_t i = 0; i < main.params.size(); ++i) {
    if (int(i) == bound.tree_param) continue;
    const Expr &p = main.params[i];
    const std::string &name = p.as<Var>()->name_hint;
    auto it = arg_files.find(name);
    if (it == arg_files.end()) {
      if (fill) bound.values[i] = fill(p);
      if (!bound.values[i]) user_error(msg::kRelayMissingArg, name, file, params);
      continue;
    }
    if (it->second[0] == '@') {
      bound.values[i] = read_value_file(m, name, it->second.substr(1), p.type());
    } else {
      if (!p.type().as<TensorType>()) user_error(msg::kRelayArgNotTensor, name, to_string(p.type()));
      bound.values[i] = tensor_value(read_npy_array(it->second));
    }
    arg_files.erase(it);
  }
  if (!arg_files.empty()) user_error(msg::kRelayUnknownArg, arg_files.begin()->first, file, params);
  return bound;
}

int relay_run(const RelayRunCommand &c) {
  if (c.executor != "interp" && c.executor != "vm") user_error(msg::kRelayExecutor, c.executor);
  if (c.executor == "interp" && c.threads > 0) print_notes({msg::kRelayInterpThreads});
  if (!c.vocab.empty() && c.trees.empty()) user_error(msg::kRelayVocabWithoutTrees, c.vocab);
  std::vector<std::pair<std::string, std::string>> inputs{
      {c.file, "Relay"}, {meta_path(c.file), "constants"}, {c.trees, "--trees"}, {c.vocab, "--vocab"}};
  std::map<std::string, std::string> arg_files = parse_relay_args(c.args);
  for (const auto &[name, path] : arg_files)
    inputs.emplace_back(path[0] == '@' ? path.substr(1) : path, "--arg " + name);
  // A directory is a saved program (grove relay build): already partitioned, its kernels compiled.
  const bool saved = is_program_directory(c.file);
  if (saved) {
    if (!c.targets.empty()) user_error(msg::kRelayTargetOnSaved, c.file);
    inputs.emplace_back((std::filesystem::path(c.file) / "module.relay").string(), "program");
    inputs.emplace_back((std::filesystem::path(c.file) / "module.meta.safetensors").string(), "program");
  }
  if (!c.out.empty()) check_out_is_not_input(c.out, inputs);

  SavedProgram program;
  if (saved)
    program = load_program(c.file);
  else
    program.module = load_typed(c.file);
  Module &m = program.module;
  if (!c.targets.empty()) m = partition_for_targets(m, c.targets);
  MainArgs bound = bind_main_args(m, c.file, std::move(arg_files), c.trees, c.vocab);
  std::vector<Value> &args = bound.values;
  if (bound.tree_param >= 0) {
    const Function &main = main_function(m, c.file);
    args[bound.tree_param] = trees_to_value(m, main.params[bound.tree_param].type(), bound.trees, c.trees);
  }

  Value result = c.executor == "vm"
                     ? make_vm(m, std::move(program.kernels), {.threads = c.threads})->run_main(args)
                     : run_main(m, args);
  if (c.out.empty())
    std::cout << value_to_string(result) << "\n";
  else
    write_result(result, c.out);
  return 0;
}

namespace {

// `--stage ilir`: each global grove's recursive compiler compiles, translated (RecursiveFunctions.h)
// and printed as ILIR; `--stage model`: the model it is translated to, printed as model text
// (frontend/dsl/Printer.h). The translation needs every weight's shape: the parameter's annotated type
// when it is fully known, else `--arg NAME=FILE.npy` for the parameter's name (only its shape is used);
// a fold over a sequence also needs its steps' length: the list's type, or `--arg LIST=STEP.npy`.
std::string dump_recursive(const Module &m, const std::string &file, const std::string &stage,
                           const std::map<std::string, std::string> &arg_files) {
  std::map<std::string, bool> used;
  for (const auto &[name, path] : arg_files) {
    if (path[0] == '@') user_error(msg::kRelayIlirArgValue, name, path.substr(1));
    used[name] = false;
  }
  std::string out;
  std::string names;
  const RecursiveForms forms(m);
  for (const Recognition &r : forms.all()) {
    if (!r.form) continue;
    const RecursiveForm &form = *r.form;
    const Function &fn = *m.find_function(r.name)->as<Function>();
    std::vector<NDArray> weights;
    int64_t step_length = kAnyDim;  // a fold over a sequence: one step's D
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Expr &param = fn.params[i];
      const std::string &name = param.as<Var>()->name_hint;
      const bool list = form.sequence() && static_cast<int>(i) == form.tree_param;
      if (!list && std::find(form.weight_params.begin(), form.weight_params.end(), static_cast<int>(i)) ==
                       form.weight_params.end())
        continue;
      names += (names.empty() ? "%" : ", %") + name;
      auto given = arg_files.find(name);
      if (given != arg_files.end()) used[name] = true;
      if (list) {
        if (given != arg_files.end()) {
          NDArray step = read_npy_array(given->second);
          step_length = step.ndim() > 0 ? step.shape().back() : kAnyDim;
        } else {
          const Type &elem = param->checked_type.as<TypeCall>()->args[0];
          step_length = elem.as<TensorType>()->shape.back();  // a sequence's steps are [D] or [R, D]
        }
        if (step_length == kAnyDim)
          user_error(msg::kRelayIlirStep, to_string(param->span), r.name, name,
                     to_string(param->checked_type), name);
        continue;
      }
      if (given != arg_files.end()) {
        weights.push_back(read_npy_array(given->second));
        continue;
      }
      const auto *type = param->checked_type.as<TensorType>();  // condition (a): a tensor
      bool known = type != nullptr;
      for (size_t d = 0; known && d < type->shape.size(); ++d) known = type->shape[d] != kAnyDim;
      if (!known)
        user_error(msg::kRelayIlirShape, to_string(param->span), r.name, name, to_string(param->checked_type),
                   name);
      weights.push_back(NDArray(type->dtype, type->shape));
    }
    dsl::ModelAst model = form.sequence() ? sequence_function_model(m, r.name, form, weights, step_length)
                                          : recursive_function_model(m, r.name, form, weights);
    if (stage == "model") {
      out +=
          fmt::format("# @{}, compiled by grove's recursive compiler\n{}", r.name, dsl::print_model(model));
      continue;
    }
    ilir::Program program = lower_translated_model(m, r.name, std::move(model));
    out +=
        fmt::format("// @{}, compiled by grove's recursive compiler\n{}", r.name, ilir::to_string(program));
  }
  if (out.empty()) user_error(msg::kRelayIlirNone, file, explain_recursive_functions(m, forms));
  for (const auto &[name, was_used] : used)
    if (!was_used) user_error(msg::kRelayIlirUnknownArg, name, name, names);
  return out;
}

}  // namespace

int relay_dump(const RelayDumpCommand &c) {
  if (c.stage != "vm" && c.stage != "claimed" && c.stage != "ilir" && c.stage != "model")
    user_error(msg::kRelayDumpStage, c.stage);
  std::map<std::string, std::string> arg_files = parse_relay_args(c.args);
  if (c.stage == "vm" || c.stage == "claimed") {
    if (!arg_files.empty()) user_error(msg::kRelayDumpArgStage, arg_files.begin()->first, c.stage);
    if (c.stage == "vm")
      std::cout << dump_vm(load_typed(c.file));
    else  // the module the VM compiler fuses: what grove's recursive compiler claimed, as Relay text
      std::cout << print_module(vm::claim(load_typed(c.file)).module()).text;
    return 0;
  }
  std::cout << dump_recursive(load_typed(c.file), c.file, c.stage, arg_files);
  return 0;
}

int relay_ops() {
  for (const OpDef &op : all_ops()) {
    std::string attrs;
    for (const std::string &a : op.attr_names) attrs += (attrs.empty() ? "" : ", ") + a;
    std::cout << fmt::format("{:<20} {:<21} args {}  attrs: {}\n", op.name, to_string(op.pattern),
                             op.num_args, attrs.empty() ? "-" : attrs);
  }
  return 0;
}

}  // namespace grove::tool
