#pragma once
// Internal to backends/relay (RecursiveFunctions, and the VM compiler, which batches `@map` of a
// recursive function): the tree and list ADTs and the standard list functions of a Relay
// module, recognised by their structure (constructor fields, clause shapes), never by their names.

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "frontend/relay/IR.h"

namespace grove::relay::tree_to_dsl {

// The ADT's TypeData when `t` is T[A] for a binary tree ADT T: one type parameter, a constructor of
// fields (A) and one of fields (T[A], T[A]). Null otherwise.
const TypeData *binary_tree_adt(const Module &m, const Type &t);

// A list ADT L[B]: one type parameter, a constructor of fields (B, L[B]) and one of none. `t` is
// L[E] for some E; `list` is null when it is not.
struct ListAdt {
  const TypeData *list = nullptr;
  int cons_tag = -1, nil_tag = -1;
};
ListAdt list_adt(const Module &m, const Type &t);

// A rose tree ADT T[A]: one type parameter, one constructor of fields (A, L[T[A]]) for a list ADT L
// (one type parameter B, constructors of fields (B, L[B]) and none).
struct RoseAdt {
  const TypeData *rose = nullptr;   // null when `t` is not one
  int cons_tag = -1, nil_tag = -1;  // L's constructors
};
RoseAdt rose_tree_adt(const Module &m, const Type &t);

// Whether global `name` is the standard map over a list: `@name(%f, %xs)` matching %xs with
// `Cons(%x, %rest) => Cons(%f(%x), @name(%f, %rest))` and `Nil => Nil`, in either order. When it
// is, sets `cons` and `nil` (if given) to the two constructors' names.
bool is_list_map(const Module &m, const std::string &name, std::string *cons = nullptr,
                 std::string *nil = nullptr);

// is_list_map over one module, each global's answer computed once (a null module has no maps).
class ListMaps {
 public:
  explicit ListMaps(const Module *m) : m_(m) {}
  bool find(const std::string &name, std::string *cons, std::string *nil);

 private:
  const Module *m_;
  std::unordered_map<std::string, std::optional<std::pair<std::string, std::string>>> known_;
};

// Whether global `name` is the standard left fold over a list: `@name(%f, %acc, %xs)` matching %xs
// with `Cons(%x, %rest) => @name(%f, %f(%acc, %x), %rest)` and `Nil => %acc`, in either order.
bool is_list_foldl(const Module &m, const std::string &name);

}  // namespace grove::relay::tree_to_dsl
