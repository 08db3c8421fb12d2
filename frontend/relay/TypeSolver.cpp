#include "frontend/relay/TypeSolver.h"

#include <algorithm>

#include "support/Error.h"

namespace grove::relay {

namespace {

// The ADT name and arguments of a TypeCall or of a bare GlobalTypeVar (an ADT without parameters).
bool adt_parts(const Type &t, std::string *name, std::vector<Type> *args) {
  if (const auto *g = t.as<GlobalTypeVar>()) {
    *name = g->name;
    args->clear();
    return true;
  }
  if (const auto *c = t.as<TypeCall>()) {
    const auto *g = c->func.as<GlobalTypeVar>();
    if (!g) return false;
    *name = g->name;
    *args = c->args;
    return true;
  }
  return false;
}

bool same_types(const std::vector<Type> &a, const std::vector<Type> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

bool contains_hole(const Type &t) {
  switch (t->kind) {
    case TypeKind::IncompleteType:
      return true;
    case TypeKind::TupleType:
      return std::any_of(t.as<TupleType>()->fields.begin(), t.as<TupleType>()->fields.end(), contains_hole);
    case TypeKind::FuncType: {
      const auto *f = t.as<FuncType>();
      return contains_hole(f->ret_type) ||
             std::any_of(f->arg_types.begin(), f->arg_types.end(), contains_hole);
    }
    case TypeKind::RefType:
      return contains_hole(t.as<RefType>()->value);
    case TypeKind::TypeCall:
      return std::any_of(t.as<TypeCall>()->args.begin(), t.as<TypeCall>()->args.end(), contains_hole);
    default:
      return false;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Holes and the union-find
// ---------------------------------------------------------------------------------------------

Type TypeSolver::fresh(Span span) {
  Type hole = IncompleteType::make(std::move(span));
  hole_id(hole);
  return hole;
}

int TypeSolver::hole_id(const Type &hole) {
  auto [it, inserted] = hole_ids_.emplace(hole.get(), static_cast<int>(classes_.size()));
  if (inserted) {
    HoleClass c;
    c.parent = it->second;
    c.rep = hole;
    classes_.push_back(std::move(c));
  }
  return it->second;
}

int TypeSolver::find(int id) {
  int root = id;
  while (classes_[root].parent != root) root = classes_[root].parent;
  // Path compression, iteratively: chains of 100,000 let-bound holes are normal.
  while (classes_[id].parent != root) {
    int next = classes_[id].parent;
    classes_[id].parent = root;
    id = next;
  }
  return root;
}

void TypeSolver::link(int child, int root) {
  classes_[child].parent = root;
  classes_[root].size += classes_[child].size;
  // The child's waiters move to the root, or run again now if the root is bound (the child's holes
  // have just learned their type).
  std::vector<int> waiters;
  waiters.swap(classes_[child].waiters);
  if (classes_[root].bound.defined()) {
    for (int r : waiters) enqueue(r);
  } else {
    classes_[root].waiters.insert(classes_[root].waiters.end(), waiters.begin(), waiters.end());
  }
}

int TypeSolver::merge(int a, int b) {
  // Union by size keeps find() short.
  if (classes_[a].size < classes_[b].size) std::swap(a, b);
  link(b, a);
  return a;
}

void TypeSolver::bind(int root, const Type &t) {
  GROVE_CHECK(!t.as<IncompleteType>(), "binding a hole to a hole");
  classes_[root].bound = t;
  std::vector<int> wake;
  wake.swap(classes_[root].waiters);
  for (int r : wake) enqueue(r);
}

bool TypeSolver::occurs(int root, const Type &t) {
  switch (t->kind) {
    case TypeKind::IncompleteType: {
      int r = find(hole_id(t));
      if (r == root) return true;
      return classes_[r].bound.defined() && occurs(root, classes_[r].bound);
    }
    case TypeKind::TupleType:
      for (const Type &f : t.as<TupleType>()->fields)
        if (occurs(root, f)) return true;
      return false;
    case TypeKind::FuncType: {
      const auto *f = t.as<FuncType>();
      for (const Type &a : f->arg_types)
        if (occurs(root, a)) return true;
      return occurs(root, f->ret_type);
    }
    case TypeKind::RefType:
      return occurs(root, t.as<RefType>()->value);
    case TypeKind::TypeCall:
      for (const Type &a : t.as<TypeCall>()->args)
        if (occurs(root, a)) return true;
      return false;
    default:
      return false;
  }
}

Type TypeSolver::shallow(const Type &t) {
  if (!t.as<IncompleteType>()) return t;
  const HoleClass &c = classes_[find(hole_id(t))];
  return c.bound.defined() ? c.bound : c.rep;
}

Type TypeSolver::resolve(const Type &t) {
  Type s = shallow(t);
  switch (s->kind) {
    case TypeKind::TupleType: {
      const auto *n = s.as<TupleType>();
      std::vector<Type> fields;
      for (const Type &f : n->fields) fields.push_back(resolve(f));
      return same_types(fields, n->fields) ? s : TupleType::make(std::move(fields), n->span);
    }
    case TypeKind::FuncType: {
      const auto *n = s.as<FuncType>();
      std::vector<Type> args;
      for (const Type &a : n->arg_types) args.push_back(resolve(a));
      Type ret = resolve(n->ret_type);
      if (same_types(args, n->arg_types) && ret.same_as(n->ret_type)) return s;
      return FuncType::make(std::move(args), std::move(ret), n->type_params, n->span);
    }
    case TypeKind::RefType: {
      const auto *n = s.as<RefType>();
      Type v = resolve(n->value);
      return v.same_as(n->value) ? s : RefType::make(std::move(v), n->span);
    }
    case TypeKind::TypeCall: {
      const auto *n = s.as<TypeCall>();
      std::vector<Type> args;
      for (const Type &a : n->args) args.push_back(resolve(a));
      return same_types(args, n->args) ? s : TypeCall::make(n->func, std::move(args), n->span);
    }
    default:
      return s;
  }
}

bool TypeSolver::has_holes(const Type &t) { return contains_hole(resolve(t)); }

// ---------------------------------------------------------------------------------------------
// Unification
// ---------------------------------------------------------------------------------------------

Type TypeSolver::unify(const Type &expected, const Type &found) {
  GROVE_CHECK(expected.defined() && found.defined(), "unifying an undefined type");
  int ra = expected.as<IncompleteType>() ? find(hole_id(expected)) : -1;
  int rb = found.as<IncompleteType>() ? find(hole_id(found)) : -1;
  if (ra >= 0 && ra == rb) return shallow(expected);
  bool a_free = ra >= 0 && !classes_[ra].bound.defined();
  bool b_free = rb >= 0 && !classes_[rb].bound.defined();
  Type a = shallow(expected), b = shallow(found);

  // 1. Holes: merge two unbound classes, or bind an unbound one to the other side.
  if (a_free && b_free) return classes_[merge(ra, rb)].rep;
  if (a_free || b_free) {
    int hole = a_free ? ra : rb, other = a_free ? rb : ra;
    const Type &value = a_free ? b : a;
    if (occurs(hole, value)) throw TypeMismatch{resolve(expected), resolve(found)};
    if (other >= 0) {
      link(hole, other);  // the bound class stays the root and wakes the hole's waiters
    } else {
      bind(hole, value);
    }
    return value;
  }

  // 2. Two known types: their join, which bound holes on either side take as their new binding.
  Type joined = unify_structural(a, b);
  for (int r : {ra, rb}) {
    if (r < 0) continue;
    int root = find(r);
    if (classes_[root].bound.same_as(joined)) continue;
    if (occurs(root, joined)) throw TypeMismatch{resolve(expected), resolve(found)};
    classes_[root].bound = joined;
  }
  if (ra >= 0 && rb >= 0 && find(ra) != find(rb)) merge(find(ra), find(rb));
  return joined;
}

Type TypeSolver::unify_structural(const Type &a, const Type &b) {
  std::string name_a, name_b;
  std::vector<Type> args_a, args_b;
  if (adt_parts(a, &name_a, &args_a)) {
    if (!adt_parts(b, &name_b, &args_b) || name_a != name_b || args_a.size() != args_b.size())
      throw TypeMismatch{a, b};
    std::vector<Type> args;
    for (size_t i = 0; i < args_a.size(); ++i) args.push_back(unify(args_a[i], args_b[i]));
    if (same_types(args, args_a)) return a;
    return TypeCall::make(a.as<TypeCall>()->func, std::move(args), a->span);
  }
  if (a->kind != b->kind) throw TypeMismatch{a, b};
  switch (a->kind) {
    case TypeKind::TensorType: {
      const auto *ta = a.as<TensorType>();
      const auto *tb = b.as<TensorType>();
      if (ta->dtype != tb->dtype || ta->shape.size() != tb->shape.size()) throw TypeMismatch{a, b};
      Shape shape = ta->shape;
      for (size_t i = 0; i < shape.size(); ++i) {
        // Relay's UnifyDim: `?` against anything is `?`; two different known sizes do not unify.
        if (shape[i] == kAnyDim || tb->shape[i] == kAnyDim) {
          shape[i] = kAnyDim;
        } else if (shape[i] != tb->shape[i]) {
          throw TypeMismatch{a, b};
        }
      }
      return shape == ta->shape ? a : TensorType::make(std::move(shape), ta->dtype, a->span);
    }
    case TypeKind::TupleType: {
      const auto *ta = a.as<TupleType>();
      const auto *tb = b.as<TupleType>();
      if (ta->fields.size() != tb->fields.size()) throw TypeMismatch{a, b};
      std::vector<Type> fields;
      for (size_t i = 0; i < ta->fields.size(); ++i) fields.push_back(unify(ta->fields[i], tb->fields[i]));
      return same_types(fields, ta->fields) ? a : TupleType::make(std::move(fields), a->span);
    }
    case TypeKind::FuncType:
      return unify_func(a.as<FuncType>(), a, b.as<FuncType>(), b);
    case TypeKind::RefType: {
      const auto *ta = a.as<RefType>();
      Type v = unify(ta->value, b.as<RefType>()->value);
      return v.same_as(ta->value) ? a : RefType::make(std::move(v), a->span);
    }
    case TypeKind::TypeVar:
      if (!a.same_as(b)) throw TypeMismatch{a, b};
      return a;
    default:
      throw TypeMismatch{a, b};
  }
}

Type TypeSolver::unify_func(const FuncType *fa, const Type &a, const FuncType *fb, const Type &b) {
  size_t na = fa->type_params.size(), nb = fb->type_params.size();
  if (na > 0 && nb > 0) {
    // Two generic functions: equal up to renaming b's parameters to a's.
    if (na != nb) throw TypeMismatch{a, b};
    Type body_a = FuncType::make(fa->arg_types, fa->ret_type);
    Type body_b = substitute(FuncType::make(fb->arg_types, fb->ret_type), fb->type_params, fa->type_params);
    Type joined = unify_func(body_a.as<FuncType>(), body_a, body_b.as<FuncType>(), body_b);
    const auto *j = joined.as<FuncType>();
    if (same_types(j->arg_types, fa->arg_types) && j->ret_type.same_as(fa->ret_type)) return a;
    return FuncType::make(j->arg_types, j->ret_type, fa->type_params, a->span);
  }
  // A generic function used where a monomorphic one is expected: instantiate it first.
  if (na > 0) return unify(instantiate(a), b);
  if (nb > 0) return unify(a, instantiate(b));
  if (fa->arg_types.size() != fb->arg_types.size()) throw TypeMismatch{a, b};
  std::vector<Type> args;
  for (size_t i = 0; i < fa->arg_types.size(); ++i) args.push_back(unify(fa->arg_types[i], fb->arg_types[i]));
  Type ret = unify(fa->ret_type, fb->ret_type);
  if (same_types(args, fa->arg_types) && ret.same_as(fa->ret_type)) return a;
  return FuncType::make(std::move(args), std::move(ret), {}, a->span);
}

// ---------------------------------------------------------------------------------------------
// Type parameters
// ---------------------------------------------------------------------------------------------

Type TypeSolver::substitute(const Type &t, const std::vector<Type> &params, const std::vector<Type> &args) {
  if (params.empty()) return t;
  auto sub_all = [&](const std::vector<Type> &ts, const std::vector<Type> &ps, const std::vector<Type> &as) {
    std::vector<Type> out;
    for (const Type &x : ts) out.push_back(substitute(x, ps, as));
    return out;
  };
  switch (t->kind) {
    case TypeKind::TypeVar:
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].same_as(t)) return args[i];
      return t;
    case TypeKind::TupleType: {
      const auto *n = t.as<TupleType>();
      auto fields = sub_all(n->fields, params, args);
      return same_types(fields, n->fields) ? t : TupleType::make(std::move(fields), n->span);
    }
    case TypeKind::FuncType: {
      const auto *n = t.as<FuncType>();
      // A nested generic function's own parameters shadow ours.
      std::vector<Type> ps, as;
      for (size_t i = 0; i < params.size(); ++i) {
        bool shadowed = std::any_of(n->type_params.begin(), n->type_params.end(),
                                    [&](const Type &p) { return p.same_as(params[i]); });
        if (!shadowed) {
          ps.push_back(params[i]);
          as.push_back(args[i]);
        }
      }
      auto arg_types = sub_all(n->arg_types, ps, as);
      Type ret = substitute(n->ret_type, ps, as);
      if (same_types(arg_types, n->arg_types) && ret.same_as(n->ret_type)) return t;
      return FuncType::make(std::move(arg_types), std::move(ret), n->type_params, n->span);
    }
    case TypeKind::RefType: {
      const auto *n = t.as<RefType>();
      Type v = substitute(n->value, params, args);
      return v.same_as(n->value) ? t : RefType::make(std::move(v), n->span);
    }
    case TypeKind::TypeCall: {
      const auto *n = t.as<TypeCall>();
      auto call_args = sub_all(n->args, params, args);
      return same_types(call_args, n->args) ? t : TypeCall::make(n->func, std::move(call_args), n->span);
    }
    default:
      return t;
  }
}

Type TypeSolver::instantiate(const Type &t, std::vector<Type> *holes) {
  Type r = resolve(t);
  const auto *f = r.as<FuncType>();
  if (!f || f->type_params.empty()) return r;
  std::vector<Type> fresh_holes;
  for (const Type &p : f->type_params) fresh_holes.push_back(fresh(p->span));
  Type body = substitute(FuncType::make(f->arg_types, f->ret_type, {}, f->span), f->type_params, fresh_holes);
  if (holes) *holes = std::move(fresh_holes);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Relations
// ---------------------------------------------------------------------------------------------

int TypeSolver::add_relation(std::vector<Type> args, RelationFn fn) {
  int id = static_cast<int>(relations_.size());
  Relation r;
  r.args = std::move(args);
  r.fn = std::move(fn);
  relations_.push_back(std::move(r));
  enqueue(id);
  return id;
}

void TypeSolver::enqueue(int relation) {
  Relation &r = relations_[relation];
  if (r.solved || r.queued) return;
  r.queued = true;
  queue_.push_back(relation);
}

void TypeSolver::collect_holes(const Type &resolved, std::vector<int> *roots) {
  switch (resolved->kind) {
    case TypeKind::IncompleteType:
      roots->push_back(find(hole_id(resolved)));
      return;
    case TypeKind::TupleType:
      for (const Type &f : resolved.as<TupleType>()->fields) collect_holes(f, roots);
      return;
    case TypeKind::FuncType:
      for (const Type &a : resolved.as<FuncType>()->arg_types) collect_holes(a, roots);
      collect_holes(resolved.as<FuncType>()->ret_type, roots);
      return;
    case TypeKind::RefType:
      collect_holes(resolved.as<RefType>()->value, roots);
      return;
    case TypeKind::TypeCall:
      for (const Type &a : resolved.as<TypeCall>()->args) collect_holes(a, roots);
      return;
    default:
      return;
  }
}

void TypeSolver::solve() {
  // Relations unify types, which may queue other relations; they never add relations, and solve()
  // is not re-entered from inside one.
  if (solving_) return;
  struct Guard {
    bool &flag;
    ~Guard() { flag = false; }
  } guard{solving_};
  solving_ = true;
  size_t head = 0;
  while (head < queue_.size()) {
    int id = queue_[head++];
    relations_[id].queued = false;
    if (relations_[id].solved) continue;
    std::vector<Type> resolved;
    for (const Type &a : relations_[id].args) resolved.push_back(resolve(a));
    RelationFn fn = relations_[id].fn;
    if (fn(resolved)) {
      relations_[id].solved = true;
      continue;
    }
    std::vector<int> roots;
    for (const Type &a : resolved) collect_holes(a, &roots);
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    for (int root : roots) classes_[root].waiters.push_back(id);
  }
  queue_.clear();
}

std::vector<int> TypeSolver::pending(int first) const {
  std::vector<int> ids;
  for (size_t i = first; i < relations_.size(); ++i)
    if (!relations_[i].solved) ids.push_back(static_cast<int>(i));
  return ids;
}

}  // namespace grove::relay
