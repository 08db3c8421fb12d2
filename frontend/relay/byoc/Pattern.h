#pragma once
// The dataflow pattern language of bring-your-own-codegen (TVM's DFPattern): a code generator
// describes the operator groups it compiles as one unit ("dense, then bias_add, then optionally
// relu") and merge_composite outlines each match as a `Composite` function.
//
// A DFPattern (named as TVM names it; `Pattern` is a match clause's pattern in IR.h) is an immutable tree of
// DFPatternNodes, built with the functions below:
//
//   DFPattern dense = op("nn.dense", {wildcard(), is_constant()});
//   DFPattern bias = op("nn.bias_add", {dense, wildcard()});
//   DFPattern p = optional(bias, [](DFPattern x) { return op("nn.relu", {x}); });  // bias | relu(bias)
//
// Semantics of match(pattern, expr), which compares the pattern with an expression of a dataflow
// graph (graph normal form: shared subexpressions are the same node; lets are not looked through):
//   * wildcard()            matches any expression.
//   * is_op(name)           matches the operator `name` itself (the callee of a call).
//   * call(f, args)         matches a call whose callee matches f and whose arguments match args,
//                           one by one (the same number of them); op(name, args) = call(is_op(name), args).
//   * is_constant()         matches a Constant; is_var(name) a Var (with that name hint, any if "").
//   * is_tuple(fields), is_tuple_get_item(t, index) (index -1: any), is_if(c, t, f),
//     is_let(var, value, body) match those nodes field by field.
//   * a | b                 matches what a matches, else what b matches (a is tried first).
//   * has_attr(p, attrs)    p, and the call's attributes include each of `attrs` with equal values
//                           (a function's attributes likewise, and an operator's `TOpPattern`, its
//                           fusion pattern as an integer; anything else does not match).
//   * has_type(p, t), has_dtype(p, d), has_shape(p, s)
//                           p, and the expression's checked type equals t / is a tensor of dtype d /
//                           of shape s (a typed module is required; an untyped expression does not match).
//   * dominates(parent, path, child)
//                           TVM's dominator pattern: an expression matching `child`, every path from
//                           which back to an expression matching `parent` goes only through
//                           expressions matching `path` (e.g. conv2d followed by any chain of
//                           elementwise ops). Used for fusion-like groups of unknown length.
// One DFPatternNode used twice in a pattern must match the same expression both times (a diamond:
// `x = wildcard(); op("add", {x, x})` matches `add(%a, %a)`, not `add(%a, %b)`).
//
// match() gives the expression each pattern node matched, so a pass can find a match's inputs (the
// expressions wildcards, constants and vars matched) and the nodes inside it.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

struct DFPatternNode;
using DFPattern = std::shared_ptr<const DFPatternNode>;

enum class DFPatternKind {
  Wildcard,
  Op,    // name
  Call,  // children[0] the callee, children[1..] the arguments
  Constant,
  Var,           // name ("" = any)
  Tuple,         // children = fields
  TupleGetItem,  // children[0] the tuple; index (-1 = any)
  If,            // children = cond, then, else
  Let,           // children = var, value, body
  Alt,           // children = left, right
  Attr,          // children[0]; attrs
  Type,          // children[0]; type
  DType,         // children[0]; dtype
  Shape,         // children[0]; shape
  Dominator,     // children = parent, path, child
};

struct DFPatternNode {
  DFPatternKind kind;
  std::vector<DFPattern> children;
  std::string name;  // Op: the operator; Var: the name hint or ""
  int index = -1;    // TupleGetItem
  Attrs attrs;       // Attr
  Type type;         // Type
  DType dtype{};     // DType
  Shape shape;       // Shape
};

DFPattern wildcard();
DFPattern is_op(std::string name);
DFPattern call(DFPattern callee, std::vector<DFPattern> args);
DFPattern op(std::string name, std::vector<DFPattern> args);  // call(is_op(name), args)
DFPattern is_constant();
DFPattern is_var(std::string name = "");
DFPattern is_tuple(std::vector<DFPattern> fields);
DFPattern is_tuple_get_item(DFPattern tuple, int index = -1);
DFPattern is_if(DFPattern cond, DFPattern then_branch, DFPattern else_branch);
DFPattern is_let(DFPattern var, DFPattern value, DFPattern body);
DFPattern operator|(DFPattern a, DFPattern b);
// TVM's `p.optional(f)`: p | f(p).
DFPattern optional(DFPattern p, const std::function<DFPattern(DFPattern)> &f);
DFPattern has_attr(DFPattern p, Attrs attrs);
DFPattern has_type(DFPattern p, Type type);
DFPattern has_dtype(DFPattern p, DType dtype);
DFPattern has_shape(DFPattern p, Shape shape);
DFPattern dominates(DFPattern parent, DFPattern path, DFPattern child);

// A successful match: the expression each pattern node matched (an Alt maps to the branch's
// expression; the nodes of the branch not taken are absent; a Dominator's path node may match
// several expressions, all listed).
struct DFPatternMatch {
  Expr root;  // the expression the whole pattern matched
  std::map<const DFPatternNode *, std::vector<Expr>> matched;
  // The first expression `p` matched, or null.
  Expr get(const DFPattern &p) const;
};

// Whether `pattern` matches `expr` (see the semantics above); the match when it does.
std::optional<DFPatternMatch> match(const DFPattern &pattern, const Expr &expr);

// The pattern in TVM's notation, e.g. `nn.relu(nn.bias_add(nn.dense(*, const), *))`, for messages.
std::string to_string(const DFPattern &pattern);

}  // namespace grove::relay
