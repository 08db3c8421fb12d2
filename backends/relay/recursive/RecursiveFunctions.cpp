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

// The buffers a batch's conversions share: each tree is built in them and copied out at its size,
// so converting a call's trees allocates three exact vectors per tree, not a vector's every growth.
struct TreeScratch {
  std::vector<int32_t> token, child_begin, children, done;  // done: finished subtrees' ids
  std::vector<std::pair<const ADTValue *, int32_t>> stack;  // (node, children count once expanded)
  std::vector<const ADTValue *> kids;

  void start() { token.clear(), child_begin.assign(1, 0), children.clear(), done.clear(), stack.clear(); }
  // A finished node whose children are the last `n` finished subtrees.
  void finish(int32_t tok, size_t n) {
    children.insert(children.end(), done.end() - static_cast<std::ptrdiff_t>(n), done.end());
    done.resize(done.size() - n);
    token.push_back(tok);
    child_begin.push_back(static_cast<int32_t>(children.size()));
    done.push_back(static_cast<int32_t>(token.size()) - 1);
  }
  Tree tree() const {
    Tree t;
    t.token.assign(token.begin(), token.end());
    t.child_begin.assign(child_begin.begin(), child_begin.end());
    t.children.assign(children.begin(), children.end());
    t.root = t.size() - 1;
    return t;
  }
};

const ADTValue *tree_node(const Value &v, size_t index) {
  const auto *adt = v ? v->as<ADTValue>() : nullptr;
  if (!adt) user_error("tree {} holds {}, not a tree", index + 1, v ? value_to_string(v) : "nothing");
  return adt;
}

int32_t leaf_token(const Value &v, size_t index) {
  const auto *tok = v ? v->as<TensorValue>() : nullptr;
  if (!tok || tok->data.ndim() != 0 || tok->data.dtype() != DType::Int32)
    user_error("tree {} has a leaf that holds no int32 token", index + 1);
  return tok->data.data<int32_t>()[0];
}

// The Tree[int32] value as a grove tree in post-order: an explicit stack of (value, expanded).
Tree to_grove_tree(const Value &root, int leaf_tag, size_t index, TreeScratch &b) {
  b.start();
  b.stack.push_back({tree_node(root, index), -1});
  while (!b.stack.empty()) {
    auto [adt, expanded] = b.stack.back();
    if (adt->tag == leaf_tag) {
      b.stack.pop_back();
      b.finish(adt->fields.size() == 1 ? leaf_token(adt->fields[0], index) : leaf_token(nullptr, index), 0);
    } else if (expanded < 0) {
      b.stack.back().second = 2;
      GROVE_CHECK(adt->fields.size() == 2, "a typed node without two children");
      b.stack.push_back({tree_node(adt->fields[1], index), -1});
      b.stack.push_back({tree_node(adt->fields[0], index), -1});  // the left subtree is finished first
    } else {
      b.stack.pop_back();
      b.finish(-1, 2);
    }
  }
  return b.tree();
}

// The Rose[int32] value as a grove tree in post-order: a node whose children list is empty is a
// leaf holding its token; any other node is internal (token -1, grove's convention), its children in
// list order. An explicit stack of (value, children count once expanded); lists are walked in loops.
Tree rose_to_grove_tree(const Value &root, int cons_tag, size_t index, TreeScratch &b) {
  b.start();
  b.stack.push_back({tree_node(root, index), -1});
  while (!b.stack.empty()) {
    auto [node, children] = b.stack.back();
    GROVE_CHECK(node->fields.size() == 2, "a typed rose tree node without two fields");
    if (children >= 0) {
      // Its children are the last `children` finished subtrees, in order.
      b.stack.pop_back();
      b.finish(-1, static_cast<size_t>(children));
      continue;
    }
    b.kids.clear();
    for (const ADTValue *list = tree_node(node->fields[1], index); list->tag == cons_tag;) {
      GROVE_CHECK(list->fields.size() == 2, "a Cons without two fields");
      b.kids.push_back(tree_node(list->fields[0], index));
      list = tree_node(list->fields[1], index);
    }
    if (b.kids.empty()) {
      b.stack.pop_back();
      b.finish(leaf_token(node->fields[0], index), 0);
      continue;
    }
    b.stack.back().second = static_cast<int32_t>(b.kids.size());
    for (auto it = b.kids.rbegin(); it != b.kids.rend(); ++it)
      b.stack.push_back({*it, -1});  // first child first
  }
  return b.tree();
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
  grove_trees.reserve(trees.size());
  TreeScratch scratch;
  for (size_t i = 0; i < trees.size(); ++i)
    grove_trees.push_back(form_.rose ? rose_to_grove_tree(trees[i], form_.list_cons_tag, i, scratch)
                                     : to_grove_tree(trees[i], form_.leaf_tag, i, scratch));
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
