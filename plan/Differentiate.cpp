#include "plan/Differentiate.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ilir/Affine.h"
#include "ilir/IRPrinter.h"
#include "ilir/IRVisitor.h"
#include "ilir/Verifier.h"
#include "plan/HoistChildTerms.h"
#include "support/Error.h"

namespace grove::plan {

namespace {

using namespace ilir;

// --- Expressions with an undefined Expr as zero -------------------------------------------------

bool is_zero(const Expr &e) { return !e.defined() || (e.as<FloatImm>() && e.as<FloatImm>()->value == 0.0f); }
bool is_one(const Expr &e) { return e.defined() && e.as<FloatImm>() && e.as<FloatImm>()->value == 1.0f; }
Expr value_of(const Expr &e) { return e.defined() ? e : Expr(0.0f); }

Expr add(const Expr &a, const Expr &b) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return a + b;
}
Expr sub(const Expr &a, const Expr &b) {
  if (is_zero(b)) return a;
  if (is_zero(a)) return -b;
  return a - b;
}
Expr sel(const Expr &cond, const Expr &t, const Expr &f) {
  if (is_zero(t) && is_zero(f)) return Expr();
  return Select::make(cond, value_of(t), value_of(f));
}
Expr mul(const Expr &a, const Expr &b) {
  if (is_zero(a) || is_zero(b)) return Expr();
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  // select(c, x, 0) · b = select(c, x · b, 0): a slice's indicator stays a condition.
  if (const Select *s = a.as<Select>(); s && is_zero(s->f)) return sel(s->cond, mul(s->t, b), Expr());
  if (const Select *s = a.as<Select>(); s && is_zero(s->t)) return sel(s->cond, Expr(), mul(s->f, b));
  if (const Select *s = b.as<Select>(); s && (is_zero(s->f) || is_zero(s->t))) return mul(b, a);
  return a * b;
}
Expr div(const Expr &a, const Expr &b) { return is_zero(a) ? Expr() : a / b; }
Expr sum_of(const std::vector<Expr> &terms) {
  Expr s;
  for (const Expr &t : terms) s = add(s, t);
  return s;
}

// d e / d (the value of the Load node `target`), every occurrence of that node counted. `value`, if
// defined, is e's own value, a load of the tensor of the step `t[n, i…] = e` being differentiated: a
// tanh, sigmoid or exp at e's top reads it (the forward keeps it) rather than computing itself again.
Expr diff(const Expr &e, const ExprNode *target, const Expr &value = Expr()) {
  if (e.get() == target) return Expr(1.0f);
  if (const Binary *b = e.as<Binary>()) {
    if (b->type != ScalarType::Float) return Expr();
    Expr da = diff(b->a, target), db = diff(b->b, target);
    switch (b->op) {
      case BinOp::Add:
        return add(da, db);
      case BinOp::Sub:
        return sub(da, db);
      case BinOp::Mul:
        return add(mul(da, b->b), mul(b->a, db));
      case BinOp::Div:
        return sub(div(da, b->b), div(mul(b->a, db), b->b * b->b));
      case BinOp::Min:
        return is_zero(da) && is_zero(db) ? Expr() : sel(b->a < b->b, da, db);
      case BinOp::Max:
        return is_zero(da) && is_zero(db) ? Expr() : sel(b->b < b->a, da, db);
      default:
        return Expr();
    }
  }
  if (const Unary *u = e.as<Unary>()) {
    Expr da = diff(u->a, target);
    if (is_zero(da)) return Expr();
    switch (u->op) {
      case UnaryOp::Neg:
        return -da;
      case UnaryOp::Tanh: {
        Expr t = value.defined() ? value : Unary::make(UnaryOp::Tanh, u->a);
        return mul(da, Expr(1.0f) - t * t);
      }
      case UnaryOp::Sigmoid: {
        Expr s = value.defined() ? value : Unary::make(UnaryOp::Sigmoid, u->a);
        return mul(da, s * (Expr(1.0f) - s));
      }
      case UnaryOp::Exp:
        return mul(da, value.defined() ? value : e);
      case UnaryOp::Relu:
        return sel(Expr(0.0f) < u->a, da, Expr());
    }
  }
  if (const Select *s = e.as<Select>()) return sel(s->cond, diff(s->t, target), diff(s->f, target));
  return Expr();  // constants, variables, structure calls; Sums are differentiated by their terms
}

// The distinct Load nodes of `e` outside any Sum, in order of appearance.
std::vector<const Load *> loads_outside_sums(const Expr &e) {
  std::vector<const Load *> out;
  std::set<const ExprNode *> seen;
  std::vector<Expr> stack{e};
  while (!stack.empty()) {
    Expr x = stack.back();
    stack.pop_back();
    if (x.as<Sum>()) continue;
    if (const Load *l = x.as<Load>()) {
      if (seen.insert(l).second) out.push_back(l);
      continue;
    }
    if (const Binary *b = x.as<Binary>()) stack.insert(stack.end(), {b->b, b->a});
    if (const Unary *u = x.as<Unary>()) stack.push_back(u->a);
    if (const Select *s = x.as<Select>()) stack.insert(stack.end(), {s->f, s->t, s->cond});
  }
  return out;
}

// The Sums of `e` that are its top-level additive terms, with their signs; nothing if a Sum sits
// anywhere else (under a function, in a product).
std::optional<std::vector<std::pair<const Sum *, int>>> additive_sums(const Expr &e) {
  std::vector<std::pair<const Sum *, int>> sums;
  std::vector<std::pair<Expr, int>> stack{{e, 1}};
  while (!stack.empty()) {
    auto [x, sign] = stack.back();
    stack.pop_back();
    if (const Sum *s = x.as<Sum>()) {
      sums.push_back({s, sign});
      continue;
    }
    const Binary *b = x.as<Binary>();
    if (b && (b->op == BinOp::Add || b->op == BinOp::Sub)) {
      stack.push_back({b->a, sign});
      stack.push_back({b->b, b->op == BinOp::Sub ? -sign : sign});
      continue;
    }
    if (contains(x, [](const Expr &y) { return y.as<Sum>() != nullptr; })) return std::nullopt;
  }
  return sums;
}

// An expression of a parent's ragged sum over its children (in n and the sum's variable k) as the
// child sees it: n becomes parent(n), child(n, k) becomes n, k becomes child_slot(n). Nothing if it
// reads a node it cannot move (another child).
class ToChildFrame : public IRMutator {
 public:
  explicit ToChildFrame(std::string k) : k_(std::move(k)) {}
  bool ok = true;

 protected:
  Expr visit_Var(const Var *op, const Expr &e) override {
    if (op->var_kind == VarKind::Node) return StructCall::parent(e);
    if (op->name == k_) return StructCall::child_slot(Var::node());
    return e;
  }
  Expr visit_Load(const Load *op, const Expr &e) override {
    std::vector<Expr> indices;
    for (const Expr &i : op->indices) indices.push_back(mutate(i));
    if (!op->node.defined()) return Load::make(op->tensor, Expr(), indices);
    Expr node;
    const StructCall *c = op->node.as<StructCall>();
    const Var *k = c && c->fn == StructFn::Child ? c->arg.as<Var>() : nullptr;
    if (is_node_var(op->node)) {
      node = StructCall::parent(Var::node());
    } else if (k && k->name == k_ && is_node_var(c->node)) {
      node = Var::node();
    } else {
      ok = false;
      node = op->node;
    }
    return Load::make(op->tensor, node, indices);
  }
  Expr visit_StructCall(const StructCall *op, const Expr &e) override {
    if (op->fn == StructFn::NumChildren && is_node_var(op->node))
      return StructCall::num_children(StructCall::parent(Var::node()));
    ok = false;
    return e;
  }

 private:
  std::string k_;
};

// Whether `e` loads `tensor` at the node itself (not at a child or parent).
bool reads_here(const Expr &e, const std::string &tensor) {
  return contains(e, [&](const Expr &x) {
    const Load *l = x.as<Load>();
    return l && l->tensor == tensor && is_node_var(l->node);
  });
}

// Whether `e` only gathers values: a load, or a select between gathers and constants, with a load
// somewhere.
bool is_gather(const Expr &e) {
  std::function<bool(const Expr &)> gathers = [&](const Expr &x) {
    if (x.as<Load>() || x.as<FloatImm>()) return true;
    const Select *s = x.as<Select>();
    return s && gathers(s->t) && gathers(s->f);
  };
  return gathers(e) && contains(e, [](const Expr &x) { return x.as<Load>() != nullptr; });
}

// Whether `op` holds a weight product: a Sum whose body loads a param.
bool has_weight_product(const Program &p, const Compute &op) {
  return contains(op.value, [&](const Expr &x) {
    const Sum *s = x.as<Sum>();
    return s && contains(s->body, [&](const Expr &y) {
             const Load *l = y.as<Load>();
             const TensorDecl *t = l ? p.find(l->tensor) : nullptr;
             return t && t->kind == TensorKind::Param;
           });
  });
}

// A load of `def.tensor` (at any node) replaced by def's value there: def's node n becomes the
// load's node and its indices the load's (simultaneously).
class AtNodeInliner : public IRMutator {
 public:
  explicit AtNodeInliner(const Compute &def) : def_(def) {}

 protected:
  Expr visit_Load(const Load *op, const Expr &e) override {
    if (op->tensor != def_.tensor) return IRMutator::visit_Load(op, e);
    Expr value = substitute(def_.value, "n", mutate(op->node));
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = substitute(value, def_.indices[d], Var::make("__at" + std::to_string(d), VarKind::Index));
    for (size_t d = 0; d < def_.indices.size(); d++)
      value = substitute(value, "__at" + std::to_string(d), mutate(op->indices[d]));
    return value;
  }

 private:
  const Compute &def_;
};

// The backward's computes arranged for the planner. A share that only gathers values of its own
// node (TreeLSTM's d_h_at0 = d_s[n, 0:H], read by the children at parent(n)) is read through its
// definition wherever it is read (d_s[parent(n), ...]), the gathered tensors kept per node, instead
// of being copied; then every compute moves up past the weight products before it that it is
// independent of. TreeLSTM's internal level: one node loop (d_f_pre, d_iou and the children's cell
// shares) and the GEMM of d_s, where there were three stages. `keep`: tensors that stay (the output,
// the row gradients' states).
void arrange_backward(Program &b, const std::set<std::string> &keep) {
  auto defined_in = [&](const Case &c, const std::string &t) {
    return std::any_of(c.body.begin(), c.body.end(), [&](const Compute &op) { return op.tensor == t; });
  };
  for (auto [c, other] : {std::pair{&b.leaf, &b.internal}, std::pair{&b.internal, &b.leaf}}) {
    for (size_t i = 0; i < c->body.size();) {
      const Compute def = c->body[i];
      const bool own_node_gather = is_gather(def.value) && !contains(def.value, [&](const Expr &x) {
                                     const Load *l = x.as<Load>();
                                     return l && (l->tensor == def.tensor || !is_node_var(l->node));
                                   });
      if (keep.count(def.tensor) || !own_node_gather || defined_in(*other, def.tensor)) {
        i++;
        continue;
      }
      for_each_node(def.value, [&](const Expr &x) {
        if (const Load *l = x.as<Load>())
          for (TensorDecl &t : b.tensors)
            if (t.name == l->tensor && t.kind == TensorKind::Temp) t.kind = TensorKind::State;
      });
      c->body.erase(c->body.begin() + long(i));
      AtNodeInliner inliner(def);
      for (Case *k : {&b.leaf, &b.internal})
        for (Compute &op : k->body) op.value = inliner.mutate(op.value);
      for (Reduction &r : b.reductions) r.value = inliner.mutate(r.value);
      b.tensors.erase(std::remove_if(b.tensors.begin(), b.tensors.end(),
                                     [&](const TensorDecl &t) { return t.name == def.tensor; }),
                      b.tensors.end());
    }
  }
  for (Case *c : {&b.leaf, &b.internal}) {
    std::vector<Compute> &body = c->body;
    for (size_t i = 1; i < body.size(); i++) {
      if (has_weight_product(b, body[i])) continue;
      for (size_t j = i; j > 0; j--) {
        const Compute &before = body[j - 1], &op = body[j];
        if (!has_weight_product(b, before) || reads_here(op.value, before.tensor) ||
            reads_here(before.value, op.tensor))
          break;
        std::swap(body[j - 1], body[j]);
      }
    }
  }
}

// The training forward's computes arranged for the planner, which keeps program order (each run of
// GEMMs one stage, each run of other computes one node loop): a state that only gathers values
// (TreeLSTM's s = [h[left]; h[right]], kept for the backward) and is read after it, only at the node
// itself, is read through its definition there and is computed last; then each weight product moves
// up past the computes before it that it does not read and that do not read it. TreeLSTM's
// internal case becomes one GEMM group (iou, f_pre) and one node loop, as in inference, instead of
// five stages.
void arrange_for_planning(Program &f) {
  for (Case *c : {&f.leaf, &f.internal}) {
    std::vector<Compute> &body = c->body;
    std::vector<Compute> gathers;
    for (size_t i = 0; i < body.size();) {
      const Compute &g = body[i];
      bool read_later = false;
      for (size_t j = i + 1; j < body.size(); j++)
        read_later = read_later || reads_here(body[j].value, g.tensor);
      bool inlinable = read_later && is_gather(g.value) && !reads_here(g.value, g.tensor);
      for (size_t j = i + 1; inlinable && j < body.size(); j++)
        inlinable = !contains(body[j].value, [&](const Expr &x) {
          const Load *l = x.as<Load>();
          return l && l->tensor == g.tensor && !is_node_var(l->node);
        });
      if (!inlinable) {
        i++;
        continue;
      }
      const Compute def = g;
      body.erase(body.begin() + long(i));
      for (size_t j = i; j < body.size(); j++) body[j].value = inline_definition(body[j].value, def);
      gathers.push_back(def);
    }
    body.insert(body.end(), gathers.begin(), gathers.end());
    for (size_t i = 1; i < body.size(); i++) {
      if (!has_weight_product(f, body[i])) continue;
      for (size_t j = i; j > 0; j--) {
        const Compute &before = body[j - 1], &op = body[j];
        if (has_weight_product(f, before) || reads_here(op.value, before.tensor) ||
            reads_here(before.value, op.tensor))
          break;
        std::swap(body[j - 1], body[j]);
      }
    }
  }
}

}  // namespace

// --- The pass ---------------------------------------------------------------------------------

namespace {

class Differentiator {
 public:
  explicit Differentiator(const Program &p) : p_(p) {}

  Derivative run() {
    if (p_.direction != Direction::BottomUp) cannot_program("it is already a backward program");
    if (!p_.hoisted.body.empty()) cannot_program("it has a hoisted case (differentiate before the passes)");
    for (const TensorDecl &t : p_.tensors)
      if (t.name.rfind("d_", 0) == 0)
        cannot_program(fmt::format("its tensor {} has a name the backward's adjoints use (d_...)", t.name));
    // Trees of any arity: a ragged sum's per-child products move to the child first (a state the
    // parent reads at child(n, k)), so that what is left of each sum is elementwise.
    if (p_.structure == StructureKind::Tree) source_ = hoist_child_terms(p_);
    d_.forward = training_forward();
    const Program &f = d_.forward;
    Program &b = d_.backward;
    b.name = p_.name + "_backward";
    b.structure = p_.structure;
    b.size_vars = p_.size_vars;
    b.direction = Direction::TopDown;
    b.schedule = p_.schedule;
    for (const TensorDecl &t : p_.tensors)
      if (t.kind == TensorKind::Param) b.tensors.push_back(t);
    d_.seed = fresh("seed");
    declare(d_.seed, TensorKind::Saved, f.get(p_.output).shape);
    // The slots at which the internal case reads each state at a child: their adjoints come from
    // the parent.
    for (const Compute &op : f.internal.body)
      for_each_node(op.value, [&](const Expr &e) {
        const Load *l = e.as<Load>();
        const StructCall *c = l ? l->node.as<StructCall>() : nullptr;
        if (c && c->fn == StructFn::Child && c->arg.as<IntImm>())
          slots_[l->tensor].insert(int(c->arg.as<IntImm>()->value));
      });
    // Ragged sums over the children: each child takes its share itself, from its parent's adjoint.
    for (const Compute &op : f.internal.body) pull_ragged_sums(op);
    differentiate_case(f.internal, b.internal);
    differentiate_case(f.leaf, b.leaf);
    finish();
    std::set<std::string> keep{b.output};
    for (const RowGradient &r : d_.rows) keep.insert(r.state);
    arrange_backward(b, keep);
    verify(b);
    drop_unsaved_states();
    // The backward is derived; the forward's order is now the planner's concern.
    arrange_for_planning(d_.forward);
    verify(d_.forward);
    return std::move(d_);
  }

 private:
  [[noreturn]] void cannot_program(const std::string &why) const {
    user_error("{}: grove cannot derive this model's backward pass yet: {}", p_.name, why);
  }
  [[noreturn]] void cannot(const Compute &op, const std::string &why) const {
    user_error("{}: grove cannot derive the backward pass of `{}[n, {}] = {}` yet: {}", p_.name, op.tensor,
               fmt::join(op.indices, ", "), to_string(op.value), why);
  }

  std::string fresh(std::string name) const {
    while (p_.find(name) || d_.forward.find(name) || d_.backward.find(name)) name += "_";
    return name;
  }
  void declare(const std::string &name, TensorKind kind, std::vector<Expr> shape) {
    d_.backward.tensors.push_back({name, kind, std::move(shape)});
  }
  static Expr index(const std::string &i) { return Var::make(i, VarKind::Index); }

  // 4. The forward's temporaries (the model's, and the `_pre` values split off) that the backward
  // does not read after all are temporaries again, computed where they are used and not stored per
  // node; the zero fills of the cases that do not compute them go.
  void drop_unsaved_states() {
    Program &f = d_.forward;
    std::set<std::string> dropped;
    for (TensorDecl &t : f.tensors) {
      const TensorDecl *was = p_.find(t.name);
      const bool temp = (was && was->kind == TensorKind::Temp) || declared_pre_.count(t.name);
      if (t.kind != TensorKind::State || !temp || t.name == f.output ||
          std::find(d_.saved.begin(), d_.saved.end(), t.name) != d_.saved.end())
        continue;
      t.kind = TensorKind::Temp;
      dropped.insert(t.name);
    }
    for (auto [c, kind] : {std::pair{&f.leaf, CaseKind::Leaf}, std::pair{&f.internal, CaseKind::Internal}})
      std::erase_if(c->body, [&, kind = kind](const Compute &op) {
        return dropped.count(op.tensor) && zero_filled_.count({kind, op.tensor});
      });
  }

  // 1. The forward of training: nonlinear weight products split, every value kept per node.
  Program training_forward() {
    Program f = source_;
    for (Case *c : {&f.leaf, &f.internal}) {
      std::vector<Compute> body;
      for (const Compute &op : c->body) {
        // Every function of an expression with a weight product in it is applied to a state of
        // its own, the product's value kept: t = f(Σ W x + b) · y becomes t_pre<k> = Σ W x + b,
        // t = f(t_pre<k>) · y.
        int outlined = 0;
        std::vector<Compute> pre;
        std::function<Expr(const Expr &)> outline = [&](const Expr &e) -> Expr {
          if (!contains(e, [](const Expr &y) { return y.as<Sum>() != nullptr; })) return e;
          if (const Unary *u = e.as<Unary>(); u && u->op != UnaryOp::Neg && additive_sums(u->a)) {
            std::string name = op.tensor + "_pre" + (outlined ? std::to_string(outlined) : "");
            outlined++;
            while (p_.find(name) || (f.find(name) && !declared_pre_.count(name))) name += "_";
            if (!f.find(name)) {
              f.tensors.push_back({name, TensorKind::State, f.get(op.tensor).shape});
              declared_pre_.insert(name);
            }
            pre.push_back({name, op.indices, u->a});
            std::vector<Expr> at;
            for (const std::string &i : op.indices) at.push_back(index(i));
            return Unary::make(u->op, Load::make(name, Var::node(), at));
          }
          if (const Binary *b = e.as<Binary>()) return Binary::make(b->op, outline(b->a), outline(b->b));
          if (const Select *sl = e.as<Select>())
            return Select::make(sl->cond, outline(sl->t), outline(sl->f));
          if (const Unary *u = e.as<Unary>()) return Unary::make(u->op, outline(u->a));
          return e;  // a Sum: a term of its own
        };
        Expr value = outline(op.value);
        if (!additive_sums(value)) cannot(op, "a weight product sits inside an expression");
        body.insert(body.end(), pre.begin(), pre.end());
        body.push_back({op.tensor, op.indices, value});
      }
      c->body = std::move(body);
    }
    for (TensorDecl &t : f.tensors)
      if (t.kind == TensorKind::Temp) t.kind = TensorKind::State;
    for (auto [c, kind] : {std::pair{&f.leaf, CaseKind::Leaf}, std::pair{&f.internal, CaseKind::Internal}}) {
      std::set<std::string> defined;
      for (const Compute &op : c->body) defined.insert(op.tensor);
      for (const TensorDecl &t : f.tensors) {
        if (t.kind != TensorKind::State || defined.count(t.name)) continue;
        std::vector<std::string> indices;
        for (size_t d = 0; d < t.shape.size(); d++) indices.push_back(fmt::format("i{}", d));
        c->body.push_back({t.name, indices, Expr(0.0f)});
        zero_filled_.insert({kind, t.name});
      }
    }
    verify(f);
    return f;
  }

  // `e` as `var + offset` with the offset a size expression: `var - offset` as an expression in
  // the backward index `at`, and the offset's affine form; nothing for any other form.
  struct Inverse {
    Expr at;  // the forward index at the backward index: at - offset
    Affine offset;
  };
  std::optional<Inverse> invert(const Expr &e, const std::string &var,
                                const std::string &at_index = "i0") const {
    std::optional<Affine> a = affine(e, {});
    if (!a || a->coeff(var) != 1) return std::nullopt;
    Expr at = index(at_index);
    for (const auto &[v, k] : a->coeffs) {
      if (v == var) continue;
      if (std::find(p_.size_vars.begin(), p_.size_vars.end(), v) == p_.size_vars.end()) return std::nullopt;
      Expr term = k == 1 || k == -1 ? Var::make(v, VarKind::Size)
                                    : Expr(int(std::abs(k))) * Var::make(v, VarKind::Size);
      at = k > 0 ? at - term : at + term;
    }
    if (a->constant > 0) at = at - Expr(int(a->constant));
    if (a->constant < 0) at = at + Expr(int(-a->constant));
    Affine off = *a;
    off.coeffs.erase(var);
    return Inverse{at, off};
  }

  static bool nonnegative(const std::optional<Affine> &a) {
    if (!a || a->constant < 0) return false;
    for (const auto &[v, k] : a->coeffs)
      if (k < 0) return false;
    return true;
  }

  // The forward variables a contribution ranges over, with their extents: a Compute's indices, and a
  // Sum's variable for a load in its body.
  using Vars = std::vector<std::pair<std::string, Expr>>;

  Vars compute_vars(const Compute &op) const {
    Vars vars;
    const TensorDecl &t = d_.forward.get(op.tensor);
    for (size_t d = 0; d < op.indices.size(); d++) vars.push_back({op.indices[d], t.shape[d]});
    return vars;
  }

  // `c`, an expression in the forward variables `vars`, as the share of a load at `indices` of a
  // tensor of `shape`, in the backward's indices i0, i1, ...: index d, `var + offset`, binds var to
  // i<d> − offset where that is in range (else the share is zero); a variable no index binds is
  // summed over its extent (Σ_i W[i, k] δ[i] for the operand of a product).
  Expr share(const Compute &op, const Expr &c, const std::vector<Expr> &indices,
             const std::vector<Expr> &shape, const Vars &vars) {
    if (is_zero(c)) return Expr();
    Expr value = c;
    for (const auto &[v, extent] : vars) value = substitute(value, v, index("$" + v));
    std::set<std::string> bound;
    Expr guard;
    for (size_t d = 0; d < indices.size(); d++) {
      std::optional<Affine> a = affine(indices[d], {});
      std::string var;
      Expr var_extent;
      int uses = 0;
      for (const auto &[v, extent] : vars)
        if (a && a->coeff(v) != 0) var = v, var_extent = extent, uses++;
      std::optional<Inverse> inv = uses == 1 ? invert(indices[d], var, fmt::format("i{}", d)) : std::nullopt;
      if (!inv || bound.count(var))
        cannot(op, fmt::format("it reads a tensor at index {}, not one variable plus a size",
                               to_string(indices[d])));
      bound.insert(var);
      value = substitute(value, "$" + var, inv->at);
      // inv->at >= 0 for every index >= 0 unless the offset can be positive.
      Affine neg = inv->offset * -1;
      if (!nonnegative(neg)) {
        Expr lo = Binary::make(BinOp::LE, Expr(0), inv->at);
        guard = guard.defined() ? Binary::make(BinOp::And, guard, lo) : lo;
      }
      // inv->at < var_extent for every index < shape[d] when var_extent + offset - shape[d] >= 0.
      std::optional<Affine> ve = affine(var_extent, {}), te = affine(shape[d], {});
      std::optional<Affine> room;
      if (ve && te) room = *ve + inv->offset - *te;
      if (!nonnegative(room)) {
        Expr hi = inv->at < var_extent;
        guard = guard.defined() ? Binary::make(BinOp::And, guard, hi) : hi;
      }
    }
    for (const auto &[v, extent] : vars) {
      if (bound.count(v) ||
          !contains(value, [&](const Expr &e) { return e.as<Var>() && e.as<Var>()->name == "$" + v; }))
        continue;
      const std::string s = fmt::format("s{}", sum_vars_++);
      value = Sum::make(s, extent, substitute(value, "$" + v, index(s)));
    }
    return guard.defined() ? sel(guard, value, Expr()) : value;
  }

  // Where the adjoint contribution `c` (in `vars`) of load `l` goes.
  void route(const Compute &op, CaseKind kind, const Load *l, const Expr &c, const Vars &vars) {
    if (is_zero(c)) return;
    const TensorDecl &t = d_.forward.get(l->tensor);
    if (t.kind == TensorKind::Param) {
      const StructCall *tok = l->indices.empty() ? nullptr : l->indices[0].as<StructCall>();
      if (tok && tok->fn == StructFn::Token) {
        std::vector<Expr> rest(l->indices.begin() + 1, l->indices.end()),
            shape(t.shape.begin() + 1, t.shape.end());
        row_terms_[l->tensor].push_back(share(op, c, rest, shape, vars));
        return;
      }
      reduction_terms_[{l->tensor, kind}].push_back(share(op, c, l->indices, t.shape, vars));
      return;
    }
    Expr moved = share(op, c, l->indices, t.shape, vars);
    if (is_node_var(l->node)) {
      self_terms_[l->tensor].push_back(moved);
      return;
    }
    const StructCall *child = l->node.as<StructCall>();
    GROVE_CHECK(child && child->fn == StructFn::Child && child->arg.as<IntImm>(), "a forward load at {}",
                to_string(l->node));
    child_terms_[{l->tensor, int(child->arg.as<IntImm>()->value)}].push_back(moved);
  }

  // The backward's indices of a tensor of `rank`: i0, i1, ...
  static std::vector<std::string> indices_of(size_t rank) {
    std::vector<std::string> out;
    for (size_t d = 0; d < rank; d++) out.push_back(fmt::format("i{}", d));
    return out;
  }
  static std::vector<Expr> index_exprs(size_t rank) {
    std::vector<Expr> out;
    for (const std::string &i : indices_of(rank)) out.push_back(index(i));
    return out;
  }

  std::string adjoint(const std::string &t) const { return "d_" + t; }
  std::string child_adjoint(const std::string &t, int k) const { return fmt::format("d_{}_at{}", t, k); }

  // The transposed block of `param` that a product over rows [offset, offset + rows) reads.
  std::string transposed(const std::string &param, const Expr &offset, const Expr &rows) {
    std::string key = fmt::format("{}|{}|{}", param, to_string(offset), to_string(rows));
    auto it = transposed_.find(key);
    if (it != transposed_.end()) return it->second;
    std::string name = fresh(param + "_T");
    declare(name, TensorKind::Param, {p_.get(param).shape[1], rows});
    d_.transposed.push_back({name, param, offset, rows});
    transposed_[key] = name;
    return name;
  }

  // A ragged sum Σ_{k < num_children(n)} B in `op` (internal case): every child takes its share of
  // the adjoint of each state B reads at child(n, k) itself, from its parent's d_t at parent(n) —
  // in a tree each child has one parent, so nothing is scattered.
  void pull_ragged_sums(const Compute &op) {
    std::optional<std::vector<std::pair<const Sum *, int>>> sums = additive_sums(op.value);
    if (!sums) return;  // training_forward has refused it
    const std::string &var = op.indices[0];
    const TensorDecl &t = d_.forward.get(op.tensor);
    for (const auto &[s, sign] : *sums) {
      if (affine(s->extent, {})) continue;  // a weight product (product())
      const StructCall *nc = s->extent.as<StructCall>();
      if (!nc || nc->fn != StructFn::NumChildren)
        cannot(op, "a sum's extent is neither a size nor num_children(n)");
      if (contains(s->body, [](const Expr &e) { return e.as<Sum>() != nullptr; }))
        cannot(op, "a sum over the children holds a product");
      const Expr dt = Load::make(adjoint(op.tensor), Var::node(), {index(var)});
      for (const Load *l : loads_outside_sums(s->body)) {
        const TensorDecl &x = d_.forward.get(l->tensor);
        const StructCall *c = l->node.as<StructCall>();
        const Var *k = c && c->fn == StructFn::Child ? c->arg.as<Var>() : nullptr;
        if (x.kind == TensorKind::Param || !k || k->name != s->var)
          cannot(op, fmt::format("a sum over the children reads {} other than at child(n, {})", l->tensor,
                                 s->var));
        Expr part = mul(dt, diff(s->body, l));
        if (sign < 0) part = is_zero(part) ? part : -part;
        ToChildFrame frame(s->var);
        Expr pulled = frame.mutate(value_of(part));
        if (!frame.ok) cannot(op, "a sum over the children reads another child");
        pulled_terms_[l->tensor].push_back(share(op, pulled, l->indices, x.shape, {{var, t.shape[0]}}));
        read_at_parent_.insert(adjoint(op.tensor));
      }
    }
  }

  // 2. One case of the backward, from the same case of the training forward.
  void differentiate_case(const Case &fc, Case &bc) {
    self_terms_.clear();
    child_terms_.clear();
    const CaseKind kind = fc.kind;
    const Expr n = Var::node();
    for (size_t j = fc.body.size(); j-- > 0;) {
      const Compute &op = fc.body[j];
      if (zero_filled_.count({kind, op.tensor})) continue;
      const TensorDecl &t = d_.forward.get(op.tensor);
      const std::vector<Expr> here = index_exprs(t.shape.size());
      std::vector<Expr> terms = self_terms_[op.tensor];
      if (op.tensor == p_.output) terms.push_back(Load::make(d_.seed, n, here));
      if (auto s = slots_.find(op.tensor); s != slots_.end()) {
        // A tree node's one parent; a DAG's or sequence's successors, each at the slot it reads.
        const bool dag = has_predecessor_slots(p_.structure);
        const Expr j = index("j0");
        const Expr parent = dag ? StructCall::parent(n, j) : StructCall::parent(n);
        const Expr slot = dag ? StructCall::child_slot(n, j) : StructCall::child_slot(n);
        Expr from_parent;
        for (int k : s->second) {
          Expr at = Load::make(child_adjoint(op.tensor, k), parent, here);
          Expr is_k = Binary::make(BinOp::EQ, slot, Expr(k));
          from_parent = from_parent.defined() ? Select::make(is_k, at, from_parent) : sel(is_k, at, Expr());
        }
        terms.push_back(dag ? Sum::make("j0", StructCall::num_parents(n), from_parent) : from_parent);
      }
      if (auto p = pulled_terms_.find(op.tensor); p != pulled_terms_.end())
        terms.insert(terms.end(), p->second.begin(), p->second.end());
      Expr value = sum_of(terms);
      const std::string dt = adjoint(op.tensor);
      const bool read_by_children = kind == CaseKind::Internal && read_at_parent_.count(dt);
      if (is_zero(value) && !read_by_children) continue;
      if (!d_.backward.find(dt))
        declare(dt, read_by_children ? TensorKind::State : TensorKind::Temp, t.shape);
      if (read_by_children)
        for (TensorDecl &decl : d_.backward.tensors)
          if (decl.name == dt) decl.kind = TensorKind::State;
      bc.body.push_back({dt, indices_of(t.shape.size()), value_of(value)});
      std::vector<Expr> at_vars;
      for (const std::string &i : op.indices) at_vars.push_back(index(i));
      const Expr dt_at_vars = Load::make(dt, n, at_vars);
      const Vars vars = compute_vars(op);
      // Elementwise: d V / d load, at the load's own index.
      // A function at the top of the step (t = sigmoid(t_pre)) reads its value, t, back.
      const Expr kept = Load::make(op.tensor, n, at_vars);
      for (const Load *l : loads_outside_sums(op.value))
        route(op, kind, l, mul(dt_at_vars, diff(op.value, l, kept)), vars);
      // Sums: weight products Σ_k W[i + c, k] · x(n, k, ...) as GEMMs with W's transpose, other
      // products of the node's tensors term by term; ragged sums over the children are pulled.
      std::optional<std::vector<std::pair<const Sum *, int>>> sums = additive_sums(op.value);
      GROVE_CHECK(sums.has_value(), "an unsplit product in {}", op.tensor);
      for (const auto &[s, sign] : *sums) {
        if (!affine(s->extent, {})) continue;  // pull_ragged_sums
        if (product(op, kind, *s, sign, bc)) continue;
        if (contains(s->body, [](const Expr &e) { return e.as<Sum>() != nullptr; }))
          cannot(op, "a sum holds another sum");
        Vars inner = vars;
        inner.push_back({s->var, s->extent});
        Expr signed_dt = sign < 0 ? -dt_at_vars : dt_at_vars;
        for (const Load *l : loads_outside_sums(s->body))
          route(op, kind, l, mul(signed_dt, diff(s->body, l)), inner);
      }
    }
    if (kind == CaseKind::Internal)
      for (const auto &[tensor, ks] : slots_)
        for (int k : ks) {
          const std::string name = child_adjoint(tensor, k);
          const std::vector<Expr> &shape = d_.forward.get(tensor).shape;
          declare(name, TensorKind::State, shape);
          bc.body.push_back({name, indices_of(shape.size()), value_of(sum_of(child_terms_[{tensor, k}]))});
        }
    for (auto &[param, terms] : row_terms_) {
      const std::string name = "d_" + param + "_row";
      const std::vector<Expr> &pshape = p_.get(param).shape;
      std::vector<Expr> shape(pshape.begin() + 1, pshape.end());
      if (!d_.backward.find(name)) {
        declare(name, TensorKind::State, shape);
        d_.rows.push_back({name, param});
      }
      bc.body.push_back({name, indices_of(shape.size()), value_of(sum_of(terms))});
    }
    row_terms_.clear();
  }

  // A weight product Σ_k W[i + c, k] · x(n, k, j...) (i the Compute's first index, x not reading
  // it): W's gradient as a reduction, the operand's adjoint as a GEMM (or per-node matrix product)
  // with W's transposed row block. False when the Sum is no weight product.
  bool product(const Compute &op, CaseKind kind, const Sum &s, int sign, Case &bc) {
    const std::string &var = op.indices[0];
    const TensorDecl &t = d_.forward.get(op.tensor);
    const Expr &rows = t.shape[0];
    const Binary *m = s.body.as<Binary>();
    const Load *w = nullptr;
    Expr x;
    if (m && m->op == BinOp::Mul) {
      for (auto [a, other] : {std::pair{m->a, m->b}, std::pair{m->b, m->a}}) {
        const Load *l = a.as<Load>();
        if (!l || d_.forward.get(l->tensor).kind != TensorKind::Param || l->indices.size() != 2) continue;
        const Var *k = l->indices[1].as<Var>();
        if (!k || k->name != s.var || !invert(l->indices[0], var)) continue;
        if (contains(other, [&](const Expr &e) { return e.as<Var>() && e.as<Var>()->name == var; })) continue;
        w = l;
        x = other;
        break;
      }
    }
    if (!w) return false;
    if (sign < 0) cannot(op, "a weight product is subtracted");
    const Expr n = Var::node();
    const std::string dt = adjoint(op.tensor);
    std::vector<Expr> at_vars;
    for (const std::string &i : op.indices) at_vars.push_back(index(i));
    Vars inner = compute_vars(op);
    inner.push_back({s.var, s.extent});
    // The weight's gradient: grad_W[i, k] += Σ_n Σ_j d_t[n, i - c, j] · x(n, k, j) over the case's nodes.
    route(op, kind, w, mul(Load::make(dt, n, at_vars), x), inner);
    // The operand's adjoint: Σ_r W_T[q, r] · d_t[n, r, j], W_T rows [c, c + rows) of W transposed.
    const std::string wt = transposed(w->tensor, substitute(w->indices[0], var, Expr(0)), rows);
    // The operand's shape and the backward's indices: its k first, then the Compute's others.
    std::vector<Expr> xshape{s.extent};
    xshape.insert(xshape.end(), t.shape.begin() + 1, t.shape.end());
    std::vector<Expr> dt_k = index_exprs(t.shape.size());
    dt_k[0] = index("k0");
    Expr gemm =
        Sum::make("k0", rows, Load::make(wt, Expr(), {index("i0"), index("k0")}) * Load::make(dt, n, dt_k));
    const Load *bare = x.as<Load>();
    std::vector<Expr> x_vars{index(s.var)};
    for (size_t d = 1; d < op.indices.size(); d++) x_vars.push_back(index(op.indices[d]));
    auto same_indices = [&](const std::vector<Expr> &idx) {
      if (idx.size() != x_vars.size()) return false;
      for (size_t d = 0; d < idx.size(); d++)
        if (!idx[d].as<Var>() || idx[d].as<Var>()->name != x_vars[d].as<Var>()->name) return false;
      return true;
    };
    auto same_shape = [&](const std::vector<Expr> &shape) {
      if (shape.size() != xshape.size()) return false;
      for (size_t d = 0; d < shape.size(); d++)
        if (to_string(shape[d]) != to_string(xshape[d])) return false;
      return true;
    };
    if (bare && d_.forward.get(bare->tensor).kind == TensorKind::Param && bare->indices.size() == 2 &&
        op.indices.size() == 1) {
      const StructCall *tok = bare->indices[0].as<StructCall>();
      const Var *k = bare->indices[1].as<Var>();
      if (tok && tok->fn == StructFn::Token && k && k->name == s.var &&
          to_string(p_.get(bare->tensor).shape[1]) == to_string(s.extent)) {
        row_terms_[bare->tensor].push_back(gemm);  // an embedding row: its gradient is the product
        return true;
      }
    }
    if (bare && d_.forward.get(bare->tensor).kind != TensorKind::Param && same_indices(bare->indices) &&
        same_shape(d_.forward.get(bare->tensor).shape)) {
      // x = X[node, k, j...]: the product is a GEMM term of X's adjoint directly.
      if (is_node_var(bare->node)) {
        self_terms_[bare->tensor].push_back(gemm);
      } else {
        const StructCall *child = bare->node.as<StructCall>();
        child_terms_[{bare->tensor, int(child->arg.as<IntImm>()->value)}].push_back(gemm);
      }
      return true;
    }
    // Otherwise the operand's adjoint is a tensor of its own, and each load in x gets its share.
    const std::string g = fresh(fmt::format("d_{}_x{}", op.tensor, operand_count_++));
    declare(g, TensorKind::Temp, xshape);
    bc.body.push_back({g, indices_of(xshape.size()), gemm});
    Vars xv{{s.var, s.extent}};
    for (size_t d = 1; d < op.indices.size(); d++) xv.push_back({op.indices[d], t.shape[d]});
    const Expr g_at = Load::make(g, n, x_vars);
    for (const Load *l : loads_outside_sums(x)) route(op, kind, l, mul(g_at, diff(x, l)), xv);
    return true;
  }

  // 3. Reductions, the Saved tensors, the kinds of the adjoints.
  void finish() {
    Program &b = d_.backward;
    for (const TensorDecl &t : p_.tensors) {
      if (t.kind != TensorKind::Param) continue;
      std::string g = fresh("grad_" + t.name);
      bool any = false;
      for (CaseKind kind : {CaseKind::Leaf, CaseKind::Internal}) {
        Expr value = sum_of(reduction_terms_[{t.name, kind}]);
        if (is_zero(value)) continue;
        if (!any) declare(g, TensorKind::Gradient, t.shape);
        any = true;
        b.reductions.push_back({g, kind, indices_of(t.shape.size()), value});
      }
      bool rows = std::any_of(d_.rows.begin(), d_.rows.end(),
                              [&](const RowGradient &r) { return r.param == t.name; });
      if (any)
        d_.gradients.push_back({t.name, g});
      else if (!rows)
        d_.gradients.push_back({t.name, ""});  // no path from the loss: zero
    }
    // What the reductions read stays per node.
    std::set<std::string> kept;
    for (const Reduction &r : b.reductions)
      for_each_node(r.value, [&](const Expr &e) {
        if (const Load *l = e.as<Load>()) kept.insert(l->tensor);
      });
    for (TensorDecl &t : b.tensors)
      if (t.kind == TensorKind::Temp && kept.count(t.name)) t.kind = TensorKind::State;
    // The forward's states it reads are Saved, under their own names.
    std::set<std::string> read;
    auto collect = [&](const Expr &v) {
      for_each_node(v, [&](const Expr &e) {
        const Load *l = e.as<Load>();
        if (l && !b.find(l->tensor)) read.insert(l->tensor);
      });
    };
    for (const Case *c : {&b.leaf, &b.internal})
      for (const Compute &op : c->body) collect(op.value);
    for (const Reduction &r : b.reductions) collect(r.value);
    for (const TensorDecl &t : d_.forward.tensors)
      if (read.count(t.name)) {
        GROVE_CHECK(t.kind == TensorKind::State, "the backward reads the forward's {} {}", to_string(t.kind),
                    t.name);
        declare(t.name, TensorKind::Saved, t.shape);
        d_.saved.push_back(t.name);
      }
    for (const TensorDecl &t : b.tensors)
      if (t.kind == TensorKind::State) {
        b.output = t.name;
        break;
      }
    if (b.output.empty()) cannot_program("nothing in it depends on the output");
  }

  const Program &p_;
  Derivative d_;
  std::set<std::pair<CaseKind, std::string>> zero_filled_;
  std::map<std::string, std::set<int>> slots_;
  Program source_ = p_;  // the program differentiated (trees of any arity: child terms hoisted)
  std::set<std::string> declared_pre_;
  std::map<std::string, std::vector<Expr>> self_terms_, row_terms_, pulled_terms_;
  std::set<std::string> read_at_parent_;  // adjoints the children read at parent(n)
  std::map<std::pair<std::string, int>, std::vector<Expr>> child_terms_;
  std::map<std::pair<std::string, CaseKind>, std::vector<Expr>> reduction_terms_;
  int sum_vars_ = 0;
  std::map<std::string, std::string> transposed_;
  int operand_count_ = 0;
};

}  // namespace

Derivative differentiate(const ilir::Program &program) { return Differentiator(program).run(); }

}  // namespace grove::plan
