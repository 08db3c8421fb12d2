#include "backends/relay/recursive/RecursiveFunctions.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "backends/relay/recursive/TreeToDsl.h"
#include "frontend/dsl/Frontend.h"
#include "frontend/dsl/Printer.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// The translation of the recognised `form` for the weights' shapes; a Reject is the user's error.
// The weights' types are checked after the translation, whose messages say more (a GEMM's sizes).
tree_to_dsl::Translation translate_or_throw(const Module &m, const std::string &name,
                                            const RecursiveForm &form, const std::vector<NDArray> &weights) {
  const Function &fn = *m.find_function(name)->as<Function>();
  check_weights_count(name, form, weights);
  std::vector<Shape> shapes;
  for (const NDArray &w : weights) shapes.push_back(w.shape());
  try {
    tree_to_dsl::Translation t = tree_to_dsl::translate(m, name, form, &shapes);
    check_weights_fit(fn, name, form, weights);
    return t;
  } catch (const tree_to_dsl::Reject &r) {
    cannot_compile_recursively(name, {r.why, r.span.defined() ? r.span : fn.span});
  }
}

// The Tree[int32] value as a grove tree in post-order: an explicit stack of (value, children done).
Tree to_grove_tree(const Value &root, int leaf_tag, size_t index) {
  Tree tree;
  tree.child_begin.push_back(0);
  std::vector<std::pair<const ADTValue *, bool>> stack;
  std::vector<int32_t> done;  // node ids of finished subtrees, awaiting their parent
  auto push = [&](const Value &v) {
    const auto *adt = v ? v->as<ADTValue>() : nullptr;
    if (!adt) user_error("tree {} holds {}, not a tree", index + 1, v ? value_to_string(v) : "nothing");
    stack.push_back({adt, false});
  };
  push(root);
  while (!stack.empty()) {
    auto [adt, expanded] = stack.back();
    if (adt->tag == leaf_tag) {
      stack.pop_back();
      const auto *tok = adt->fields.size() == 1 ? adt->fields[0]->as<TensorValue>() : nullptr;
      if (!tok || tok->data.ndim() != 0 || tok->data.dtype() != DType::Int32)
        user_error("tree {} has a leaf that holds no int32 token", index + 1);
      tree.token.push_back(tok->data.data<int32_t>()[0]);
      tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
      done.push_back(tree.size() - 1);
    } else if (!expanded) {
      stack.back().second = true;
      GROVE_CHECK(adt->fields.size() == 2, "a typed node without two children");
      push(adt->fields[1]);
      push(adt->fields[0]);  // the left subtree is finished first
    } else {
      stack.pop_back();
      int32_t right = done.back();
      done.pop_back();
      int32_t left = done.back();
      done.pop_back();
      tree.children.push_back(left);
      tree.children.push_back(right);
      tree.token.push_back(-1);
      tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
      done.push_back(tree.size() - 1);
    }
  }
  tree.root = tree.size() - 1;
  return tree;
}

// The Rose[int32] value as a grove tree in post-order: a node whose children list is empty is a
// leaf holding its token; any other node is internal (token -1, grove's convention), its children in
// list order. An explicit stack of (value, children count once expanded); lists are walked in loops.
Tree rose_to_grove_tree(const Value &root, int cons_tag, size_t index) {
  Tree tree;
  tree.child_begin.push_back(0);
  struct Entry {
    const ADTValue *node;
    int32_t children;  // -1 until expanded
  };
  std::vector<Entry> stack;
  std::vector<int32_t> done;  // node ids of finished subtrees, awaiting their parent
  std::vector<const ADTValue *> kids;
  auto adt_of = [&](const Value &v) {
    const auto *adt = v ? v->as<ADTValue>() : nullptr;
    if (!adt) user_error("tree {} holds {}, not a tree", index + 1, v ? value_to_string(v) : "nothing");
    return adt;
  };
  stack.push_back({adt_of(root), -1});
  while (!stack.empty()) {
    Entry &top = stack.back();
    const ADTValue *node = top.node;
    GROVE_CHECK(node->fields.size() == 2, "a typed rose tree node without two fields");
    if (top.children >= 0) {
      // Its children are the last `children` finished subtrees, in order.
      const auto n = static_cast<size_t>(top.children);
      stack.pop_back();
      tree.children.insert(tree.children.end(), done.end() - n, done.end());
      done.resize(done.size() - n);
      tree.token.push_back(-1);
      tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
      done.push_back(tree.size() - 1);
      continue;
    }
    kids.clear();
    for (const ADTValue *list = adt_of(node->fields[1]); list->tag == cons_tag;) {
      GROVE_CHECK(list->fields.size() == 2, "a Cons without two fields");
      kids.push_back(adt_of(list->fields[0]));
      list = adt_of(list->fields[1]);
    }
    if (kids.empty()) {
      stack.pop_back();
      const auto *tok = node->fields[0] ? node->fields[0]->as<TensorValue>() : nullptr;
      if (!tok || tok->data.ndim() != 0 || tok->data.dtype() != DType::Int32)
        user_error("tree {} has a leaf that holds no int32 token", index + 1);
      tree.token.push_back(tok->data.data<int32_t>()[0]);
      tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
      done.push_back(tree.size() - 1);
      continue;
    }
    top.children = static_cast<int32_t>(kids.size());
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back({*it, -1});  // first child first
  }
  tree.root = tree.size() - 1;
  return tree;
}

}  // namespace

RecursiveForm recursive_form_or_throw(const Module &m, const std::string &name) {
  if (m.find_function(name) == nullptr) user_error("the module has no global function @{}", name);
  Recognition r = recognize_recursive(m, name);
  if (!r.form) cannot_compile_recursively(name, r.rejection);
  return std::move(*r.form);
}

void cannot_compile_recursively(const std::string &name, const RecursiveRejection &why) {
  user_error("{}: @{} cannot be compiled by grove's recursive compiler: {}", to_string(why.span), name,
             why.reason);
}

std::vector<NDArray> weight_arrays(const std::string &name, const std::vector<Value> &weights) {
  std::vector<NDArray> arrays;
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto *t = weights[i] ? weights[i]->as<TensorValue>() : nullptr;
    if (!t) user_error("weight {} of @{} is not a tensor", i + 1, name);
    arrays.push_back(t->data);
  }
  return arrays;
}

Weights grove_weights(const std::vector<std::string> &names, const std::vector<NDArray> &arrays) {
  Weights out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    Tensor w(arrays[i].shape());
    std::copy_n(arrays[i].data<float>(), w.size(), w.data.data());
    out[names[i]] = std::move(w);
  }
  return out;
}

void check_weights_count(const std::string &name, const RecursiveForm &form,
                         const std::vector<NDArray> &weights) {
  if (weights.size() != form.weight_params.size())
    user_error("@{} takes {} weights besides its {}; {} were given", name, form.weight_params.size(),
               form.sequence() ? "list and its state" : "tree", weights.size());
}

void check_weights_fit(const Function &fn, const std::string &name, const RecursiveForm &form,
                       const std::vector<NDArray> &weights) {
  check_weights_count(name, form, weights);
  for (size_t w = 0; w < weights.size(); ++w) {
    const Expr &param = fn.params[form.weight_params[w]];
    const auto *type = param->checked_type.as<TensorType>();
    const NDArray &a = weights[w];
    bool fits = type && a.dtype() == type->dtype && a.ndim() == static_cast<int64_t>(type->shape.size());
    for (size_t d = 0; fits && d < type->shape.size(); ++d)
      fits = type->shape[d] == kAnyDim || type->shape[d] == a.shape()[d];
    if (!fits)
      user_error("@{}'s parameter %{} has type {}, but its weight is Tensor[{}, {}]", name,
                 param.as<Var>()->name_hint, to_string(param->checked_type), shape_to_string(a.shape()),
                 to_string(a.dtype()));
  }
}

std::string explain_recursive_functions(const Module &m, const RecursiveForms &forms) {
  std::string out;
  for (const Recognition &r : forms.all()) {
    if (!r.form) {
      out += fmt::format("@{}: not compiled recursively: {} ({})\n", r.name, r.rejection.reason,
                         to_string(r.rejection.span));
      continue;
    }
    const RecursiveForm &form = *r.form;
    const auto &params = m.find_function(r.name)->as<Function>()->params;
    if (form.sequence())
      out += fmt::format(
          "@{}: compiled by grove's recursive compiler as a sequence model (a fold over its list parameter "
          "%{}, state %{}, {} weights passed through; a call whose initial state is not all zeros runs in "
          "the VM)\n",
          r.name, params[form.tree_param].as<Var>()->name_hint, params[form.state_param].as<Var>()->name_hint,
          form.weight_params.size());
    else
      out += fmt::format(
          "@{}: compiled by grove's recursive compiler (over its tree parameter %{}, {} weights "
          "passed through)\n",
          r.name, params[form.tree_param].as<Var>()->name_hint, form.weight_params.size());
  }
  return out;
}

std::string explain_recursive_functions(const Module &m) {
  return explain_recursive_functions(m, RecursiveForms(m));
}

dsl::ModelAst recursive_function_model(const Module &m, const std::string &name, const RecursiveForm &form,
                                       const std::vector<NDArray> &weights) {
  return std::move(translate_or_throw(m, name, form, weights).model);
}

std::string recursive_function_model_text(const Module &m, const std::string &name,
                                          const std::vector<NDArray> &weights) {
  return dsl::print_model(recursive_function_model(m, name, recursive_form_or_throw(m, name), weights));
}

ilir::Program lower_translated_model(const Module &m, const std::string &name, dsl::ModelAst model) {
  const Span &span = m.find_function(name)->as<Function>()->span;
  // The Locs are places in the Relay program; its text is not at hand, so messages quote no line.
  SourceFile source(span.file ? *span.file : "@" + name, "");
  return dsl::lower_model(std::move(model), source);
}

CompiledRecursiveFunction::CompiledRecursiveFunction(std::string text, ilir::Program program,
                                                     cpu::CompiledModel model,
                                                     std::vector<Shape> state_shapes, bool tuple_result,
                                                     TreeForm form)
    : model_text_(std::move(text)),
      program_(std::move(program)),
      model_(std::make_shared<cpu::CompiledModel>(std::move(model))),
      state_shapes_(std::move(state_shapes)),
      tuple_result_(tuple_result),
      form_(form) {}

CompiledRecursiveFunction CompiledRecursiveFunction::compile(const Module &m, const std::string &name,
                                                             const std::vector<Value> &weights,
                                                             const cpu::CompileOptions &options) {
  return compile(m, name, recursive_form_or_throw(m, name), weights, options);
}

// 1. Translate with the weights' shapes. 2. Parse and check the model text with the model
// language's front end. 3. Compile it with the weights converted to float32 Tensors by model name.
CompiledRecursiveFunction CompiledRecursiveFunction::compile(const Module &m, const std::string &name,
                                                             const RecursiveForm &form,
                                                             const std::vector<Value> &weights,
                                                             const cpu::CompileOptions &options) {
  std::vector<NDArray> arrays = weight_arrays(name, weights);
  tree_to_dsl::Translation t = translate_or_throw(m, name, form, arrays);
  std::string text = dsl::print_model(t.model);
  ilir::Program program = lower_translated_model(m, name, std::move(t.model));
  cpu::CompiledModel model = cpu::CompiledModel::compile(program, grove_weights(t.weights, arrays), options);
  return CompiledRecursiveFunction(std::move(text), std::move(program), std::move(model), t.state_shapes,
                                   t.tuple_result, TreeForm{form.rose(), form.leaf_tag, form.list_cons_tag});
}

// 1. Convert the trees. 2. One run of the compiled model gives every root's states, concatenated.
// 3. Cut each root's row into the result tensors.
std::vector<Value> CompiledRecursiveFunction::run(const std::vector<Value> &trees) const {
  if (trees.empty()) return {};
  std::vector<Tree> grove_trees;
  for (size_t i = 0; i < trees.size(); ++i)
    grove_trees.push_back(form_.rose ? rose_to_grove_tree(trees[i], form_.list_cons_tag, i)
                                     : to_grove_tree(trees[i], form_.leaf_tag, i));
  Tensor roots = model_->run(grove_trees, {});
  const int64_t row = roots.size() / static_cast<int64_t>(trees.size());
  std::vector<Value> out;
  for (size_t i = 0; i < trees.size(); ++i) {
    const float *src = roots.data.data() + i * row;
    std::vector<Value> fields;
    for (const Shape &shape : state_shapes_) {
      NDArray a(DType::Float32, shape);
      std::copy_n(src, a.size(), a.data<float>());
      src += a.size();
      fields.push_back(tensor_value(a));
    }
    out.push_back(tuple_result_ ? tuple_value(std::move(fields)) : fields[0]);
  }
  return out;
}

Value CompiledRecursiveFunction::run_list(const Value &trees, const Expr &cons, const Expr &nil) const {
  const int cons_tag = cons.as<Constructor>()->tag;
  std::vector<Value> items;
  for (Value v = trees;;) {
    const auto *adt = v ? v->as<ADTValue>() : nullptr;
    if (!adt) user_error("the list of trees holds {}, not a List", v ? value_to_string(v) : "nothing");
    if (adt->tag != cons_tag) break;
    GROVE_CHECK(adt->fields.size() == 2, "a Cons without two fields");
    items.push_back(adt->fields[0]);
    v = adt->fields[1];
  }
  return list_of(cons, nil, run(items));
}

}  // namespace grove::relay
