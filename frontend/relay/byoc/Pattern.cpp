#include "frontend/relay/byoc/Pattern.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "frontend/relay/Printer.h"
#include "frontend/relay/StructuralEqual.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

DFPattern make_pattern(DFPatternKind kind, std::vector<DFPattern> children = {}) {
  for (const DFPattern &c : children)
    GROVE_CHECK(c != nullptr, "a dataflow pattern built from a null pattern");
  auto n = std::make_shared<DFPatternNode>();
  n->kind = kind;
  n->children = std::move(children);
  return n;
}

// The expressions a dominator pattern's path walks back through: a node's operands, without a
// call's callee (the operator is not dataflow).
std::vector<Expr> dataflow_inputs(const Expr &e) {
  std::vector<Expr> ins = operands(e);
  if (e.as<Call>() && !ins.empty()) ins.erase(ins.begin());
  return ins;
}

// Whether a call (or function, or operator) carries every attribute of `want` with an equal value.
// An operator's only attribute is TVM's `TOpPattern`, its fusion pattern as an integer.
bool has_attrs(const Expr &e, const Attrs &want) {
  const Attrs *have = nullptr;
  if (const auto *c = e.as<Call>()) have = &c->attrs;
  if (const auto *f = e.as<Function>()) have = &f->attrs;
  if (have) {
    for (const auto &[name, value] : want.entries()) {
      const AttrValue *v = have->find(name);
      if (!v || !(*v == value)) return false;
    }
    return true;
  }
  if (const auto *o = e.as<Op>()) {
    for (const auto &[name, value] : want.entries())
      if (name != "TOpPattern" || !(value == AttrValue::of_int(static_cast<int64_t>(o->def->pattern))))
        return false;
    return true;
  }
  return false;
}

const TensorType *checked_tensor_type(const Expr &e) {
  return e->checked_type.defined() ? e->checked_type.as<TensorType>() : nullptr;
}

// The matcher, after TVM's DFPatternMatcher.
//
// Bindings: each pattern node that matched records the expression on a trail. While `memoize_`
// holds (always, except inside a dominator's path), a node that already matched something matches
// that same expression only, which is what makes a node used twice in a pattern (a diamond) mean
// one expression. A failed attempt at a node undoes every binding made during it, so an Alt's
// failed left branch leaves nothing behind for the right one.
//
// Dominator patterns (parent, path, child), after TVM's MatchesPath:
//   1. The child pattern must match the expression.
//   2. Walk back from it through the dataflow inputs, depth first, each expression once: an input
//      matching the parent (memoized: the first one found fixes which expression the parent is)
//      ends that path; any other input must match the path pattern (not memoized: the path node
//      matches many expressions) and is walked back in turn. An input that is neither fails the
//      match, and so does a child or path expression without inputs (a path must reach the parent).
//   3. TVM then checks that the child post-dominates the parent in the expression's graph; within
//      the graph under the matched expression that always holds once step 2 succeeded (every path
//      from the parent leads to the root). merge_composite's rule that no expression inside a
//      match other than its root is used outside it gives the function-wide dominance.
// The walk keeps its own stack: a path of 100,000 elementwise ops does not recurse per node.
class Matcher {
 public:
  bool visit(const DFPattern &p, const Expr &e) {
    if (memoize_) {
      auto it = bound_.find(p.get());
      if (it != bound_.end()) return it->second.front().same_as(e);
    }
    size_t mark = trail_.size();
    if (!dispatch(*p, e)) {
      undo(mark);
      return false;
    }
    trail_.emplace_back(p.get(), e);
    bound_[p.get()].push_back(e);
    return true;
  }

  DFPatternMatch result(const Expr &root) const {
    DFPatternMatch m;
    m.root = root;
    std::unordered_map<const DFPatternNode *, std::unordered_set<const ExprNode *>> seen;
    for (const auto &[node, expr] : trail_)
      if (seen[node].insert(expr.get()).second) m.matched[node].push_back(expr);
    return m;
  }

 private:
  void undo(size_t mark) {
    while (trail_.size() > mark) {
      auto it = bound_.find(trail_.back().first);
      it->second.pop_back();
      if (it->second.empty()) bound_.erase(it);
      trail_.pop_back();
    }
  }

  bool visit_all(const std::vector<DFPattern> &ps, size_t first, const std::vector<Expr> &es) {
    if (ps.size() - first != es.size()) return false;
    for (size_t i = 0; i < es.size(); ++i)
      if (!visit(ps[first + i], es[i])) return false;
    return true;
  }

  bool dispatch(const DFPatternNode &p, const Expr &e) {
    const std::vector<DFPattern> &ch = p.children;
    switch (p.kind) {
      case DFPatternKind::Wildcard:
        return true;
      case DFPatternKind::Op: {
        const auto *o = e.as<Op>();
        return o && o->name == p.name;
      }
      case DFPatternKind::Call: {
        const auto *c = e.as<Call>();
        return c && c->args.size() + 1 == ch.size() && visit(ch[0], c->op) && visit_all(ch, 1, c->args);
      }
      case DFPatternKind::Constant:
        return e.as<Constant>() != nullptr;
      case DFPatternKind::Var: {
        const auto *v = e.as<Var>();
        return v && (p.name.empty() || v->name_hint == p.name);
      }
      case DFPatternKind::Tuple: {
        const auto *t = e.as<Tuple>();
        return t && visit_all(ch, 0, t->fields);
      }
      case DFPatternKind::TupleGetItem: {
        const auto *g = e.as<TupleGetItem>();
        return g && (p.index < 0 || p.index == g->index) && visit(ch[0], g->tuple);
      }
      case DFPatternKind::If: {
        const auto *i = e.as<If>();
        return i && visit(ch[0], i->cond) && visit(ch[1], i->then_branch) && visit(ch[2], i->else_branch);
      }
      case DFPatternKind::Let: {
        const auto *l = e.as<Let>();
        return l && visit(ch[0], l->var) && visit(ch[1], l->value) && visit(ch[2], l->body);
      }
      case DFPatternKind::Alt:
        return visit(ch[0], e) || visit(ch[1], e);
      case DFPatternKind::Attr:
        return has_attrs(e, p.attrs) && visit(ch[0], e);
      case DFPatternKind::Type:
        return e->checked_type.defined() && structural_equal(p.type, e->checked_type).equal &&
               visit(ch[0], e);
      case DFPatternKind::DType: {
        const TensorType *t = checked_tensor_type(e);
        return t && t->dtype == p.dtype && visit(ch[0], e);
      }
      case DFPatternKind::Shape: {
        const TensorType *t = checked_tensor_type(e);
        return t && t->shape == p.shape && visit(ch[0], e);
      }
      case DFPatternKind::Dominator:
        return visit(ch[2], e) && matches_path(ch[0], ch[1], e);
    }
    GROVE_CHECK(false, "unknown dataflow pattern kind");
  }

  // Step 2 of the dominator match (see the class comment).
  bool matches_path(const DFPattern &parent, const DFPattern &path, const Expr &child) {
    struct Frame {
      std::vector<Expr> inputs;
      size_t next = 0;
    };
    const bool saved = memoize_;
    std::unordered_set<const ExprNode *> accepted;
    std::vector<Frame> stack;
    stack.push_back({dataflow_inputs(child)});
    bool ok = true;
    while (ok && !stack.empty()) {
      Frame &top = stack.back();
      if (top.inputs.empty()) {
        ok = false;  // the child, or a path expression, with nothing to come from
        break;
      }
      if (top.next == top.inputs.size()) {
        stack.pop_back();
        continue;
      }
      Expr in = top.inputs[top.next++];
      if (accepted.count(in.get())) continue;
      memoize_ = true;
      if (visit(parent, in)) {
        accepted.insert(in.get());
        continue;
      }
      memoize_ = false;
      if (!visit(path, in)) {
        ok = false;
        break;
      }
      accepted.insert(in.get());
      stack.push_back({dataflow_inputs(in)});  // invalidates `top`
    }
    memoize_ = saved;
    return ok;
  }

  bool memoize_ = true;
  std::vector<std::pair<const DFPatternNode *, Expr>> trail_;
  std::unordered_map<const DFPatternNode *, std::vector<Expr>> bound_;
};

std::string attrs_to_string(const Attrs &attrs) {
  std::string s;
  for (const auto &[name, value] : attrs.entries())
    s += fmt::format("{}{}={}", s.empty() ? "" : ", ", name, print_attr_value(value));
  return s;
}

std::string list_to_string(const std::vector<DFPattern> &ps, size_t first) {
  std::string s;
  for (size_t i = first; i < ps.size(); ++i) s += (i > first ? ", " : "") + to_string(ps[i]);
  return s;
}

}  // namespace

DFPattern wildcard() { return make_pattern(DFPatternKind::Wildcard); }

DFPattern is_op(std::string name) {
  GROVE_CHECK(find_op(name) != nullptr, "is_op: grove has no operator '{}'", name);
  auto n = std::make_shared<DFPatternNode>();
  n->kind = DFPatternKind::Op;
  n->name = std::move(name);
  return n;
}

DFPattern call(DFPattern callee, std::vector<DFPattern> args) {
  args.insert(args.begin(), std::move(callee));
  return make_pattern(DFPatternKind::Call, std::move(args));
}

DFPattern op(std::string name, std::vector<DFPattern> args) {
  return call(is_op(std::move(name)), std::move(args));
}

DFPattern is_constant() { return make_pattern(DFPatternKind::Constant); }

DFPattern is_var(std::string name) {
  auto n = std::make_shared<DFPatternNode>();
  n->kind = DFPatternKind::Var;
  n->name = std::move(name);
  return n;
}

DFPattern is_tuple(std::vector<DFPattern> fields) {
  return make_pattern(DFPatternKind::Tuple, std::move(fields));
}

DFPattern is_tuple_get_item(DFPattern tuple, int index) {
  auto n =
      std::const_pointer_cast<DFPatternNode>(make_pattern(DFPatternKind::TupleGetItem, {std::move(tuple)}));
  n->index = index;
  return n;
}

DFPattern is_if(DFPattern cond, DFPattern then_branch, DFPattern else_branch) {
  return make_pattern(DFPatternKind::If, {std::move(cond), std::move(then_branch), std::move(else_branch)});
}

DFPattern is_let(DFPattern var, DFPattern value, DFPattern body) {
  return make_pattern(DFPatternKind::Let, {std::move(var), std::move(value), std::move(body)});
}

DFPattern operator|(DFPattern a, DFPattern b) {
  return make_pattern(DFPatternKind::Alt, {std::move(a), std::move(b)});
}

DFPattern optional(DFPattern p, const std::function<DFPattern(DFPattern)> &f) {
  DFPattern extended = f(p);
  return std::move(p) | std::move(extended);
}

DFPattern has_attr(DFPattern p, Attrs attrs) {
  auto n = std::const_pointer_cast<DFPatternNode>(make_pattern(DFPatternKind::Attr, {std::move(p)}));
  n->attrs = std::move(attrs);
  return n;
}

DFPattern has_type(DFPattern p, Type type) {
  GROVE_CHECK(type.defined(), "has_type: a null type");
  auto n = std::const_pointer_cast<DFPatternNode>(make_pattern(DFPatternKind::Type, {std::move(p)}));
  n->type = std::move(type);
  return n;
}

DFPattern has_dtype(DFPattern p, DType dtype) {
  auto n = std::const_pointer_cast<DFPatternNode>(make_pattern(DFPatternKind::DType, {std::move(p)}));
  n->dtype = dtype;
  return n;
}

DFPattern has_shape(DFPattern p, Shape shape) {
  auto n = std::const_pointer_cast<DFPatternNode>(make_pattern(DFPatternKind::Shape, {std::move(p)}));
  n->shape = std::move(shape);
  return n;
}

DFPattern dominates(DFPattern parent, DFPattern path, DFPattern child) {
  return make_pattern(DFPatternKind::Dominator, {std::move(parent), std::move(path), std::move(child)});
}

Expr DFPatternMatch::get(const DFPattern &p) const {
  auto it = matched.find(p.get());
  return it == matched.end() || it->second.empty() ? Expr() : it->second.front();
}

std::optional<DFPatternMatch> match(const DFPattern &pattern, const Expr &expr) {
  GROVE_CHECK(pattern != nullptr && expr.defined(), "match: a null pattern or expression");
  Matcher m;
  if (!m.visit(pattern, expr)) return std::nullopt;
  return m.result(expr);
}

std::string to_string(const DFPattern &p) {
  if (!p) return "<null>";
  const std::vector<DFPattern> &ch = p->children;
  switch (p->kind) {
    case DFPatternKind::Wildcard:
      return "*";
    case DFPatternKind::Op:
      return p->name;
    case DFPatternKind::Call:
      return fmt::format("{}({})", to_string(ch[0]), list_to_string(ch, 1));
    case DFPatternKind::Constant:
      return "const";
    case DFPatternKind::Var:
      return p->name.empty() ? "var" : "%" + p->name;
    case DFPatternKind::Tuple:
      return fmt::format("({}{})", list_to_string(ch, 0), ch.size() == 1 ? "," : "");
    case DFPatternKind::TupleGetItem:
      return fmt::format("{}.{}", to_string(ch[0]),
                         p->index < 0 ? std::string("*") : std::to_string(p->index));
    case DFPatternKind::If:
      return fmt::format("if ({}) {{ {} }} else {{ {} }}", to_string(ch[0]), to_string(ch[1]),
                         to_string(ch[2]));
    case DFPatternKind::Let:
      return fmt::format("let {} = {}; {}", to_string(ch[0]), to_string(ch[1]), to_string(ch[2]));
    case DFPatternKind::Alt:
      return fmt::format("({} | {})", to_string(ch[0]), to_string(ch[1]));
    case DFPatternKind::Attr:
      return fmt::format("{}.has_attr({{{}}})", to_string(ch[0]), attrs_to_string(p->attrs));
    case DFPatternKind::Type:
      return fmt::format("{}.has_type({})", to_string(ch[0]), relay::to_string(p->type));
    case DFPatternKind::DType:
      return fmt::format("{}.has_dtype({})", to_string(ch[0]), relay::to_string(p->dtype));
    case DFPatternKind::Shape:
      return fmt::format("{}.has_shape({})", to_string(ch[0]), shape_to_string(p->shape));
    case DFPatternKind::Dominator:
      return fmt::format("dominates({}, {}, {})", to_string(ch[0]), to_string(ch[1]), to_string(ch[2]));
  }
  GROVE_CHECK(false, "unknown dataflow pattern kind");
}

}  // namespace grove::relay
