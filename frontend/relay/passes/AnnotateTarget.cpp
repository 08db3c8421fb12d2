#include "frontend/relay/passes/AnnotateTarget.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

constexpr const char *kDefaultTarget = "default";
constexpr const char *kBegin = "annotation.compiler_begin";
constexpr const char *kEnd = "annotation.compiler_end";

// The `compiler` of `e` when it is a call of the annotation op `op_name`, else null.
const std::string *annotation_target(const Expr &e, const char *op_name) {
  const auto *call = e.as<Call>();
  if (!call) return nullptr;
  const auto *op = call->op.as<Op>();
  if (!op || op->name != op_name) return nullptr;
  const AttrValue *c = call->attrs.find("compiler");
  GROVE_CHECK(c && c->kind == AttrValue::Kind::String && call->args.size() == 1,
              "a malformed {} call (one argument and a string attribute 'compiler' expected)", op_name);
  return &c->s;
}

// Functions the pass leaves alone, inside and out: fused kernels, regions already handed to an
// external compiler, and composites (their call is claimed as a whole).
bool is_opaque_function(const Function *fn) {
  return fn->has_attr(attr::kPrimitive) || fn->has_attr(attr::kCompiler) || fn->has_attr(attr::kComposite);
}

// Whether `e` (a rewritten call, tuple, projection or reference node) reads operands. TVM puts no
// compiler_end after one that does not (`zeros(...)`, `()`): nothing of it lies inside a region.
bool has_operands(const Expr &e) {
  if (const auto *c = e.as<Call>()) return !c->args.empty();
  if (const auto *t = e.as<Tuple>()) return !t->fields.empty();
  return true;
}

// Annotates one function body, after TVM's AnnotateTargetRewriter (include_non_call_ops=true).
//
// 1. Post order, each node once (graph-form sharing kept). Every rewritten call, tuple, projection
//    and reference node is given a target in target_of_: a call the first supporting target's (else
//    "default"); a tuple, projection or reference node the target all its operands' producers share
//    (a variable or constant counts as "default"), else "default".
// 2. Each operand of such a node is wrapped as compiler_begin(·, node target) — after a fresh
//    compiler_end(·, producer target) when the operand is itself a node of step 1 with operands, so
//    a value read by two consumers gets two ends (one per edge).
// 3. Scope boundaries end what flows out: a function body, a let body, an `if`'s condition and
//    branches (and, in grove, a match's scrutinee and clause bodies) get a compiler_end when they
//    are a node of step 1. A let-bound value is wrapped like a one-operand node (begin(end(v))), a
//    let-bound function literal is left as it is.
// 4. Rerunning on annotated code keeps what another target claimed: "default" annotations are
//    dropped and recomputed; a call whose first argument is a compiler_begin of another target is
//    kept; an existing compiler_end of a target is taken as that producer's (already placed) end.
class Annotator : public ExprMutator {
 public:
  explicit Annotator(const std::vector<const ExternalTarget *> &targets)
      : targets_(targets), begin_op_(Op::make(kBegin)), end_op_(Op::make(kEnd)) {}

 protected:
  bool descend(const Expr &e) override {
    const auto *fn = e.as<Function>();
    return !fn || !is_opaque_function(fn);
  }

  Expr rewrite(const Expr &pre, const Expr &post) override {
    switch (post->kind) {
      case ExprKind::Call:
        return rewrite_call(pre, post);
      case ExprKind::Tuple: {
        auto [target, fields] = annotate_operands(post.as<Tuple>()->fields, "");
        return record(Tuple::make(std::move(fields), post->span), target);
      }
      case ExprKind::TupleGetItem: {
        const auto *t = post.as<TupleGetItem>();
        auto [target, ops] = annotate_operands({t->tuple}, "");
        return record(TupleGetItem::make(ops[0], t->index, post->span), target);
      }
      case ExprKind::RefCreate: {
        auto [target, ops] = annotate_operands({post.as<RefCreate>()->value}, "");
        return record(RefCreate::make(ops[0], post->span), target);
      }
      case ExprKind::RefRead: {
        auto [target, ops] = annotate_operands({post.as<RefRead>()->ref}, "");
        return record(RefRead::make(ops[0], post->span), target);
      }
      case ExprKind::RefWrite: {
        const auto *w = post.as<RefWrite>();
        auto [target, ops] = annotate_operands({w->ref, w->value}, "");
        return record(RefWrite::make(ops[0], ops[1], post->span), target);
      }
      case ExprKind::Function: {
        const auto *fn = post.as<Function>();
        if (is_opaque_function(fn)) return post;
        return Function::make(fn->params, end_of(fn->body), fn->ret_type, fn->type_params, fn->attrs,
                              post->span);
      }
      case ExprKind::Let: {
        const auto *let = post.as<Let>();
        Expr value = let->value;
        if (!value.as<Function>()) value = annotate_operands({value}, "").second[0];
        return Let::make(let->var, value, end_of(let->body), post->span);
      }
      case ExprKind::If: {
        const auto *i = post.as<If>();
        return If::make(end_of(i->cond), end_of(i->then_branch), end_of(i->else_branch), post->span);
      }
      case ExprKind::Match: {
        const auto *m = post.as<Match>();
        std::vector<Clause> clauses;
        for (const Clause &c : m->clauses) clauses.push_back({c.lhs, end_of(c.rhs)});
        return Match::make(end_of(m->data), std::move(clauses), m->complete, post->span);
      }
      default:  // variables, constants, globals, ops, constructors
        return post;
    }
  }

 private:
  Expr rewrite_call(const Expr &pre, const Expr &post) {
    const auto *call = post.as<Call>();
    // Leftover "default" annotations of an earlier run are recomputed; the others stay.
    for (const char *op : {kBegin, kEnd})
      if (const std::string *t = annotation_target(post, op))
        return *t == kDefaultTarget ? call->args[0] : post;
    if (!call->args.empty())
      if (const std::string *t = annotation_target(call->args[0], kBegin); t && *t != kDefaultTarget)
        return post;  // claimed by an earlier run
    // The predicates read argument types, which only the original (typed) node carries.
    std::string target = kDefaultTarget;
    for (const ExternalTarget *t : targets_)
      if (t->supports(*pre.as<Call>())) {
        target = t->name;
        break;
      }
    auto [unused, args] = annotate_operands(call->args, target);
    return record(Call::make(call->op, std::move(args), call->attrs, call->type_args, post->span), target);
  }

  Expr record(Expr e, const std::string &target) {
    target_of_[e] = target;
    return e;
  }

  Expr annotate(const Expr &e, const Expr &op, const std::string &target) {
    return Call::make(op, {e}, Attrs().with("compiler", AttrValue::of_string(target)), {}, e->span);
  }

  // Steps 1 and 2: the operands wrapped for a node of target `target` ("" = the target every
  // operand's producer shares, else "default"), and that target.
  std::pair<std::string, std::vector<Expr>> annotate_operands(const std::vector<Expr> &operands,
                                                              std::string target) {
    std::string shared;
    std::vector<Expr> out;
    for (const Expr &operand : operands) {
      std::string producer = kDefaultTarget;
      Expr ended = operand;
      if (const std::string *t = annotation_target(operand, kEnd)) {
        producer = *t;  // an end placed by an earlier run
      } else if (auto it = target_of_.find(operand); it != target_of_.end()) {
        producer = it->second;
        if (has_operands(operand)) ended = annotate(operand, end_op_, producer);
      }
      if (shared.empty())
        shared = producer;
      else if (shared != producer)
        shared = kDefaultTarget;
      out.push_back(std::move(ended));
    }
    if (target.empty()) target = shared.empty() ? std::string(kDefaultTarget) : shared;
    for (Expr &e : out)
      if (!annotation_target(e, kBegin)) e = annotate(e, begin_op_, target);
    return {target, std::move(out)};
  }

  // Step 3: `e` with a compiler_end when a region's value flows out of it here.
  Expr end_of(const Expr &e) {
    auto it = target_of_.find(e);
    if (it == target_of_.end() || !has_operands(e)) return e;
    return annotate(e, end_op_, it->second);
  }

  const std::vector<const ExternalTarget *> &targets_;
  Expr begin_op_, end_op_;
  std::unordered_map<Expr, std::string, ExprHash, ExprEqual> target_of_;
};

// The first target that claims the global function `name` whole, or null.
const ExternalTarget *claiming_target(const Module &m, const std::string &name,
                                      const std::vector<const ExternalTarget *> &targets) {
  for (const ExternalTarget *t : targets)
    if (t->claims_function && t->claims_function(m, name)) return t;
  return nullptr;
}

}  // namespace

Module annotate_target(const Module &m, const std::vector<const ExternalTarget *> &targets) {
  for (const ExternalTarget *t : targets)
    GROVE_CHECK(t && !t->name.empty() && t->name != kDefaultTarget,
                "annotate_target: a target must be non-null and named, not \"{}\"", kDefaultTarget);
  return map_functions(m, [&](const std::string &name, const Expr &e) {
    const auto *fn = e.as<Function>();
    if (is_opaque_function(fn)) return e;
    if (const ExternalTarget *t = claiming_target(m, name, targets))
      return Function::make(fn->params, fn->body, fn->ret_type, fn->type_params,
                            fn->attrs.with(attr::kCompiler, AttrValue::of_string(t->name)), e->span);
    return Annotator(targets).mutate(e);
  });
}

}  // namespace grove::relay
