#include "frontend/relay/byoc/Regions.h"

#include <fmt/format.h>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

bool is_op_call(const Expr &e, const char *name) {
  const auto *c = e.as<Call>();
  if (!c) return false;
  const auto *op = c->op.as<Op>();
  return op && op->name == name;
}

// Union-find over provisional region numbers.
struct RegionSets {
  std::vector<int> parent;
  std::vector<std::string> target;

  int make(const std::string &t) {
    parent.push_back(-1);
    target.push_back(t);
    return static_cast<int>(parent.size()) - 1;
  }
  int find(int r) {
    int root = r;
    while (parent[root] >= 0) root = parent[root];
    while (parent[r] >= 0) {
      int next = parent[r];
      parent[r] = root;
      r = next;
    }
    return root;
  }
};

void check_annotation_arity(const Expr &e) {
  if (e.as<Call>()->args.size() != 1)
    user_error("{}: {} takes one argument (the annotated value), found {}", to_string(e->span),
               e.as<Call>()->op.as<Op>()->name, e.as<Call>()->args.size());
}

// A Function inside a region is copied whole into the partition, so its body must not hold
// annotations of its own (annotate_target annotates around a composite function's call only).
void check_function_unannotated(const Expr &fn, const std::string &target) {
  post_order_visit(fn.as<Function>()->body, [&](const Expr &e) {
    if (is_compiler_begin(e) || is_compiler_end(e))
      user_error(
          "{}: a function inside a region of '{}' holds compiler annotations: expected a function "
          "annotated only around its call (as annotate_target does for composite functions)",
          to_string(e->span), target);
  });
}

}  // namespace

bool is_compiler_begin(const Expr &e) { return is_op_call(e, "annotation.compiler_begin"); }
bool is_compiler_end(const Expr &e) { return is_op_call(e, "annotation.compiler_end"); }

std::string annotation_target(const Expr &call) {
  return attr_string(call.as<Call>()->attrs, "compiler", "");
}

bool is_region_leaf(const Expr &e) {
  switch (e->kind) {
    case ExprKind::Var:
    case ExprKind::Constant:
    case ExprKind::GlobalVar:
    case ExprKind::Op:
    case ExprKind::Constructor:
      return true;
    default:
      return false;
  }
}

Expr strip_annotations(Expr e) {
  while ((is_compiler_begin(e) || is_compiler_end(e)) && e.as<Call>()->args.size() == 1)
    e = e.as<Call>()->args[0];
  return e;
}

namespace {

class AnnotationRemover : public ExprMutator {
 protected:
  Expr rewrite(const Expr &, const Expr &post) override { return strip_annotations(post); }
};

}  // namespace

Module remove_annotations(const Module &module) {
  return map_functions(module,
                       [](const std::string &, const Expr &fn) { return AnnotationRemover().mutate(fn); });
}

// 1. List every node of `root`, children first.
// 2. From each compiler_end (in that order), walk the operands backward with an explicit stack,
//    marking what is reached as the end's region; stop at compiler_begin calls (marked too) and at
//    leaves. Reaching a node another walk marked joins the two regions (union-find): the ends share
//    an expression, so they are outputs of one region.
// 3. Number the regions in the order post order first meets them; list their begins and ends.
RegionSet RegionSet::find(const Expr &root, bool include_default) {
  std::vector<Expr> order;
  post_order_visit(root, [&](const Expr &e) { order.push_back(e); });

  RegionSets sets;
  std::unordered_map<const ExprNode *, int> owner;
  for (const Expr &end : order) {
    if (!is_compiler_end(end)) continue;
    check_annotation_arity(end);
    const std::string target = annotation_target(end);
    if (!include_default && target == "default") continue;
    GROVE_CHECK(!owner.count(end.get()), "a compiler_end reached before its own walk");
    const int r = sets.make(target);
    owner[end.get()] = r;
    std::vector<Expr> stack{end.as<Call>()->args[0]};
    while (!stack.empty()) {
      Expr n = std::move(stack.back());
      stack.pop_back();
      if (is_region_leaf(n)) continue;
      if (auto it = owner.find(n.get()); it != owner.end()) {
        const int a = sets.find(it->second), b = sets.find(r);
        if (a == b) continue;
        if (sets.target[a] != sets.target[b])
          user_error(
              "{}: this expression is inside regions of two compilers, '{}' and '{}': expected an "
              "annotation.compiler_end / compiler_begin pair between them",
              to_string(n->span), sets.target[a], sets.target[b]);
        sets.parent[a] = b;
        continue;
      }
      if (is_compiler_end(n))
        user_error(
            "{}: this annotation.compiler_end(compiler=\"{}\") is inside a region of '{}' (the one ending "
            "at {}): expected an annotation.compiler_begin between a region and the values it uses",
            to_string(n->span), annotation_target(n), target, to_string(end->span));
      owner[n.get()] = r;
      if (is_compiler_begin(n)) {
        check_annotation_arity(n);
        if (annotation_target(n) != target)
          user_error(
              "{}: annotation.compiler_begin(compiler=\"{}\") is an input of a region of '{}' (the one "
              "ending at {}): expected compiler=\"{}\"",
              to_string(n->span), annotation_target(n), target, to_string(end->span), target);
        continue;
      }
      if (n.as<Function>()) {
        check_function_unannotated(n, target);
        continue;
      }
      for (const Expr &c : operands(n)) stack.push_back(c);
    }
  }

  RegionSet out;
  std::unordered_map<int, int> number;  // union-find root -> region number
  for (const Expr &e : order) {
    auto it = owner.find(e.get());
    if (it == owner.end()) continue;
    const int root_set = sets.find(it->second);
    auto [slot, fresh] = number.emplace(root_set, static_cast<int>(out.regions_.size()));
    if (fresh) out.regions_.push_back(AnnotatedRegion{sets.target[root_set], {}, {}});
    AnnotatedRegion &region = out.regions_[slot->second];
    if (is_compiler_begin(e)) region.begins.push_back(e);
    if (is_compiler_end(e)) region.ends.push_back(e);
    out.region_of_[e.get()] = slot->second;
  }
  return out;
}

}  // namespace grove::relay
