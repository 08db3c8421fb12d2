#include "frontend/relay/TreeValues.h"

#include <fmt/format.h>

#include "support/Error.h"

namespace grove::relay {

namespace {

namespace msg {
inline constexpr char kNotTreeList[] =
    "trees bind to a parameter of type List[Tree[int32]] or List[Rose[int32]]; this one has type {}";
inline constexpr char kNoType[] = "the module defines no type {0}; trees need `{1}`";
inline constexpr char kWrongConstructors[] =
    "the module's type {0} is `{1}`; trees need `{2}` (these constructor names and field types)";
inline constexpr char kNotBinary[] =
    "{}:{}: node {} of this tree (numbered in post-order) has {} children; a Tree[int32] value is binary: "
    "Leaf(token) or Node(left, right) (use a Rose[int32] parameter for trees of any arity)";
inline constexpr char kNoToken[] =
    "{}:{}: node {} of this tree (numbered in post-order) is a leaf without a token";
}  // namespace msg

constexpr char kListDefinition[] = "type List[A] { Cons(A, List[A]), Nil }";
constexpr char kTreeDefinition[] = "type Tree[A] { Leaf(A), Node(Tree[A], Tree[A]) }";
constexpr char kRoseDefinition[] = "type Rose[A] { Rose(A, List[Rose[A]]) }";

// The ADT's name when `t` is that ADT applied to one type argument, else "".
std::string adt_name(const Type &t, Type *arg = nullptr) {
  const auto *call = t.as<TypeCall>();
  if (!call || call->args.size() != 1) return "";
  const auto *g = call->func.as<GlobalTypeVar>();
  if (!g) return "";
  if (arg) *arg = call->args[0];
  return g->name;
}

bool is_int32_scalar(const Type &t) {
  const auto *tensor = t.as<TensorType>();
  return tensor && tensor->dtype == DType::Int32 && tensor->shape.empty();
}

// Whether `t` is the ADT's type variable `a` (same node, or a TypeVar of the same name).
bool is_var(const Type &t, const Type &a) {
  if (t.same_as(a)) return true;
  const auto *v = t.as<TypeVar>();
  return v && a.as<TypeVar>() && v->name == a.as<TypeVar>()->name;
}

// Whether `t` is `name[inner]`, `inner` tested by `is_inner`.
template <typename F>
bool is_applied(const Type &t, const std::string &name, F is_inner) {
  Type arg;
  return adt_name(t, &arg) == name && is_inner(arg);
}

// The ADT as written: `type Tree[A] { Leaf(A), Node(Tree[A]) }`.
std::string describe(const std::string &name, const TypeData &data) {
  std::string params, constructors;
  for (const Type &v : data.type_vars) params += (params.empty() ? "" : ", ") + to_string(v);
  for (const Expr &c : data.constructors) {
    const auto *ctor = c.as<Constructor>();
    std::string fields;
    for (const Type &f : ctor->inputs) fields += (fields.empty() ? "" : ", ") + to_string(f);
    constructors +=
        (constructors.empty() ? "" : ", ") + ctor->name + (fields.empty() ? "" : "(" + fields + ")");
  }
  return fmt::format("type {}{} {{ {} }}", name, params.empty() ? "" : "[" + params + "]", constructors);
}

// The ADT `name` checked by `fits(constructor, type variable)` for each expected constructor name;
// returns its constructors in the order of `names`.
template <typename F>
std::vector<Expr> checked_adt(const Module &m, const std::string &name, const std::vector<std::string> &names,
                              const char *definition, F fits) {
  const TypeData *data = m.find_type(name);
  if (!data) user_error(msg::kNoType, name, definition);
  std::vector<Expr> found;
  bool ok = data->type_vars.size() == 1 && data->constructors.size() == names.size();
  for (size_t i = 0; ok && i < names.size(); ++i) {
    const Expr *match = nullptr;
    for (const Expr &c : data->constructors)
      if (c.as<Constructor>()->name == names[i]) match = &c;
    ok = match && fits(*match->as<Constructor>(), data->type_vars[0]);
    if (ok) found.push_back(*match);
  }
  if (!ok) user_error(msg::kWrongConstructors, name, describe(name, *data), definition);
  return found;
}

Value token_value(int32_t token) {
  NDArray a(DType::Int32, {});
  a.data<int32_t>()[0] = token;
  return tensor_value(std::move(a));
}

}  // namespace

bool is_tree_list_type(const Type &type) {
  Type tree;
  if (adt_name(type, &tree) != "List") return false;
  std::string name = adt_name(tree);
  return (name == "Tree" || name == "Rose") && is_int32_scalar(tree.as<TypeCall>()->args[0]);
}

// 1. Check the parameter type and the module's ADTs (constructor names and field types).
// 2. Per tree, walk nodes in post-order (children before parents, as the readers number them; any
//    other numbering is checked): each node's value is built from its children's, already built.
// 3. The list of roots, from the back.
Value trees_to_value(const Module &module, const Type &param_type, const std::vector<Tree> &trees,
                     const std::string &source) {
  if (!is_tree_list_type(param_type)) user_error(msg::kNotTreeList, to_string(param_type));
  std::vector<Expr> list =
      checked_adt(module, "List", {"Cons", "Nil"}, kListDefinition, [](const Constructor &c, const Type &a) {
        if (c.name == "Nil") return c.inputs.empty();
        return c.inputs.size() == 2 && is_var(c.inputs[0], a) &&
               is_applied(c.inputs[1], "List", [&](const Type &t) { return is_var(t, a); });
      });
  const bool binary = adt_name(param_type.as<TypeCall>()->args[0]) == "Tree";
  std::vector<Expr> tree_ctors;
  if (binary) {
    tree_ctors = checked_adt(module, "Tree", {"Leaf", "Node"}, kTreeDefinition,
                             [](const Constructor &c, const Type &a) {
                               auto is_tree = [&](const Type &t) {
                                 return is_applied(t, "Tree", [&](const Type &u) { return is_var(u, a); });
                               };
                               if (c.name == "Leaf") return c.inputs.size() == 1 && is_var(c.inputs[0], a);
                               return c.inputs.size() == 2 && is_tree(c.inputs[0]) && is_tree(c.inputs[1]);
                             });
  } else {
    tree_ctors =
        checked_adt(module, "Rose", {"Rose"}, kRoseDefinition, [](const Constructor &c, const Type &a) {
          auto is_rose = [&](const Type &t) {
            return is_applied(t, "Rose", [&](const Type &u) { return is_var(u, a); });
          };
          return c.inputs.size() == 2 && is_var(c.inputs[0], a) && is_applied(c.inputs[1], "List", is_rose);
        });
  }

  std::vector<Value> roots;
  roots.reserve(trees.size());
  for (size_t i = 0; i < trees.size(); ++i) {
    const Tree &tree = trees[i];
    std::vector<Value> node_values(tree.size());
    for (int32_t n = 0; n < tree.size(); ++n) {
      int32_t arity = tree.num_children(n);
      for (int32_t k = 0; k < arity; ++k) {
        int32_t child = tree.child(n, k);
        GROVE_CHECK(child >= 0 && child < n && node_values[child], "tree {} is not in post-order at node {}",
                    i, n);
      }
      if (arity == 0 && tree.token[n] < 0) user_error(msg::kNoToken, source, i + 1, n);
      if (binary) {
        if (arity == 0) {
          node_values[n] = adt_value(tree_ctors[0], {token_value(tree.token[n])});
          continue;
        }
        if (arity != 2) user_error(msg::kNotBinary, source, i + 1, n, arity);
        // A child's value is moved into its parent's: each node has one parent.
        node_values[n] = adt_value(tree_ctors[1], {std::move(node_values[tree.child(n, 0)]),
                                                   std::move(node_values[tree.child(n, 1)])});
        continue;
      }
      std::vector<Value> children;
      children.reserve(arity);
      for (int32_t k = 0; k < arity; ++k) children.push_back(std::move(node_values[tree.child(n, k)]));
      node_values[n] = adt_value(tree_ctors[0], {token_value(arity == 0 ? tree.token[n] : -1),
                                                 list_of(list[0], list[1], std::move(children))});
    }
    GROVE_CHECK(tree.root >= 0 && tree.root < tree.size() && node_values[tree.root],
                "tree {} has no root value", i);
    roots.push_back(std::move(node_values[tree.root]));
  }
  return list_of(list[0], list[1], std::move(roots));
}

}  // namespace grove::relay
