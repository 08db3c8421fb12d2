#pragma once
// The constraint solver behind Relay type inference (TypeInfer.cpp): unification of types with
// holes (IncompleteType) over a union-find, and deferred relations re-run when a hole they wait on
// is solved. It knows nothing of expressions; the caller words every error.
//
// Unification (after TVM's type_solver.cc):
//   1. A hole is identified by its node. Holes live in a union-find; a class is either unbound or
//      bound to a type (which may itself contain holes).
//   2. unify(a, b) with a hole binds it (after an occurs check) or merges the two classes; two
//      bound or concrete types unify structurally and the result is their *join*: a dimension `?`
//      against any dimension gives `?` (Relay joins toward less precision), and a bound hole is
//      re-bound to the join.
//   3. A generic FuncType (with type parameters) unifies with another of as many parameters after
//      renaming, and with a non-generic one after instantiating its parameters with fresh holes.
// Relations:
//   1. A relation is a callback over the resolved types of its arguments; it returns true when it
//      has done its work (unified its result), false when an argument is not known enough yet.
//   2. A relation that returns false waits on the unbound holes of its resolved arguments; binding
//      one of them queues it again. solve() runs queued relations until the queue is empty, so each
//      relation runs once plus once per hole of its arguments that gets bound: linear on let chains.
//   3. Relations that never get enough information stay pending(); the caller reports them.

#include <functional>
#include <unordered_map>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// Thrown by unify(): the innermost pair of types that could not be made equal (or an infinite
// type: a hole unified with a type containing it). The caller reports the outer types.
struct TypeMismatch {
  Type expected, found;
};

class TypeSolver {
 public:
  // A new hole.
  Type fresh(Span span = {});

  // Makes `expected` and `found` equal and returns the unified type. Throws TypeMismatch.
  Type unify(const Type &expected, const Type &found);

  // `t` with its outermost hole replaced by its binding (or its class representative when unbound).
  Type shallow(const Type &t);
  // `t` with every solved hole replaced by its binding, recursively; unbound holes become their
  // class representative.
  Type resolve(const Type &t);
  // True when the resolved `t` still contains a hole.
  bool has_holes(const Type &t);

  // `t` with the TypeVars of `params` replaced by `args` (by node identity).
  static Type substitute(const Type &t, const std::vector<Type> &params, const std::vector<Type> &args);
  // A generic FuncType with its type parameters replaced by fresh holes (returned in `holes`);
  // other types unchanged.
  Type instantiate(const Type &t, std::vector<Type> *holes = nullptr);

  using RelationFn = std::function<bool(const std::vector<Type> &resolved_args)>;
  // Adds a relation over `args`; it is queued and runs at the next solve(). Returns its id.
  int add_relation(std::vector<Type> args, RelationFn fn);
  // Runs queued relations until none is queued. Errors thrown by relations propagate.
  void solve();
  // Ids of the relations from `first` on that are not solved yet, in the order they were added.
  std::vector<int> pending(int first = 0) const;

 private:
  struct HoleClass {
    int parent;
    int size = 1;
    Type rep;                  // the IncompleteType standing for the class while unbound
    Type bound;                // null while unbound
    std::vector<int> waiters;  // relations waiting for this class to be bound
  };
  struct Relation {
    std::vector<Type> args;
    RelationFn fn;
    bool solved = false;
    bool queued = false;
  };

  int hole_id(const Type &hole);  // registers holes made elsewhere (the parser's `_`) lazily
  int find(int id);
  int merge(int a, int b);         // unites two classes by size; returns the new root
  void link(int child, int root);  // puts `child`'s class under `root`
  void bind(int root, const Type &t);
  bool occurs(int root, const Type &t);
  Type unify_structural(const Type &a, const Type &b);
  Type unify_func(const FuncType *a, const Type &ta, const FuncType *b, const Type &tb);
  void collect_holes(const Type &resolved, std::vector<int> *roots);
  void enqueue(int relation);

  std::vector<HoleClass> classes_;
  std::unordered_map<const TypeNode *, int> hole_ids_;
  std::vector<Relation> relations_;
  std::vector<int> queue_;
  bool solving_ = false;
};

}  // namespace grove::relay
