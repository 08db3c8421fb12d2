#pragma once
// Child-term hoisting: in a ragged reduction over a node's children, `Σ_{k < num_children(n)} E`,
// a subexpression of E that reads only params and the states of child(n, k) — a child-sum
// TreeLSTM's forget term `sigmoid(U_f · h[k] + b_f) · c[k]` — is a function of the child alone.
// It is computed once per node, as a new state, at the end of both cases (where the node's own
// states are final), and the parent reads it at child(n, k). Each node of a tree has one parent,
// so the work is the same as before, but it is now one level GEMM over the nodes of a level
// instead of a matrix–vector product per (parent, child) pair inside the parent's ragged loop —
// variable arity costs no per-node branching in the products. Only subexpressions with a product
// (a Sum) are hoisted; a bare child load is cheaper to read in place.
// Assumes a verified Program; guarantees a verified Program computing the same values (each root
// computes a hoisted state nobody reads: one extra column per tree in that level's GEMM).

#include "ilir/IR.h"

namespace grove::plan {

ilir::Program hoist_child_terms(const ilir::Program &program);

}  // namespace grove::plan
